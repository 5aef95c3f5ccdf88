//! The plugin writes the same `spec.cluster` block into every project of a cluster: the cluster-scope binding
//! and its group are shared, so deleting one CR keeps them and deleting the last removes them. Objects of every
//! namespace count, also when the manager watches only some (`--watch-namespace`).

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use kube::core::DynamicObject;
use serde_json::{Value, json};

use crate::support::{
    CLUSTER, NAMESPACE, PARENT, Setup, World, binding, group_path, mrp_resource, wait_members, writer_labels,
    writer_spec,
};

fn with_cluster_block(mut spec: Value, group: &str) -> Value {
    spec["cluster"] =
        json!({"keycloak": {"enabled": true, "roleBindings": [binding(group, "cluster-owner", &["alice"])]}});
    spec
}

#[tokio::test]
async fn cluster_bindings_shared_by_two_crs_survive_until_the_last_cr_is_deleted() {
    let world = World::start(Setup::default()).await;
    let group = format!("c_{CLUSTER}_cluster_resource_admin");
    let expected = vec![(format!("keycloakoidc_group://{group}"), "cluster-owner".to_string())];
    let (rp_a, rp_b) = ("cccc00004b2c4e7f9a0b1c2d3e4f5a6b", "cccc11114b2c4e7f9a0b1c2d3e4f5a6b");
    world
        .write(
            "one-cccc0000",
            with_cluster_block(writer_spec("One", rp_a, vec![]), &group),
            writer_labels(rp_a),
        )
        .await;
    let one = world.wait_ready("one-cccc0000").await;
    world
        .write(
            "two-cccc1111",
            with_cluster_block(writer_spec("Two", rp_b, vec![]), &group),
            writer_labels(rp_b),
        )
        .await;
    let two = world.wait_ready("two-cccc1111").await;
    assert_eq!(world.crtbs(), expected, "one shared cluster binding");
    assert_eq!(
        world.members(&group_path(&group)).await,
        Some(vec!["alice".to_string()])
    );
    for object in [&one, &two] {
        let entry = &object["status"]["clusterKeycloakRoleBindings"][0];
        assert_eq!(entry["groupName"], group.as_str());
        assert!(
            entry["rancherBindingId"]
                .as_str()
                .is_some_and(|id| id.contains(":crtb-")),
            "{entry}"
        );
        assert_eq!(entry["syncedMembers"][0]["userIdentifier"], "alice");
    }

    world.delete("one-cccc0000").await;
    world.wait_gone("one-cccc0000").await;
    assert_eq!(world.crtbs(), expected, "the other CR still uses the cluster binding");
    assert_eq!(
        world.members(&group_path(&group)).await,
        Some(vec!["alice".to_string()])
    );

    world.delete("two-cccc1111").await;
    world.wait_gone("two-cccc1111").await;
    world.wait_crtbs("the cluster binding is gone", &[]).await;
    assert!(!world.group_exists(&group_path(&group)).await);
    assert!(!world.group_exists(&format!("/{PARENT}")).await);
}

#[tokio::test]
async fn with_watch_namespace_objects_of_other_namespaces_still_count_for_shared_cluster_bindings() {
    let world = World::start(Setup {
        manager_args: vec![format!("--watch-namespace={NAMESPACE}")],
        ..Setup::default()
    })
    .await;
    let group = format!("c_{CLUSTER}_cluster_resource_admin");
    let expected = vec![(format!("keycloakoidc_group://{group}"), "cluster-owner".to_string())];
    // Another tenant's object, in a namespace this manager does not watch, wants the same cluster binding.
    let elsewhere = "elsewhere";
    let namespaces: Api<Namespace> = Api::all(world.cluster.client());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": elsewhere}})).expect("a namespace"),
        )
        .await
        .expect("create the other namespace");
    let rp_other = "dddd00004b2c4e7f9a0b1c2d3e4f5a6b";
    let mut spec = with_cluster_block(writer_spec("Other", rp_other, vec![]), &group);
    spec["cluster"]["keycloak"]["roleBindings"][0]["members"] = json!([{"userIdentifier": "bob", "lookupByID": false}]);
    let other: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "waldur.io/v1alpha1", "kind": "ManagedRancherProject",
        "metadata": {"name": "other-dddd0000", "namespace": elsewhere, "labels": writer_labels(rp_other)},
        "spec": spec,
    }))
    .expect("an object");
    Api::<DynamicObject>::namespaced_with(world.cluster.client(), elsewhere, &mrp_resource())
        .create(&PostParams::default(), &other)
        .await
        .expect("create the other tenant's object");

    let rp = "dddd11114b2c4e7f9a0b1c2d3e4f5a6b";
    world
        .write(
            "mine-dddd1111",
            with_cluster_block(writer_spec("Mine", rp, vec![]), &group),
            writer_labels(rp),
        )
        .await;
    world.wait_ready("mine-dddd1111").await;
    assert_eq!(world.crtbs(), expected);
    // The shared group's members are the union over every namespace's objects.
    wait_members(&world, &group_path(&group), &["alice", "bob"]).await;

    // This object drops its cluster binding: the other namespace's object still wants it, so it stays.
    let mut without = writer_spec("Mine", rp, vec![]);
    without["cluster"] = json!({"keycloak": {"enabled": true, "roleBindings": []}});
    world.write("mine-dddd1111", without, writer_labels(rp)).await;
    world
        .wait_for("mine-dddd1111", "no cluster binding recorded", |o| {
            crate::support::is_ready(o)
                && o["status"]["clusterKeycloakRoleBindings"]
                    .as_array()
                    .is_none_or(Vec::is_empty)
        })
        .await;
    assert_eq!(
        world.crtbs(),
        expected,
        "the other namespace's object still uses the cluster binding"
    );
    assert!(world.group_exists(&group_path(&group)).await, "and its group");
}
