//! The manager killed (SIGKILL) in the middle of a rotation never mints a second credential for it and never
//! loses a Secret: the three crash points that matter are after the intention is recorded, after Keystone
//! created the credential but before its answer arrived, and after the Secret was made but before the status
//! recorded it.

use std::time::Duration;

use e2e::harness::fault_proxy::Fault;
use e2e::harness::{Deadline, wait_until};
use kube::api::PostParams;

use crate::support::{CREDENTIAL, Setup, World};

const RECORD: &str = "ac-barbican-pending-credential";

async fn patch_expiry_into_the_past(world: &World) {
    world
        .cluster
        .kubectl()
        .run(&[
            "patch",
            "-n",
            &world.namespace,
            "appcred",
            CREDENTIAL,
            "--type=merge",
            "--subresource=status",
            "-p",
            r#"{"status":{"expiresAt":"2001-05-19T00:00:00Z"}}"#,
        ])
        .await
        .expect_success("patch status.expiresAt");
}

async fn wait_for_keystone_count(world: &World, count: usize) {
    let admin = world.admin.clone();
    let user = world.user.id.clone();
    wait_until(&format!("{count} credentials in Keystone"), Deadline::secs(30), || {
        let admin = admin.clone();
        let user = user.clone();
        async move {
            let found = admin
                .application_credentials(&user)
                .await
                .map_err(|e| e.to_string())?
                .len();
            if found >= count {
                Ok(Some(()))
            } else {
                Err(format!("{found} credentials"))
            }
        }
    })
    .await;
}

/// After recovery: exactly `expected` credentials in Keystone, and the current and previous Secrets exist and
/// log in.
async fn assert_exactly_once(world: &World, expected: usize, first_id: &str, first_secret: &str) {
    let status = world.wait_ready(Some(first_id)).await.status.expect("status");
    let credentials = world.keystone_credentials().await;
    assert_eq!(credentials.len(), expected, "Keystone holds {credentials:#?}");
    let current = status.secret_name.clone().expect("secretName");
    assert_eq!(status.previous_secret_name.as_deref(), Some(first_secret));
    let (id, _) = world.secret_credential(&current).await;
    assert_eq!(status.ac_id.as_deref(), Some(id.as_str()));
    world.assert_secret_authenticates(&current).await;
    world.assert_secret_authenticates(first_secret).await;
    let secrets = world.credential_secrets().await;
    assert_eq!(
        secrets.len(),
        expected,
        "one Secret per credential: {:?}",
        secrets.iter().map(|s| &s.metadata.name).collect::<Vec<_>>()
    );
    let record = world.secrets().get_opt(RECORD).await.expect("read the creation record");
    let api = world.secrets();
    if record.is_some() {
        wait_until("the creation record to be deleted", Deadline::secs(30), || {
            let api = api.clone();
            async move {
                Ok(api
                    .get_opt(RECORD)
                    .await
                    .map_err(|e| e.to_string())?
                    .is_none()
                    .then_some(()))
            }
        })
        .await;
    }
}

#[tokio::test]
async fn a_manager_killed_before_keystones_answer_arrived_completes_that_credential_instead_of_minting_another() {
    let mut world = World::start(Setup {
        proxy: true,
        ..Setup::default()
    })
    .await;
    world.apply_credential(&["service"], "").await;
    let first = world.wait_ready(None).await.status.expect("status");
    let first_secret = first.secret_name.clone().expect("secretName");
    let first_id = first.ac_id.clone().expect("acID");

    // Keystone acts on the create, but its answer is held back until the manager is dead.
    world
        .proxy
        .as_ref()
        .expect("proxy")
        .set_response_delay(Duration::from_secs(25));
    patch_expiry_into_the_past(&world).await;
    wait_for_keystone_count(&world, 2).await;
    world.manager().kill().await;
    world.proxy.as_ref().expect("proxy").set_response_delay(Duration::ZERO);
    world.manager().restart().await;

    assert_exactly_once(&world, 2, &first_id, &first_secret).await;
    assert!(
        world.manager().log().contains("resumed an interrupted creation"),
        "the restart must resume, not re-create"
    );
    let calls = world.keystone_requests().await;
    println!("Keystone calls to resume an interrupted creation: {calls}");
    assert_eq!(
        calls, 4,
        "login, create (409), find by name, log in with the recorded secret"
    );
}

#[tokio::test]
async fn a_manager_killed_before_the_status_recorded_a_new_secret_does_not_mint_another() {
    let mut world = World::start(Setup {
        user_roles: &["service", "reader"],
        api_faults: true,
        ..Setup::default()
    })
    .await;
    world.apply_credential(&["service"], "").await;
    let first = world.wait_ready(None).await.status.expect("status");
    let first_secret = first.secret_name.clone().expect("secretName");
    let first_id = first.ac_id.clone().expect("acID");

    // Status writes (patches of the credential) hang; the spec change below is an update, so it goes through.
    world.cluster.api_faults().add_fault(
        Fault::route("patch keystoneapplicationcredentials.keystone.openstack.org*")
            .latency(std::time::Duration::from_secs(60)),
    );
    let mut ac = world.credential().await;
    ac.spec.roles.push("reader".into());
    world
        .credentials()
        .replace(CREDENTIAL, &PostParams::default(), &ac)
        .await
        .expect("update the roles");
    let api = world.secrets();
    wait_until("the new credential's Secret", Deadline::secs(30), || {
        let api = api.clone();
        async move {
            let list = api
                .list_metadata(&kube::api::ListParams::default().labels(crate::support::SERVICE_SELECTOR))
                .await
                .map_err(|e| e.to_string())?;
            Ok((list.items.len() >= 2).then_some(()))
        }
    })
    .await;
    wait_for_keystone_count(&world, 2).await;
    world.manager().kill().await;
    world.cluster.api_faults().clear_faults();
    world.manager().restart().await;

    assert_exactly_once(&world, 2, &first_id, &first_secret).await;
}

#[tokio::test]
async fn a_manager_killed_right_after_recording_its_intention_creates_exactly_that_credential() {
    let mut world = World::start(Setup::default()).await;
    world.apply_credential(&["service"], "").await;
    let first = world.wait_ready(None).await.status.expect("status");
    let first_secret = first.secret_name.clone().expect("secretName");
    let first_id = first.ac_id.clone().expect("acID");

    patch_expiry_into_the_past(&world).await;
    let api = world.secrets();
    wait_until(
        "the creation record",
        Deadline {
            timeout: Duration::from_secs(30),
            poll: Duration::from_millis(5),
        },
        || {
            let api = api.clone();
            async move { Ok(api.get_opt(RECORD).await.map_err(|e| e.to_string())?.map(|_| ())) }
        },
    )
    .await;
    world.manager().kill().await;
    let created_before_restart = world.keystone_credentials().await.len();
    world.manager().restart().await;

    println!("credentials in Keystone when the manager died: {created_before_restart}");
    assert_exactly_once(&world, 2, &first_id, &first_secret).await;
}
