//! The plugin writes the same `spec.cluster` block into every project of a cluster: the cluster-scope binding
//! and its group are shared, so deleting one CR keeps them and deleting the last removes them.

use serde_json::{Value, json};

use crate::support::{CLUSTER, PARENT, Setup, World, binding, group_path, wait_state, writer_labels, writer_spec};

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
    assert_eq!(world.members(&group_path(&group)), Some(vec!["alice".to_string()]));
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
    assert_eq!(world.members(&group_path(&group)), Some(vec!["alice".to_string()]));

    world.delete("two-cccc1111").await;
    world.wait_gone("two-cccc1111").await;
    wait_state("the cluster binding is gone", || {
        let crtbs = world.crtbs();
        if crtbs.is_empty() {
            Ok(())
        } else {
            Err(format!("{crtbs:?}"))
        }
    })
    .await;
    assert!(!world.group_exists(&group_path(&group)));
    assert!(!world.group_exists(&format!("/{PARENT}")));
}
