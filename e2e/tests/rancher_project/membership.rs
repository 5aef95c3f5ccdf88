//! Membership: a member removed from the spec leaves the group while a member added by hand in Keycloak stays;
//! a user missing from Keycloak is pending (with a reason) and joins once the user is created, without anyone
//! touching the CR.

use crate::support::{
    Setup, World, binding, binding_status, condition, group_name, group_path, pending, synced, writer_labels,
    writer_spec,
};

#[tokio::test]
async fn a_member_removed_from_the_spec_leaves_the_group_and_a_hand_added_member_stays() {
    let world = World::start(Setup::default()).await;
    let rp = "2222bbbb4b2c4e7f9a0b1c2d3e4f5a6b";
    let group = group_name(rp, "project_member");
    let spec = |members: &[&str]| writer_spec("Members", rp, vec![binding(&group, "project-member", members)]);
    world
        .write("members-2222bbbb", spec(&["alice", "bob"]), writer_labels(rp))
        .await;
    world.wait_ready("members-2222bbbb").await;
    assert_eq!(
        world.members(&group_path(&group)).await,
        Some(vec!["alice".to_string(), "bob".to_string()])
    );

    // An administrator adds carol by hand; the operator leaves her alone.
    world.keycloak().add_membership("carol", &group_path(&group)).await;
    world
        .write("members-2222bbbb", spec(&["alice"]), writer_labels(rp))
        .await;
    let object = world
        .wait_for("members-2222bbbb", "bob no longer synced", |o| {
            crate::support::is_ready(o) && synced(o, &group) == vec!["alice"]
        })
        .await;
    assert_eq!(
        world.members(&group_path(&group)).await,
        Some(vec!["alice".to_string(), "carol".to_string()]),
        "bob (added by the operator) left; carol (added by hand) stayed"
    );
    assert_eq!(binding_status(&object, &group).expect("binding")["memberCount"], 2);
    world.wait_event("members-2222bbbb", "MembersChanged").await;

    // A few resyncs later carol is still there.
    let now = world.reconciles().await;
    world.wait_reconciles(now, 2).await;
    assert_eq!(
        world.members(&group_path(&group)).await,
        Some(vec!["alice".to_string(), "carol".to_string()])
    );
}

#[tokio::test]
async fn with_authoritative_membership_a_hand_added_member_is_removed() {
    let world = World::start(Setup {
        manager_args: vec!["--rancher-authoritative-membership".to_string()],
        ..Setup::default()
    })
    .await;
    let rp = "2323bbbb4b2c4e7f9a0b1c2d3e4f5a6b";
    let group = group_name(rp, "project_member");
    world
        .write(
            "strict-2323bbbb",
            writer_spec("Strict", rp, vec![binding(&group, "project-member", &["alice"])]),
            writer_labels(rp),
        )
        .await;
    world.wait_ready("strict-2323bbbb").await;
    world.keycloak().add_membership("carol", &group_path(&group)).await;
    crate::support::wait_members(&world, &group_path(&group), &["alice"]).await;
}

#[tokio::test]
async fn a_user_missing_from_keycloak_is_pending_and_joins_once_created() {
    let world = World::start(Setup {
        users: vec!["alice"],
        ..Setup::default()
    })
    .await;
    let rp = "3333cccc4b2c4e7f9a0b1c2d3e4f5a6b";
    let group = group_name(rp, "project_member");
    world
        .write(
            "pending-3333cccc",
            writer_spec(
                "Pending",
                rp,
                vec![binding(&group, "project-member", &["alice", "dave"])],
            ),
            writer_labels(rp),
        )
        .await;
    let object = world
        .wait_for("pending-3333cccc", "dave pending", |o| {
            crate::support::is_ready(o) && pending(o, &group) == vec!["dave"]
        })
        .await;
    let entry = binding_status(&object, &group).expect("binding");
    assert_eq!(entry["pendingMembers"][0]["reason"], "UserNotFound");
    // In the words of the site agent's troubleshooting guide ("User X not found in Keycloak"): in the entry, the
    // condition and the manager's log.
    assert!(
        entry["pendingMembers"][0]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("User dave not found in Keycloak")),
        "{entry}"
    );
    assert_eq!(synced(&object, &group), vec!["alice"]);
    let membership = condition(&object, "MembershipSynced").expect("MembershipSynced");
    assert_eq!(membership["status"], "True", "{membership}");
    assert_eq!(membership["reason"], "MembersPending");
    assert!(
        membership["message"]
            .as_str()
            .is_some_and(|m| m.contains("User dave not found in Keycloak")),
        "{membership}"
    );
    let log = world.manager().log();
    assert_eq!(
        log.matches("User dave not found in Keycloak and is skipped").count(),
        1,
        "logged once when dave went missing, not on every check"
    );
    assert_eq!(
        world.members(&group_path(&group)).await,
        Some(vec!["alice".to_string()])
    );
    let generation = object["metadata"]["generation"].clone();

    // dave logs in for the first time: Keycloak now knows him. Nobody touches the CR.
    world.keycloak().create_user("dave", &[]).await;
    let object = world
        .wait_for("pending-3333cccc", "dave synced", |o| {
            synced(o, &group) == vec!["alice", "dave"]
        })
        .await;
    assert!(pending(&object, &group).is_empty());
    assert_eq!(
        world.members(&group_path(&group)).await,
        Some(vec!["alice".to_string(), "dave".to_string()])
    );
    assert_eq!(object["metadata"]["generation"], generation, "the CR was not touched");
    assert_eq!(
        condition(&object, "MembershipSynced").expect("MembershipSynced")["reason"],
        "MembersSynced"
    );
}
