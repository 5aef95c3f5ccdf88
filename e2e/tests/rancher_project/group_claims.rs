//! Rancher binds by group name, so a group bound to one object's project must never be claimed by another:
//! the later object is refused that group (nothing created, bound or filled for it), and the first keeps it
//! unchanged, across restarts alike.

use serde_json::Value;

use crate::support::{Setup, World, binding, condition, group_name, group_path, writer_labels, writer_spec};

fn project_id(object: &Value) -> String {
    object["status"]["rancherProjectId"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn a_group_bound_to_another_objects_project_cannot_be_claimed() {
    let mut world = World::start(Setup {
        users: vec!["alice", "mallory"],
        ..Setup::default()
    })
    .await;
    let rp = "eeee11114b2c4e7f9a0b1c2d3e4f5a6b";
    let group = group_name(rp, "admin");
    world
        .write(
            "victim-eeee1111",
            writer_spec("Victim", rp, vec![binding(&group, "project-owner", &["alice"])]),
            writer_labels(rp),
        )
        .await;
    let victim = world.wait_ready("victim-eeee1111").await;
    let victim_bindings = world.prtbs(&project_id(&victim));
    let members_before = world.members(&group_path(&group)).await;
    assert_eq!(members_before, Some(vec!["alice".to_string()]));

    // Another object names the victim's group for its own project, with its own member.
    let rp_other = "ffff11114b2c4e7f9a0b1c2d3e4f5a6b";
    let mut spec = writer_spec(
        "Intruder",
        rp_other,
        vec![binding(&group, "project-member", &["mallory"])],
    );
    spec["keycloak"]["roleBindings"]
        .as_array_mut()
        .expect("bindings")
        .push(binding(&group_name(rp_other, "member"), "project-member", &["mallory"]));
    world.write("intruder-ffff1111", spec, writer_labels(rp_other)).await;
    let intruder = world
        .wait_for("intruder-ffff1111", "KeycloakGroupsReady False", |o| {
            condition(o, "KeycloakGroupsReady").is_some_and(|c| c["status"] == "False")
        })
        .await;
    let refused = condition(&intruder, "KeycloakGroupsReady").expect("condition");
    assert_eq!(refused["reason"], "GroupClaimedByAnotherProject", "{refused}");
    assert!(
        refused["message"].as_str().is_some_and(|m| m.contains(&group)),
        "{refused}"
    );

    // Its own group and binding are made; the victim's group is neither bound to its project nor filled.
    let intruder_project = project_id(&intruder);
    assert!(!intruder_project.is_empty(), "the intruder's own project exists");
    let bound: Vec<String> = world.prtbs(&intruder_project).into_iter().map(|(g, _)| g).collect();
    assert!(!bound.contains(&format!("keycloakoidc_group://{group}")), "{bound:?}");
    assert_eq!(
        world.members(&group_path(&group)).await,
        members_before,
        "mallory was not added"
    );

    // A fresh manager decides the same way.
    world.manager_mut().restart().await;
    world.wait_ready("victim-eeee1111").await;
    assert_eq!(world.members(&group_path(&group)).await, members_before);
    assert_eq!(
        world.prtbs(&project_id(&victim)),
        victim_bindings,
        "the victim's bindings are unchanged"
    );
    let bound: Vec<String> = world.prtbs(&intruder_project).into_iter().map(|(g, _)| g).collect();
    assert!(!bound.contains(&format!("keycloakoidc_group://{group}")), "{bound:?}");
}
