//! Drift: Rancher and Keycloak cannot be watched, so a child group or PRTB deleted behind the operator's back is
//! restored by the resync (2 s in the tests), members included.

use crate::support::{
    RESYNC_SECONDS, Setup, World, binding, group_name, group_path, wait_members, wait_state, writer_labels, writer_spec,
};

#[tokio::test]
async fn a_child_group_or_prtb_deleted_behind_the_operators_back_is_restored_within_the_resync_interval() {
    let world = World::start(Setup::default()).await;
    let rp = "5555eeee4b2c4e7f9a0b1c2d3e4f5a6b";
    let group = group_name(rp, "project_member");
    world
        .write(
            "drift-5555eeee",
            writer_spec("Drift", rp, vec![binding(&group, "project-member", &["alice", "bob"])]),
            writer_labels(rp),
        )
        .await;
    let object = world.wait_ready("drift-5555eeee").await;
    let project_id = object["status"]["rancherProjectId"]
        .as_str()
        .expect("project id")
        .to_string();
    let expected = vec![(format!("keycloakoidc_group://{group}"), "project-member".to_string())];

    // Someone deletes the Keycloak group (and with it every membership).
    let started = std::time::Instant::now();
    assert!(world.keycloak().delete_group(&group_path(&group)).await);
    wait_members(&world, &group_path(&group), &["alice", "bob"]).await;
    let group_restored = started.elapsed();

    // Someone deletes the PRTB.
    let binding_id = world
        .env
        .rancher
        .project_bindings()
        .iter()
        .find(|b| b["projectId"] == project_id.as_str())
        .and_then(|b| b["id"].as_str().map(str::to_string))
        .expect("the PRTB exists");
    let started = std::time::Instant::now();
    world
        .rancher_call(
            reqwest::Method::DELETE,
            &format!("/v3/projectroletemplatebindings/{binding_id}"),
            None,
        )
        .await;
    wait_state("the PRTB is back", || {
        let prtbs = world.prtbs(&project_id);
        if prtbs == expected {
            Ok(())
        } else {
            Err(format!("{prtbs:?}"))
        }
    })
    .await;
    let binding_restored = started.elapsed();
    // The resync interval plus its jitter, the pass itself and scheduling slack on a loaded CI machine.
    let limit = std::time::Duration::from_secs(RESYNC_SECONDS * 2 + 6);
    assert!(
        group_restored < limit && binding_restored < limit,
        "restored within the resync interval: group {group_restored:?}, binding {binding_restored:?}"
    );
    let restored_id = world
        .group_id(&group_path(&group))
        .await
        .expect("the group exists again");
    world
        .wait_for("drift-5555eeee", "the status records the new group id", |o| {
            crate::support::is_ready(o)
                && crate::support::binding_status(o, &group)
                    .is_some_and(|b| b["keycloakGroupId"] == restored_id.as_str())
        })
        .await;
}
