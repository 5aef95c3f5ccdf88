//! Keycloak clients whose NebariApp is gone (deleted without its cleanup): reported by default, deleted after the
//! grace period with `--keycloak-orphaned-clients=delete`; clients of existing apps and clients without the owner
//! attribute are never touched.

use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;

use crate::support::{Setup, World};

#[tokio::test]
async fn a_client_whose_app_was_deleted_without_cleanup_is_reported_then_deleted() {
    let mut world = World::start(Setup::default()).await;
    let ns = world.namespace.clone();
    // A client without an owner.
    world
        .keycloak
        .create_client(json!({"clientId": "made-by-hand", "publicClient": false}))
        .await;
    for app in ["gone", "kept"] {
        world
            .apply_app(app, json!({"routing": {}, "auth": {"enabled": true}}))
            .await;
        world.wait_ready(app).await;
    }
    // "gone" is deleted while no manager runs and without its finalizer: its cleanup never happens.
    world.manager.take().expect("the manager").stop().await;
    let patch = json!({"metadata": {"finalizers": null}});
    world
        .apps()
        .patch("gone", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("drop the finalizer");
    world
        .apps()
        .delete("gone", &DeleteParams::default())
        .await
        .expect("delete");
    let orphan = format!("{ns}-gone");
    assert!(world.keycloak_client(&orphan).await.is_some());

    // Reported only.
    world.manager_args = vec!["--keycloak-orphan-scan-seconds=1".into()];
    world.start_manager(false).await;
    e2e::harness::wait_until("the orphan counted", e2e::harness::Deadline::secs(30), || async {
        let metrics = world.manager().metrics().await;
        let counted = metrics.lines().any(|l| l == "nebariapp_orphaned_keycloak_clients 1");
        if counted {
            Ok(Some(()))
        } else {
            Err("not counted yet".to_string())
        }
    })
    .await;
    assert!(
        world.keycloak_client(&orphan).await.is_some(),
        "not deleted in report mode"
    );
    assert!(
        world
            .manager()
            .log()
            .contains("Keycloak client of a NebariApp that no longer exists")
    );

    // Deleted, with no grace period; the others stay.
    world.manager.take().expect("the manager").stop().await;
    world.manager_args = vec![
        "--keycloak-orphan-scan-seconds=1".into(),
        "--keycloak-orphaned-clients=delete".into(),
        "--keycloak-orphan-grace-seconds=0".into(),
    ];
    world.start_manager(false).await;
    e2e::harness::wait_until("the orphan deleted", e2e::harness::Deadline::secs(30), || async {
        if world.keycloak_client(&orphan).await.is_none() {
            Ok(Some(()))
        } else {
            Err("still there".to_string())
        }
    })
    .await;
    assert!(
        world.keycloak_client(&format!("{ns}-kept")).await.is_some(),
        "an existing app's client stays"
    );
    assert!(
        world.keycloak_client("made-by-hand").await.is_some(),
        "a client without an owner stays"
    );
}
