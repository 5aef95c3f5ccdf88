//! Rotation: on demand (status.expiresAt patched into the past), when the permissions change, and on schedule
//! at exactly `rotationEligibleAt` — each time a new credential in a new Secret, the old one kept and working.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::events::v1::Event;
use kube::Api;
use kube::api::ListParams;
use serde_json::json;

use crate::support::{CREDENTIAL, Setup, World};

#[tokio::test]
async fn patching_expires_at_into_the_past_rotates_and_keeps_the_old_secret_working() {
    let mut world = World::start(Setup::default()).await;
    world.apply_credential(&["service"], "").await;
    let first = world.wait_ready(None).await.status.expect("status");
    let first_id = first.ac_id.clone().expect("acID");
    let first_secret = first.secret_name.clone().expect("secretName");
    let calls_before = world.keystone_requests().await;

    let patched_at = Timestamp::now();
    world
        .cluster
        .kubectl()
        .run(&[
            "patch",
            "-n",
            &world.namespace,
            "keystoneapplicationcredential",
            CREDENTIAL,
            "--type=merge",
            "--subresource=status",
            "-p",
            r#"{"status":{"expiresAt":"2001-05-19T00:00:00Z"}}"#,
        ])
        .await
        .expect_success("patch status.expiresAt");

    let second = world.wait_ready(Some(&first_id)).await.status.expect("status");
    let second_id = second.ac_id.clone().expect("acID");
    let second_secret = second.secret_name.clone().expect("secretName");
    assert_ne!(second_secret, first_secret);
    assert_eq!(second_secret, format!("ac-barbican-{}-secret", &second_id[..5]));
    assert_eq!(second.previous_secret_name.as_deref(), Some(first_secret.as_str()));
    let last_rotated = second.last_rotated.clone().expect("lastRotated is set by a rotation").0;
    assert!(
        last_rotated >= patched_at - SignedDuration::from_secs(2),
        "lastRotated {last_rotated}"
    );
    assert!(second.expires_at.expect("expiresAt").0 > Timestamp::now() + SignedDuration::from_hours(24 * 300));

    // Both Secrets exist and both credentials log in; Keystone holds exactly two.
    world.assert_secret_authenticates(&first_secret).await;
    world.assert_secret_authenticates(&second_secret).await;
    let names: Vec<String> = world
        .credential_secrets()
        .await
        .iter()
        .filter_map(|s| s.metadata.name.clone())
        .collect();
    assert!(
        names.contains(&first_secret) && names.contains(&second_secret),
        "{names:?}"
    );
    assert_eq!(world.keystone_credentials().await.len(), 2);

    let calls = world.keystone_requests().await - calls_before;
    println!("Keystone calls for a rotation (token cached): {calls}");
    assert_eq!(calls, 1, "a rotation with a cached token is one create");

    // The rotation is announced.
    let events: Api<Event> = Api::namespaced(world.cluster.client(), &world.namespace);
    let rotated = events
        .list(&ListParams::default())
        .await
        .expect("list events")
        .items
        .into_iter()
        .find(|e| e.reason.as_deref() == Some("ApplicationCredentialRotated"))
        .expect("an ApplicationCredentialRotated event");
    let note = rotated.note.unwrap_or_default();
    assert!(note.contains(&second_id) && note.contains(&first_secret), "{note}");
    assert_eq!(rotated.type_.as_deref(), Some("Normal"));

    // Prometheus sees one credential per cause, and the next rotation months ahead.
    assert_eq!(world.credentials_created("initial").await, 1);
    assert_eq!(world.credentials_created("manual").await, 1);
    assert_eq!(world.credentials_created("expiry").await, 0);
    let until = world.seconds_until_rotation().await.expect("seconds until rotation");
    let expected = second
        .rotation_eligible_at
        .expect("rotationEligibleAt")
        .0
        .duration_since(Timestamp::now());
    assert!(
        (until - expected.as_secs_f64()).abs() < 30.0,
        "seconds until rotation {until}, expected about {expected}"
    );
}

