//! The namespaced install (`manifests/overlays/namespaced`): with Roles only (in the watched namespace and
//! beside its credential Secrets and CA bundle) the controllers make the plugin-shaped sample Ready and the
//! inventory counts it, talking to a Rancher behind a private CA.

use e2e::harness::{Deadline, ManagerOptions, ManagerProcess, OPERATOR_NAMESPACE, TestCluster, wait_until};
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::core::DynamicObject;
use sandbox::surroundings::rancher::{ProjectSandboxOptions, sandbox_prepare};

use crate::support::{NAMESPACE, get_json as get, is_ready, mrp_resource, rpi_resource};

/// The namespace the namespaced overlay watches.
const WATCHED: &str = "tenant-a";

#[tokio::test]
async fn a_namespaced_install_makes_the_sample_ready_and_counts_it_holding_only_roles() {
    let cluster = TestCluster::start().await;
    cluster.install_crds(&crds::all()).await;
    for namespace in [WATCHED, "envoy-gateway-system", "keycloak"] {
        cluster.create_namespace_named(namespace, &[]).await;
    }
    cluster.install_operator_identity("overlays/namespaced").await;
    // Rancher serves its certificate from a private CA, trusted through the ConfigMap the overlay may read.
    let ca = emulator_kit::tls::TestCa::new("e2e Rancher CA").expect("a CA");
    let env = sandbox_prepare(
        &cluster.client(),
        ProjectSandboxOptions {
            namespaces: vec![WATCHED.to_string()],
            secret_namespace: OPERATOR_NAMESPACE.to_string(),
            rancher_tls: Some(ca.issue_server_cert("rancher", &[]).expect("a certificate")),
            realm: e2e::harness::keycloak::unique_realm("waldur"),
            ..ProjectSandboxOptions::default()
        },
    )
    .await
    .expect("prepare Rancher and Keycloak");
    let maps: Api<ConfigMap> = Api::namespaced(cluster.client(), OPERATOR_NAMESPACE);
    let bundle = ConfigMap {
        metadata: ObjectMeta {
            name: Some("rancher-ca".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("ca.crt".to_string(), ca.cert_pem())])),
        ..Default::default()
    };
    maps.create(&PostParams::default(), &bundle)
        .await
        .expect("create the Rancher CA ConfigMap");
    let mut args = vec![
        "--rancher-resync-interval-seconds=2".to_string(),
        format!("--rancher-ca-bundle=configmap:{OPERATOR_NAMESPACE}/rancher-ca"),
    ];
    args.extend(env.manager_args());
    let controllers = ["managedrancherproject", "rancherprojectinventory"];
    let options = ManagerOptions::controllers(&controllers, Some(WATCHED), args);
    let _manager = ManagerProcess::start(&cluster, options).await;
    let samples = e2e::harness::install::repository_root().join("manifests/samples");
    let apply_sample = |file: &'static str| {
        let text = std::fs::read_to_string(samples.join(file)).expect("the sample");
        let text = text.replace(&format!("namespace: {NAMESPACE}"), &format!("namespace: {WATCHED}"));
        let kubectl = cluster.kubectl().clone();
        async move {
            kubectl
                .run_with_stdin(&["apply", "-f", "-"], Some(&text))
                .await
                .expect_success(file);
        }
    };
    apply_sample("waldur_v1alpha1_managedrancherproject.yaml").await;
    let mrps: Api<DynamicObject> = Api::namespaced_with(cluster.client(), WATCHED, &mrp_resource());
    let mrps = &mrps;
    wait_until("the sample Ready", Deadline::secs(30), || async move {
        let object = get(mrps, "adamas-8706dd1a").await?;
        if is_ready(&object) {
            Ok(Some(()))
        } else {
            Err(object["status"].to_string())
        }
    })
    .await;
    // The inventory's first scan comes after the project exists (its next scan is the sample's interval away).
    apply_sample("waldur_v1alpha1_rancherprojectinventory.yaml").await;
    let inventories: Api<DynamicObject> = Api::namespaced_with(cluster.client(), WATCHED, &rpi_resource());
    let inventories = &inventories;
    wait_until(
        "the inventory counts the managed project",
        Deadline::secs(30),
        || async move {
            let object = get(inventories, "cluster-c-m-glwxdksp").await?;
            if object["status"]["managedProjects"] == 1 {
                Ok(Some(()))
            } else {
                Err(object["status"].to_string())
            }
        },
    )
    .await;
}
