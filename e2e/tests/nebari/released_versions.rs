//! Takeover of what nebari-operator left (its v0.1.0 shape, which its alpha tags share: the finalizer
//! `apps.nebari.dev/finalizer`, the `<app>-oidc-client` Secret with `client-id`/`client-secret`/`issuer-url`, its
//! status with `authConfigHash`, and the confidential client `<ns>-<app>` with `https` and `http` redirect URIs and
//! `webOrigins: ["*"]`). Started with `--keycloak-adopt-unowned-clients`, this operator takes the app over keeping
//! the client and its secret, with one Keycloak write: the owner record, which carries the narrowing of the
//! original's redirect URIs and origins in the same request (docs/migration.md).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

use e2e::harness::{Deadline, wait_until};

use crate::support::{Setup, World, condition};

#[tokio::test]
async fn nebari_operators_app_and_client_are_taken_over_with_only_the_documented_keycloak_writes() {
    let mut world = World::start(Setup {
        manager: false,
        manager_args: vec!["--keycloak-adopt-unowned-clients".to_string()],
        ..Setup::default()
    })
    .await;
    let ns = world.namespace.clone();
    let client_id = format!("{ns}-web");
    let host = "web.example.com";
    let secret_value = "Original0perator5ecretValue00001";
    // The client as nebari-operator created it.
    world
        .keycloak
        .create_client(json!({
            "clientId": client_id, "publicClient": false, "secret": secret_value,
            "standardFlowEnabled": true, "webOrigins": ["*"],
            "redirectUris": [format!("https://{host}/oauth2/callback"), format!("http://{host}/oauth2/callback")],
            "attributes": {"post.logout.redirect.uris": format!("https://{host}/*##http://{host}/*")},
        }))
        .await;

    let secrets: kube::Api<Secret> = kube::Api::namespaced(world.cluster.client(), &ns);
    let labels = BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), "web".to_string()),
        ("app.kubernetes.io/instance".to_string(), "web".to_string()),
        (
            "app.kubernetes.io/managed-by".to_string(),
            "nebari-operator".to_string(),
        ),
    ]);
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "web-oidc-client", "labels": labels},
        "type": "Opaque",
        "stringData": {"client-id": client_id, "client-secret": secret_value,
                       "issuer-url": format!("https://keycloak.example.com/realms/{}", world.realm())},
    }))
    .expect("secret");
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .expect("the original's Secret");

    let mut document = world.app_document("web", json!({"routing": {}, "auth": {"enabled": true}}));
    document["metadata"]["finalizers"] = json!(["apps.nebari.dev/finalizer"]);
    let app: crds::nebari::NebariApp = serde_json::from_value(document).expect("app");
    world
        .apps()
        .create(&PostParams::default(), &app)
        .await
        .expect("the original's app");
    let conditions: Vec<_> = ["Ready", "RoutingReady", "AuthReady"]
        .iter()
        .map(|t| {
            json!({"type": t, "status": "True", "reason": "ReconcileSuccess", "message": "",
                   "observedGeneration": 1, "lastTransitionTime": "2026-01-01T00:00:00Z"})
        })
        .collect();
    let status = json!({"status": {
        "observedGeneration": 1,
        "authConfigHash": "3f1d0c6f8a2b4e5d9c7a1b0e2f4d6c8a0b2e4f6a8c0d2e4f6a8b0c2d4e6f8a0b",
        "conditions": conditions,
    }});
    world
        .apps()
        .patch_status("web", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("the original's status");

    world.keycloak.proxy().reset_counters();
    world.start_manager(false).await;
    // The original's status says Ready already: wait for ours (the finalizer swapped, the conditions rewritten).
    wait_until("the app is taken over", Deadline::secs(30), || async {
        let app = world.app("web").await;
        let ours = app.metadata.finalizers.as_deref() == Some(&["reconcilers.nebari.dev/finalizer".to_string()][..]);
        let rewritten = condition(&app, "Ready").is_some_and(|(s, r, _)| s == "True" && r != "ReconcileSuccess");
        if ours && rewritten {
            Ok(Some(()))
        } else {
            Err(format!("{:?}", app.metadata.finalizers))
        }
    })
    .await;
    world.wait_idle().await;
    let app = world.wait_ready("web").await;
    assert_eq!(
        app.metadata.finalizers,
        Some(vec!["reconcilers.nebari.dev/finalizer".to_string()]),
        "nebari-operator's finalizer is swapped for ours"
    );
    assert!(condition(&app, "AuthReady").is_some_and(|(s, _, _)| s == "True"));
    let writes: BTreeMap<String, u64> = world
        .keycloak_breakdown()
        .into_iter()
        .filter(|(route, _)| !route.starts_with("GET") && route.contains("/admin/"))
        .collect();
    // One write: the owner record, with the narrowing of the original's redirect URIs and web origins (its
    // `http://` redirect and `*` origins) in the same request.
    assert_eq!(
        writes,
        BTreeMap::from([("PUT /admin/realms/{realm}/clients/{id}".to_string(), 1)]),
        "{:?}",
        world.keycloak_breakdown()
    );
    let client = world.keycloak_client(&client_id).await.expect("the same client");
    assert_eq!(client["attributes"]["nebari.dev/owner"], format!("{ns}/web"));
    assert_eq!(
        client["redirectUris"],
        json!([format!("https://{host}/oauth2/callback")])
    );
    assert_eq!(client["webOrigins"], json!([format!("https://{host}")]));
    let data = world.secret_data("web-oidc-client").await.expect("Secret");
    assert_eq!(data.get("client-secret").map(String::as_str), Some(secret_value));
}
