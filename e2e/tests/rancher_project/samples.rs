//! The samples in `manifests/samples` reconcile against the surroundings `sandbox::surroundings::rancher::sandbox_prepare` makes
//! (what the sandbox runs): the plugin-shaped sample becomes Ready with carol pending, the original operator's
//! 0.0.3 example becomes Ready as it is, and the inventory reports its cluster.

use e2e::harness::{Deadline, ManagerOptions, ManagerProcess, TestCluster, wait_until};
use kube::api::Api;
use kube::core::DynamicObject;
use sandbox::surroundings::rancher::{ProjectSandboxOptions, sandbox_prepare};

use crate::support::{NAMESPACE, get_json as get, is_ready, mrp_resource, pending, rpi_resource};

#[tokio::test]
async fn the_samples_reconcile_in_the_sandbox_surroundings() {
    let cluster = TestCluster::start().await;
    cluster.install_crds(&crds::all()).await;
    // The sandbox's surroundings, in a realm of the test's own on the run's Keycloak.
    let env = sandbox_prepare(
        &cluster.client(),
        ProjectSandboxOptions {
            realm: e2e::harness::keycloak::unique_realm("waldur"),
            ..ProjectSandboxOptions::default()
        },
    )
    .await
    .expect("prepare the sandbox surroundings");
    let mut args = vec!["--rancher-resync-interval-seconds=2".to_string()];
    args.extend(env.manager_args());
    let options = ManagerOptions::controllers(&["managedrancherproject", "rancherprojectinventory"], None, args);
    let _manager = ManagerProcess::start(&cluster, options).await;
    let samples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests/samples");
    for file in [
        "waldur_v1alpha1_managedrancherproject.yaml",
        "waldur_v1alpha1_managedrancherproject_original.yaml",
        "waldur_v1alpha1_rancherprojectinventory.yaml",
    ] {
        let path = samples.join(file);
        cluster
            .kubectl()
            .run(&["apply", "-f", &path.to_string_lossy()])
            .await
            .expect_success(file);
    }
    let mrps: Api<DynamicObject> = Api::namespaced_with(cluster.client(), NAMESPACE, &mrp_resource());
    let member_group = "c_c-m-glwxdksp_8706dd1a4b2c4e7f9a0b1c2d3e4f5a6b_project_member";
    for name in ["adamas-8706dd1a", "operator-test-project"] {
        let mrps = &mrps;
        wait_until(&format!("sample {name} Ready"), Deadline::secs(30), || async move {
            let object = get(mrps, name).await?;
            if is_ready(&object) {
                Ok(Some(()))
            } else {
                Err(object["status"].to_string())
            }
        })
        .await;
    }
    let sample = get(&mrps, "adamas-8706dd1a").await.expect("sample");
    assert_eq!(pending(&sample, member_group), vec!["carol"]);
    assert_eq!(
        env.keycloak
            .group_members(&format!("/c_c-m-glwxdksp/{member_group}"))
            .await,
        Some(vec!["bob".to_string()])
    );
    let inventories: Api<DynamicObject> = Api::namespaced_with(cluster.client(), NAMESPACE, &rpi_resource());
    let inventories = &inventories;
    wait_until("the inventory scanned", Deadline::secs(30), || async move {
        let object = get(inventories, "cluster-c-m-glwxdksp").await?;
        if object["status"]["managedProjects"] == 1 {
            Ok(Some(()))
        } else {
            Err(object["status"].to_string())
        }
    })
    .await;
}
