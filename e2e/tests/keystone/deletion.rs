//! Deleting a KeystoneApplicationCredential releases its Secrets to garbage collection and leaves the
//! credentials in Keystone to expire (services keep working) — also when Keystone cannot be reached.

use e2e::harness::{Deadline, wait_until};
use kube::api::DeleteParams;

use crate::support::{CREDENTIAL, Setup, World};

async fn delete_and_wait_until_gone(world: &World) {
    world
        .cluster
        .kubectl()
        .run(&["delete", "-n", &world.namespace, "appcred", CREDENTIAL, "--wait=false"])
        .await
        .expect_success("delete the credential");
    let credentials = world.credentials();
    let secrets = world.secrets();
    wait_until("the credential and its Secrets to be gone", Deadline::secs(60), || {
        let credentials = credentials.clone();
        let secrets = secrets.clone();
        async move {
            let credential = credentials.get_opt(CREDENTIAL).await.map_err(|e| e.to_string())?;
            let left = secrets
                .list_metadata(&kube::api::ListParams::default())
                .await
                .map_err(|e| e.to_string())?
                .items
                .into_iter()
                .filter_map(|s| s.metadata.name)
                .filter(|name| name.starts_with("ac-barbican-"))
                .collect::<Vec<_>>();
            if credential.is_none() && left.is_empty() {
                Ok(Some(()))
            } else {
                Err(format!(
                    "credential present: {}; Secrets left: {left:?}",
                    credential.is_some()
                ))
            }
        }
    })
    .await;
}

#[tokio::test]
async fn deleting_the_credential_releases_its_secrets_and_leaves_the_credentials_valid_in_keystone() {
    let world = World::start(Setup::default()).await;
    world.apply_credential(&["service"], "").await;
    let first = world.wait_ready(None).await.status.expect("status");
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
        .expect_success("rotate");
    let second = world.wait_ready(first.ac_id.as_deref()).await.status.expect("status");
    let mut kept = Vec::new();
    for name in [first.secret_name.clone(), second.secret_name.clone()]
        .into_iter()
        .flatten()
    {
        kept.push(world.secret_credential(&name).await);
    }

    delete_and_wait_until_gone(&world).await;

    assert_eq!(
        world.keystone_credentials().await.len(),
        2,
        "deletion leaves the credentials in Keystone"
    );
    for (id, secret) in kept {
        let status = world
            .admin
            .authenticate_application_credential(&id, &secret)
            .await
            .expect("log in");
        assert_eq!(
            status.as_u16(),
            201,
            "credential {id} must keep working until it expires"
        );
    }
}

#[tokio::test]
async fn deletion_completes_while_keystone_is_unreachable_and_the_password_secret_is_gone() {
    let world = World::start(Setup {
        proxy: true,
        ..Setup::default()
    })
    .await;
    world.apply_credential(&["service"], "").await;
    world.wait_ready(None).await;

    world.proxy.as_ref().expect("proxy").set_down(true);
    world
        .secrets()
        .delete(crate::support::PASSWORD_SECRET, &DeleteParams::default())
        .await
        .expect("delete the password");
    delete_and_wait_until_gone(&world).await;
    assert_eq!(world.keystone_credentials().await.len(), 1);
}
