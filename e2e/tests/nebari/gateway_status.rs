//! Ready means accepted by the gateway, not just applied: the HTTPRoutes' `status.parents`, the SecurityPolicy's
//! `status.ancestors` and the app's listener in the Gateway's `status.listeners` decide RoutingReady, AuthReady
//! and TLSReady. The stand-in Envoy Gateway accepts, refuses with a reason, or stays silent, and a change of its
//! report flips the app's condition at once (the children and the Gateways are watched).

use e2e::fixtures::envoy_gateway::Answer;
use serde_json::json;

use crate::support::{GATEWAY_NAMESPACE, PUBLIC_GATEWAY, Setup, World, condition};

#[tokio::test]
async fn a_route_the_gateway_refuses_or_has_not_reported_on_keeps_the_app_from_ready() {
    let world = World::start(Setup::default()).await;
    let ns = world.namespace.clone();
    let gateway = &world.envoy_gateway;

    // Silent: the route exists but nobody said it works.
    gateway.answer("HTTPRoute", &ns, "web-route", Answer::Silent).await;
    world.apply_app("web", json!({"routing": {}})).await;
    let message = world
        .wait_condition("web", "RoutingReady", "Unknown", "PendingRouteAcceptance")
        .await;
    assert!(
        message.contains("web-route") && message.contains(PUBLIC_GATEWAY),
        "{message}"
    );
    let app = world.app("web").await;
    assert_ne!(condition(&app, "Ready").map(|c| c.0), Some("True".to_string()));
    let settled = world.wait_idle().await;

    // Refused: a backend the route may not reference.
    gateway
        .answer(
            "HTTPRoute",
            &ns,
            "web-route",
            Answer::refuse(
                "ResolvedRefs",
                "RefNotPermitted",
                "backendRef web/8080 is not permitted",
            ),
        )
        .await;
    let message = world
        .wait_condition("web", "RoutingReady", "False", "HTTPRouteRefsNotResolved")
        .await;
    assert!(
        message.contains("RefNotPermitted") && message.contains("ReferenceGrant"),
        "{message}"
    );
    let app = world.app("web").await;
    assert_eq!(
        condition(&app, "Ready").map(|c| (c.0, c.1)),
        Some(("False".to_string(), "HTTPRouteRefsNotResolved".to_string()))
    );

    // Accepted: Ready, at once.
    gateway.answer("HTTPRoute", &ns, "web-route", Answer::Accept).await;
    world.wait_ready("web").await;
    let after = world.wait_idle().await;
    assert!(
        after - settled < 20,
        "reports drive a bounded number of reconciles, not a loop: {settled} -> {after}"
    );
}

#[tokio::test]
async fn a_security_policy_the_gateway_refuses_is_reported_on_auth_ready() {
    let world = World::start(Setup::default()).await;
    let ns = world.namespace.clone();
    world
        .envoy_gateway
        .answer(
            "SecurityPolicy",
            &ns,
            "web-security",
            Answer::refuse("Accepted", "Invalid", "OIDC provider discovery failed"),
        )
        .await;
    world
        .apply_app("web", json!({"routing": {}, "auth": {"enabled": true}}))
        .await;
    let message = world
        .wait_condition("web", "AuthReady", "False", "SecurityPolicyNotAccepted")
        .await;
    assert!(
        message.contains("web-security") && message.contains("authentication is not enforced"),
        "{message}"
    );
    // Keycloak's side was done: the gateway's refusal does not make every pass provision again.
    let (_, keycloak_calls) = world.measure_noop_reconcile("policy refused").await;
    assert_eq!(keycloak_calls, 0, "no Keycloak calls while only the gateway refuses");

    world
        .envoy_gateway
        .answer("SecurityPolicy", &ns, "web-security", Answer::Accept)
        .await;
    world.wait_ready("web").await;
}

