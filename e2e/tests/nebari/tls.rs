//! TLS on: the app gets a cert-manager Certificate and an HTTPS listener of its own on the shared Gateway, owned
//! by server-side apply under its own field manager, so another tool's listener on the same Gateway is never
//! touched. TLS off, or moving to the other Gateway, withdraws what TLS made.

use std::collections::BTreeMap;

use e2e::fixtures::standins;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::support::{
    ARGOCD_LISTENER, ARGOCD_MANAGER, CLUSTER_ISSUER, GATEWAY_NAMESPACE, INTERNAL_GATEWAY, PUBLIC_GATEWAY, Setup, World,
    breakdown_delta, certificates, condition, http_routes, listener, listener_names, listener_owners, secrets,
};

/// Argo CD's listener on `gateway` and who owns it, to compare before and after.
fn argocd_state(gateway: &Value) -> (Value, Vec<String>) {
    (
        listener(gateway, ARGOCD_LISTENER)
            .cloned()
            .expect("Argo CD's listener is there"),
        listener_owners(gateway, ARGOCD_LISTENER),
    )
}

#[tokio::test]
async fn tls_adds_a_certificate_and_an_own_listener_leaving_other_listeners_alone_and_withdraws_them_when_turned_off() {
    let world = World::start(Setup {
        cluster_issuer: true,
        ..Setup::default()
    })
    .await;
    let ns = world.namespace.clone();
    let (cert, tls_secret, own) = (
        format!("web-{ns}-cert"),
        format!("web-{ns}-tls"),
        format!("tls-web-{ns}"),
    );
    let public_before = world.gateway(PUBLIC_GATEWAY).await;
    let internal_before = world.gateway(INTERNAL_GATEWAY).await;
    assert_eq!(argocd_state(&public_before).1, vec![ARGOCD_MANAGER.to_string()]);
    world.wait_idle().await;
    let (writes, breakdown) = (world.writes(), world.write_breakdown());

    world.apply_app("web", json!({"routing": {}})).await;

    // The Certificate, in the gateway namespace, for the hostname, mapped back to the app by labels.
    let certificate = world
        .wait_object(&certificates(), GATEWAY_NAMESPACE, &cert, |_| true)
        .await;
    assert_eq!(certificate["spec"]["secretName"], tls_secret.as_str());
    assert_eq!(certificate["spec"]["dnsNames"], json!(["web.example.com"]));
    assert_eq!(certificate["spec"]["issuerRef"]["name"], CLUSTER_ISSUER);
    assert_eq!(certificate["spec"]["issuerRef"]["kind"], "ClusterIssuer");
    assert_eq!(certificate["metadata"]["labels"]["nebari.dev/nebariapp-name"], "web");
    assert_eq!(
        certificate["metadata"]["labels"]["nebari.dev/nebariapp-namespace"],
        ns.as_str()
    );

    // The listener, owned by the app's own field manager.
    let public = world.wait_listeners(PUBLIC_GATEWAY, |names| names.contains(&own)).await;
    let mine = listener(&public, &own).expect("the app's listener");
    assert_eq!(mine["hostname"], "web.example.com");
    assert_eq!(
        (mine["port"].as_i64(), mine["protocol"].as_str()),
        (Some(443), Some("HTTPS"))
    );
    assert_eq!(mine["tls"]["mode"], "Terminate");
    assert_eq!(mine["tls"]["certificateRefs"][0]["name"], tls_secret.as_str());
    assert_eq!(mine["tls"]["certificateRefs"][0]["namespace"], GATEWAY_NAMESPACE);
    assert_eq!(
        mine["allowedRoutes"]["namespaces"]["selector"]["matchLabels"]["kubernetes.io/metadata.name"],
        ns.as_str()
    );
    assert_eq!(
        listener_owners(&public, &own),
        vec![format!("platform-operator-nebariapp-{ns}-web")]
    );

    // Not issued yet: TLSReady says so, but routing is not blocked.
    let message = world
        .wait_condition("web", "TLSReady", "False", "CertificateNotReady")
        .await;
    assert!(message.contains(&cert), "{message}");
    world
        .wait_condition("web", "RoutingReady", "True", "HTTPRouteReady")
        .await;
    world
        .wait_condition("web", "Ready", "False", "CertificateNotReady")
        .await;
    let route = world
        .object(&http_routes(), &ns, "web-route")
        .await
        .expect("the route exists before issuance");
    assert_eq!(route["spec"]["parentRefs"][0]["sectionName"], own.as_str());
    assert_eq!(route["metadata"]["annotations"]["nebari.dev/tls-enabled"], "true");

    // cert-manager issues: the Certificate watch flips TLSReady at once.
    standins::issue_certificate(&world.cluster.client(), GATEWAY_NAMESPACE, &cert)
        .await
        .expect("issue");
    let app = world.wait_ready("web").await;
    world.wait_idle().await;
    // Not counted: the user's create and the stand-in cert-manager's Secret and Certificate status.
    eprintln!(
        "MEASURE TLS: first reconcile (until issued and Ready): {} API writes; incl. the user's and cert-manager's: {:?}",
        world.writes() - writes - 3,
        breakdown_delta(&breakdown, &world.write_breakdown())
    );
    assert_eq!(
        condition(&app, "TLSReady").map(|c| c.1),
        Some("TLSConfigured".to_string())
    );

    // A healthy app's history holds no Warning (issuance under way is announced as Normal), and its events carry
    // the lastTimestamp `kubectl get events --sort-by=.lastTimestamp` orders by.
    let events = e2e::harness::events::about(&world.cluster.client(), &ns, "web").await;
    let reasons: Vec<_> = events.iter().map(|e| (e.type_.clone(), e.reason.clone())).collect();
    assert!(
        reasons.iter().any(|(_, r)| r.as_deref() == Some("CertificateNotReady")),
        "the pending certificate was announced: {reasons:?}"
    );
    assert!(
        reasons.iter().all(|(t, _)| t.as_deref() == Some("Normal")),
        "a healthy app announced a Warning: {reasons:?}"
    );
    assert!(
        events
            .iter()
            .all(|e| e.deprecated_last_timestamp.is_some() && e.deprecated_count == Some(1)),
        "events without lastTimestamp/count: {events:?}"
    );
    let listed = world
        .cluster
        .kubectl()
        .run(&[
            "get",
            "events",
            "-n",
            &ns,
            "--sort-by=.lastTimestamp",
            "-o",
            "jsonpath={.items[*].reason}",
        ])
        .await
        .expect_success("kubectl get events --sort-by=.lastTimestamp");
    assert!(listed.contains("CertificateNotReady"), "{listed}");

    // Everyone else's listeners are exactly as before, still owned by their managers.
    let public = world.gateway(PUBLIC_GATEWAY).await;
    assert_eq!(
        argocd_state(&public),
        argocd_state(&public_before),
        "Argo CD's listener is untouched"
    );
    for shared in ["http", "https"] {
        assert_eq!(
            listener(&public, shared),
            listener(&public_before, shared),
            "listener {shared} is untouched"
        );
    }
    assert_eq!(
        listener_names(&world.gateway(INTERNAL_GATEWAY).await),
        listener_names(&internal_before)
    );

    let (writes, calls) = world.measure_noop_reconcile("TLS").await;
    assert_eq!(
        (writes, calls),
        (0, 0),
        "a reconcile with nothing to do writes nothing (no Gateway rewrite)"
    );

    // TLS off: the listener and the Certificate go, the route moves to the http listener.
    world
        .apply_app("web", json!({"routing": {"tls": {"enabled": false}}}))
        .await;
    let public = world
        .wait_listeners(PUBLIC_GATEWAY, |names| !names.contains(&own))
        .await;
    world.wait_object_gone(&certificates(), GATEWAY_NAMESPACE, &cert).await;
    // cert-manager leaves the Secret it issued behind; the operator deletes it with the Certificate.
    world.wait_object_gone(&secrets(), GATEWAY_NAMESPACE, &tls_secret).await;
    let route = world
        .wait_object(&http_routes(), &ns, "web-route", |r| {
            r["spec"]["parentRefs"][0]["sectionName"] == "http"
        })
        .await;
    assert_eq!(route["metadata"]["annotations"]["nebari.dev/tls-enabled"], "false");
    assert_eq!(
        argocd_state(&public),
        argocd_state(&public_before),
        "Argo CD's listener survives the withdrawal"
    );
    assert_eq!(listener_names(&public), listener_names(&public_before));
    world.wait_ready("web").await;

    // TLS on again, on the internal Gateway: the listener lands there and only there.
    world
        .apply_app("web", json!({"gateway": "internal", "routing": {}}))
        .await;
    let internal = world
        .wait_listeners(INTERNAL_GATEWAY, |names| names.contains(&own))
        .await;
    world.issue_certificate(&cert).await;
    world.wait_ready("web").await;
    assert!(!world.listener_names(PUBLIC_GATEWAY).await.contains(&own));
    assert_eq!(argocd_state(&internal), argocd_state(&internal_before));
    let route = world.object(&http_routes(), &ns, "web-route").await.expect("route");
    assert_eq!(route["spec"]["parentRefs"][0]["name"], INTERNAL_GATEWAY);
    assert_eq!(route["spec"]["parentRefs"][0]["sectionName"], own.as_str());

    // And back to public: it moves again.
    world
        .apply_app("web", json!({"gateway": "public", "routing": {}}))
        .await;
    world.wait_listeners(PUBLIC_GATEWAY, |names| names.contains(&own)).await;
    let internal = world
        .wait_listeners(INTERNAL_GATEWAY, |names| !names.contains(&own))
        .await;
    assert_eq!(listener_names(&internal), listener_names(&internal_before));
    world.wait_ready("web").await;
}

