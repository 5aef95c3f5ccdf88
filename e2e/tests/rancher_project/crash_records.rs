//! Crash-safe membership records: the members a pass adds are recorded on the Keycloak group
//! (`waldur.io/added-members`) before they are added, so a manager killed after adding a member and before writing
//! the status still knows the member is its own and removes it once the spec stops listing it.

use e2e::harness::fault_proxy::Fault;
use e2e::harness::{Deadline, wait_until};

use crate::support::{
    Setup, World, binding, group_name, group_path, replace_spec, wait_members, writer_labels, writer_spec,
};

/// The values of the group's `waldur.io/added-members` record.
async fn record(world: &World, group: &str) -> Vec<String> {
    world
        .keycloak()
        .group_attributes(&group_path(group))
        .await
        .and_then(|attributes| attributes.get("waldur.io/added-members").cloned())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_member_added_by_a_pass_killed_before_its_status_write_is_removed_after_the_restart() {
    let mut world = World::start(Setup {
        api_faults: true,
        ..Setup::default()
    })
    .await;
    let rp = "c0c0c0c04b2c4e7f9a0b1c2d3e4f5a6b";
    let group = group_name(rp, "project_member");
    let name = "crash-c0c0c0c0";
    let spec = |members: &[&str]| writer_spec("Crash", rp, vec![binding(&group, "project-member", members)]);
    world.write(name, spec(&["alice"]), writer_labels(rp)).await;
    world.wait_ready(name).await;

    // Every status write now fails: the pass that adds bob cannot record him in the status.
    world
        .cluster
        .api_faults()
        .add_fault(Fault::route("patch managedrancherprojects.waldur.io*").status(500));
    let current = world.get(name).await.expect("the object");
    replace_spec(&world, current, spec(&["alice", "bob"]))
        .await
        .expect("add bob");
    wait_members(&world, &group_path(&group), &["alice", "bob"]).await;
    let bob = world.user_id("bob").await.expect("bob exists");
    let recorded = record(&world, &group).await;
    assert!(
        recorded.iter().any(|v| v.ends_with(&format!(":{bob}"))),
        "bob was recorded before he was added: {recorded:?}"
    );
    world.manager_mut().kill().await;
    let stored = world.get(name).await.expect("the object");
    assert!(
        !stored["status"].to_string().contains(&bob),
        "the status never learnt about bob: {}",
        stored["status"]
    );

    // bob leaves the spec while no manager runs; the restarted one removes him (the status alone would say
    // he was added by hand).
    world.cluster.api_faults().clear_faults();
    let current = world.get(name).await.expect("the object");
    replace_spec(&world, current, spec(&["alice"]))
        .await
        .expect("remove bob");
    world.start_manager(Vec::new()).await;
    wait_members(&world, &group_path(&group), &["alice"]).await;
    wait_until("bob's record dropped", Deadline::secs(30), || async {
        let values = record(&world, &group).await;
        if values.iter().any(|v| v.ends_with(&format!(":{bob}"))) {
            Err(format!("{values:?}"))
        } else {
            Ok(Some(()))
        }
    })
    .await;
}
