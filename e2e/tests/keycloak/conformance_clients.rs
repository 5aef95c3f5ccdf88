//! Clients, secrets, mappers and scopes: reference A4 and Part C item 8.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{REALM, admin, admin_token, get_json, location_id, start};

async fn create_client(kc: &keycloak_emulator::EmulatorHandle, token: &str, body: Value) -> String {
    let response = admin(kc, token, Method::POST, "/clients", Some(body)).await;
    assert_eq!(response.status(), 201);
    location_id(&response)
}

// A4 "POST /clients" defaults when only clientId is sent, and GET /clients/{uuid} leaving out protocolMappers.
#[tokio::test]
async fn a_bare_client_gets_keycloak_defaults() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    let id = create_client(&kc, &token, json!({ "clientId": "bare" })).await;
    let client = get_json(&kc, &token, &format!("/clients/{id}")).await;
    assert_eq!(client["publicClient"], false);
    assert_eq!(client["standardFlowEnabled"], true);
    assert_eq!(client["directAccessGrantsEnabled"], false);
    assert_eq!(client["implicitFlowEnabled"], false);
    assert_eq!(client["serviceAccountsEnabled"], false);
    assert_eq!(
        client["secret"].as_str().map(str::len),
        Some(32),
        "an auto-generated secret"
    );
    assert_eq!(client["attributes"]["realm_client"], "false");
    assert!(client["attributes"]["client.secret.creation.time"].is_string());
    assert_eq!(
        client["defaultClientScopes"],
        json!(["acr", "basic", "email", "profile", "roles", "web-origins"])
    );
    assert_eq!(
        client["optionalClientScopes"],
        json!(["address", "microprofile-jwt", "offline_access", "organization", "phone"])
    );
    assert_eq!(
        client["access"],
        json!({ "view": true, "configure": true, "manage": true })
    );
    assert!(
        client.get("protocolMappers").is_none(),
        "the key is left out when there are no mappers"
    );
}

// Keycloak 26's built-in realm scopes, `service_account` (26.1+) among them: not a realm default, hidden from the
// token's scope claim and the consent screen, with its three session-note mappers.
#[tokio::test]
async fn the_realm_starts_with_keycloak_26_client_scopes() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    let scopes = get_json(&kc, &token, "/client-scopes").await;
    let mut names: Vec<&str> = scopes
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "acr",
            "address",
            "basic",
            "email",
            "microprofile-jwt",
            "offline_access",
            "organization",
            "phone",
            "profile",
            "roles",
            "service_account",
            "web-origins"
        ]
    );
    let service_account = scopes
        .as_array()
        .expect("array")
        .iter()
        .find(|s| s["name"] == "service_account")
        .expect("service_account");
    assert_eq!(service_account["protocol"], "openid-connect");
    assert_eq!(service_account["attributes"]["include.in.token.scope"], "false");
    assert_eq!(service_account["attributes"]["display.on.consent.screen"], "false");
    let mut claims: Vec<&str> = service_account["protocolMappers"]
        .as_array()
        .expect("mappers")
        .iter()
        .filter(|m| m["protocolMapper"] == "oidc-usersessionmodel-note-mapper")
        .filter_map(|m| m["config"]["claim.name"].as_str())
        .collect();
    claims.sort_unstable();
    assert_eq!(claims, ["clientAddress", "clientHost", "client_id"]);
}

// A4 "GET /clients?clientId=X" is exact; search=true makes it a case-insensitive substring; 409 on duplicates.
#[tokio::test]
async fn client_lookup_is_exact_and_duplicates_conflict() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    create_client(&kc, &token, json!({ "clientId": "app" })).await;
    create_client(&kc, &token, json!({ "clientId": "app-spa" })).await;
    let exact = get_json(&kc, &token, "/clients?clientId=app").await;
    assert_eq!(exact.as_array().expect("array").len(), 1);
    assert_eq!(get_json(&kc, &token, "/clients?clientId=ap").await, json!([]));
    let fuzzy = get_json(&kc, &token, "/clients?clientId=APP&search=true").await;
    assert_eq!(fuzzy.as_array().expect("array").len(), 2);
    let duplicate = admin(
        &kc,
        &token,
        Method::POST,
        "/clients",
        Some(json!({ "clientId": "app" })),
    )
    .await;
    assert_eq!(duplicate.status(), 409);
    assert_eq!(
        duplicate.json::<Value>().await.expect("json"),
        json!({ "errorMessage": "Client app already exists" })
    );
}

