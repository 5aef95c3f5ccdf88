//! Public paths bypass auth through a second HTTPRoute only while auth is enforced: removing them (or turning
//! auth off) deletes that route, so no unauthenticated path outlives its configuration; turning auth off also
//! removes the SecurityPolicy, the OIDC Secret, its RBAC and the Keycloak client.

use gateway_api::httproutes::HttpRoute;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use serde_json::json;

use crate::support::{Setup, World, condition, http_routes, security_policies};

#[tokio::test]
async fn public_routes_added_then_removed_leave_no_public_route_and_auth_off_deletes_the_security_policy() {
    let world = World::start(Setup::default()).await;
    let ns = world.namespace.clone();
    let public = json!([{"pathPrefix": "/healthz"}, {"pathPrefix": "/static", "pathType": "PathPrefix"}]);
    world
        .apply_app("web", json!({"routing": {}, "auth": {"enabled": true}}))
        .await;
    world.wait_ready("web").await;
    assert!(world.typed::<HttpRoute>("web-public-route").await.is_none());

    // publicRoutes added to the running app: the bypass route appears.
    world
        .apply_app(
            "web",
            json!({"routing": {"publicRoutes": public}, "auth": {"enabled": true}}),
        )
        .await;
    let route = world
        .wait_object(&http_routes(), &ns, "web-public-route", |_| true)
        .await;
    world.wait_ready("web").await;
    assert_eq!(route["metadata"]["labels"]["nebari.dev/route-type"], "public");
    assert_eq!(route["spec"]["hostnames"], json!(["web.example.com"]));
    assert_eq!(route["spec"]["parentRefs"][0]["sectionName"], "https");
    let matches = &route["spec"]["rules"][0]["matches"];
    assert_eq!(
        matches[0]["path"],
        json!({"type": "Exact", "value": "/healthz"}),
        "Exact by default"
    );
    assert_eq!(matches[1]["path"], json!({"type": "PathPrefix", "value": "/static"}));
    assert_eq!(route["spec"]["rules"][0]["backendRefs"][0]["name"], "web");
    let policy = world
        .object(&security_policies(), &ns, "web-security")
        .await
        .expect("policy");
    assert_eq!(policy["spec"]["targetRefs"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        policy["spec"]["targetRefs"][0]["name"], "web-route",
        "the policy never covers the public route"
    );

    // publicRoutes removed: the unauthenticated route goes (the original left it behind).
    world
        .apply_app("web", json!({"routing": {}, "auth": {"enabled": true}}))
        .await;
    world.wait_typed_gone::<HttpRoute>("web-public-route").await;
    assert!(
        world.typed::<HttpRoute>("web-route").await.is_some(),
        "the main route stays"
    );
    world.wait_ready("web").await;

    // Public paths again, then auth off: nothing is enforced, so there is no public route and no policy.
    world
        .apply_app(
            "web",
            json!({"routing": {"publicRoutes": public}, "auth": {"enabled": true}}),
        )
        .await;
    world
        .wait_object(&http_routes(), &ns, "web-public-route", |_| true)
        .await;
    world
        .apply_app(
            "web",
            json!({"routing": {"publicRoutes": public}, "auth": {"enabled": false}}),
        )
        .await;
    world.wait_object_gone(&security_policies(), &ns, "web-security").await;
    world.wait_typed_gone::<HttpRoute>("web-public-route").await;
    world.wait_typed_gone::<Secret>("web-oidc-client").await;
    world.wait_typed_gone::<Role>("web-oidc-secret-reader").await;
    world.wait_typed_gone::<RoleBinding>("web-oidc-secret-reader").await;
    assert!(
        world.keycloak_client(&format!("{ns}-web")).await.is_none(),
        "the Keycloak client is deleted"
    );
    let app = world.wait_ready("web").await;
    assert_eq!(
        condition(&app, "AuthReady").map(|c| (c.0, c.1)),
        Some(("False".into(), "AuthDisabled".into()))
    );
    let status = app.status.expect("status");
    assert!(
        status.client_secret_ref.is_none() && status.auth_config_hash.is_none(),
        "{status:?}"
    );
    let note = world.wait_event("web", "PublicRoutesIgnored").await;
    assert!(note.contains("publicRoutes"), "{note}");
}

#[tokio::test]
async fn public_routes_need_auth_enforced_at_the_gateway() {
    let world = World::start(Setup::default()).await;
    let public = json!([{"pathPrefix": "/healthz"}]);
    world
        .apply_app(
            "web",
            json!({"routing": {"publicRoutes": public}, "auth": {"enabled": true, "enforceAtGateway": false}}),
        )
        .await;
    world.wait_ready("web").await;
    assert!(
        world.typed::<HttpRoute>("web-public-route").await.is_none(),
        "the app does OIDC itself: no bypass"
    );
    world.wait_event("web", "PublicRoutesIgnored").await;
}
