//! Phase `Error` is kept for persistent failures, because the Waldur plugin marks the project erred on it: a
//! Keycloak outage shows on its condition while the phase stays `Updating`, and heals by itself; a role template
//! Rancher refuses is `Error` at once.

use e2e::harness::fault_proxy::DownMode;

use crate::support::{
    Setup, World, binding, condition, group_name, group_path, synced, wait_members, writer_labels, writer_spec,
};

#[tokio::test]
async fn a_keycloak_outage_is_reported_on_its_condition_without_error_and_heals_by_itself() {
    let world = World::start(Setup::default()).await;
    let rp = "eeee00004b2c4e7f9a0b1c2d3e4f5a6b";
    let group = group_name(rp, "project_member");
    let spec = |members: &[&str]| writer_spec("Outage", rp, vec![binding(&group, "project-member", members)]);
    world
        .write("kc-outage-eeee0000", spec(&["alice"]), writer_labels(rp))
        .await;
    world.wait_ready("kc-outage-eeee0000").await;

    world.keycloak_proxy().go_down(DownMode::Unavailable);
    world
        .write("kc-outage-eeee0000", spec(&["alice", "bob"]), writer_labels(rp))
        .await;
    let object = world
        .wait_for("kc-outage-eeee0000", "KeycloakGroupsReady False", |o| {
            condition(o, "KeycloakGroupsReady").is_some_and(|c| c["status"] == "False")
                && o["status"]["observedGeneration"] == o["metadata"]["generation"]
        })
        .await;
    let groups = condition(&object, "KeycloakGroupsReady").expect("condition");
    assert_eq!(groups["reason"], "KeycloakUnavailable", "{groups}");
    assert_eq!(object["status"]["phase"], "Updating", "an outage is not an error yet");
    assert_eq!(
        condition(&object, "RancherProjectReady").expect("condition")["status"],
        "True"
    );
    assert_eq!(
        synced(&object, &group),
        vec!["alice"],
        "the last known members are kept"
    );

    world.keycloak_proxy().come_up();
    wait_members(&world, &group_path(&group), &["alice", "bob"]).await;
    world
        .wait_for("kc-outage-eeee0000", "Ready with bob", |o| {
            crate::support::is_ready(o) && synced(o, &group) == vec!["alice", "bob"]
        })
        .await;
}

#[tokio::test]
async fn a_role_template_rancher_refuses_is_an_error_at_once() {
    let world = World::start(Setup::default()).await;
    let rp = "eeee11114b2c4e7f9a0b1c2d3e4f5a6b";
    let group = group_name(rp, "project_member");
    world
        .write(
            "bad-role-eeee1111",
            writer_spec("Bad role", rp, vec![binding(&group, "no-such-role", &["alice"])]),
            writer_labels(rp),
        )
        .await;
    let object = world
        .wait_for("bad-role-eeee1111", "phase Error", |o| o["status"]["phase"] == "Error")
        .await;
    let bindings = condition(&object, "RancherBindingsReady").expect("condition");
    assert_eq!(bindings["status"], "False");
    assert_eq!(bindings["reason"], "RancherRejected", "{bindings}");
    assert!(
        bindings["message"]
            .as_str()
            .is_some_and(|m| m.contains("role template")),
        "the message says what Rancher refused: {bindings}"
    );
    // Everything else is in place: the project, the group and its member.
    assert_eq!(
        condition(&object, "RancherProjectReady").expect("condition")["status"],
        "True"
    );
    assert_eq!(
        world.members(&group_path(&group)).await,
        Some(vec!["alice".to_string()])
    );
}