#[tokio::test]
async fn the_apps_listener_must_be_programmed_and_a_conflict_is_reported_on_tls_ready() {
    let world = World::start(Setup {
        cluster_issuer: true,
        ..Setup::default()
    })
    .await;
    let ns = world.namespace.clone();
    let listener = format!("{PUBLIC_GATEWAY}/tls-web-{ns}");
    world
        .envoy_gateway
        .answer(
            "Listener",
            GATEWAY_NAMESPACE,
            &listener,
            Answer::refuse(
                "Conflicted",
                "HostnameConflict",
                "another listener serves web.example.com",
            ),
        )
        .await;
    world.apply_app("web", json!({"routing": {}})).await;
    world.issue_certificate(&format!("web-{ns}-cert")).await;
    let message = world
        .wait_condition("web", "TLSReady", "False", "ListenerConflicted")
        .await;
    assert!(
        message.contains("HostnameConflict") && message.contains(&format!("tls-web-{ns}")),
        "{message}"
    );

    world
        .envoy_gateway
        .answer("Listener", GATEWAY_NAMESPACE, &listener, Answer::Accept)
        .await;
    world.wait_ready("web").await;
}

/// A route keeps the acceptance its Gateway gave it after the Gateway is deleted, but nothing serves it then:
/// RoutingReady turns False with `GatewayNotFound` (the Gateways are watched), and True again once the Gateway is
/// back.
#[tokio::test]
async fn an_app_whose_gateway_is_deleted_is_not_routing_ready_until_the_gateway_is_back() {
    let world = World::start(Setup::default()).await;
    world.apply_app("web", json!({"routing": {}})).await;
    world.wait_ready("web").await;

    e2e::fixtures::standins::gateways(&world.cluster.client(), GATEWAY_NAMESPACE)
        .delete(PUBLIC_GATEWAY, &Default::default())
        .await
        .expect("delete the Gateway");
    let message = world
        .wait_condition("web", "RoutingReady", "False", "GatewayNotFound")
        .await;
    assert!(
        message.contains(PUBLIC_GATEWAY) && message.contains("web-route"),
        "{message}"
    );
    let app = world.app("web").await;
    assert_eq!(
        condition(&app, "Ready").map(|c| (c.0, c.1)),
        Some(("False".to_string(), "GatewayNotFound".to_string()))
    );

    world.create_gateways().await;
    world
        .wait_condition("web", "RoutingReady", "True", "HTTPRouteReady")
        .await;
    world.wait_ready("web").await;
}

/// A backend in another namespace without its ReferenceGrant: the condition names the exact grant needed (where,
/// from and to), which an admin of that namespace creates; the operator never writes into it.
#[tokio::test]
async fn a_cross_namespace_backend_without_its_grant_names_the_grant_needed() {
    let world = World::start(Setup::default()).await;
    let ns = world.namespace.clone();
    // The backend lives in a namespace of its own.
    let backends = world.cluster.create_namespace("backends").await;
    let service = sandbox::surroundings::nebari::backend_service("shop", &backends, 80);
    kube::Api::<k8s_openapi::api::core::v1::Service>::namespaced(world.cluster.client(), &backends)
        .create(&Default::default(), &service)
        .await
        .expect("create the backend Service");
    world
        .envoy_gateway
        .answer(
            "HTTPRoute",
            &ns,
            "shop-route",
            Answer::refuse("ResolvedRefs", "RefNotPermitted", "backendRef shop/80 is not permitted"),
        )
        .await;
    world
        .apply_app(
            "shop",
            json!({"routing": {}, "service": {"name": "shop", "port": 80, "namespace": backends}}),
        )
        .await;
    let message = world
        .wait_condition("shop", "RoutingReady", "False", "HTTPRouteRefsNotResolved")
        .await;
    assert!(
        message.contains(&format!(
            "a ReferenceGrant in namespace {backends} with from {{group: gateway.networking.k8s.io, kind: \
             HTTPRoute, namespace: {ns}}} and to {{group: \"\", kind: Service, name: shop}}"
        )),
        "{message}"
    );
}