// A4 "Bad redirect or root URLs: 400 invalid_input"; "a supplied secret is stored as-is"; service accounts
// create `service-account-<clientId>` straight away.
#[tokio::test]
async fn client_validation_and_side_effects() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    let bad = admin(
        &kc,
        &token,
        Method::POST,
        "/clients",
        Some(json!({ "clientId": "x", "redirectUris": ["javascript:alert(1)"] })),
    )
    .await;
    assert_eq!(bad.status(), 400);
    assert_eq!(bad.json::<Value>().await.expect("json")["error"], "invalid_input");
    let id = create_client(
        &kc,
        &token,
        json!({ "clientId": "svc", "secret": "given-secret", "serviceAccountsEnabled": true }),
    )
    .await;
    let secret = get_json(&kc, &token, &format!("/clients/{id}/client-secret")).await;
    assert_eq!(secret, json!({ "type": "secret", "value": "given-secret" }));
    assert!(kc.hooks().user_id(REALM, "service-account-svc").is_some());
    // Keycloak 26.1+: a client with a service account gets the `service_account` scope as a default scope, and
    // loses it when the service account is turned off.
    let defaults = |client: Value| {
        let mut names: Vec<String> = client["defaultClientScopes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect();
        names.sort();
        json!(names)
    };
    let svc = get_json(&kc, &token, &format!("/clients/{id}")).await;
    assert_eq!(
        defaults(svc),
        json!([
            "acr",
            "basic",
            "email",
            "profile",
            "roles",
            "service_account",
            "web-origins"
        ])
    );
    let off = admin(
        &kc,
        &token,
        Method::PUT,
        &format!("/clients/{id}"),
        Some(json!({ "serviceAccountsEnabled": false })),
    )
    .await;
    assert_eq!(off.status(), 204);
    let svc = get_json(&kc, &token, &format!("/clients/{id}")).await;
    assert_eq!(
        defaults(svc),
        json!(["acr", "basic", "email", "profile", "roles", "web-origins"])
    );
    let public = create_client(&kc, &token, json!({ "clientId": "pub", "publicClient": true })).await;
    assert_eq!(
        get_json(&kc, &token, &format!("/clients/{public}/client-secret")).await,
        json!({ "type": "secret" })
    );
}

// A4 "PUT /clients/{uuid}" merges: absent fields and attributes not in the body are kept; clientId clash 409.
#[tokio::test]
async fn client_updates_merge() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    let id = create_client(
        &kc,
        &token,
        json!({ "clientId": "app", "redirectUris": ["https://a/*"], "attributes": { "keep": "1", "change": "1" } }),
    )
    .await;
    create_client(&kc, &token, json!({ "clientId": "other" })).await;
    let path = format!("/clients/{id}");
    let update = admin(
        &kc,
        &token,
        Method::PUT,
        &path,
        Some(json!({ "webOrigins": ["*"], "attributes": { "change": "2" } })),
    )
    .await;
    assert_eq!(update.status(), 204);
    let client = get_json(&kc, &token, &path).await;
    assert_eq!(client["redirectUris"], json!(["https://a/*"]));
    assert_eq!(client["webOrigins"], json!(["*"]));
    assert_eq!(client["attributes"]["keep"], "1");
    assert_eq!(client["attributes"]["change"], "2");
    let clash = admin(&kc, &token, Method::PUT, &path, Some(json!({ "clientId": "other" }))).await;
    assert_eq!(clash.status(), 409);
    let deleted = admin(&kc, &token, Method::DELETE, &path, None).await;
    assert_eq!(deleted.status(), 204);
    assert_eq!(deleted.headers()["cache-control"], "no-cache");
    let gone = admin(&kc, &token, Method::GET, &path, None).await;
    assert_eq!(gone.status(), 404);
    assert_eq!(
        gone.json::<Value>().await.expect("json"),
        json!({ "error": "Could not find client" })
    );
}

// A4 "Client secret": POST regenerates and answers 200 with the new value.
#[tokio::test]
async fn client_secrets_can_be_regenerated() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    let id = create_client(&kc, &token, json!({ "clientId": "app", "secret": "old" })).await;
    let regenerated = admin(&kc, &token, Method::POST, &format!("/clients/{id}/client-secret"), None).await;
    assert_eq!(regenerated.status(), 200);
    let body: Value = regenerated.json().await.expect("json");
    assert_eq!(body["type"], "secret");
    assert_ne!(body["value"], "old");
    assert_eq!(
        get_json(&kc, &token, &format!("/clients/{id}/client-secret")).await["value"],
        body["value"]
    );
}

