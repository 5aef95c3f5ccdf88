//! Deleting an app removes what garbage collection cannot (Keycloak clients, the Gateway listener, the
//! Certificate) and GC takes the rest; when Keycloak is unreachable the finalizer stays and a condition and an
//! event say why, and an admin can skip the external cleanup with an annotation.

use e2e::harness::fault_proxy::DownMode;
use e2e::harness::{Deadline, wait_until};
use gateway_api::httproutes::HttpRoute;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use serde_json::json;

use crate::support::{
    ARGOCD_LISTENER, GATEWAY_NAMESPACE, PUBLIC_GATEWAY, Setup, World, certificates, listener, security_policies,
};

/// Waits until the app is gone (its finalizer released).
async fn wait_app_gone(world: &World, name: &str) {
    let api = world.apps();
    wait_until(&format!("NebariApp {name} to be deleted"), Deadline::secs(30), || {
        let api = api.clone();
        async move {
            match api.get_opt(name).await.map_err(|e| e.to_string())? {
                Some(app) => Err(format!(
                    "finalizers {:?}, status {:?}",
                    app.metadata.finalizers, app.status
                )),
                None => Ok(Some(())),
            }
        }
    })
    .await
}

fn full_spec() -> serde_json::Value {
    json!({
        "routing": {"publicRoutes": [{"pathPrefix": "/healthz"}]},
        "auth": {"enabled": true, "spaClient": {"enabled": true}, "deviceFlowClient": {"enabled": true}},
    })
}

#[tokio::test]
async fn deleting_an_app_removes_its_keycloak_clients_listener_certificate_secret_and_rbac() {
    let world = World::start(Setup {
        cluster_issuer: true,
        ..Setup::default()
    })
    .await;
    let ns = world.namespace.clone();
    let (cert, own) = (format!("web-{ns}-cert"), format!("tls-web-{ns}"));
    world.apply_app("web", full_spec()).await;
    world.issue_certificate(&cert).await;
    let app = world.wait_ready("web").await;
    assert!(
        app.metadata
            .finalizers
            .unwrap_or_default()
            .contains(&"reconcilers.nebari.dev/finalizer".to_string())
    );
    let clients = [format!("{ns}-web"), format!("{ns}-web-spa"), format!("{ns}-web-device")];
    for client in &clients {
        assert!(world.keycloak_client(client).await.is_some(), "client {client} exists");
    }
    let argocd_before = listener(&world.gateway(PUBLIC_GATEWAY).await, ARGOCD_LISTENER).cloned();

    world.delete_app("web").await;
    wait_app_gone(&world, "web").await;
    for client in &clients {
        assert!(
            world.keycloak_client(client).await.is_none(),
            "Keycloak client {client} is deleted"
        );
    }
    let gateway = world.gateway(PUBLIC_GATEWAY).await;
    assert!(listener(&gateway, &own).is_none(), "the listener is withdrawn");
    assert_eq!(
        listener(&gateway, ARGOCD_LISTENER).cloned(),
        argocd_before,
        "Argo CD's listener is untouched"
    );
    assert!(
        world.object(&certificates(), GATEWAY_NAMESPACE, &cert).await.is_none(),
        "the Certificate is deleted"
    );
    world.wait_typed_gone::<Secret>("web-oidc-client").await;
    world.wait_typed_gone::<Role>("web-oidc-secret-reader").await;
    world.wait_typed_gone::<RoleBinding>("web-oidc-secret-reader").await;
    world.wait_typed_gone::<HttpRoute>("web-route").await;
    world.wait_typed_gone::<HttpRoute>("web-public-route").await;
    world.wait_object_gone(&security_policies(), &ns, "web-security").await;
}

#[tokio::test]
async fn deletion_waits_for_an_unreachable_keycloak_says_why_and_finishes_once_it_is_back() {
    let world = World::start(Setup::default()).await;
    let client = format!("{}-web", world.namespace);
    world.apply_app("web", full_spec()).await;
    world.wait_ready("web").await;

    world.keycloak.proxy().go_down(DownMode::Refuse);
    world.delete_app("web").await;
    let message = world.wait_condition("web", "Ready", "False", "DeletionBlocked").await;
    assert!(
        message.contains("nebari.dev/skip-external-cleanup=true"),
        "the condition says how to get out: {message}"
    );
    world
        .wait_condition("web", "AuthReady", "False", "DeletionBlocked")
        .await;
    let note = world.wait_event("web", "CleanupBlocked").await;
    assert!(
        note.contains("Keycloak") && note.contains("nebari.dev/skip-external-cleanup"),
        "{note}"
    );
    assert!(
        world.apps().get_opt("web").await.expect("read").is_some(),
        "the finalizer holds the app"
    );

    world.keycloak.proxy().come_up();
    wait_app_gone(&world, "web").await;
    assert!(
        world.keycloak_client(&client).await.is_none(),
        "the Keycloak client is deleted once Keycloak is back"
    );
}

#[tokio::test]
async fn the_skip_annotation_deletes_an_app_without_keycloak_cleanup() {
    let world = World::start(Setup::default()).await;
    let client = format!("{}-web", world.namespace);
    world
        .apply_app("web", json!({"routing": {}, "auth": {"enabled": true}}))
        .await;
    world.wait_ready("web").await;

    world.keycloak.proxy().go_down(DownMode::Unavailable);
    world.delete_app("web").await;
    world.wait_condition("web", "Ready", "False", "DeletionBlocked").await;
    world
        .annotate_app("web", json!({"nebari.dev/skip-external-cleanup": "true"}))
        .await;
    wait_app_gone(&world, "web").await;
    world.wait_event("web", "ExternalCleanupSkipped").await;
    world.keycloak.proxy().come_up();
    assert!(
        world.keycloak_client(&client).await.is_some(),
        "the Keycloak client was left in place, as asked"
    );
}

#[tokio::test]
async fn deleting_an_app_that_never_used_keycloak_does_not_wait_for_it() {
    let world = World::start(Setup::default()).await;
    world.apply_app("web", json!({"routing": {}})).await;
    world.wait_ready("web").await;
    world.keycloak.proxy().go_down(DownMode::Refuse);
    world.delete_app("web").await;
    wait_app_gone(&world, "web").await;
    world.wait_event("web", "Deleted").await;
    let reasons: Vec<_> = world.events("web").await.into_iter().filter_map(|e| e.reason).collect();
    assert!(
        !reasons.iter().any(|r| r == "CleanupBlocked"),
        "never blocked on Keycloak: {reasons:?}"
    );
}
