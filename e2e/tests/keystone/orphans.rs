//! Keystone application credentials whose KeystoneApplicationCredential is gone (deletion leaves them valid until
//! they expire): the sweep, logged in as the service user a live object still names, reports them by default and
//! deletes them with `--keystone-orphaned-credentials=delete` after the grace period; the live object's credential
//! is never touched. Against the real Keystone.

use e2e::harness::{Deadline, wait_until};
use serde_json::Value;

use crate::support::{CREDENTIAL, Setup, World};

const GONE: &str = "ac-gone";

/// Ids of the service user's credentials in Keystone.
async fn ids(world: &World) -> Vec<String> {
    world
        .keystone_credentials()
        .await
        .iter()
        .filter_map(|c| c["id"].as_str().map(str::to_string))
        .collect()
}

/// Waits until the manager's orphan gauge reads `count`.
async fn wait_counted(world: &mut World, count: u64) {
    let manager = world.manager();
    let line = format!("keystone_orphaned_application_credentials {count}");
    wait_until("the orphan gauge", Deadline::secs(60), || {
        let line = line.clone();
        let manager = &*manager;
        async move {
            let metrics = manager.metrics().await;
            if metrics.lines().any(|l| l == line) {
                Ok(Some(()))
            } else {
                Err(metrics
                    .lines()
                    .filter(|l| l.starts_with("keystone_orphaned"))
                    .collect::<Vec<_>>()
                    .join(" "))
            }
        }
    })
    .await;
}

#[tokio::test]
async fn credentials_of_a_deleted_object_are_reported_then_deleted_and_the_live_ones_kept() {
    let mut world = World::start(Setup {
        manager_args: vec!["--keystone-orphan-scan-seconds=1".to_string()],
        ..Setup::default()
    })
    .await;
    // Two objects for the same service user; one is deleted (its credential stays valid in Keystone).
    world.apply_credential(&["service"], "").await;
    let kept = world.wait_ready(None).await;
    let kept_id = kept.status.and_then(|s| s.ac_id).expect("the kept credential's id");
    let gone_yaml = world
        .credential_yaml(&["service"], "")
        .replace(&format!("name: {CREDENTIAL}\n"), &format!("name: {GONE}\n"));
    world.cluster.kubectl().apply(&gone_yaml).await;
    let gone_id = wait_until("the second credential minted", Deadline::secs(60), || async {
        let object = world.credentials().get(GONE).await.map_err(|e| e.to_string())?;
        Ok(object.status.and_then(|s| s.ac_id).filter(|id| !id.is_empty()))
    })
    .await;
    world
        .cluster
        .kubectl()
        .run(&["delete", "-n", &world.namespace, "appcred", GONE])
        .await
        .expect_success("delete the second credential");
    assert!(ids(&world).await.contains(&gone_id), "deletion leaves it in Keystone");

    // Reported, not deleted.
    wait_counted(&mut world, 1).await;
    let log = world.manager().log();
    assert!(
        log.contains("Keystone application credential of a KeystoneApplicationCredential that no longer exists")
            && log.contains(&gone_id),
        "the log names the orphan"
    );
    assert!(ids(&world).await.contains(&gone_id), "report mode deletes nothing");

    // Deleted with the policy, after a grace period of 0; the live object's credential stays.
    world.manager.take().expect("the manager").stop().await;
    world
        .start_manager(vec![
            "--keystone-orphan-scan-seconds=1".to_string(),
            "--keystone-orphaned-credentials=delete".to_string(),
            "--keystone-orphan-grace-seconds=0".to_string(),
        ])
        .await;
    wait_until("the orphan deleted in Keystone", Deadline::secs(60), || async {
        let left = ids(&world).await;
        if left.contains(&gone_id) {
            Err(format!("{left:?}"))
        } else {
            Ok(Some(left))
        }
    })
    .await;
    wait_counted(&mut world, 0).await;
    let left: Vec<Value> = world.keystone_credentials().await;
    assert_eq!(
        left.iter().filter_map(|c| c["id"].as_str()).collect::<Vec<_>>(),
        vec![kept_id.as_str()],
        "only the live object's credential is left"
    );
    world.assert_secret_authenticates(&kept_secret_name(&world).await).await;
}

/// The Secret holding the live object's current credential.
async fn kept_secret_name(world: &World) -> String {
    world
        .credential()
        .await
        .status
        .and_then(|s| s.secret_name)
        .expect("the Secret's name")
}
