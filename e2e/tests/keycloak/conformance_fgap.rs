//! Fine-grained admin permissions v1 and the token-exchange objects: reference A5 and Part C item 10.

use keycloak_emulator::EmulatorConfig;
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{REALM, admin, admin_token, get_json, location_id, start, start_with};

async fn client_id(kc: &keycloak_emulator::EmulatorHandle, token: &str, client_id: &str) -> String {
    let response = admin(
        kc,
        token,
        Method::POST,
        "/clients",
        Some(json!({ "clientId": client_id })),
    )
    .await;
    assert_eq!(response.status(), 201);
    location_id(&response)
}

// A5 "With v1 off … 501" after the client lookup (unknown client still 404).
#[tokio::test]
async fn with_the_feature_off_permissions_answer_501_after_the_client_lookup() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    let target = client_id(&kc, &token, "target").await;
    let path = format!("/clients/{target}/management/permissions");
    for (method, body) in [(Method::GET, None), (Method::PUT, Some(json!({ "enabled": true })))] {
        let response = admin(&kc, &token, method.clone(), &path, body).await;
        assert_eq!(response.status(), 501, "{method}");
        assert_eq!(
            response.json::<Value>().await.expect("json"),
            json!({ "error": "Feature not enabled", "error_description": "For more on this error consult the server log." })
        );
    }
    let unknown = admin(&kc, &token, Method::GET, "/clients/nope/management/permissions", None).await;
    assert_eq!(
        unknown.status(),
        404,
        "the client is looked up before the feature check"
    );
}

// A5 steps 1–4 with the feature on: seven scope permissions, scope lookup, policy create 201 echo without
// Location, policy 409 shape, exact search 200/204, permission update 201 with an empty body.
#[tokio::test]
async fn with_the_feature_on_the_v1_token_exchange_flow_works() {
    let kc = start_with(EmulatorConfig {
        fine_grained_authz_v1: true,
        ..EmulatorConfig::with_realm(REALM)
    })
    .await;
    let token = admin_token(&kc).await;
    let target = client_id(&kc, &token, "target").await;
    let peer = client_id(&kc, &token, "peer").await;
    let path = format!("/clients/{target}/management/permissions");
    assert_eq!(get_json(&kc, &token, &path).await, json!({ "enabled": false }));
    let enabled = admin(&kc, &token, Method::PUT, &path, Some(json!({ "enabled": true }))).await;
    assert_eq!(enabled.status(), 200);
    let permissions: Value = enabled.json().await.expect("json");
    assert_eq!(permissions["enabled"], true);
    assert!(permissions["resource"].is_string());
    let scopes = permissions["scopePermissions"].as_object().expect("object");
    let mut keys: Vec<&str> = scopes.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        vec![
            "configure",
            "manage",
            "map-roles",
            "map-roles-client-scope",
            "map-roles-composite",
            "token-exchange",
            "view"
        ]
    );
    let permission_id = scopes["token-exchange"].as_str().expect("id").to_string();

    let rm = get_json(&kc, &token, "/clients?clientId=realm-management").await[0]["id"]
        .as_str()
        .expect("id")
        .to_string();
    let server = format!("/clients/{rm}/authz/resource-server");
    let found = get_json(&kc, &token, &format!("{server}/scope?name=token-exchange")).await;
    let scope_id = found[0]["id"].as_str().expect("scope id").to_string();

    let policy = json!({ "name": "peer-token-exchange", "type": "client", "logic": "POSITIVE", "clients": [peer] });
    let created = admin(
        &kc,
        &token,
        Method::POST,
        &format!("{server}/policy/client"),
        Some(policy.clone()),
    )
    .await;
    assert_eq!(created.status(), 201);
    assert!(created.headers().get("location").is_none());
    let echoed: Value = created.json().await.expect("json");
    assert_eq!(echoed["name"], "peer-token-exchange");
    let policy_id = echoed["id"].as_str().expect("policy id").to_string();
    let duplicate = admin(
        &kc,
        &token,
        Method::POST,
        &format!("{server}/policy/client"),
        Some(policy),
    )
    .await;
    assert_eq!(duplicate.status(), 409);
    assert_eq!(
        duplicate.json::<Value>().await.expect("json"),
        json!({ "error": "Policy with name [peer-token-exchange] already exists", "error_description": "Conflicting policy" })
    );
    let exact = admin(
        &kc,
        &token,
        Method::GET,
        &format!("{server}/policy/search?name=peer-token-exchange"),
        None,
    )
    .await;
    assert_eq!(exact.status(), 200);
    let none = admin(
        &kc,
        &token,
        Method::GET,
        &format!("{server}/policy/search?name=peer"),
        None,
    )
    .await;
    assert_eq!(none.status(), 204, "search is exact");
    let substring = get_json(&kc, &token, &format!("{server}/policy?name=PEER")).await;
    assert_eq!(
        substring.as_array().expect("array").len(),
        1,
        "the listing filter is a case-insensitive substring"
    );

    let update = json!({
        "id": permission_id,
        "name": format!("token-exchange.permission.client.{target}"),
        "type": "scope",
        "logic": "POSITIVE",
        "decisionStrategy": "AFFIRMATIVE",
        "resources": [permissions["resource"]],
        "scopes": [scope_id],
        "policies": [policy_id],
    });
    let updated = admin(
        &kc,
        &token,
        Method::PUT,
        &format!("{server}/permission/scope/{permission_id}"),
        Some(update.clone()),
    )
    .await;
    assert_eq!(updated.status(), 201, "an update answered with 201");
    assert!(updated.text().await.expect("body").is_empty());
    let permission_name = format!("token-exchange.permission.client.{target}");
    assert_eq!(
        kc.hooks().permission_policies(REALM, &permission_name),
        Some(("AFFIRMATIVE".to_string(), vec!["peer-token-exchange".to_string()]))
    );
    let unknown = admin(
        &kc,
        &token,
        Method::PUT,
        &format!("{server}/permission/scope/nope"),
        Some(update),
    )
    .await;
    assert_eq!(unknown.status(), 404);
    assert!(unknown.text().await.expect("body").is_empty(), "404 with an empty body");

    let disabled = admin(&kc, &token, Method::PUT, &path, Some(json!({ "enabled": false }))).await;
    assert_eq!(
        disabled.json::<Value>().await.expect("json"),
        json!({ "enabled": false })
    );
    assert_eq!(
        kc.hooks().permission_policies(REALM, &permission_name),
        None,
        "disabling removes what enabling made"
    );
    assert!(
        kc.hooks()
            .policy_names(REALM)
            .contains(&"peer-token-exchange".to_string()),
        "client policies stay"
    );
}

// A5 / Part C item 10: the switch can be flipped at run time through the hooks.
#[tokio::test]
async fn the_feature_switch_flips_at_run_time() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    let target = client_id(&kc, &token, "target").await;
    let path = format!("/clients/{target}/management/permissions");
    assert_eq!(admin(&kc, &token, Method::GET, &path, None).await.status(), 501);
    kc.hooks().set_fine_grained_authz_v1(true);
    assert_eq!(admin(&kc, &token, Method::GET, &path, None).await.status(), 200);
}
