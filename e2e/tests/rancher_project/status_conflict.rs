//! A status write refused as stale (409) must not lose what the pass did. Here the spec changes while a pass's
//! status write is held back: the pass has already added a member and created a binding (group, PRTB) for the
//! old spec, and the new spec takes both away again. The operator records what it did on the fresh object, so
//! the next pass revokes it; before, the member stayed (counted as added by hand) and the PRTB and group were
//! never deleted — access outliving its removal from the spec.

use e2e::harness::fault_proxy::Fault;
use serde_json::Value;

use crate::support::{
    Setup, World, binding, binding_status, group_name, group_path, replace_spec, synced, wait_keycloak, wait_members,
    wait_state, writer_labels, writer_spec,
};

/// How long the status writes (patches of the object) are held back: long enough for the test to see the
/// pass's Keycloak and Rancher writes and to change the spec before the write reaches the API server.
const HELD_BACK_MS: u64 = 4_000;

#[tokio::test]
async fn what_a_pass_granted_before_its_status_write_conflicted_is_still_revoked() {
    let world = World::start(Setup {
        api_faults: true,
        ..Setup::default()
    })
    .await;
    let name = "conflict-5555eeee";
    let rp = "5555eeee4b2c4e7f9a0b1c2d3e4f5a6b";
    let members = group_name(rp, "project_member");
    let admins = group_name(rp, "project_admin");
    let before = writer_spec(name, rp, vec![binding(&members, "project-member", &["alice"])]);
    world.write(name, before.clone(), writer_labels(rp)).await;
    let object = world.wait_ready(name).await;
    let project_id = object["status"]["rancherProjectId"]
        .as_str()
        .expect("project id")
        .to_string();
    let admin_prtb = (format!("keycloakoidc_group://{admins}"), "project-owner".to_string());

    // Patches of the object (the status writes) are held back; the spec edits below are PUTs of the whole object
    // (the finalizer kept, so the runner has nothing to patch) and go through at once.
    world.cluster.api_faults().add_fault(
        Fault::route("patch managedrancherprojects.waldur.io*").latency(std::time::Duration::from_millis(HELD_BACK_MS)),
    );
    let granted = writer_spec(
        name,
        rp,
        vec![
            binding(&members, "project-member", &["alice", "bob"]),
            binding(&admins, "project-owner", &["carol"]),
        ],
    );
    let current = world.get(name).await.expect("the object exists");
    replace_spec(&world, current, granted)
        .await
        .expect("grant bob and the admin binding");
    // The pass made bob a member, created the admin group with carol and its PRTB; its status write is held.
    wait_members(&world, &group_path(&members), &["alice", "bob"]).await;
    wait_members(&world, &group_path(&admins), &["carol"]).await;
    wait_state("the admin PRTB exists", || {
        let prtbs = world.prtbs(&project_id);
        if prtbs.contains(&admin_prtb) {
            Ok(())
        } else {
            Err(format!("{prtbs:?}"))
        }
    })
    .await;

    // The plugin takes both back before that status write arrives, so the write is refused as stale.
    let current = world.get(name).await.expect("the object exists");
    assert!(
        !synced(&current, &members).contains(&"bob".to_string()) && binding_status(&current, &admins).is_none(),
        "the status write was not held back long enough to conflict: {}",
        current["status"]
    );
    replace_spec(&world, current, before)
        .await
        .expect("the spec changes before the held status write lands (no status was written since the read)");
    world.cluster.api_faults().clear_faults();

    // What the conflicting pass did is revoked: bob leaves, the admin group and its PRTB go.
    wait_members(&world, &group_path(&members), &["alice"]).await;
    wait_state("the admin PRTB is deleted", || {
        let prtbs = world.prtbs(&project_id);
        if prtbs.contains(&admin_prtb) {
            Err(format!("{prtbs:?}"))
        } else {
            Ok(())
        }
    })
    .await;
    wait_keycloak("the admin group is deleted", || async {
        if world.group_exists(&group_path(&admins)).await {
            Err("still there".to_string())
        } else {
            Ok(())
        }
    })
    .await;
    let object = world
        .wait_for(name, "Ready with alice only", |o: &Value| {
            crate::support::is_ready(o) && synced(o, &members) == vec!["alice"] && binding_status(o, &admins).is_none()
        })
        .await;
    assert_eq!(
        object["status"]["keycloakRoleBindings"].as_array().map(Vec::len),
        Some(1),
        "{}",
        object["status"]
    );
}