#[tokio::test]
async fn a_listener_clashing_with_another_tools_listener_is_reported_and_the_other_listener_kept() {
    let world = World::start(Setup {
        cluster_issuer: true,
        ..Setup::default()
    })
    .await;
    world
        .apply_argocd_listener(PUBLIC_GATEWAY, "web.example.com")
        .await
        .expect("Argo CD takes web.example.com");
    let before = world.gateway(PUBLIC_GATEWAY).await;

    world.apply_app("web", json!({"routing": {}})).await;
    let message = world
        .wait_condition("web", "TLSReady", "False", "GatewayListenerConflict")
        .await;
    assert!(
        message.contains("web.example.com") && message.contains(PUBLIC_GATEWAY),
        "{message}"
    );
    world
        .wait_condition("web", "Ready", "False", "GatewayListenerConflict")
        .await;
    let after = world.gateway(PUBLIC_GATEWAY).await;
    assert_eq!(listener_names(&after), listener_names(&before), "nothing was added");
    assert_eq!(argocd_state(&after), argocd_state(&before), "nothing was taken over");
    world.wait_event("web", "GatewayListenerConflict").await;
}

#[tokio::test]
async fn a_user_provided_tls_secret_is_served_by_the_listener_and_checked() {
    let world = World::start(Setup {
        cluster_issuer: true,
        ..Setup::default()
    })
    .await;
    let ns = world.namespace.clone();
    let own = format!("tls-web-{ns}");
    world
        .apply_app("web", json!({"routing": {"tls": {"secretName": "web-custom-tls"}}}))
        .await;

    let public = world.wait_listeners(PUBLIC_GATEWAY, |names| names.contains(&own)).await;
    assert_eq!(
        listener(&public, &own).expect("listener")["tls"]["certificateRefs"][0]["name"],
        "web-custom-tls"
    );
    world
        .wait_condition("web", "TLSReady", "False", "UserProvidedSecretNotFound")
        .await;
    assert!(
        world
            .object(&certificates(), GATEWAY_NAMESPACE, &format!("web-{ns}-cert"))
            .await
            .is_none(),
        "no Certificate is issued for a user-provided Secret"
    );

    // The Secret appears: the app notices without waiting for a poll.
    let secrets: Api<Secret> = Api::namespaced(world.cluster.client(), GATEWAY_NAMESPACE);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("web-custom-tls".into()),
            annotations: Some(BTreeMap::from([(
                "nebari.dev/allowed-namespaces".to_string(),
                ns.clone(),
            )])),
            ..Default::default()
        },
        type_: Some("kubernetes.io/tls".into()),
        data: Some(BTreeMap::from([
            ("tls.crt".to_string(), ByteString(b"certificate".to_vec())),
            ("tls.key".to_string(), ByteString(b"key".to_vec())),
        ])),
        ..Default::default()
    };
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .expect("create the TLS Secret");
    world
        .wait_condition("web", "TLSReady", "True", "UserProvidedSecretReady")
        .await;
    world.wait_ready("web").await;
}

