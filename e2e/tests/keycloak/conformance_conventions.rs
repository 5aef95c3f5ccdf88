//! Conventions shared by every endpoint: reference A0 and Part C items 2–4, 9 and 11.

use keycloak_emulator::{EmulatorConfig, UserSeed};
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{REALM, admin, admin_token, create_group, http, start, start_with, user_token};

async fn body(response: reqwest::Response) -> Value {
    response.json().await.expect("json body")
}

// A0 "Error body shapes" 1 / Part C item 3: missing, garbage and expired tokens look identical, without
// WWW-Authenticate.
#[tokio::test]
async fn missing_and_garbage_tokens_get_the_same_401() {
    let kc = start().await;
    for token in [None, Some("garbage"), Some("eyJhbGciOiJSUzI1NiJ9.e30.c2ln")] {
        let mut request = http().get(format!("{}/admin/realms/{REALM}/groups", kc.url()));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.expect("answer");
        assert_eq!(response.status(), 401, "{token:?}");
        assert!(response.headers().get("www-authenticate").is_none());
        assert_eq!(body(response).await, json!({ "error": "HTTP 401 Unauthorized" }));
    }
}

// A0 "Authentication": permissions are per operation; a view-users caller gets 200 on GET /users, 403 on
// POST /users and on GET /clients (Part C item 3 for the 403 body).
#[tokio::test]
async fn roles_are_checked_per_operation() {
    let mut config = EmulatorConfig::with_realm(REALM);
    config
        .users
        .push(UserSeed::new(REALM, "viewer").password("pw").role("view-users"));
    let kc = start_with(config).await;
    let token = user_token(&kc, REALM, "viewer", "pw").await;
    assert_eq!(admin(&kc, &token, Method::GET, "/users", None).await.status(), 200);
    let denied = admin(&kc, &token, Method::POST, "/users", Some(json!({ "username": "x" }))).await;
    assert_eq!(denied.status(), 403);
    assert_eq!(body(denied).await, json!({ "error": "HTTP 403 Forbidden" }));
    assert_eq!(admin(&kc, &token, Method::GET, "/clients", None).await.status(), 403);
    let other_realm = http()
        .get(format!("{}/admin/realms/master/users", kc.url()))
        .bearer_auth(&token)
        .send()
        .await
        .expect("answer");
    assert_eq!(other_realm.status(), 403, "a realm token does not reach another realm");
}

// A0 404 texts and Part C item 2: unknown realm `Realm not found.` (with the full stop).
#[tokio::test]
async fn an_unknown_realm_is_realm_not_found() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    let response = http()
        .get(format!("{}/admin/realms/nowhere/groups", kc.url()))
        .bearer_auth(&token)
        .send()
        .await
        .expect("answer");
    assert_eq!(response.status(), 404);
    assert_eq!(body(response).await, json!({ "error": "Realm not found." }));
}

// A0 "Requests that match no route": unknown path vs. known path with the wrong method (404, not 405).
#[tokio::test]
async fn unmatched_requests_are_404_with_their_two_texts() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    let unknown = admin(&kc, &token, Method::GET, "/no-such-thing", None).await;
    assert_eq!(unknown.status(), 404);
    assert_eq!(
        body(unknown).await,
        json!({ "error": "Unable to find matching target resource method" })
    );
    let wrong_method = admin(&kc, &token, Method::DELETE, "/groups", None).await;
    assert_eq!(wrong_method.status(), 404);
    assert!(wrong_method.headers().get("allow").is_none());
    assert_eq!(body(wrong_method).await, json!({ "error": "HTTP 404 Not Found" }));
}

// A0 "Headers on successful reads" and Part C item 11; error bodies use plain application/json.
#[tokio::test]
async fn reads_carry_charset_and_no_cache_and_errors_plain_json() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    let read = admin(&kc, &token, Method::GET, "/groups", None).await;
    assert_eq!(read.headers()["content-type"], "application/json;charset=UTF-8");
    assert_eq!(read.headers()["cache-control"], "no-cache");
    let error = admin(&kc, &token, Method::GET, "/groups/missing", None).await;
    assert_eq!(error.headers()["content-type"], "application/json");
}

