//! Keycloak behind a private CA (`--keycloak-ca-bundle`): a bundle holding the wrong CA fails with
//! `TLSVerificationFailed` naming the host and the bundle, and fixing the Secret makes the app Ready without a
//! restart (the bundle is read again after a refusal).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use serde_json::json;

use crate::support::{ADMIN_SECRET_NAMESPACE, Setup, World};

async fn write_bundle(world: &World, pem: &str) {
    let secrets: Api<Secret> = Api::namespaced(world.cluster.client(), ADMIN_SECRET_NAMESPACE);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("keycloak-ca".into()),
            ..Default::default()
        },
        string_data: Some(BTreeMap::from([("ca.crt".to_string(), pem.to_string())])),
        ..Default::default()
    };
    secrets
        .patch(
            "keycloak-ca",
            &PatchParams::apply("e2e").force(),
            &Patch::Apply(&secret),
        )
        .await
        .expect("write the CA bundle Secret");
}

#[tokio::test]
async fn a_wrong_ca_bundle_is_reported_and_fixing_the_secret_makes_the_app_ready() {
    let mut world = World::start(Setup {
        keycloak_tls: true,
        manager: false,
        manager_args: vec![format!(
            "--keycloak-ca-bundle=secret:{ADMIN_SECRET_NAMESPACE}/keycloak-ca"
        )],
        ..Setup::default()
    })
    .await;
    let other = emulator_kit::tls::TestCa::new("another CA").expect("a CA");
    write_bundle(&world, &other.cert_pem()).await;
    world.start_manager(false).await;
    world
        .apply_app("web", json!({"routing": {}, "auth": {"enabled": true}}))
        .await;
    let message = world
        .wait_condition("web", "AuthReady", "False", "TLSVerificationFailed")
        .await;
    assert!(
        message.contains("127.0.0.1")
            && message.contains(&format!(
                "the CA bundle in Secret {ADMIN_SECRET_NAMESPACE}/keycloak-ca (key ca.crt)"
            )),
        "{message}"
    );
    assert!(
        world
            .keycloak_client(&format!("{}-web", world.namespace))
            .await
            .is_none(),
        "nothing was sent to a server that could not be verified"
    );

    let pem = world.ca_pem.clone().expect("the world's CA");
    write_bundle(&world, &pem).await;
    world.wait_ready("web").await;
}
