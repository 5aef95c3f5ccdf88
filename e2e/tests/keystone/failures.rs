//! Every wait and failure shows on a condition with its own reason and a message that names no secret, and
//! recovers by itself once fixed: Kubernetes-side causes through watches (no polling), Keystone outages through
//! backoff.

use crate::support::{PASSWORD_SECRET, Setup, World};

fn assert_no_secret_in(message: &str, world: &World) {
    assert!(
        !message.contains(&world.user.password),
        "a condition leaked the password: {message}"
    );
}

#[tokio::test]
async fn a_missing_then_unready_keystone_api_is_reported_and_recovers_when_keystone_api_becomes_ready() {
    let mut world = World::start(Setup {
        keystone_api: false,
        ..Setup::default()
    })
    .await;
    world.apply_credential(&["service"], "").await;

    let expected = format!("no KeystoneAPI found in namespace {}; waiting for one", world.namespace);
    world
        .wait_condition_message("KeystoneAPIReady", "False", "KeystoneAPINotFound", &expected)
        .await;
    world.wait_condition("Ready", "False", "KeystoneAPINotFound").await;

    // Waiting is watch-driven: nothing polls while nothing changes.
    world.assert_waiting_for_a_watch().await;

    world
        .publish_keystone_api(false, "Deploying the keystone database")
        .await;
    // keystone-operator's own Ready message is passed on.
    let expected = "KeystoneAPI keystone is not ready yet: Deploying the keystone database";
    world
        .wait_condition_message("KeystoneAPIReady", "False", "KeystoneAPINotReady", expected)
        .await;

    world.publish_keystone_api(true, "Setup complete").await;
    let ac = world.wait_ready(None).await;
    world
        .assert_secret_authenticates(ac.status.and_then(|s| s.secret_name).as_deref().expect("secretName"))
        .await;
}

#[tokio::test]
async fn a_missing_password_secret_then_a_wrong_password_are_reported_held_and_recover_when_the_secret_is_fixed() {
    let mut world = World::start(Setup {
        password_secret: false,
        ..Setup::default()
    })
    .await;
    world.apply_credential(&["service"], "").await;

    let expected = "waiting for Secret osp-secret holding the password of the service user";
    world
        .wait_condition_message(
            "KeystoneApplicationCredentialReady",
            "False",
            "PasswordSecretNotFound",
            expected,
        )
        .await;
    world
        .wait_condition("KeystoneAPIReady", "True", "KeystoneAPIReady")
        .await;
    world.wait_condition("Ready", "False", "PasswordSecretNotFound").await;
    world.assert_waiting_for_a_watch().await;

    world.write_password("not-the-password").await;
    let message = world
        .wait_condition(
            "KeystoneApplicationCredentialReady",
            "False",
            "KeystoneAuthenticationFailed",
        )
        .await;
    assert!(
        message.contains(&world.user.name) && message.contains("refused the password"),
        "{message}"
    );
    assert!(
        !message.contains("not-the-password"),
        "a condition leaked the password: {message}"
    );
    assert_no_secret_in(&message, &world);
    // The retries that follow do not ask Keystone again with the same password (its lockout counts failed
    // logins): the condition says so, and when the next attempt is.
    let held = world
        .wait_condition_matching(
            "KeystoneApplicationCredentialReady",
            "False",
            "KeystoneAuthenticationFailed",
            |m| m.contains("the same password is not tried again"),
        )
        .await;
    assert!(held.contains("refused the password"), "{held}");
    assert_no_secret_in(&held, &world);

    // A fixed Secret is tried at once, hold or not.
    let password = world.user.password.clone();
    world.write_password(&password).await;
    let ac = world.wait_ready(None).await;
    for condition in &ac.status.clone().unwrap_or_default().conditions {
        assert_no_secret_in(&condition.message, &world);
    }
    world
        .assert_secret_authenticates(ac.status.and_then(|s| s.secret_name).as_deref().expect("secretName"))
        .await;
    assert_eq!(world.keystone_credentials().await.len(), 1);
}

#[tokio::test]
async fn a_password_secret_without_the_key_waits_and_recovers_when_the_secret_changes() {
    let mut world = World::start(Setup {
        password_secret: false,
        ..Setup::default()
    })
    .await;
    let password = world.user.password.clone();
    e2e::keystone::sample::write_password_secret(
        &world.cluster.client(),
        &world.namespace,
        PASSWORD_SECRET,
        "SomeOtherPassword",
        &password,
    )
    .await
    .expect("write the password Secret under another key");
    world.apply_credential(&["service"], "").await;
    world
        .wait_condition("KeystoneApplicationCredentialReady", "False", "PasswordKeyMissing")
        .await;
    world.assert_waiting_for_a_watch().await;

    // Only the change of the existing Secret (seen through the metadata-only Secret watch) can bring the fix.
    world.write_password(&password).await;
    let ac = world.wait_ready(None).await;
    world
        .assert_secret_authenticates(ac.status.and_then(|s| s.secret_name).as_deref().expect("secretName"))
        .await;
}

#[tokio::test]
async fn a_keystone_outage_is_reported_and_recovers_through_backoff_once_keystone_is_back() {
    let world = World::start(Setup {
        proxy: true,
        ..Setup::default()
    })
    .await;
    let proxy = world.proxy.as_ref().expect("proxy");
    proxy.set_down(true);
    world.apply_credential(&["service"], "").await;

    let message = world
        .wait_condition("KeystoneApplicationCredentialReady", "False", "KeystoneUnavailable")
        .await;
    assert!(
        message.contains("keystone") && message.contains("unreachable"),
        "{message}"
    );
    assert_no_secret_in(&message, &world);
    world.wait_condition("Ready", "False", "KeystoneUnavailable").await;

    // Nothing in Kubernetes changes: only the retry schedule can notice Keystone is back.
    proxy.set_down(false);
    let ac = world.wait_ready(None).await;
    world
        .assert_secret_authenticates(ac.status.and_then(|s| s.secret_name).as_deref().expect("secretName"))
        .await;
    assert_eq!(world.keystone_credentials().await.len(), 1);
}
