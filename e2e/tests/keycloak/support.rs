//! Shared fixtures: a realm of its own on the run's real Keycloak for each test (behind the harness's fault
//! proxy), the operator's Keycloak client pointed at that proxy, and raw HTTP helpers for the wire checks.

use std::sync::Arc;
use std::time::Duration;

use controllers::keycloak::{Credentials, KeycloakClient, KeycloakConfig, RealmClient, StaticCredentials};
use e2e::harness::keycloak::{Flavour, RealmSetup, TestRealm, password_of, unique_realm};
use framework::backoff::BackoffPolicy;
use framework::http::HttpSettings;
use reqwest::Method;
use secrecy::SecretString;
use serde_json::{Value, json};

/// The password of each test's administrator (distinctive, so a leak into a message would be noticed).
pub const ADMIN_PASSWORD: &str = "kc-suite-admin-password-5e1f";

/// A realm of its own, named after `prefix`, on the run's default Keycloak.
pub async fn start(prefix: &str) -> TestRealm {
    start_on(Flavour::Default, prefix).await
}

/// A realm of its own, named after `prefix`, on the run's Keycloak of `flavour`.
pub async fn start_on(flavour: Flavour, prefix: &str) -> TestRealm {
    TestRealm::create(RealmSetup {
        name: &unique_realm(prefix),
        flavour,
        tls: None,
        admin_password: ADMIN_PASSWORD,
    })
    .await
}

/// A plain HTTP client for speaking the wire protocol directly.
pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("http client")
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

/// A client configuration for the realm's proxy with a given page size (admin logins to `master`).
pub fn client_config(kc: &TestRealm, page_size: u32) -> KeycloakConfig {
    KeycloakConfig {
        page_size,
        // Generous enough for a busy 2-core machine running Keycloak and the tests side by side.
        http: HttpSettings {
            request_timeout: Duration::from_secs(10),
            ..fast_http(2)
        },
        ..KeycloakConfig::new(kc.url())
    }
}

/// A client logging in as the test's master-realm administrator.
pub fn client(kc: &TestRealm) -> KeycloakClient {
    client_with(kc, client_config(kc, 100))
}

/// A client with a custom configuration, logging in as the test's master-realm administrator.
pub fn client_with(kc: &TestRealm, config: KeycloakConfig) -> KeycloakClient {
    let (username, password) = kc.admin_credentials();
    let credentials = Credentials::admin_password(username, SecretString::from(password.to_string()));
    KeycloakClient::new(config, Arc::new(StaticCredentials(credentials)), None).expect("client")
}

/// The test's realm through a master-admin client with pages of `page_size`.
pub fn realm(kc: &TestRealm, page_size: u32) -> RealmClient {
    client_with(kc, client_config(kc, page_size)).realm(kc.realm())
}

/// A client configuration logging in to the test's realm itself (not `master`).
pub fn realm_login_config(kc: &TestRealm) -> KeycloakConfig {
    KeycloakConfig {
        token_realm: kc.realm().to_string(),
        ..client_config(kc, 100)
    }
}

/// Password credentials of a user made by `TestRealm::create_user` (through `admin-cli`).
pub fn user_credentials(username: &str) -> Credentials {
    Credentials::admin_password(username, SecretString::from(password_of(username)))
}

/// Creates a user of the test realm holding `realm-management`'s `realm-admin` role; returns its id.
pub async fn create_realm_admin(kc: &TestRealm, username: &str) -> String {
    let id = kc.create_user(username, &[]).await;
    kc.grant_client_roles(username, "realm-management", &["realm-admin"])
        .await;
    id
}

/// Creates an enabled user with a complete profile, the password `<username>-password` and this email address;
/// returns its id.
pub async fn create_user_with_email(kc: &TestRealm, username: &str, email: &str) -> String {
    let (status, body) = kc
        .admin(
            Method::POST,
            "/users",
            Some(json!({
                "username": username, "enabled": true, "email": email, "emailVerified": true,
                "firstName": username, "lastName": "Test",
                "credentials": [{"type": "password", "value": password_of(username), "temporary": false}],
            })),
        )
        .await;
    assert_eq!(status, 201, "create user {username}: {body}");
    kc.user_id(username).await.expect("the user exists")
}

/// Route template of an admin path of the realm, as the proxy counts it.
pub fn route(path: &str) -> String {
    format!("/admin/realms/{{realm}}{path}")
}

/// Route template of the token endpoint.
pub const TOKEN_ROUTE: &str = "/realms/{realm}/protocol/openid-connect/token";

/// Posts a form straight to `realm`'s token endpoint (not through the proxy); returns status and JSON.
pub async fn token_request(kc: &TestRealm, realm: &str, form: &[(&str, &str)]) -> (u16, Value) {
    let response = http()
        .post(format!(
            "{}/realms/{realm}/protocol/openid-connect/token",
            kc.direct_url()
        ))
        .form(form)
        .send()
        .await
        .expect("the token endpoint answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// A token for a user of the test realm (password grant through `admin-cli`).
pub async fn user_token(kc: &TestRealm, username: &str) -> String {
    let password = password_of(username);
    let form = [
        ("grant_type", "password"),
        ("client_id", "admin-cli"),
        ("username", username),
        ("password", password.as_str()),
    ];
    let (status, body) = token_request(kc, kc.realm(), &form).await;
    assert_eq!(status, 200, "{username} logs in: {body}");
    body["access_token"].as_str().expect("an access token").to_string()
}

/// The claims of a JWT (no signature check: the token came straight from the server).
pub fn claims(token: &str) -> Value {
    use base64::Engine;
    let payload = token.split('.').nth(1).expect("a JWT has a payload");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url payload");
    serde_json::from_slice(&bytes).expect("JSON claims")
}
