//! The namespaced install (`manifests/overlays/namespaced`): with Roles only in its namespace the controller
//! creates a credential against the real Keystone and, on deletion, releases its Secrets.

use e2e::harness::{Deadline, wait_until};

use crate::support::{CREDENTIAL, NAMESPACED_INSTALL_NAMESPACE, Setup, World};

#[tokio::test]
async fn a_namespaced_install_creates_and_releases_a_credential_holding_only_roles() {
    let world = World::start(Setup {
        // The overlay's `keystoneapplicationcredentials/finalizers` grant is used by a check inside admission
        // (OwnerReferencesPermissionEnforcement); the control plane's admission-check record shows it to
        // `rbac-coverage`.
        namespaced: true,
        ..Setup::default()
    })
    .await;
    assert_eq!(world.namespace, NAMESPACED_INSTALL_NAMESPACE);
    world.apply_credential(&["service"], "").await;
    let ready = world.wait_ready(None).await;
    let secret = ready.status.and_then(|s| s.secret_name).expect("secretName");
    world.assert_secret_authenticates(&secret).await;

    world
        .cluster
        .kubectl()
        .run(&["delete", "-n", &world.namespace, "appcred", CREDENTIAL, "--wait=false"])
        .await
        .expect_success("delete the credential");
    let (credentials, secrets) = (world.credentials(), world.secrets());
    wait_until("the credential and its Secret gone", Deadline::secs(60), || {
        let (credentials, secrets, secret) = (credentials.clone(), secrets.clone(), secret.clone());
        async move {
            let credential = credentials.get_opt(CREDENTIAL).await.map_err(|e| e.to_string())?;
            let left = secrets.get_opt(&secret).await.map_err(|e| e.to_string())?;
            Ok((credential.is_none() && left.is_none()).then_some(()))
        }
    })
    .await;
    // The harness fails the test if the manager was answered Forbidden on the way.
}