#[tokio::test]
async fn an_installation_of_the_original_operator_is_taken_over_and_its_listener_withdrawn_when_tls_goes_off() {
    let mut world = World::start(Setup {
        cluster_issuer: true,
        manager: false,
        ..Setup::default()
    })
    .await;
    let ns = world.namespace.clone();
    let own = format!("tls-web-{ns}");

    // What nebari-operator left: its finalizer on the app and its listener, written by a whole-Gateway update.
    let mut document = world.app_document("web", json!({"routing": {}}));
    document["metadata"]["finalizers"] = json!(["apps.nebari.dev/finalizer"]);
    world.cluster.kubectl().apply(&document.to_string()).await;
    let gateways = standins::gateways(&world.cluster.client(), GATEWAY_NAMESPACE);
    let mut gateway = gateways.get(PUBLIC_GATEWAY).await.expect("read the Gateway");
    let old_listener = json!({
        "name": own, "hostname": "web.example.com", "port": 443, "protocol": "HTTPS",
        "tls": {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": format!("web-{ns}-tls")}]},
    });
    gateway.data["spec"]["listeners"]
        .as_array_mut()
        .expect("listeners")
        .push(old_listener);
    let update = PostParams {
        field_manager: Some("nebari-operator".into()),
        ..Default::default()
    };
    gateways
        .replace(PUBLIC_GATEWAY, &update, &gateway)
        .await
        .expect("the old operator's whole-Gateway update");
    let before = world.gateway(PUBLIC_GATEWAY).await;
    assert!(listener_owners(&before, &own).contains(&"nebari-operator".to_string()));

    world.start_manager(true).await;
    world
        .wait_condition("web", "RoutingReady", "True", "HTTPRouteReady")
        .await;
    let app = world.app("web").await;
    assert_eq!(
        app.metadata.finalizers,
        Some(vec!["reconcilers.nebari.dev/finalizer".to_string()]),
        "the old finalizer is migrated"
    );
    let gateway = world
        .wait_object(&crate::support::gateways(), GATEWAY_NAMESPACE, PUBLIC_GATEWAY, |g| {
            listener_owners(g, &own).contains(&format!("platform-operator-nebariapp-{ns}-web"))
        })
        .await;
    assert_eq!(
        listener_names(&gateway).iter().filter(|n| **n == own).count(),
        1,
        "taken over, not duplicated"
    );
    assert_eq!(
        listener(&gateway, &own).map(|l| l["allowedRoutes"]["namespaces"]["from"].clone()),
        Some(json!("Selector")),
        "brought to the desired shape"
    );

    world
        .apply_app("web", json!({"routing": {"tls": {"enabled": false}}}))
        .await;
    let gateway = world
        .wait_listeners(PUBLIC_GATEWAY, |names| !names.contains(&own))
        .await;
    assert_eq!(
        argocd_state(&gateway),
        argocd_state(&before),
        "Argo CD's listener is untouched"
    );
    world.wait_ready("web").await;
}

/// `count` listeners of the platform team's own on `gateway` (as many apps with TLS would hold), under a field
/// manager of theirs; `0` removes them all.
async fn apply_filler_listeners(world: &World, gateway: &str, count: usize) {
    let listeners: Vec<Value> = (0..count)
        .map(|i| {
            json!({
                "name": format!("filler-{i}"),
                "hostname": format!("filler-{i}.example.com"),
                "port": 443,
                "protocol": "HTTPS",
                "tls": {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": "filler-tls"}]},
                "allowedRoutes": {"namespaces": {"from": "Same"}},
            })
        })
        .collect();
    let class = world.gateway(gateway).await["spec"]["gatewayClassName"].clone();
    let body = json!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": gateway, "namespace": GATEWAY_NAMESPACE},
        "spec": {"gatewayClassName": class, "listeners": listeners},
    });
    standins::gateways(&world.cluster.client(), GATEWAY_NAMESPACE)
        .patch(gateway, &PatchParams::apply("more-listeners"), &Patch::Apply(&body))
        .await
        .unwrap_or_else(|e| panic!("apply {count} filler listeners to {gateway}: {e}"));
}

