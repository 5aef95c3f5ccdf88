//! A manager without Keycloak settings still runs projects: those without Keycloak bindings are Ready as usual,
//! and those with bindings get their Rancher side (project, quota, bindings) and conditions that name exactly what
//! is not managed, without failing the project (the original operator skipped its Keycloak steps).

use crate::support::{Setup, World, binding, condition, group_name, writer_labels, writer_spec};

#[tokio::test]
async fn without_keycloak_projects_are_ready_and_the_keycloak_conditions_say_what_is_not_managed() {
    let world = World::start(Setup {
        keycloak: false,
        ..Setup::default()
    })
    .await;

    let plain = "abab00004b2c4e7f9a0b1c2d3e4f5a6b";
    world
        .write(
            "plain-abab0000",
            writer_spec("Plain", plain, Vec::new()),
            writer_labels(plain),
        )
        .await;
    let object = world.wait_ready("plain-abab0000").await;
    let groups = condition(&object, "KeycloakGroupsReady").expect("KeycloakGroupsReady");
    assert_eq!(
        (groups["status"].as_str(), groups["reason"].as_str()),
        (Some("True"), Some("NoGroups"))
    );

    let rp = "acac00004b2c4e7f9a0b1c2d3e4f5a6b";
    let members = group_name(rp, "project_member");
    let admins = group_name(rp, "project_admin");
    world
        .write(
            "bound-acac0000",
            writer_spec(
                "Bound",
                rp,
                vec![
                    binding(&members, "project-member", &["alice", "bob"]),
                    binding(&admins, "project-owner", &["carol"]),
                ],
            ),
            writer_labels(rp),
        )
        .await;
    let object = world.wait_ready("bound-acac0000").await;
    assert_eq!(object["status"]["phase"], "Ready");
    let groups = condition(&object, "KeycloakGroupsReady").expect("KeycloakGroupsReady");
    assert_eq!(
        (groups["status"].as_str(), groups["reason"].as_str()),
        (Some("False"), Some("KeycloakNotConfigured"))
    );
    let message = groups["message"].as_str().unwrap_or_default();
    for needle in ["--rancher-keycloak-url", members.as_str(), admins.as_str()] {
        assert!(message.contains(needle), "{needle:?} missing from {message:?}");
    }
    let membership = condition(&object, "MembershipSynced").expect("MembershipSynced");
    assert_eq!(membership["reason"], "KeycloakNotConfigured");
    assert!(
        membership["message"]
            .as_str()
            .unwrap_or_default()
            .contains("3 member(s)"),
        "{membership}"
    );
    let ready = condition(&object, "Ready").expect("Ready");
    assert!(
        ready["message"].as_str().unwrap_or_default().contains("not managed"),
        "Ready says what is not managed: {ready}"
    );

    // The Rancher side is complete: both bindings exist on the project.
    let project_id = object["status"]["rancherProjectId"].as_str().expect("project id");
    let bound: Vec<String> = world
        .prtbs(project_id)
        .into_iter()
        .map(|(principal, _)| principal)
        .collect();
    for group in [&members, &admins] {
        assert!(
            bound.iter().any(|p| p.ends_with(group.as_str())),
            "{group} is bound: {bound:?}"
        );
    }

    // Nothing retries in a loop: the pass succeeded and waits for the resync.
    let manager = world.manager();
    let settled = manager.wait_idle("managedrancherproject").await;
    let metrics = manager.metrics().await;
    assert_eq!(
        e2e::harness::metrics::sum(
            &metrics,
            "controller_runtime_reconcile_total",
            &[("controller", "managedrancherproject"), ("result", "error")]
        ),
        0,
        "no pass failed ({settled} reconciles)"
    );
}
