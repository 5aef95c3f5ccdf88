//! Deletion: PRTBs, managed memberships, child groups and the project go; the shared parent group survives
//! while other CRs' groups hang under it and goes with the last one; a stale project id is resolved by name;
//! with Rancher down the finalizer stays and a condition and an event say why (Keycloak access is revoked
//! meanwhile).

use std::collections::BTreeMap;

use rancher_emulator::ProjectSeed;

use crate::support::{
    CLUSTER, PARENT, Setup, World, binding, condition, group_name, group_path, wait_state, writer_labels, writer_spec,
};

#[tokio::test]
async fn delete_removes_bindings_groups_and_project_and_the_parent_goes_with_the_last_cr() {
    let world = World::start(Setup::default()).await;
    let (rp_a, rp_b) = ("9999aaaa4b2c4e7f9a0b1c2d3e4f5a6b", "9999bbbb4b2c4e7f9a0b1c2d3e4f5a6b");
    let (group_a, group_b) = (group_name(rp_a, "project_member"), group_name(rp_b, "project_member"));
    world
        .write(
            "first-9999aaaa",
            writer_spec(
                "First",
                rp_a,
                vec![binding(&group_a, "project-member", &["alice", "bob"])],
            ),
            writer_labels(rp_a),
        )
        .await;
    world
        .write(
            "second-9999bbbb",
            writer_spec("Second", rp_b, vec![binding(&group_b, "project-member", &["carol"])]),
            writer_labels(rp_b),
        )
        .await;
    let first = world.wait_ready("first-9999aaaa").await;
    world.wait_ready("second-9999bbbb").await;
    let project_a = first["status"]["rancherProjectId"].as_str().expect("id").to_string();

    world.reset_counters();
    world.delete("first-9999aaaa").await;
    world.wait_gone("first-9999aaaa").await;
    eprintln!(
        "MEASURE delete (one binding, parent kept): Rancher {} requests ({} writes) {:?}; Keycloak {} admin requests \
         ({} writes) {:?}",
        world.rancher_requests(),
        world.rancher_writes(),
        world.rancher_breakdown(),
        world.keycloak_requests(),
        world.keycloak_writes(),
        world.keycloak_breakdown()
    );
    wait_state("the first project is gone", || match world.project(&project_a) {
        None => Ok(()),
        Some(p) => Err(format!("still there: {}", p["state"])),
    })
    .await;
    assert!(world.prtbs(&project_a).is_empty(), "its PRTBs are gone");
    assert!(!world.group_exists(&group_path(&group_a)).await, "its group is gone");
    assert!(world.user_groups("alice").await.is_empty());
    assert!(
        world.group_exists(&format!("/{PARENT}")).await,
        "the parent stays while the second CR's group hangs under it"
    );
    assert_eq!(
        world.members(&group_path(&group_b)).await,
        Some(vec!["carol".to_string()])
    );

    world.reset_counters();
    world.delete("second-9999bbbb").await;
    world.wait_gone("second-9999bbbb").await;
    eprintln!(
        "MEASURE delete (one binding, last CR: parent deleted): Rancher {} requests ({} writes) {:?}; Keycloak {} \
         admin requests ({} writes) {:?}",
        world.rancher_requests(),
        world.rancher_writes(),
        world.rancher_breakdown(),
        world.keycloak_requests(),
        world.keycloak_writes(),
        world.keycloak_breakdown()
    );
    assert!(!world.group_exists(&group_path(&group_b)).await);
    assert!(
        !world.group_exists(&format!("/{PARENT}")).await,
        "the parent goes with the last CR"
    );
    assert!(world.projects_named("Second").iter().all(|p| p["state"] == "removing"));
}

#[tokio::test]
async fn a_stale_project_id_is_resolved_by_name_on_delete() {
    let mut world = World::start(Setup::default()).await;
    let rp = "aaaa00004b2c4e7f9a0b1c2d3e4f5a6b";
    world
        .write("stale-aaaa0000", writer_spec("Stale", rp, vec![]), writer_labels(rp))
        .await;
    let object = world.wait_ready("stale-aaaa0000").await;
    let old_id = object["status"]["rancherProjectId"].as_str().expect("id").to_string();

    // While the operator is down, the object is deleted and the project is recreated outside it.
    world.manager.as_mut().expect("manager").kill().await;
    world.delete("stale-aaaa0000").await;
    world
        .rancher_call(reqwest::Method::DELETE, &format!("/v3/projects/{old_id}"), None)
        .await;
    wait_state("the old project is gone", || match world.project(&old_id) {
        None => Ok(()),
        Some(_) => Err("still removing".into()),
    })
    .await;
    let new_id = world
        .env
        .rancher
        .add_project(&ProjectSeed {
            cluster_id: CLUSTER.to_string(),
            name: "Stale".to_string(),
            annotations: BTreeMap::from([("waldur/managed".to_string(), "true".to_string())]),
            ..ProjectSeed::default()
        })
        .expect("recreate the project");
    assert_ne!(new_id, old_id);

    world.manager.as_mut().expect("manager").restart().await;
    world.wait_gone("stale-aaaa0000").await;
    wait_state("the current project found by name is deleted", || {
        match world.project(&new_id) {
            Some(p) if p["state"] != "removing" => Err(format!("{}", p["state"])),
            _ => Ok(()),
        }
    })
    .await;
}

#[tokio::test]
async fn with_rancher_down_the_finalizer_stays_and_a_condition_and_an_event_say_why() {
    let world = World::start(Setup::default()).await;
    let rp = "bbbb00004b2c4e7f9a0b1c2d3e4f5a6b";
    let group = group_name(rp, "project_member");
    world
        .write(
            "outage-bbbb0000",
            writer_spec("Outage", rp, vec![binding(&group, "project-member", &["alice"])]),
            writer_labels(rp),
        )
        .await;
    let object = world.wait_ready("outage-bbbb0000").await;
    let project_id = object["status"]["rancherProjectId"].as_str().expect("id").to_string();

    world.env.rancher.set_down(true);
    world.delete("outage-bbbb0000").await;
    let object = world
        .wait_for("outage-bbbb0000", "phase Deleting", |o| {
            o["status"]["phase"] == "Deleting"
        })
        .await;
    let ready = condition(&object, "Ready").expect("Ready");
    assert_eq!(ready["status"], "False");
    assert_eq!(ready["reason"], "RancherUnavailable", "{ready}");
    assert!(
        ready["message"].as_str().is_some_and(|m| m.contains("finalizer stays")),
        "{ready}"
    );
    assert!(
        object["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f == "waldur.io/managed-rancher-project"))
    );
    let note = world.wait_event("outage-bbbb0000", "CleanupBlocked").await;
    assert!(
        note.contains("RancherUnavailable") && note.contains("cleanup is blocked"),
        "{note}"
    );
    assert!(
        !world.group_exists(&group_path(&group)).await,
        "Keycloak access is revoked even while Rancher is down"
    );
    assert!(world.project(&project_id).is_some(), "the project is still there");

    world.env.rancher.set_down(false);
    world.wait_gone("outage-bbbb0000").await;
    assert!(world.project(&project_id).is_none_or(|p| p["state"] == "removing"));
}
