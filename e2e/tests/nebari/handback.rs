//! Rollback to nebari-operator: with the manager stopped, `manager handback nebariapp` renames the finalizer of
//! every NebariApp back to `apps.nebari.dev/finalizer` (and nothing else); starting the manager again takes them
//! over once more.

use crate::support::{Setup, World};
use serde_json::json;

/// Runs `manager handback nebariapp` as the cluster's administrator; returns what it printed.
async fn handback(world: &World) -> String {
    e2e::harness::run_manager_command(world.cluster.kubeconfig(), &["handback", "nebariapp"]).await
}

#[tokio::test]
async fn handback_renames_the_finalizers_for_nebari_operator_and_a_restart_takes_them_over_again() {
    let mut world = World::start(Setup::default()).await;
    world.apply_app("web", json!({"routing": {}})).await;
    let app = world.wait_ready("web").await;
    assert_eq!(
        app.metadata.finalizers,
        Some(vec!["reconcilers.nebari.dev/finalizer".to_string()])
    );
    world.manager.take().expect("the manager").stop().await;

    let printed = handback(&world).await;
    assert!(
        printed.contains(&format!("handed back {}/web", world.namespace)),
        "{printed}"
    );
    let app = world.app("web").await;
    assert_eq!(
        app.metadata.finalizers,
        Some(vec!["apps.nebari.dev/finalizer".to_string()])
    );
    assert!(app.status.is_some(), "the status stays for nebari-operator to read");
    assert!(
        handback(&world).await.contains("0 object(s) handed back"),
        "a second run changes nothing"
    );

    world.start_manager(false).await;
    e2e::harness::wait_until("the app taken over again", e2e::harness::Deadline::secs(30), || async {
        let finalizers = world.app("web").await.metadata.finalizers.unwrap_or_default();
        if finalizers == ["reconcilers.nebari.dev/finalizer"] {
            Ok(Some(()))
        } else {
            Err(format!("{finalizers:?}"))
        }
    })
    .await;
}