#[tokio::test]
async fn changing_roles_or_access_rules_rotates_but_changing_expiration_days_does_not() {
    let mut world = World::start(Setup {
        user_roles: &["service", "reader"],
        ..Setup::default()
    })
    .await;
    world.apply_credential(&["service"], "").await;
    let first = world.wait_ready(None).await;
    let first_id = first.status.clone().and_then(|s| s.ac_id).expect("acID");

    // expirationDays only applies to the next credential.
    world.apply_credential(&["service"], "  expirationDays: 400\n").await;
    let generation = world.credential().await.metadata.generation;
    let api = world.credentials();
    e2e::harness::wait_until(
        "the new generation to be observed",
        e2e::harness::Deadline::secs(30),
        || {
            let api = api.clone();
            async move {
                let ac = api.get(CREDENTIAL).await.map_err(|e| e.to_string())?;
                let observed = ac.status.as_ref().and_then(|s| s.observed_generation);
                if observed == generation {
                    Ok(Some(()))
                } else {
                    Err(format!("observed {observed:?}"))
                }
            }
        },
    )
    .await;
    // The reconcile that observed the new generation decided about rotation before writing that status.
    let unchanged = world.credential().await.status.expect("status");
    assert_eq!(
        unchanged.ac_id.as_deref(),
        Some(first_id.as_str()),
        "expirationDays alone must not rotate"
    );
    assert_eq!(world.keystone_credentials().await.len(), 1);

    // A new role rotates.
    world
        .apply_credential(&["service", "reader"], "  expirationDays: 400\n")
        .await;
    let second = world.wait_ready(Some(&first_id)).await.status.expect("status");
    let second_id = second.ac_id.clone().expect("acID");
    let keystone = world
        .admin
        .application_credential(&world.user.id, &second_id)
        .await
        .expect("read")
        .expect("exists");
    let roles: Vec<&str> = keystone["roles"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(roles.contains(&"reader") && roles.contains(&"service"), "{roles:?}");
    let lifetime = second
        .expires_at
        .expect("expiresAt")
        .0
        .duration_since(second.created_at.expect("createdAt").0);
    assert!(
        (lifetime - SignedDuration::from_hours(400 * 24)).abs() < SignedDuration::from_secs(5),
        "{lifetime}"
    );

    // New access rules rotate.
    world
        .apply_credential(
            &["service", "reader"],
            "  expirationDays: 400\n  accessRules:\n    - service: key-manager\n      path: /v1/secrets/**\n      method: GET\n",
        )
        .await;
    let third = world.wait_ready(Some(&second_id)).await.status.expect("status");
    let third_id = third.ac_id.clone().expect("acID");
    let keystone = world
        .admin
        .application_credential(&world.user.id, &third_id)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(keystone["access_rules"][0]["service"], json!("key-manager"));
    assert_eq!(world.keystone_credentials().await.len(), 3);
    assert_eq!(third.previous_secret_name, second.secret_name);
    assert_eq!(world.credentials_created("initial").await, 1);
    assert_eq!(world.credentials_created("spec_change").await, 2);
}

#[tokio::test]
async fn a_credential_rotates_on_its_own_exactly_at_rotation_eligible_at() {
    let mut world = World::start(Setup::default()).await;
    world
        .apply_credential(&["service"], "  expirationDays: 2\n  gracePeriodDays: 1\n")
        .await;
    let first = world.wait_ready(None).await.status.expect("status");
    let first_id = first.ac_id.clone().expect("acID");
    let eligible = first.rotation_eligible_at.clone().expect("rotationEligibleAt").0;

    // Restart the manager with its clock (test-only flag) set so that rotationEligibleAt is 8 s away. Nothing
    // else changes: only the controller's own timed wake-up can rotate.
    let lead = SignedDuration::from_secs(8);
    let offset = eligible.duration_since(Timestamp::now()) - lead;
    world.manager().stop().await;
    world.manager = None;
    world
        .start_manager(vec![format!(
            "--appcred-test-clock-offset-seconds={}",
            offset.as_secs()
        )])
        .await;
    let restarted_at = Timestamp::now();

    let rotated = world.wait_ready(Some(&first_id)).await.status.expect("status");
    let rotated_at_real = Timestamp::now();
    let last_rotated = rotated.last_rotated.clone().expect("lastRotated").0;
    // lastRotated is on the manager's (shifted) clock: it must be at or just after rotationEligibleAt.
    assert!(last_rotated >= eligible, "rotated at {last_rotated}, before {eligible}");
    assert!(
        last_rotated.duration_since(eligible) < SignedDuration::from_secs(5),
        "rotated at {last_rotated}, long after {eligible}"
    );
    assert!(
        rotated_at_real.duration_since(restarted_at) >= SignedDuration::from_secs(4),
        "the rotation must wait for rotationEligibleAt, not happen at start-up"
    );
    assert_eq!(rotated.previous_secret_name, first.secret_name);
    world
        .assert_secret_authenticates(rotated.secret_name.as_deref().expect("secretName"))
        .await;
    assert_eq!(world.keystone_credentials().await.len(), 2);
    // The restarted manager minted exactly one credential, on schedule.
    assert_eq!(world.credentials_created("expiry").await, 1);
    assert_eq!(world.credentials_created("manual").await, 0);
}

#[tokio::test]
async fn deleting_the_current_secret_rotates_at_once_through_a_metadata_only_secret_watch() {
    use kube::api::DeleteParams;

    let mut world = World::start(Setup {
        api_faults: true,
        ..Setup::default()
    })
    .await;
    world.apply_credential(&["service"], "").await;
    let first = world.wait_ready(None).await.status.expect("status");
    let first_id = first.ac_id.clone().expect("acID");
    let first_secret = first.secret_name.clone().expect("secretName");
    // Nothing is due for months (no timed pass before the deadline of `wait_ready`): only the watch on the
    // credential's own Secret can bring the rotation.
    // The protection finalizer holds the Secret; its deletionTimestamp is the change the watch reports.
    world
        .secrets()
        .delete(&first_secret, &DeleteParams::default())
        .await
        .expect("delete the current Secret");
    let second = world.wait_ready(Some(&first_id)).await.status.expect("status");
    assert_ne!(second.secret_name.as_deref(), Some(first_secret.as_str()));
    assert_eq!(second.previous_secret_name.as_deref(), Some(first_secret.as_str()));
    world
        .assert_secret_authenticates(second.secret_name.as_deref().expect("secretName"))
        .await;

    // Secrets are watched by metadata only: their data never travels to the manager through a watch.
    let requests = world.cluster.api_faults();
    assert!(requests.count_route("watch secrets metadata") >= 1);
    assert_eq!(
        requests.count_route("watch secrets"),
        0,
        "a Secret watch asked for full objects"
    );
    assert_eq!(world.credentials_created("secret_lost").await, 1);
}
