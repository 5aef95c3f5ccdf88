//! The operator's own policy flags, defence in depth behind the trusted writer: an object naming a cluster, a
//! role template or a group name the platform does not allow is refused before anything is read or written in
//! Rancher or Keycloak, and so is an inventory of a cluster outside the list.

use kube::api::{Api, PostParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

use crate::support::{
    CLUSTER, NAMESPACE, OTHER_CLUSTER, PARENT, Setup, World, binding, condition, group_name, group_path, rpi_resource,
    writer_labels, writer_spec,
};

fn policy() -> Vec<String> {
    vec![
        format!("--rancher-allowed-clusters={CLUSTER}"),
        "--rancher-allowed-project-roles=project-member,project-owner".to_string(),
        "--rancher-allowed-cluster-roles=cluster-member".to_string(),
        "--rancher-group-prefix=c_".to_string(),
    ]
}

async fn refused(world: &World, name: &str) -> Value {
    let object = world
        .wait_for(name, "RancherProjectReady False", |o| {
            condition(o, "RancherProjectReady").is_some_and(|c| c["status"] == "False")
        })
        .await;
    let condition = condition(&object, "RancherProjectReady").expect("condition").clone();
    assert_eq!(condition["reason"], "NotAllowedByPolicy", "{condition}");
    condition
}

#[tokio::test]
async fn objects_outside_the_operators_policy_are_refused_before_anything_is_written() {
    let world = World::start(Setup {
        users: vec!["alice"],
        manager_args: policy(),
        ..Setup::default()
    })
    .await;
    let (writes_before, keycloak_before) = (world.rancher_writes(), world.keycloak_writes());

    // cluster-owner on the cluster: what amounts to Rancher admin.
    let rp = "aaaa11114b2c4e7f9a0b1c2d3e4f5a6b";
    let group = group_name(rp, "owner");
    let mut spec = writer_spec("Takeover", rp, vec![binding(&group, "project-owner", &["alice"])]);
    let admins = group_name(rp, "cluster-admins");
    spec["cluster"] =
        json!({"keycloak": {"enabled": true, "roleBindings": [binding(&admins, "cluster-owner", &["alice"])]}});
    world.write("takeover-aaaa1111", spec, writer_labels(rp)).await;
    let message = refused(&world, "takeover-aaaa1111").await["message"].clone();
    assert_eq!(
        message,
        "role template cluster-owner is not allowed for cluster bindings; allowed: cluster-member"
    );

    // Another cluster.
    let rp = "bbbb11114b2c4e7f9a0b1c2d3e4f5a6b";
    let mut spec = writer_spec(
        "Elsewhere",
        rp,
        vec![binding(&group_name(rp, "member"), "project-member", &[])],
    );
    spec["clusterId"] = json!(OTHER_CLUSTER);
    world.write("elsewhere-bbbb1111", spec, writer_labels(rp)).await;
    let message = refused(&world, "elsewhere-bbbb1111").await["message"].clone();
    assert_eq!(
        message,
        format!("cluster {OTHER_CLUSTER} is not allowed; the operator manages clusters: {CLUSTER}")
    );

    // A group outside the platform's naming (the realm's admin group, say).
    let rp = "cccc11114b2c4e7f9a0b1c2d3e4f5a6b";
    world
        .write(
            "admins-cccc1111",
            writer_spec("Admins", rp, vec![binding("admin", "project-member", &["alice"])]),
            writer_labels(rp),
        )
        .await;
    let message = refused(&world, "admins-cccc1111").await["message"].clone();
    assert!(message.as_str().is_some_and(|m| m.contains("prefix c_")), "{message}");

    assert_eq!(world.rancher_writes(), writes_before, "nothing was written in Rancher");
    assert_eq!(
        world.keycloak_writes(),
        keycloak_before,
        "nothing was written in Keycloak"
    );
    assert!(world.projects_named("Takeover").is_empty());
    assert!(!world.group_exists(&group_path(&group)).await);
    assert!(!world.group_exists("/admin").await);

    // Deleting a refused object touches nothing either.
    for name in ["takeover-aaaa1111", "elsewhere-bbbb1111", "admins-cccc1111"] {
        world.delete(name).await;
        world.wait_gone(name).await;
    }
    assert_eq!(world.rancher_writes(), writes_before);

    // Within the policy, the plugin's shape works.
    let rp = "dddd11114b2c4e7f9a0b1c2d3e4f5a6b";
    let member = group_name(rp, "member");
    world
        .write(
            "fine-dddd1111",
            writer_spec("Fine", rp, vec![binding(&member, "project-member", &["alice"])]),
            writer_labels(rp),
        )
        .await;
    world.wait_ready("fine-dddd1111").await;
    assert!(world.group_exists(&format!("/{PARENT}/{member}")).await);
}

#[tokio::test]
async fn an_inventory_of_a_cluster_outside_the_policy_is_refused() {
    let world = World::start(Setup {
        manager_args: policy(),
        ..Setup::default()
    })
    .await;
    let reads_before = world.rancher_requests();
    let api: Api<DynamicObject> = Api::namespaced_with(world.cluster.client(), NAMESPACE, &rpi_resource());
    let inventory: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "waldur.io/v1alpha1",
        "kind": "RancherProjectInventory",
        "metadata": {"name": "other", "namespace": NAMESPACE},
        "spec": {"clusterId": OTHER_CLUSTER, "scanIntervalSeconds": 10},
    }))
    .expect("object");
    api.create(&PostParams::default(), &inventory)
        .await
        .expect("create the inventory");
    let object = e2e::harness::wait_until("the refusal", e2e::harness::Deadline::secs(30), || async {
        let object = api.get("other").await.map_err(|e| e.to_string())?;
        let object = serde_json::to_value(object).map_err(|e| e.to_string())?;
        match condition(&object, "Ready") {
            Some(c) if c["reason"] == "NotAllowedByPolicy" => Ok(Some(object)),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    assert!(
        object["status"]["unmanagedProjects"]
            .as_array()
            .is_none_or(Vec::is_empty)
    );
    assert_eq!(world.rancher_requests(), reads_before, "the cluster was never listed");
}

/// An object that made a project and bindings while its cluster was allowed, deleted after the policy was
/// narrowed, is not released with that access left in place for good: deletion waits with a condition that says
/// why and how to proceed, and the cleanup runs once the cluster is allowed again.
#[tokio::test]
async fn deleting_an_object_whose_cluster_the_policy_no_longer_allows_waits_instead_of_leaving_its_access() {
    let mut world = World::start(Setup {
        users: vec!["alice"],
        ..Setup::default()
    })
    .await;
    let rp = "cccc22224b2c4e7f9a0b1c2d3e4f5a6b";
    let name = "narrowed-cccc2222";
    let group = group_name(rp, "member");
    world
        .write(
            name,
            writer_spec("Narrowed", rp, vec![binding(&group, "project-member", &["alice"])]),
            writer_labels(rp),
        )
        .await;
    let id = world.wait_ready_project(name).await;

    world.manager_mut().stop().await;
    world
        .start_manager(vec![format!("--rancher-allowed-clusters={OTHER_CLUSTER}")])
        .await;
    world.delete(name).await;
    let object = world
        .wait_for(name, "deletion blocked by the policy", |o| {
            condition(o, "Ready").is_some_and(|c| c["reason"] == "NotAllowedByPolicy")
        })
        .await;
    let message = condition(&object, "Ready").expect("Ready")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains(&id) && message.contains("cleanup is blocked") && message.contains("skip"),
        "{message}"
    );
    assert!(
        world.project(&id).is_some_and(|p| p["state"] != "removing"),
        "nothing is deleted under the refusing policy"
    );

    world.manager_mut().stop().await;
    world.start_manager(Vec::new()).await;
    world.wait_gone(name).await;
    // Rancher removes a deleted project asynchronously.
    assert!(
        world.project(&id).is_none_or(|p| p["state"] == "removing"),
        "the cleanup deleted the project once the cluster was allowed"
    );
}
