//! Shared fixtures: an emulator per test, raw HTTP helpers for conformance checks, and a configured client.

use std::sync::Arc;
use std::time::Duration;

use controllers::keycloak::{Credentials, KeycloakClient, KeycloakConfig, RealmClient, StaticCredentials};
use framework::backoff::BackoffPolicy;
use framework::http::HttpSettings;
use keycloak_emulator::{EmulatorConfig, EmulatorHandle, KeycloakEmulator};
use reqwest::{Method, Response};
use secrecy::SecretString;
use serde_json::Value;

/// The realm every test works in.
pub const REALM: &str = "nebari";

/// An emulator with the `nebari` realm.
pub async fn start() -> EmulatorHandle {
    start_with(EmulatorConfig::with_realm(REALM)).await
}

/// An emulator with a custom configuration.
pub async fn start_with(config: EmulatorConfig) -> EmulatorHandle {
    KeycloakEmulator::start(config).await.expect("keycloak emulator starts")
}

/// A plain HTTP client for speaking the wire protocol directly.
pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("http client")
}

/// Posts a form to a realm's token endpoint.
pub async fn token_request(kc: &EmulatorHandle, realm: &str, form: &[(&str, &str)]) -> Response {
    http()
        .post(format!("{}/realms/{realm}/protocol/openid-connect/token", kc.url()))
        .form(form)
        .send()
        .await
        .expect("token endpoint answers")
}

/// A master-realm admin token from the password grant through `admin-cli`.
pub async fn admin_token(kc: &EmulatorHandle) -> String {
    let (username, password) = kc.admin_credentials();
    let form = [
        ("grant_type", "password"),
        ("client_id", "admin-cli"),
        ("username", username),
        ("password", password),
    ];
    let body: Value = token_request(kc, "master", &form)
        .await
        .json()
        .await
        .expect("token json");
    body["access_token"].as_str().expect("access_token").to_string()
}

/// A token for a user of `realm` (logging in through `admin-cli`).
pub async fn user_token(kc: &EmulatorHandle, realm: &str, username: &str, password: &str) -> String {
    let form = [
        ("grant_type", "password"),
        ("client_id", "admin-cli"),
        ("username", username),
        ("password", password),
    ];
    let body: Value = token_request(kc, realm, &form).await.json().await.expect("token json");
    body["access_token"]
        .as_str()
        .unwrap_or_else(|| panic!("no token for {username}: {body}"))
        .to_string()
}

/// An admin API request (`path` relative to `/admin/realms/{REALM}`) with a bearer token and optional JSON body.
pub async fn admin(kc: &EmulatorHandle, token: &str, method: Method, path: &str, body: Option<Value>) -> Response {
    let url = format!("{}/admin/realms/{REALM}{path}", kc.url());
    let mut request = http().request(method, url).bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    request.send().await.expect("admin API answers")
}

/// `admin` for a GET whose 200 JSON body is returned.
pub async fn get_json(kc: &EmulatorHandle, token: &str, path: &str) -> Value {
    let response = admin(kc, token, Method::GET, path, None).await;
    assert_eq!(response.status(), 200, "GET {path}");
    response.json().await.expect("json body")
}

/// The id at the end of a create's `Location`.
pub fn location_id(response: &Response) -> String {
    let location = response
        .headers()
        .get("location")
        .expect("Location header")
        .to_str()
        .expect("ascii");
    location.rsplit('/').next().expect("id segment").to_string()
}

/// Creates a top-level group over the wire; returns its id.
pub async fn create_group(kc: &EmulatorHandle, token: &str, name: &str) -> String {
    let response = admin(
        kc,
        token,
        Method::POST,
        "/groups",
        Some(serde_json::json!({ "name": name })),
    )
    .await;
    assert_eq!(response.status(), 201, "create group {name}");
    location_id(&response)
}

/// Creates a child group over the wire; returns its id.
pub async fn create_child(kc: &EmulatorHandle, token: &str, parent: &str, name: &str) -> String {
    let path = format!("/groups/{parent}/children");
    let response = admin(
        kc,
        token,
        Method::POST,
        &path,
        Some(serde_json::json!({ "name": name })),
    )
    .await;
    assert_eq!(response.status(), 201, "create child {name}");
    location_id(&response)
}

/// Fast HTTP settings for tests: short timeouts, quick retries.
pub fn fast_http(retries: u32) -> HttpSettings {
    HttpSettings {
        connect_timeout: Duration::from_secs(2),
        request_timeout: Duration::from_secs(2),
        retries,
        backoff: BackoffPolicy {
            base: Duration::from_millis(10),
            max: Duration::from_millis(50),
        },
    }
}

/// A client configuration for the emulator with a given page size.
pub fn client_config(kc: &EmulatorHandle, page_size: u32) -> KeycloakConfig {
    KeycloakConfig {
        page_size,
        http: fast_http(2),
        ..KeycloakConfig::new(kc.url())
    }
}

/// A client logging in as the master admin.
pub fn client(kc: &EmulatorHandle) -> KeycloakClient {
    client_with(kc, client_config(kc, 100))
}

/// A client with a custom configuration, logging in as the master admin.
pub fn client_with(kc: &EmulatorHandle, config: KeycloakConfig) -> KeycloakClient {
    let (username, password) = kc.admin_credentials();
    let credentials = Credentials::admin_password(username, SecretString::from(password.to_string()));
    KeycloakClient::new(config, Arc::new(StaticCredentials(credentials)), None).expect("client")
}

/// The `nebari` realm through a master-admin client with pages of `page_size`.
pub fn realm(kc: &EmulatorHandle, page_size: u32) -> RealmClient {
    client_with(kc, client_config(kc, page_size)).realm(REALM)
}

/// Route template of an admin path, as the emulator counts it.
pub fn route(path: &str) -> String {
    format!("/admin/realms/{{realm}}{path}")
}

/// Route template of the token endpoint.
pub const TOKEN_ROUTE: &str = "/realms/{realm}/protocol/openid-connect/token";
