//! The token endpoint against reference A1 and Part C item 1.

use std::time::Duration;

use keycloak_emulator::{ClientSeed, EmulatorConfig, UserSeed};
use reqwest::Method;
use serde_json::Value;

use crate::support::{REALM, admin, start, start_with, token_request};

fn keys(body: &str) -> Vec<String> {
    // serde_json without `preserve_order` sorts keys, so read the order off the raw text.
    let object: serde_json::Map<String, Value> = serde_json::from_str(body).expect("json object");
    let mut positions: Vec<(usize, String)> = object
        .keys()
        .map(|k| (body.find(&format!("\"{k}\":")).expect("key in body"), k.clone()))
        .collect();
    positions.sort();
    positions.into_iter().map(|(_, k)| k).collect()
}

// A1 "200 response": headers, key order, the hyphenated not-before-policy; A1 "Lifetimes": 60/1800 in master.
#[tokio::test]
async fn password_grant_answers_with_keycloak_key_order_headers_and_master_lifetimes() {
    let kc = start().await;
    let form = [
        ("grant_type", "password"),
        ("client_id", "admin-cli"),
        ("username", "admin"),
        ("password", "admin"),
    ];
    let response = token_request(&kc, "master", &form).await;
    assert_eq!(response.status(), 200);
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().expect("ascii").to_string())
    };
    assert_eq!(header("cache-control").as_deref(), Some("no-store"));
    assert_eq!(header("pragma").as_deref(), Some("no-cache"));
    assert_eq!(header("content-type").as_deref(), Some("application/json"));
    let text = response.text().await.expect("body");
    assert_eq!(
        keys(&text),
        vec![
            "access_token",
            "expires_in",
            "refresh_expires_in",
            "refresh_token",
            "token_type",
            "not-before-policy",
            "session_state",
            "scope"
        ]
    );
    let body: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(body["expires_in"], 60);
    assert_eq!(body["refresh_expires_in"], 1800);
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["not-before-policy"], 0);
}

// A1 "id_token (only when scope includes openid)".
#[tokio::test]
async fn an_openid_scope_adds_an_id_token() {
    let kc = start().await;
    let form = [
        ("grant_type", "password"),
        ("client_id", "admin-cli"),
        ("username", "admin"),
        ("password", "admin"),
        ("scope", "openid"),
    ];
    let body: Value = token_request(&kc, "master", &form).await.json().await.expect("json");
    assert!(body["id_token"].is_string());
    assert!(body["scope"].as_str().expect("scope").split(' ').any(|s| s == "openid"));
}

// A1 client credentials: no refresh_token, no session_state, refresh_expires_in 0; Basic auth accepted;
// new realms default to a 300 s access token.
#[tokio::test]
async fn client_credentials_grant_has_no_refresh_token() {
    let mut config = EmulatorConfig::with_realm(REALM);
    config.clients.push(ClientSeed::service_account(
        REALM,
        "svc",
        "svc-secret",
        &["realm-admin"],
    ));
    let kc = start_with(config).await;
    let form = [
        ("grant_type", "client_credentials"),
        ("client_id", "svc"),
        ("client_secret", "svc-secret"),
    ];
    let response = token_request(&kc, REALM, &form).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("json");
    assert!(
        body.get("refresh_token").is_none() && body.get("session_state").is_none(),
        "{body}"
    );
    assert_eq!(body["refresh_expires_in"], 0);
    assert_eq!(body["expires_in"], 300);
    let basic = crate::support::http()
        .post(format!("{}/realms/{REALM}/protocol/openid-connect/token", kc.url()))
        .basic_auth("svc", Some("svc-secret"))
        .form(&[("grant_type", "client_credentials")])
        .send()
        .await
        .expect("answer");
    assert_eq!(basic.status(), 200, "HTTP Basic client authentication");
}

async fn error_of(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    assert_eq!(
        response.headers().get("content-type").and_then(|v| v.to_str().ok()),
        Some("application/json"),
        "error bodies are plain application/json"
    );
    (status, response.json().await.expect("json error"))
}

fn oauth(error: &str, description: &str) -> Value {
    serde_json::json!({ "error": error, "error_description": description })
}

/// One row of the error table: what it is, the form, the expected status and body.
type ErrorCase<'a> = (&'a str, Vec<(&'a str, &'a str)>, u16, Value);

