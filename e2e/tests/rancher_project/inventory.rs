//! RancherProjectInventory: scans its cluster every `scanIntervalSeconds`, lists the projects no CR manages
//! (with their namespaces; Rancher's Default and System projects left out) and counts the managed projects
//! of its own cluster only.

use jiff::Timestamp;
use kube::api::{Api, PostParams};
use kube::core::DynamicObject;
use rancher_emulator::{NamespaceSeed, ProjectSeed};
use serde_json::{Value, json};

use crate::support::{CLUSTER, NAMESPACE, OTHER_CLUSTER, Setup, World, rpi_resource, writer_labels, writer_spec};

fn scan_time(object: &Value) -> Option<Timestamp> {
    object["status"]["lastScanTime"].as_str()?.parse().ok()
}

#[tokio::test]
async fn the_inventory_lists_unmanaged_projects_and_counts_per_cluster_on_its_interval() {
    let world = World::start(Setup::default()).await;
    // A managed project in this cluster and one in another cluster.
    let rp = "dddd00004b2c4e7f9a0b1c2d3e4f5a6b";
    world
        .write(
            "managed-dddd0000",
            writer_spec("Managed", rp, vec![]),
            writer_labels(rp),
        )
        .await;
    let mut elsewhere = writer_spec("Elsewhere", "dddd1111", vec![]);
    elsewhere["clusterId"] = json!(OTHER_CLUSTER);
    world
        .write("elsewhere-dddd1111", elsewhere, writer_labels("dddd1111"))
        .await;
    world.wait_ready("managed-dddd0000").await;
    world.wait_ready("elsewhere-dddd1111").await;
    // A project made by hand, with two namespaces.
    let rancher = &world.env.rancher;
    let handmade = rancher
        .add_project(&ProjectSeed {
            cluster_id: CLUSTER.to_string(),
            name: "Handmade".to_string(),
            description: Some("made in the Rancher UI".to_string()),
            ..ProjectSeed::default()
        })
        .expect("seed a project");
    for name in ["web", "db"] {
        rancher
            .add_namespace(&NamespaceSeed {
                cluster_id: CLUSTER.to_string(),
                name: name.to_string(),
                project_id: Some(handmade.clone()),
                ..NamespaceSeed::default()
            })
            .expect("seed a namespace");
    }

    let api: Api<DynamicObject> = Api::namespaced_with(world.cluster.client(), NAMESPACE, &rpi_resource());
    let inventory: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "waldur.io/v1alpha1",
        "kind": "RancherProjectInventory",
        "metadata": {"name": format!("cluster-{CLUSTER}"), "namespace": NAMESPACE},
        "spec": {"clusterId": CLUSTER, "scanIntervalSeconds": 10},
    }))
    .expect("object");
    api.create(&PostParams::default(), &inventory)
        .await
        .expect("create the inventory");
    let name = format!("cluster-{CLUSTER}");
    let get = || {
        let api = api.clone();
        let name = name.clone();
        async move {
            api.get_opt(&name)
                .await
                .map_err(|e| e.to_string())?
                .map(|o| serde_json::to_value(o).expect("serializes"))
                .ok_or_else(|| "no inventory".to_string())
        }
    };
    let first = e2e::harness::wait_until("the first scan", e2e::harness::Deadline::secs(30), || async {
        let object = get().await?;
        if object["status"]["unmanagedProjectCount"].is_number() {
            Ok(Some(object))
        } else {
            Err(object["status"].to_string())
        }
    })
    .await;
    assert_eq!(
        first["status"]["managedProjects"], 1,
        "only this cluster's managed project counts"
    );
    assert_eq!(first["status"]["unmanagedProjectCount"], 1, "{}", first["status"]);
    let listed = &first["status"]["unmanagedProjects"][0];
    assert_eq!(listed["projectId"], handmade.as_str());
    assert_eq!(listed["name"], "Handmade");
    assert_eq!(listed["description"], "made in the Rancher UI");
    assert_eq!(listed["namespaces"], json!(["db", "web"]));
    let first_scan = scan_time(&first).expect("lastScanTime");

    // Another hand-made project shows up at the next scan, which comes after the interval, not before.
    rancher
        .add_project(&ProjectSeed {
            cluster_id: CLUSTER.to_string(),
            name: "Another".to_string(),
            ..ProjectSeed::default()
        })
        .expect("seed another project");
    let second = e2e::harness::wait_until("the second scan", e2e::harness::Deadline::secs(30), || async {
        let object = get().await?;
        if object["status"]["unmanagedProjectCount"] == 2 {
            Ok(Some(object))
        } else {
            Err(object["status"].to_string())
        }
    })
    .await;
    let gap = scan_time(&second).expect("lastScanTime").duration_since(first_scan);
    assert!(
        gap.as_secs() >= 10 && gap.as_secs() <= 20,
        "scanned again after scanIntervalSeconds (10 s), not sooner or much later: {gap:?}"
    );
    let table = world
        .cluster
        .kubectl()
        .run(&["get", "rpi", "-n", NAMESPACE])
        .await
        .expect_success("get rpi");
    assert!(
        table
            .lines()
            .next()
            .is_some_and(|h| h.contains("MANAGED") && h.contains("UNMANAGED")),
        "{table}"
    );
}

/// An inventory made before its cluster's projects (a fresh install, a manager start) does not report 0 managed
/// projects until its next interval: the ManagedRancherProjects are watched, and a change of the projects they
/// record brings the next scan forward (at most one scan per 10 s).
#[tokio::test]
async fn the_inventory_counts_a_new_managed_project_without_waiting_for_its_interval() {
    let world = World::start(Setup::default()).await;
    let api: Api<DynamicObject> = Api::namespaced_with(world.cluster.client(), NAMESPACE, &rpi_resource());
    let name = format!("cluster-{CLUSTER}");
    let inventory: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "waldur.io/v1alpha1",
        "kind": "RancherProjectInventory",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"clusterId": CLUSTER, "scanIntervalSeconds": 3600},
    }))
    .expect("object");
    api.create(&PostParams::default(), &inventory)
        .await
        .expect("create the inventory");
    let counted = |expected: i64| {
        let api = api.clone();
        let name = name.clone();
        async move {
            let object = api.get(&name).await.map_err(|e| e.to_string())?;
            let status = object.data["status"].clone();
            if status["managedProjects"] == expected {
                Ok(Some(status))
            } else {
                Err(status.to_string())
            }
        }
    };
    let empty = e2e::harness::wait_until("the first scan", e2e::harness::Deadline::secs(30), || counted(0)).await;
    let first_scan: Timestamp = empty["lastScanTime"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .expect("lastScanTime");

    let rp = "dddd22224b2c4e7f9a0b1c2d3e4f5a6b";
    world
        .write("later-dddd2222", writer_spec("Later", rp, vec![]), writer_labels(rp))
        .await;
    world.wait_ready("later-dddd2222").await;
    let counted_later =
        e2e::harness::wait_until("the managed project counted", e2e::harness::Deadline::secs(40), || {
            counted(1)
        })
        .await;
    let second_scan: Timestamp = counted_later["lastScanTime"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .expect("lastScanTime");
    let gap = second_scan.duration_since(first_scan);
    assert!(
        gap.as_secs() >= 10 && gap.as_secs() < 3600,
        "scanned again once the project was recorded, not before 10 s: {gap:?}"
    );
}
