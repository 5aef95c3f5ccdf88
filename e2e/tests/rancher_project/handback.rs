//! Rollback to rancher-keycloak-operator: with the manager stopped, `manager handback managedrancherproject`
//! renames the finalizer of every ManagedRancherProject back to kopf's, leaving the project, groups and bindings
//! as they are; starting the manager again takes them over with no Rancher or Keycloak write.

use crate::support::{Setup, World, binding, group_name, writer_labels, writer_spec};

/// Runs `manager handback managedrancherproject` as the cluster's administrator; returns what it printed.
async fn handback(world: &World) -> String {
    e2e::harness::run_manager_command(world.cluster.kubeconfig(), &["handback", "managedrancherproject"]).await
}

#[tokio::test]
async fn handback_renames_the_finalizer_for_kopf_and_a_restart_takes_over_without_external_writes() {
    let mut world = World::start(Setup::default()).await;
    let rp = "babababa4b2c4e7f9a0b1c2d3e4f5a6b";
    let group = group_name(rp, "project_member");
    world
        .write(
            "handback-babababa",
            writer_spec("Handback", rp, vec![binding(&group, "project-member", &["alice"])]),
            writer_labels(rp),
        )
        .await;
    let object = world.wait_ready("handback-babababa").await;
    assert_eq!(
        object["metadata"]["finalizers"],
        serde_json::json!(["waldur.io/managed-rancher-project"])
    );
    world.manager.take().expect("the manager").stop().await;

    let printed = handback(&world).await;
    assert!(printed.contains("1 object(s) handed back"), "{printed}");
    let object = world.get("handback-babababa").await.expect("the object");
    assert_eq!(
        object["metadata"]["finalizers"],
        serde_json::json!(["kopf.zalando.org/KopfFinalizerMarker"])
    );

    world.reset_counters();
    world.start_manager(Vec::new()).await;
    world
        .wait_for("handback-babababa", "taken over again", |o| {
            o["metadata"]["finalizers"] == serde_json::json!(["waldur.io/managed-rancher-project"])
                && crate::support::is_ready(o)
        })
        .await;
    world.manager().wait_idle("managedrancherproject").await;
    assert_eq!(world.rancher_writes(), 0, "{:?}", world.rancher_breakdown());
    assert_eq!(world.keycloak_writes(), 0, "{:?}", world.keycloak_breakdown());
}
