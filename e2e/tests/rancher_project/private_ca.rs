//! Rancher and Keycloak behind a private CA: the operator succeeds with the CA configured (a ConfigMap for Rancher,
//! a Secret for Keycloak), fails with `TLSVerificationFailed` naming the host and what it trusts without it, and
//! accepts any certificate only when told to skip verification (logged loudly).

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ObjectMeta, PostParams};
use std::collections::BTreeMap;

use crate::support::{NAMESPACE, Setup, World, binding, condition, group_name, writer_labels, writer_spec};

async fn write_ca(world: &World) {
    let pem = world.ca_pem.clone().expect("the world has a CA");
    let maps: Api<ConfigMap> = Api::namespaced(world.cluster.client(), NAMESPACE);
    maps.create(
        &PostParams::default(),
        &ConfigMap {
            metadata: ObjectMeta {
                name: Some("rancher-ca".into()),
                ..Default::default()
            },
            data: Some(BTreeMap::from([("ca.crt".to_string(), pem.clone())])),
            ..Default::default()
        },
    )
    .await
    .expect("create the Rancher CA ConfigMap");
    let secrets: Api<Secret> = Api::namespaced(world.cluster.client(), NAMESPACE);
    secrets
        .create(
            &PostParams::default(),
            &Secret {
                metadata: ObjectMeta {
                    name: Some("keycloak-ca".into()),
                    ..Default::default()
                },
                string_data: Some(BTreeMap::from([("bundle.pem".to_string(), pem)])),
                ..Default::default()
            },
        )
        .await
        .expect("create the Keycloak CA Secret");
}

fn tls_world(args: Vec<String>) -> Setup {
    Setup {
        tls: true,
        manager: false,
        manager_args: args,
        ..Setup::default()
    }
}

#[tokio::test]
async fn with_the_private_ca_configured_the_project_and_its_groups_are_ready() {
    let mut world = World::start(tls_world(Vec::new())).await;
    write_ca(&world).await;
    world
        .start_manager(vec![
            format!("--rancher-ca-bundle=configmap:{NAMESPACE}/rancher-ca"),
            format!("--rancher-keycloak-ca-bundle=secret:{NAMESPACE}/keycloak-ca:bundle.pem"),
        ])
        .await;
    let rp = "cacacaca4b2c4e7f9a0b1c2d3e4f5a6b";
    let group = group_name(rp, "project_member");
    world
        .write(
            "private-cacacaca",
            writer_spec("Private CA", rp, vec![binding(&group, "project-member", &["alice"])]),
            writer_labels(rp),
        )
        .await;
    world.wait_ready("private-cacacaca").await;
    assert_eq!(
        world.members(&crate::support::group_path(&group)).await,
        Some(vec!["alice".to_string()])
    );
    assert!(
        world.manager().log().contains("loaded a CA bundle"),
        "the bundle load is logged"
    );
}

#[tokio::test]
async fn without_the_ca_the_failure_names_the_host_and_what_is_trusted() {
    let mut world = World::start(tls_world(Vec::new())).await;
    world.start_manager(Vec::new()).await;
    let rp = "cbcbcbcb4b2c4e7f9a0b1c2d3e4f5a6b";
    let group = group_name(rp, "project_member");
    world
        .write(
            "untrusted-cbcbcbcb",
            writer_spec("Untrusted", rp, vec![binding(&group, "project-member", &["alice"])]),
            writer_labels(rp),
        )
        .await;
    let object = world
        .wait_for("untrusted-cbcbcbcb", "TLS verification failures", |o| {
            condition(o, "RancherProjectReady").is_some_and(|c| c["reason"] == "TLSVerificationFailed")
                && condition(o, "KeycloakGroupsReady").is_some_and(|c| c["reason"] == "TLSVerificationFailed")
        })
        .await;
    for type_ in ["RancherProjectReady", "KeycloakGroupsReady"] {
        let message = condition(&object, type_).expect("condition")["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            message.contains("127.0.0.1") && message.contains("the public CA roots"),
            "{type_}: {message}"
        );
    }
    assert_eq!(
        object["status"]["phase"], "Error",
        "a configuration problem, not an outage"
    );
}

#[tokio::test]
async fn insecure_skip_verify_accepts_any_certificate_and_says_so() {
    let mut world = World::start(tls_world(Vec::new())).await;
    world
        .start_manager(vec![
            "--rancher-insecure-skip-verify".to_string(),
            "--rancher-keycloak-insecure-skip-verify".to_string(),
        ])
        .await;
    let rp = "cdcdcdcd4b2c4e7f9a0b1c2d3e4f5a6b";
    world
        .write(
            "insecure-cdcdcdcd",
            writer_spec(
                "Insecure",
                rp,
                vec![binding(&group_name(rp, "project_member"), "project-member", &[])],
            ),
            writer_labels(rp),
        )
        .await;
    world.wait_ready("insecure-cdcdcdcd").await;
    assert!(
        world.manager().log().contains("verification is OFF"),
        "skipping verification is logged"
    );
}