// A1 "Errors" table, row by row.
#[tokio::test]
async fn token_errors_follow_the_reference_table() {
    let mut config = EmulatorConfig::with_realm(REALM);
    config.users.push(UserSeed::new(REALM, "alice").password("right"));
    config
        .users
        .push(UserSeed::new(REALM, "bob").password("right").disabled());
    config.clients.push(ClientSeed::confidential(REALM, "web"));
    config.clients.push(ClientSeed::service_account(REALM, "svc", "s", &[]));
    config.clients.push(ClientSeed {
        public_client: true,
        ..ClientSeed::confidential(REALM, "spa")
    });
    let kc = start_with(config).await;
    let web = kc.hooks().client(REALM, "web").expect("web client");
    let web_secret = web["secret"].as_str().expect("generated secret").to_string();
    let password = |user: &'static str, pw: &'static str| {
        [
            ("grant_type", "password"),
            ("client_id", "admin-cli"),
            ("username", user),
            ("password", pw),
        ]
    };
    let cases: Vec<ErrorCase<'_>> = vec![
        (
            "wrong password",
            password("alice", "wrong").to_vec(),
            400,
            oauth("invalid_grant", "Invalid user credentials"),
        ),
        (
            "disabled user",
            password("bob", "right").to_vec(),
            400,
            oauth("invalid_grant", "Account disabled"),
        ),
        (
            "unknown client",
            vec![
                ("grant_type", "client_credentials"),
                ("client_id", "nope"),
                ("client_secret", "x"),
            ],
            401,
            oauth("invalid_client", "Invalid client or Invalid client credentials"),
        ),
        (
            "wrong secret",
            vec![
                ("grant_type", "client_credentials"),
                ("client_id", "svc"),
                ("client_secret", "x"),
            ],
            401,
            oauth("unauthorized_client", "Invalid client or Invalid client credentials"),
        ),
        (
            "missing grant_type",
            vec![("client_id", "admin-cli")],
            400,
            oauth("invalid_request", "Missing form parameter: grant_type"),
        ),
        (
            "unsupported grant",
            vec![("grant_type", "implicit"), ("client_id", "admin-cli")],
            400,
            oauth("unsupported_grant_type", "Unsupported grant_type"),
        ),
        (
            "direct grants disabled",
            vec![
                ("grant_type", "password"),
                ("client_id", "spa"),
                ("username", "alice"),
                ("password", "right"),
            ],
            400,
            oauth("unauthorized_client", "Client not allowed for direct access grants"),
        ),
        (
            "client credentials without service accounts",
            vec![
                ("grant_type", "client_credentials"),
                ("client_id", "web"),
                ("client_secret", web_secret.as_str()),
            ],
            401,
            oauth("unauthorized_client", "Client not enabled to retrieve service account"),
        ),
        (
            "client credentials from a public client",
            vec![("grant_type", "client_credentials"), ("client_id", "spa")],
            401,
            oauth(
                "unauthorized_client",
                "Public client not allowed to retrieve service account",
            ),
        ),
    ];
    for (case, form, status, body) in cases {
        let (got_status, got_body) = error_of(token_request(&kc, REALM, &form).await).await;
        assert_eq!((got_status, &got_body), (status, &body), "{case}");
    }
    let (status, body) = error_of(token_request(&kc, "nowhere", &password("alice", "right")).await).await;
    assert_eq!(
        (status, body),
        (404, serde_json::json!({ "error": "Realm does not exist" })),
        "unknown realm"
    );
}

// Part C item 1 "admin 401s once a token expires"; A1 "Lifetimes" are configurable.
#[tokio::test]
async fn admin_calls_get_401_once_the_token_expired() {
    let config = EmulatorConfig {
        master_access_token_lifespan: Duration::from_secs(5),
        ..EmulatorConfig::with_realm(REALM)
    };
    let kc = start_with(config).await;
    let token = crate::support::admin_token(&kc).await;
    assert_eq!(admin(&kc, &token, Method::GET, "/groups", None).await.status(), 200);
    kc.hooks().advance_clock(Duration::from_secs(6));
    let response = admin(&kc, &token, Method::GET, "/groups", None).await;
    assert_eq!(response.status(), 401);
    assert!(response.headers().get("www-authenticate").is_none());
    assert_eq!(
        response.json::<Value>().await.expect("json"),
        serde_json::json!({ "error": "HTTP 401 Unauthorized" })
    );
}

// A1: the refresh-token grant issues a new access token to the same client.
#[tokio::test]
async fn refresh_tokens_renew_access() {
    let kc = start().await;
    let form = [
        ("grant_type", "password"),
        ("client_id", "admin-cli"),
        ("username", "admin"),
        ("password", "admin"),
    ];
    let first: Value = token_request(&kc, "master", &form).await.json().await.expect("json");
    let refresh = first["refresh_token"].as_str().expect("refresh token");
    let renewed = token_request(
        &kc,
        "master",
        &[
            ("grant_type", "refresh_token"),
            ("client_id", "admin-cli"),
            ("refresh_token", refresh),
        ],
    )
    .await;
    assert_eq!(renewed.status(), 200);
    let renewed: Value = renewed.json().await.expect("json");
    assert_ne!(renewed["access_token"], first["access_token"]);
    let bad = token_request(
        &kc,
        "master",
        &[
            ("grant_type", "refresh_token"),
            ("client_id", "admin-cli"),
            ("refresh_token", "garbage"),
        ],
    )
    .await;
    assert_eq!(bad.status(), 400);
}
