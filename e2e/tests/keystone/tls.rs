//! A Keystone behind a private CA (gunicorn with a certificate from a CA made for the test): the KeystoneAPI's
//! `spec.tls.caBundleSecretName` is honoured. Without it the failure names the host and what is trusted; naming
//! a missing Secret says so; creating the Secret makes the credential Ready without a restart.

use std::collections::BTreeMap;

use crds::keystone::KeystoneAPI;
use e2e::keystone::{KeystoneAdmin, KeystoneServer, ServerOptions, TlsServing};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::support::{KEYSTONE_API, Setup, World};

#[tokio::test]
async fn a_keystone_with_a_private_ca_is_trusted_through_the_keystone_apis_ca_bundle_secret() {
    let ca = emulator_kit::tls::TestCa::new("e2e OpenStack CA").expect("a CA");
    let keystone = KeystoneServer::start(ServerOptions {
        tls: Some(TlsServing {
            cert: ca.issue_server_cert("keystone", &[]).expect("a certificate"),
            ca_pem: ca.cert_pem(),
        }),
        ..ServerOptions::default()
    })
    .await
    .expect("start a Keystone serving TLS");
    assert!(keystone.url().starts_with("https://"));
    let mut world = World::start(Setup {
        keystone_api: false,
        password_secret: false,
        manager: false,
        ..Setup::default()
    })
    .await;
    // The service user lives in the TLS Keystone.
    world.admin = KeystoneAdmin::login(&keystone).await.expect("admin login over TLS");
    world.user = world
        .admin
        .create_user("svc-tls", "pw-tls-5b21", "service", &["service"])
        .await
        .expect("create the service user");
    world.write_password("pw-tls-5b21").await;
    e2e::keystone::sample::publish_keystone_api(
        &world.cluster.client(),
        &world.namespace,
        KEYSTONE_API,
        keystone.url(),
        true,
        "Setup complete",
    )
    .await
    .expect("publish the KeystoneAPI");
    world.start_manager(Vec::new()).await;
    world.apply_credential(&["service"], "").await;

    // No CA named: the public roots do not know the test CA.
    let message = world.wait_condition("Ready", "False", "TLSVerificationFailed").await;
    assert!(
        message.contains("127.0.0.1") && message.contains("the public CA roots"),
        "{message}"
    );

    // The KeystoneAPI names a bundle Secret that does not exist yet.
    let apis: Api<KeystoneAPI> = Api::namespaced(world.cluster.client(), &world.namespace);
    apis.patch(
        KEYSTONE_API,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"tls": {"caBundleSecretName": "combined-ca-bundle"}}})),
    )
    .await
    .expect("name the CA bundle");
    world
        .wait_condition_matching("Ready", "False", "TLSVerificationFailed", |m| {
            m.contains("Secret") && m.contains("combined-ca-bundle") && m.contains("tls-ca-bundle.pem")
        })
        .await;
    assert!(world.keystone_credentials().await.is_empty(), "nothing minted yet");

    // The Secret appears: the credential is minted over TLS.
    let secrets: Api<Secret> = Api::namespaced(world.cluster.client(), &world.namespace);
    secrets
        .create(
            &PostParams::default(),
            &Secret {
                metadata: ObjectMeta {
                    name: Some("combined-ca-bundle".into()),
                    ..Default::default()
                },
                string_data: Some(BTreeMap::from([("tls-ca-bundle.pem".to_string(), ca.cert_pem())])),
                ..Default::default()
            },
        )
        .await
        .expect("create the CA bundle Secret");
    world.wait_ready(None).await;
    assert_eq!(world.keystone_credentials().await.len(), 1);
}
