//! Two writers rotating one credential at the same moment — the overlap of a cutover, played here by two managers
//! of this operator without leader election, started with the same clock: the re-read of the object before minting
//! and the creation record (a Secret only one of them can create) make it one new credential in Keystone, not two.
//! (keystone-operator itself cannot run here; docs/migration.md says what its overlap risks.)

use e2e::harness::{ManagerOptions, ManagerProcess};
use jiff::{SignedDuration, Timestamp};

use crate::support::{CONTROLLER, Setup, World};

#[tokio::test]
async fn two_managers_due_at_the_same_moment_mint_one_credential() {
    let mut world = World::start(Setup::default()).await;
    world
        .apply_credential(&["service"], "  expirationDays: 2\n  gracePeriodDays: 1\n")
        .await;
    let first = world.wait_ready(None).await.status.expect("status");
    let first_id = first.ac_id.clone().expect("acID");
    let eligible = first.rotation_eligible_at.clone().expect("rotationEligibleAt").0;

    // Both clocks put rotationEligibleAt 4 s ahead: each manager's own timed wake-up fires at the same moment.
    let offset = eligible.duration_since(Timestamp::now()) - SignedDuration::from_secs(4);
    let args = vec![format!("--appcred-test-clock-offset-seconds={}", offset.as_secs())];
    world.manager().stop().await;
    world.manager = None;
    world.start_manager(args.clone()).await;
    let mut second =
        ManagerProcess::start(&world.cluster, ManagerOptions::controllers(&[CONTROLLER], None, args)).await;

    let rotated = world.wait_ready(Some(&first_id)).await.status.expect("status");
    assert_eq!(rotated.previous_secret_name, first.secret_name);
    // Both have settled: neither has anything left to do.
    world.manager().wait_idle(CONTROLLER).await;
    second.wait_idle(CONTROLLER).await;
    let in_keystone = world.keystone_credentials().await;
    assert_eq!(in_keystone.len(), 2, "the first and one rotation: {in_keystone:?}");
    let minted = world.credentials_created("expiry").await
        + e2e::harness::metrics::sum(
            &second.metrics().await,
            "keystone_application_credentials_created_total",
            &[("reason", "expiry")],
        );
    assert_eq!(minted, 1, "one manager minted, the other found it done");
    world
        .assert_secret_authenticates(rotated.secret_name.as_deref().expect("secretName"))
        .await;
    second.stop().await;
}
