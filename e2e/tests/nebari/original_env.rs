//! A Deployment written for nebari-operator works unchanged: the manager started with only nebari-operator's
//! environment variables (its names, its value formats) provisions an app, and says which variables are
//! deprecated and what replaces them.

use e2e::harness::{ManagerOptions, ManagerProcess};
use serde_json::json;

use crate::support::{ADMIN_SECRET, ADMIN_SECRET_NAMESPACE, Setup, World, security_policies};

#[tokio::test]
async fn the_manager_runs_from_nebari_operators_environment() {
    let mut world = World::start(Setup {
        manager: false,
        ..Setup::default()
    })
    .await;
    let env = [
        ("KEYCLOAK_ENABLED", "yes"),
        ("KEYCLOAK_URL", world.keycloak.url()),
        ("KEYCLOAK_REALM", world.keycloak.realm()),
        ("KEYCLOAK_ADMIN_SECRET_NAME", ADMIN_SECRET),
        ("KEYCLOAK_ADMIN_SECRET_NAMESPACE", ADMIN_SECRET_NAMESPACE),
        ("KEYCLOAK_EXTERNAL_URL", "https://keycloak.example.com"),
        ("KEYCLOAK_API_TIMEOUT", "5s"),
        ("KEYCLOAK_ISSUER_SERVICE_NAME", "keycloak-http"),
        ("KEYCLOAK_ISSUER_CONTEXT_PATH", "/auth"),
        ("TLS_CLUSTER_ISSUER_NAME", ""),
    ];
    let options = ManagerOptions {
        env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..ManagerOptions::controllers(&["nebariapp"], None, Vec::new())
    };
    world.manager = Some(ManagerProcess::start(&world.cluster, options).await);
    world
        .apply_app("web", json!({"routing": {}, "auth": {"enabled": true}}))
        .await;
    world.wait_ready("web").await;

    let policy = world
        .object(&security_policies(), &world.namespace, "web-security")
        .await
        .expect("the SecurityPolicy");
    assert_eq!(
        policy["spec"]["oidc"]["provider"]["issuer"],
        format!(
            "http://keycloak-http.keycloak.svc.cluster.local:8080/auth/realms/{}",
            world.realm()
        ),
        "the issuer assembled from KEYCLOAK_ISSUER_*"
    );
    let log = world.manager().log();
    for deprecated in [
        "KEYCLOAK_API_TIMEOUT (nebari-operator) is deprecated",
        "KEYCLOAK_ISSUER_SERVICE_*",
    ] {
        assert!(log.contains(deprecated), "the log announces {deprecated:?}");
    }
}
