//! An app without auth gets an HTTPRoute to its Service on the right Gateway listener and becomes Ready; the
//! route follows spec changes, and a pass with nothing to do writes nothing.

use gateway_api::httproutes::HttpRoute;
use serde_json::json;

use crate::support::{
    GATEWAY_NAMESPACE, INTERNAL_GATEWAY, PUBLIC_GATEWAY, SERVICE, SERVICE_PORT, Setup, World, breakdown_delta,
    condition, http_routes,
};

#[tokio::test]
async fn an_app_without_auth_gets_a_route_to_its_service_on_the_shared_https_listener_and_is_ready() {
    let world = World::start(Setup::default()).await;
    let ns = world.namespace.clone();
    world.wait_idle().await;
    let (writes, calls, breakdown) = (world.writes(), world.keycloak_requests(), world.write_breakdown());
    world
        .apply_app(
            "web",
            json!({"routing": {
                "routes": [{"pathPrefix": "/api"}, {"pathPrefix": "/exact", "pathType": "Exact"}],
                "annotations": {"argocd.argoproj.io/tracking-id": "team:web", "nebari.dev/tls-enabled": "user-value"},
            }}),
        )
        .await;
    let app = world.wait_ready("web").await;
    world.wait_idle().await;
    let first = (world.writes() - writes - 1, world.keycloak_requests() - calls);
    eprintln!(
        "MEASURE routing only: first reconcile: {} API writes, {} Keycloak requests; writes incl. the user's create: {:?}",
        first.0,
        first.1,
        breakdown_delta(&breakdown, &world.write_breakdown())
    );
    assert_eq!(first.1, 0, "an app without auth never calls Keycloak");

    let route = world
        .object(&http_routes(), &ns, "web-route")
        .await
        .expect("the HTTPRoute exists");
    assert_eq!(
        route["spec"]["parentRefs"],
        json!([{
            "group": "gateway.networking.k8s.io", "kind": "Gateway", "name": PUBLIC_GATEWAY,
            "namespace": GATEWAY_NAMESPACE, "sectionName": "https",
        }]),
        "no ClusterIssuer: the route uses the public Gateway's shared https listener"
    );
    assert_eq!(route["spec"]["hostnames"], json!(["web.example.com"]));
    let rules = route["spec"]["rules"].as_array().expect("rules");
    assert_eq!(rules.len(), 1, "one rule");
    assert_eq!(
        rules[0]["matches"][0]["path"],
        json!({"type": "PathPrefix", "value": "/api"})
    );
    assert_eq!(
        rules[0]["matches"][1]["path"],
        json!({"type": "Exact", "value": "/exact"})
    );
    let backends = rules[0]["backendRefs"].as_array().expect("backendRefs");
    assert_eq!(backends.len(), 1);
    assert_eq!(
        (backends[0]["name"].as_str(), backends[0]["port"].as_i64()),
        (Some(SERVICE), Some(i64::from(SERVICE_PORT)))
    );
    assert!(
        backends[0].get("namespace").is_none(),
        "same-namespace Service: no backend namespace"
    );
    let labels = &route["metadata"]["labels"];
    assert_eq!(labels["app.kubernetes.io/managed-by"], "nebari-operator");
    assert_eq!(labels["app.kubernetes.io/name"], "nebariapp");
    assert_eq!(labels["app.kubernetes.io/instance"], "web");
    let annotations = &route["metadata"]["annotations"];
    assert_eq!(
        annotations["argocd.argoproj.io/tracking-id"], "team:web",
        "the user's annotations are merged"
    );
    assert_eq!(
        annotations["nebari.dev/tls-enabled"], "true",
        "the operator's annotation wins"
    );
    let owner = &route["metadata"]["ownerReferences"][0];
    assert_eq!(
        (owner["kind"].as_str(), owner["name"].as_str()),
        (Some("NebariApp"), Some("web"))
    );
    assert_eq!(owner["uid"].as_str(), app.metadata.uid.as_deref());
    assert_eq!(owner["controller"], true);

    let status = app.status.clone().expect("status");
    assert_eq!(
        condition(&app, "RoutingReady").map(|c| (c.0, c.1)),
        Some(("True".into(), "HTTPRouteReady".into()))
    );
    assert_eq!(
        condition(&app, "TLSReady").map(|c| (c.0, c.1)),
        Some(("True".into(), "SharedGatewayListener".into()))
    );
    assert_eq!(condition(&app, "Ready").map(|c| c.0), Some("True".into()));
    assert_eq!(status.hostname.as_deref(), Some("web.example.com"));
    let gateway = status.gateway_ref.expect("gatewayRef");
    assert_eq!(
        (gateway.name.as_str(), gateway.namespace.as_str()),
        (PUBLIC_GATEWAY, GATEWAY_NAMESPACE)
    );
    assert!(
        status.client_secret_ref.is_none() && status.auth_config_hash.is_none(),
        "no auth, no client"
    );
    assert!(
        world.secret_data("web-oidc-client").await.is_none(),
        "no OIDC Secret without auth"
    );

    let warnings: Vec<_> = world
        .events("web")
        .await
        .into_iter()
        .filter(|e| e.type_.as_deref() == Some("Warning"))
        .map(|e| e.reason)
        .collect();
    assert!(
        warnings.is_empty(),
        "a healthy app without auth gets no Warning events: {warnings:?}"
    );

    let (writes, calls) = world.measure_noop_reconcile("routing only").await;
    assert_eq!(
        (writes, calls),
        (0, 0),
        "a reconcile with nothing to do writes nothing and calls no one"
    );
}

