//! Once converged, reconciles (the drift resync every 2 s) only read: nothing is written to Rancher, Keycloak
//! or the API server.

use crate::support::{Setup, World, binding, group_name, writer_labels, writer_spec};

#[tokio::test]
async fn reconciles_after_convergence_write_nothing_to_rancher_keycloak_or_the_api() {
    let world = World::start(Setup::default()).await;
    let rp = "1111aaaa4b2c4e7f9a0b1c2d3e4f5a6b";
    world
        .write(
            "steady-1111aaaa",
            writer_spec(
                "Steady",
                rp,
                vec![
                    binding(&group_name(rp, "project_admin"), "project-owner", &["alice"]),
                    binding(
                        &group_name(rp, "project_member"),
                        "project-member",
                        &["bob", "carol", "nobody"],
                    ),
                ],
            ),
            writer_labels(rp),
        )
        .await;
    world.wait_ready("steady-1111aaaa").await;
    // The reconcile our own status write triggers has run too.
    let settled = world.wait_reconciles(world.reconciles().await, 1).await;

    world.reset_counters();
    let api_writes = world.cluster.write_requests();
    let until = world.wait_reconciles(settled, 3).await;
    let reconciles = until - settled;
    assert_eq!(
        world.rancher_writes(),
        0,
        "no Rancher writes: {:?}",
        world.rancher_breakdown()
    );
    assert_eq!(
        world.keycloak_writes(),
        0,
        "no Keycloak writes: {:?}",
        world.keycloak_breakdown()
    );
    assert_eq!(world.cluster.write_requests(), api_writes, "no API writes");
    let (rancher, keycloak) = (world.rancher_requests(), world.keycloak_requests());
    eprintln!(
        "MEASURE no-op reconcile: {reconciles} reconciles made {rancher} Rancher reads {:?} and {keycloak} Keycloak \
         reads {:?}; 0 writes anywhere",
        world.rancher_breakdown(),
        world.keycloak_breakdown()
    );
    assert!(
        rancher > 0 && keycloak > 0,
        "the resync did look at Rancher and Keycloak"
    );
    // One pending member (nobody) is looked up on every pass; everything else is one call per object.
    assert!(
        rancher <= 3 * (reconciles + 1) && keycloak <= 6 * (reconciles + 1),
        "reads per reconcile stay small: {rancher} Rancher, {keycloak} Keycloak over {reconciles} reconciles"
    );
}
