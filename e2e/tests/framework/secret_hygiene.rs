//! The suite-wide secret check is armed: a secret value that reaches another object fails the test when its
//! cluster goes away, and the failure names the object, not the value.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;

use e2e::harness::TestCluster;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ObjectMeta, PostParams};

const VALUE: &str = "Lk8vQ2xWm4pR7tYz";

#[tokio::test]
async fn a_secret_value_copied_into_another_object_fails_the_test() {
    let cluster = TestCluster::start().await;
    let secrets: Api<Secret> = Api::namespaced(cluster.client(), "default");
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("credentials".into()),
            ..ObjectMeta::default()
        },
        string_data: Some(BTreeMap::from([("password".to_string(), VALUE.to_string())])),
        ..Secret::default()
    };
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .expect("create the Secret");
    let config_maps: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let leaked = ConfigMap {
        metadata: ObjectMeta {
            name: Some("careless".into()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("note".to_string(), format!("login with {VALUE}"))])),
        ..ConfigMap::default()
    };
    config_maps
        .create(&PostParams::default(), &leaked)
        .await
        .expect("create the ConfigMap");

    let dropped = std::panic::catch_unwind(AssertUnwindSafe(|| drop(cluster)));
    let message = dropped
        .expect_err("the leak must fail the test")
        .downcast::<String>()
        .map(|m| *m)
        .unwrap_or_default();
    assert!(message.contains("configmaps default/careless"), "{message}");
    assert!(
        !message.contains(VALUE),
        "the failure must not print the secret: {message}"
    );
}