// A0 "Creates" / Part C item 4: 201, empty body, no Content-Type, absolute Location ending in the id;
// updates and deletes 204.
#[tokio::test]
async fn creates_are_201_with_an_absolute_location_and_updates_204() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    let created = admin(&kc, &token, Method::POST, "/groups", Some(json!({ "name": "g" }))).await;
    assert_eq!(created.status(), 201);
    assert!(created.headers().get("content-type").is_none());
    let location = created.headers()["location"].to_str().expect("ascii").to_string();
    let id = kc.hooks().group_id(REALM, "/g").expect("group exists");
    assert_eq!(location, format!("{}/admin/realms/{REALM}/groups/{id}", kc.url()));
    assert!(created.text().await.expect("body").is_empty());
    let updated = admin(
        &kc,
        &token,
        Method::PUT,
        &format!("/groups/{id}"),
        Some(json!({ "name": "h" })),
    )
    .await;
    assert_eq!(updated.status(), 204);
    let deleted = admin(&kc, &token, Method::DELETE, &format!("/groups/{id}"), None).await;
    assert_eq!(deleted.status(), 204);
    assert!(deleted.text().await.expect("body").is_empty());
}

// A0 shape 3: malformed JSON is 400 invalid_request / Cannot parse the JSON.
#[tokio::test]
async fn malformed_json_cannot_be_parsed() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    let response = http()
        .post(format!("{}/admin/realms/{REALM}/groups", kc.url()))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .expect("answer");
    assert_eq!(response.status(), 400);
    assert_eq!(
        body(response).await,
        json!({ "error": "invalid_request", "error_description": "Cannot parse the JSON" })
    );
}

// A0 "Base paths" / Part C item 11: the optional prefix (`/auth`) applies to every path.
#[tokio::test]
async fn a_path_prefix_moves_every_route() {
    let config = EmulatorConfig {
        path_prefix: "/auth".into(),
        ..EmulatorConfig::with_realm(REALM)
    };
    let kc = start_with(config).await;
    assert!(kc.url().ends_with("/auth"), "{}", kc.url());
    let token = admin_token(&kc).await;
    create_group(&kc, &token, "prefixed").await;
    let without_prefix = http()
        .get(format!("{}/admin/realms/{REALM}/groups", kc.origin()))
        .bearer_auth(&token)
        .send()
        .await
        .expect("answer");
    assert_eq!(without_prefix.status(), 404, "nothing is served outside the prefix");
    let counted = kc.hooks().count("GET", "/admin/realms/{realm}/groups");
    assert_eq!(
        counted, 0,
        "route templates in counters never include the prefix, and the miss is not a route"
    );
    assert_eq!(kc.hooks().count("POST", "/admin/realms/{realm}/groups"), 1);
}

// A3 "Name length" / Part C item 9: no validation, a 500 `unknown_error` above 255 characters.
#[tokio::test]
async fn names_over_255_characters_fail_with_500() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    let long = "n".repeat(256);
    for (path, body_json) in [
        ("/groups", json!({ "name": long })),
        ("/clients", json!({ "clientId": "c", "name": long })),
        ("/clients", json!({ "clientId": long })),
        ("/users", json!({ "username": long })),
    ] {
        let response = admin(&kc, &token, Method::POST, path, Some(body_json)).await;
        assert_eq!(response.status(), 500, "{path}");
        let error = body(response).await;
        assert_eq!(error["error"], "unknown_error", "{path}");
        assert_eq!(
            error["error_description"],
            "For more on this error consult the server log."
        );
    }
    assert_eq!(
        admin(
            &kc,
            &token,
            Method::POST,
            "/groups",
            Some(json!({ "name": "n".repeat(255) }))
        )
        .await
        .status(),
        201
    );
}
