//! Orphaned projects: a ManagedRancherProject deleted while its finalizer was missing (the Waldur site agent
//! replaces objects, dropping it until the next pass re-adds it) never runs its cleanup. The inventory of its
//! cluster reports the project its owner annotation ties to the gone object — an event and a metric — and, with
//! `--rancher-delete-orphans`, deletes it once the grace period is over.

use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

use crate::support::{CLUSTER, NAMESPACE, Setup, World, rpi_resource, writer_labels, writer_spec};

const INVENTORY: &str = "cluster-orphans";

/// Stops the manager, drops the object's finalizer (as the site agent's replace does) and deletes it: its cleanup
/// never runs.
async fn delete_without_cleanup(world: &mut World, name: &str) {
    world.manager.take().expect("the manager").stop().await;
    let patch = json!({"metadata": {"finalizers": null}});
    world
        .mrps()
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("drop the finalizer");
    world
        .mrps()
        .delete(name, &DeleteParams::default())
        .await
        .expect("delete");
    world.wait_gone(name).await;
}

fn orphans(object: &Value) -> Vec<Value> {
    object["status"]["orphanedProjects"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test]
async fn a_project_whose_object_was_deleted_without_cleanup_is_reported_then_swept() {
    let mut world = World::start(Setup::default()).await;
    let rp = "0f0f0f0f4b2c4e7f9a0b1c2d3e4f5a6b";
    let name = "orphaned-0f0f0f0f";
    world
        .write(name, writer_spec("Orphaned", rp, vec![]), writer_labels(rp))
        .await;
    let object = world.wait_ready(name).await;
    let project_id = object["status"]["rancherProjectId"]
        .as_str()
        .expect("project id")
        .to_string();

    // The agent's replace dropped the finalizer, and the object was deleted before the operator put it back.
    delete_without_cleanup(&mut world, name).await;

    // Reported only, by default.
    let inventories: Api<DynamicObject> = Api::namespaced_with(world.cluster.client(), NAMESPACE, &rpi_resource());
    let inventory: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "waldur.io/v1alpha1", "kind": "RancherProjectInventory",
        "metadata": {"name": INVENTORY},
        "spec": {"clusterId": CLUSTER, "scanIntervalSeconds": 10},
    }))
    .expect("an inventory");
    inventories
        .create(&PostParams::default(), &inventory)
        .await
        .expect("create the inventory");
    world.start_manager(Vec::new()).await;
    let get = |inventories: Api<DynamicObject>| async move { crate::support::get_json(&inventories, INVENTORY).await };
    let reported = e2e::harness::wait_until("the orphan reported", e2e::harness::Deadline::secs(30), || {
        let inventories = inventories.clone();
        async move {
            let object = get(inventories).await?;
            if orphans(&object).is_empty() {
                Err(object["status"].to_string())
            } else {
                Ok(Some(object))
            }
        }
    })
    .await;
    let orphan = &orphans(&reported)[0];
    assert_eq!(orphan["projectId"], project_id.as_str());
    assert_eq!(orphan["owner"], format!("{NAMESPACE}/{name}"));
    assert!(
        world.project(&project_id).is_some(),
        "not deleted while deleting is off"
    );
    let metrics = world.manager().metrics().await;
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("rancher_inventory_orphaned_projects{") && l.ends_with(" 1")),
        "the orphan is counted"
    );

    // With deleting on (no grace), the next scan deletes it.
    world.manager.take().expect("the manager").stop().await;
    world
        .start_manager(vec![
            "--rancher-delete-orphans".into(),
            "--rancher-orphan-grace-seconds=0".into(),
        ])
        .await;
    let bump = json!({"spec": {"scanIntervalSeconds": 11}});
    inventories
        .patch(INVENTORY, &PatchParams::default(), &Patch::Merge(&bump))
        .await
        .expect("scan again");
    e2e::harness::wait_until("the orphan deleted", e2e::harness::Deadline::secs(30), || {
        let inventories = inventories.clone();
        let gone = world.project(&project_id).is_none_or(|p| p["state"] == "removing");
        async move {
            let object = get(inventories).await?;
            if gone && orphans(&object).is_empty() {
                Ok(Some(()))
            } else {
                Err(object["status"].to_string())
            }
        }
    })
    .await;
}

#[tokio::test]
async fn a_binding_group_whose_object_was_deleted_without_cleanup_is_reported_then_deleted() {
    let mut world = World::start(Setup::default()).await;
    let rp = "1f1f1f1f4b2c4e7f9a0b1c2d3e4f5a6b";
    let name = "orphaned-1f1f1f1f";
    let group = crate::support::group_name(rp, "project_member");
    world
        .write(
            name,
            writer_spec(
                "Orphaned groups",
                rp,
                vec![crate::support::binding(&group, "project-member", &["alice"])],
            ),
            writer_labels(rp),
        )
        .await;
    world.wait_ready(name).await;
    let path = crate::support::group_path(&group);
    delete_without_cleanup(&mut world, name).await;

    world
        .start_manager(vec!["--rancher-orphan-scan-seconds=1".into()])
        .await;
    e2e::harness::wait_until(
        "the orphaned group counted",
        e2e::harness::Deadline::secs(30),
        || async {
            let metrics = world.manager().metrics().await;
            let counted = metrics
                .lines()
                .any(|l| l == "managedrancherproject_orphaned_keycloak_groups 1");
            if counted {
                Ok(Some(()))
            } else {
                Err("not counted yet".to_string())
            }
        },
    )
    .await;
    assert!(world.group_exists(&path).await, "reported, not deleted");

    world.manager.take().expect("the manager").stop().await;
    world
        .start_manager(vec![
            "--rancher-orphan-scan-seconds=1".into(),
            "--rancher-delete-orphans".into(),
            "--rancher-orphan-grace-seconds=0".into(),
        ])
        .await;
    e2e::harness::wait_until(
        "the orphaned group deleted",
        e2e::harness::Deadline::secs(30),
        || async {
            if world.group_exists(&path).await {
                Err("still there".to_string())
            } else {
                Ok(Some(()))
            }
        },
    )
    .await;
    assert!(
        world.group_exists(&format!("/{}", crate::support::PARENT)).await,
        "the parent group stays"
    );
}