// A4 "Protocol mappers": 201 with Location, 409 on a duplicate name, 404 for an unknown mapper type,
// PUT 204 / unknown id 404 `Model not found`, DELETE 204.
#[tokio::test]
async fn protocol_mappers_follow_the_reference() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    let id = create_client(&kc, &token, json!({ "clientId": "app" })).await;
    let models = format!("/clients/{id}/protocol-mappers/models");
    let mapper = json!({
        "name": "groups",
        "protocol": "openid-connect",
        "protocolMapper": "oidc-group-membership-mapper",
        "config": { "claim.name": "groups", "full.path": "false" },
    });
    let created = admin(&kc, &token, Method::POST, &models, Some(mapper.clone())).await;
    assert_eq!(created.status(), 201);
    let mapper_id = location_id(&created);
    let duplicate = admin(&kc, &token, Method::POST, &models, Some(mapper.clone())).await;
    assert_eq!(duplicate.status(), 409);
    assert_eq!(
        duplicate.json::<Value>().await.expect("json"),
        json!({ "errorMessage": "Protocol mapper exists with same name" })
    );
    let unknown_type = admin(
        &kc,
        &token,
        Method::POST,
        &models,
        Some(json!({ "name": "x", "protocol": "openid-connect", "protocolMapper": "no-such-mapper", "config": {} })),
    )
    .await;
    assert_eq!(unknown_type.status(), 404);
    assert_eq!(
        unknown_type.json::<Value>().await.expect("json"),
        json!({ "error": "ProtocolMapper provider not found" })
    );
    let client = get_json(&kc, &token, &format!("/clients/{id}")).await;
    assert_eq!(client["protocolMappers"][0]["name"], "groups");
    let mut changed = mapper.clone();
    changed["id"] = json!(mapper_id);
    changed["config"]["full.path"] = json!("true");
    assert_eq!(
        admin(
            &kc,
            &token,
            Method::PUT,
            &format!("{models}/{mapper_id}"),
            Some(changed)
        )
        .await
        .status(),
        204
    );
    assert_eq!(get_json(&kc, &token, &models).await[0]["config"]["full.path"], "true");
    let missing = admin(&kc, &token, Method::PUT, &format!("{models}/nope"), Some(mapper)).await;
    assert_eq!(missing.status(), 404);
    assert_eq!(
        missing.json::<Value>().await.expect("json"),
        json!({ "error": "Model not found" })
    );
    assert_eq!(
        admin(&kc, &token, Method::DELETE, &format!("{models}/{mapper_id}"), None)
            .await
            .status(),
        204
    );
    assert_eq!(get_json(&kc, &token, &models).await, json!([]));
}

// A4 "Client scopes": list, 201 create, 409 `Client Scope X already exists`, default scopes `[{id,name}]`,
// PUT/DELETE 204, unknown scope `Could not find client scope`.
#[tokio::test]
async fn client_scopes_and_default_scopes() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    let id = create_client(&kc, &token, json!({ "clientId": "app" })).await;
    let body =
        json!({ "name": "groups", "protocol": "openid-connect", "attributes": { "include.in.token.scope": "true" } });
    let created = admin(&kc, &token, Method::POST, "/client-scopes", Some(body.clone())).await;
    assert_eq!(created.status(), 201);
    let scope = location_id(&created);
    let duplicate = admin(&kc, &token, Method::POST, "/client-scopes", Some(body)).await;
    assert_eq!(duplicate.status(), 409);
    assert_eq!(
        duplicate.json::<Value>().await.expect("json"),
        json!({ "errorMessage": "Client Scope groups already exists" })
    );
    let scopes = get_json(&kc, &token, "/client-scopes").await;
    assert!(scopes.as_array().expect("array").iter().any(|s| s["name"] == "groups"));
    let defaults = format!("/clients/{id}/default-client-scopes");
    assert_eq!(
        admin(&kc, &token, Method::PUT, &format!("{defaults}/{scope}"), None)
            .await
            .status(),
        204
    );
    let attached = get_json(&kc, &token, &defaults).await;
    assert!(
        attached
            .as_array()
            .expect("array")
            .iter()
            .any(|s| s == &json!({ "id": scope, "name": "groups" }))
    );
    assert_eq!(
        admin(&kc, &token, Method::DELETE, &format!("{defaults}/{scope}"), None)
            .await
            .status(),
        204
    );
    let detached = get_json(&kc, &token, &defaults).await;
    assert!(
        !detached
            .as_array()
            .expect("array")
            .iter()
            .any(|s| s["name"] == "groups")
    );
    let unknown = admin(&kc, &token, Method::PUT, &format!("{defaults}/nope"), None).await;
    assert_eq!(unknown.status(), 404);
    assert_eq!(
        unknown.json::<Value>().await.expect("json"),
        json!({ "error": "Could not find client scope" })
    );
}