#[tokio::test]
async fn a_gateway_with_no_room_for_another_listener_is_reported_full_and_the_app_gets_its_listener_once_there_is_room()
{
    let world = World::start(Setup {
        cluster_issuer: true,
        ..Setup::default()
    })
    .await;
    let ns = world.namespace.clone();
    let own = format!("tls-web-{ns}");
    let before = world.listener_names(PUBLIC_GATEWAY).await.len();
    apply_filler_listeners(&world, PUBLIC_GATEWAY, 64 - before).await;
    assert_eq!(world.listener_names(PUBLIC_GATEWAY).await.len(), 64);

    world.apply_app("web", json!({"routing": {}})).await;
    let message = world.wait_condition("web", "TLSReady", "False", "GatewayFull").await;
    assert!(
        message.contains("64 listeners") && message.contains(PUBLIC_GATEWAY) && message.contains(&own),
        "{message}"
    );
    world.wait_condition("web", "Ready", "False", "GatewayFull").await;
    assert!(!world.listener_names(PUBLIC_GATEWAY).await.contains(&own));

    // Room again (the platform team drops one of theirs): the app takes it without being touched.
    apply_filler_listeners(&world, PUBLIC_GATEWAY, 63 - before).await;
    world.wait_listeners(PUBLIC_GATEWAY, |names| names.contains(&own)).await;
    world.issue_certificate(&format!("web-{ns}-cert")).await;
    world.wait_ready("web").await;
}
