//! A Deployment written for rancher-keycloak-operator works unchanged: the manager started with only its
//! environment (`RANCHER_URL`, `RANCHER_BEARER_TOKEN`, `RANCHER_VERIFY_SSL=false` against a self-signed Rancher,
//! `KEYCLOAK_URL`/`KEYCLOAK_REALM`/`KEYCLOAK_USERNAME`/`KEYCLOAK_PASSWORD`/`KEYCLOAK_USER_REALM`/
//! `KEYCLOAK_VERIFY_SSL`, `CR_NAMESPACE`) makes a project Ready, and announces each deprecated variable.

use e2e::harness::{ManagerOptions, ManagerProcess};

use crate::support::{NAMESPACE, RESYNC_SECONDS, Setup, World, binding, group_name, writer_labels, writer_spec};

#[tokio::test]
async fn the_manager_runs_from_rancher_keycloak_operators_environment() {
    let mut world = World::start(Setup {
        tls: true,
        manager: false,
        ..Setup::default()
    })
    .await;
    let (username, password) = world.env.keycloak.admin_credentials();
    let env = [
        ("RANCHER_URL", world.env.rancher.url().to_string()),
        ("RANCHER_BEARER_TOKEN", world.env.rancher.admin_token()),
        ("RANCHER_VERIFY_SSL", "False".to_string()),
        ("KEYCLOAK_URL", world.env.keycloak.url().to_string()),
        ("KEYCLOAK_REALM", world.realm().to_string()),
        ("KEYCLOAK_USERNAME", username.to_string()),
        ("KEYCLOAK_PASSWORD", password.to_string()),
        ("KEYCLOAK_USER_REALM", "master".to_string()),
        ("KEYCLOAK_VERIFY_SSL", "false".to_string()),
        ("CR_NAMESPACE", NAMESPACE.to_string()),
    ];
    let options = ManagerOptions {
        env: env.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
        ..ManagerOptions::controllers(
            &["managedrancherproject", "rancherprojectinventory"],
            None,
            vec![format!("--rancher-resync-interval-seconds={RESYNC_SECONDS}")],
        )
    };
    world.manager = Some(ManagerProcess::start(&world.cluster, options).await);
    let rp = "ceceCECE4b2c4e7f9a0b1c2d3e4f5a6b".to_lowercase();
    let group = group_name(&rp, "project_member");
    world
        .write(
            "original-cececece",
            writer_spec("Original env", &rp, vec![binding(&group, "project-member", &["alice"])]),
            writer_labels(&rp),
        )
        .await;
    world.wait_ready("original-cececece").await;
    assert_eq!(
        world.members(&crate::support::group_path(&group)).await,
        Some(vec!["alice".to_string()])
    );
    let log = world.manager().log();
    for deprecated in [
        "RANCHER_BEARER_TOKEN (rancher-keycloak-operator) is deprecated",
        "KEYCLOAK_URL (rancher-keycloak-operator) is deprecated",
        "RANCHER_VERIFY_SSL",
        "CR_NAMESPACE (rancher-keycloak-operator) is ignored",
        "verification is OFF",
    ] {
        assert!(log.contains(deprecated), "the log says {deprecated:?}");
    }
    let token = world.env.rancher.admin_token();
    let secret_part = token.split_once(':').map_or(token.as_str(), |(_, secret)| secret);
    assert!(
        !log.contains(secret_part),
        "the Rancher token from the environment reached the log"
    );
    // The test administrator's password is random, so its absence from the log means something.
    let (_, password) = world.env.keycloak.admin_credentials();
    assert!(
        !log.contains(password),
        "the Keycloak password from the environment reached the log"
    );
}