#[tokio::test]
async fn tls_off_on_the_internal_gateway_uses_its_http_listener_and_spec_changes_update_the_route() {
    let world = World::start(Setup::default()).await;
    let ns = world.namespace.clone();
    world
        .apply_app(
            "web",
            json!({"gateway": "internal", "routing": {"tls": {"enabled": false}}}),
        )
        .await;
    let app = world.wait_ready("web").await;
    assert_eq!(
        condition(&app, "TLSReady").map(|c| (c.0, c.1)),
        Some(("True".into(), "TLSDisabled".into()))
    );
    assert_eq!(
        app.status.and_then(|s| s.gateway_ref).map(|g| g.name),
        Some(INTERNAL_GATEWAY.to_string())
    );
    let route = world
        .object(&http_routes(), &ns, "web-route")
        .await
        .expect("the HTTPRoute exists");
    assert_eq!(route["spec"]["parentRefs"][0]["name"], INTERNAL_GATEWAY);
    assert_eq!(route["spec"]["parentRefs"][0]["sectionName"], "http");
    assert_eq!(route["metadata"]["annotations"]["nebari.dev/tls-enabled"], "false");
    assert!(
        route["spec"]["rules"][0]["matches"]
            .as_array()
            .is_none_or(|m| m.iter().all(|m| m["path"]["value"] == "/")),
        "no routes: every path goes to the Service"
    );

    // A new hostname, a path rule and an annotation: the route follows (labels and annotations included).
    world
        .apply_app(
            "web",
            json!({
                "hostname": "renamed.example.com",
                "gateway": "internal",
                "routing": {"tls": {"enabled": false}, "routes": [{"pathPrefix": "/v2"}], "annotations": {"team": "data"}},
            }),
        )
        .await;
    let route = world
        .wait_object(&http_routes(), &ns, "web-route", |r| {
            r["spec"]["hostnames"] == json!(["renamed.example.com"])
        })
        .await;
    assert_eq!(
        route["spec"]["rules"][0]["matches"][0]["path"],
        json!({"type": "PathPrefix", "value": "/v2"})
    );
    assert_eq!(route["metadata"]["annotations"]["team"], "data");
    let app = world.wait_ready("web").await;
    assert_eq!(
        app.status.and_then(|s| s.hostname).as_deref(),
        Some("renamed.example.com"),
        "status.hostname is current"
    );
}

#[tokio::test]
async fn removing_routing_deletes_the_route_and_says_routing_is_managed_elsewhere() {
    let world = World::start(Setup::default()).await;
    world.apply_app("web", json!({"routing": {}})).await;
    world.wait_ready("web").await;
    assert!(world.typed::<HttpRoute>("web-route").await.is_some());

    world.apply_app("web", json!({})).await;
    world.wait_typed_gone::<HttpRoute>("web-route").await;
    let message = world
        .wait_condition("web", "RoutingReady", "False", "RoutingNotConfigured")
        .await;
    assert!(message.contains("spec.routing is not set"), "{message}");
    let app = world.wait_ready("web").await;
    assert!(
        condition(&app, "TLSReady").is_none(),
        "TLS does not apply without routing: {:?}",
        app.status
    );
    assert!(
        app.status.and_then(|s| s.gateway_ref).is_none(),
        "no routing, no gatewayRef"
    );
}

/// `routing.timeouts` reaches every rule of the route as Gateway API's HTTPRoute timeouts (accepted by the real
/// Gateway API CRD); `request: 0s` lifts Envoy's 15 s default for streaming apps. A backend timeout longer than
/// the request's is refused at apply, as the HTTPRoute would refuse it later.
#[tokio::test]
async fn route_timeouts_reach_the_route_and_inconsistent_ones_are_refused_at_apply() {
    let world = World::start(Setup::default()).await;
    let ns = world.namespace.clone();
    world
        .apply_app(
            "stream",
            json!({"routing": {"timeouts": {"request": "0s", "backendRequest": "1h"}}}),
        )
        .await;
    world.wait_ready("stream").await;
    let route = world
        .object(&http_routes(), &ns, "stream-route")
        .await
        .expect("the route");
    assert_eq!(
        route["spec"]["rules"][0]["timeouts"],
        json!({"request": "0s", "backendRequest": "1h"})
    );

    let document = world.app_document(
        "slow",
        json!({"routing": {"timeouts": {"request": "30s", "backendRequest": "1m"}}}),
    );
    let stderr = world
        .cluster
        .kubectl()
        .run_with_stdin(&["apply", "-f", "-"], Some(&document.to_string()))
        .await
        .expect_failure("a backend timeout longer than the request's");
    assert!(
        stderr.contains("backendRequest must not be longer than request"),
        "{stderr}"
    );
}
