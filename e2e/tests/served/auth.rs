//! An app with auth at the gateway, served: Envoy sends a visitor to the real Keycloak's login page, a member of
//! the app's `auth.groups` who logs in reaches the backend with their access token, and a non-member who logs in
//! is refused by Envoy, never reaching the backend.

use base64::Engine;
use e2e::harness::conditions;
use serde_json::{Value, json};

use crate::support::{Visit, World};

/// The claims of a JWT (its payload), for assertions.
fn claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).expect("a JWT has a payload");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .expect("the payload is base64url");
    serde_json::from_slice(&bytes).expect("the payload is JSON")
}

#[tokio::test]
async fn a_member_logs_in_at_keycloak_and_reaches_the_app_with_a_token_and_a_non_member_is_refused_by_envoy() {
    let mut world = World::start(true).await;
    world.start_manager().await;
    let hostname = world.hostname("shop");
    let group = format!("shop-staff-{}", world.suffix);
    world
        .apply_app(
            "shop",
            json!({"routing": {}, "auth": {"enabled": true, "groups": [group]}}),
        )
        .await;
    let app = world.wait_app_ready("shop").await;
    let auth = conditions::get(&app, "AuthReady").expect("an AuthReady condition");
    assert_eq!(auth.status, "True", "{auth:?}");
    let realm = world.keycloak.as_ref().expect("the world has a realm");
    realm.create_user("alice", &[]).await;
    realm.add_membership("alice", &format!("/{group}")).await;
    realm.create_user("mallory", &[]).await;
    let url = format!("https://{hostname}/");

    // A member: sent to Keycloak's login page, then back to the app with the backend's page.
    let mut alice = Visit::new(world.visiting_client(&hostname));
    let login = alice.open(&url).await;
    assert!(
        login.url.starts_with(realm.direct_url()) && login.status == 200,
        "Envoy sent the visitor to Keycloak's login page: {login:?} via {:?}",
        alice.hops
    );
    let landed = alice.log_in(&login, "alice").await;
    assert_eq!(
        (landed.status, landed.url.as_str(), landed.body.as_str()),
        (200, url.as_str(), world.backend.page.as_str()),
        "after logging in the member is back at the app, served by the backend (via {:?})",
        alice.hops
    );
    let seen = world.backend.seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let token = seen
        .iter()
        .find_map(|s| {
            s.headers
                .get("authorization")
                .and_then(|h| h.to_str().ok())
                .and_then(|h| h.strip_prefix("Bearer "))
                .map(str::to_string)
        })
        .unwrap_or_else(|| panic!("the backend received the access token: {seen:?}"));
    let claims = claims(&token);
    assert_eq!(claims["preferred_username"], "alice", "{claims}");
    assert!(
        claims["nebari_gateway_groups"]
            .as_array()
            .is_some_and(|groups| groups.iter().any(|g| g == format!("/{group}").as_str())),
        "the token carries the group the gateway checks: {claims}"
    );

    // Someone outside the group logs in as well, and Envoy refuses them before the backend.
    let served_before = world.backend.seen.lock().unwrap_or_else(|p| p.into_inner()).len();
    let mut mallory = Visit::new(world.visiting_client(&hostname));
    let login = mallory.open(&url).await;
    let landed = mallory.log_in(&login, "mallory").await;
    assert_eq!(
        landed.status, 403,
        "a non-member is refused: {landed:?} via {:?}",
        mallory.hops
    );
    assert_eq!(
        world.backend.seen.lock().unwrap_or_else(|p| p.into_inner()).len(),
        served_before,
        "the backend never saw the non-member's request"
    );

    world.finish().await;
}
