//! The API refuses invalid specs at `kubectl apply` with messages that say what is wrong; the original
//! operator's published sample applies unchanged; a CR carrying kopf's finalizer (the original operator's) is
//! taken over — the finalizer swapped for ours — and deletes cleanly.

use std::collections::BTreeMap;

use e2e::harness::{Deadline, wait_until};
use keycloak_emulator::GroupSeed;
use kube::api::{Patch, PatchParams};
use rancher_emulator::ProjectSeed;
use serde_json::{Value, json};

use crate::support::{CLUSTER, NAMESPACE, PARENT, REALM, Setup, World, group_path, wait_state};

fn document(name: &str, spec: Value) -> String {
    json!({
        "apiVersion": "waldur.io/v1alpha1",
        "kind": "ManagedRancherProject",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    })
    .to_string()
}

fn valid_spec() -> Value {
    json!({
        "projectName": "Valid",
        "clusterId": CLUSTER,
        "keycloak": {"parentGroupName": PARENT, "roleBindings": [
            {"groupName": "g1", "rancherRole": "project-member", "members": [{"userIdentifier": "alice", "lookupByID": false}]},
        ]},
    })
}

#[tokio::test]
async fn invalid_specs_are_refused_by_kubectl_apply_with_clear_messages() {
    let world = World::start(Setup {
        manager: false,
        ..Setup::default()
    })
    .await;
    let kubectl = world.cluster.kubectl();
    let cases: Vec<(&str, Value, &[&str])> = vec![
        (
            "missing clusterId",
            json!({"projectName": "X"}),
            &["spec.clusterId", "Required value"],
        ),
        (
            "empty projectName",
            json!({"projectName": "", "clusterId": CLUSTER}),
            &["spec.projectName", "at least 1"],
        ),
        (
            "group name over 255 characters",
            {
                let mut spec = valid_spec();
                spec["keycloak"]["roleBindings"][0]["groupName"] = json!("g".repeat(256));
                spec
            },
            &["groupName", "Too long"],
        ),
        (
            "binding group equal to the parent",
            {
                let mut spec = valid_spec();
                spec["keycloak"]["roleBindings"][0]["groupName"] = json!(PARENT);
                spec
            },
            &["groupName must differ from parentGroupName"],
        ),
        (
            "a Waldur quota key and its ResourceQuota key",
            {
                let mut spec = valid_spec();
                spec["resourceQuotas"] = json!({"cpu": 4000, "limits.cpu": "4"});
                spec
            },
            &["not both"],
        ),
        (
            "a member without an identifier",
            {
                let mut spec = valid_spec();
                spec["keycloak"]["roleBindings"][0]["members"] = json!([{"lookupByID": false}]);
                spec
            },
            &["userIdentifier", "Required value"],
        ),
    ];
    for (what, spec, expected) in cases {
        let stderr = kubectl
            .run_with_stdin(&["apply", "-f", "-"], Some(&document("invalid", spec)))
            .await
            .expect_failure(what);
        for needle in expected {
            assert!(stderr.contains(needle), "{what}: {needle:?} missing from {stderr}");
        }
    }

    // clusterId cannot change after creation.
    kubectl.apply(&document("moving", valid_spec())).await;
    let mut moved = valid_spec();
    moved["clusterId"] = json!("c-m-elsewhere");
    let stderr = kubectl
        .run_with_stdin(&["apply", "-f", "-"], Some(&document("moving", moved)))
        .await
        .expect_failure("clusterId change");
    assert!(stderr.contains("clusterId is immutable"), "{stderr}");
}

#[tokio::test]
async fn the_original_operators_sample_applies_unchanged() {
    let world = World::start(Setup {
        manager: false,
        ..Setup::default()
    })
    .await;
    let path = original_shape("managedrancherproject-v0.0.3.yaml");
    let sample = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    world.cluster.kubectl().apply(&sample).await;
    let object = world.get("operator-test-project").await.expect("applied");
    assert_eq!(object["spec"]["resourceQuotas"]["limits.cpu"], "2000m");
    assert_eq!(object["spec"]["namespace"]["name"], "waldur-operator-test");
}

#[tokio::test]
async fn a_cr_carrying_kopfs_finalizer_is_taken_over_and_deletes_cleanly() {
    let mut world = World::start(Setup {
        manager: false,
        ..Setup::default()
    })
    .await;
    // What the original operator left: a project, a parent and child group with a member, and a CR stored under
    // its 0.0.3 CRD with kopf's finalizer and annotation and a 0.0.3 status (synced members as bare Keycloak ids,
    // its own conditions, the namespace it made).
    let project_id = world
        .env
        .rancher
        .add_project(&ProjectSeed {
            cluster_id: CLUSTER.to_string(),
            name: "Migrated".to_string(),
            annotations: BTreeMap::from([("waldur/managed".to_string(), "true".to_string())]),
            ..ProjectSeed::default()
        })
        .expect("seed the project");
    let hooks = world.env.keycloak.hooks().clone();
    let managed = BTreeMap::from([("managed_by".to_string(), vec!["rancher-keycloak-operator".to_string()])]);
    for path in [format!("/{PARENT}"), group_path("migrated_members")] {
        hooks
            .seed_group(&GroupSeed {
                realm: REALM.to_string(),
                path,
                attributes: managed.clone(),
            })
            .expect("seed a group");
    }
    hooks
        .add_membership(REALM, "alice", &group_path("migrated_members"))
        .expect("alice is a member");
    let alice = hooks.user_id(REALM, "alice").expect("alice");
    let group_id = hooks.group_id(REALM, &group_path("migrated_members")).expect("group");

    let kubectl = world.cluster.kubectl();
    kubectl
        .run(&[
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            &original_shape("managedrancherproject-v0.0.3-crd.yaml"),
        ])
        .await
        .expect_success("install the 0.0.3 CRD");
    let object = json!({
        "apiVersion": "waldur.io/v1alpha1",
        "kind": "ManagedRancherProject",
        "metadata": {
            "name": "migrated", "namespace": NAMESPACE,
            "finalizers": ["kopf.zalando.org/KopfFinalizerMarker"],
            "annotations": {"kopf.zalando.org/last-handled-configuration": "{\"spec\":{}}"},
        },
        "spec": {
            "projectName": "Migrated", "clusterId": CLUSTER,
            "keycloak": {"enabled": true, "parentGroupName": PARENT, "roleBindings": [
                {"groupName": "migrated_members", "rancherRole": "project-member",
                 "members": [{"userIdentifier": alice}]},
            ]},
        },
    });
    let api = world.mrps();
    let created: kube::core::DynamicObject = serde_json::from_value(object).expect("object");
    wait_until("the 0.0.3 CRD serves objects", Deadline::secs(20), || {
        let api = api.clone();
        let created = created.clone();
        async move {
            match api.create(&Default::default(), &created).await {
                Ok(_) => Ok(Some(())),
                Err(e) => Err(e.to_string()),
            }
        }
    })
    .await;
    let status = json!({"status": {
        "phase": "Ready", "rancherProjectId": project_id, "namespaceName": "migrated",
        "keycloakRoleBindings": [{"groupName": "migrated_members", "keycloakGroupId": group_id,
                                  "memberCount": 1, "syncedMembers": [alice]}],
        "conditions": [{"type": "Reconciled", "status": "True", "reason": "Done", "message": "",
                        "lastTransitionTime": "2025-01-01T00:00:00Z"}],
    }});
    api.patch_status("migrated", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("write the original status");
    // The upgrade: our CRD replaces the original one; the stored object is not touched.
    world.cluster.install_crds(&crds::all()).await;

    world.start_manager(Vec::new()).await;
    let taken = world.wait_ready("migrated").await;
    assert_eq!(
        taken["metadata"]["finalizers"],
        json!(["waldur.io/managed-rancher-project"]),
        "kopf's finalizer is swapped for ours"
    );
    assert_eq!(
        taken["status"]["rancherProjectId"],
        project_id.as_str(),
        "the same project, no duplicate"
    );
    assert_eq!(world.projects_named("Migrated").len(), 1);
    assert!(
        crate::support::condition(&taken, "Reconciled").is_none(),
        "the original's condition is gone"
    );
    assert!(taken["status"]["namespaceName"].is_null(), "{}", taken["status"]);
    assert_eq!(
        crate::support::binding_status(&taken, "migrated_members").expect("binding")["syncedMembers"],
        json!([{"userIdentifier": alice, "keycloakUserId": alice}])
    );
    assert_eq!(
        world.members(&group_path("migrated_members")),
        Some(vec!["alice".to_string()])
    );
    // Converged: the next passes write nothing.
    let settled = world.wait_reconciles(world.reconciles().await, 1).await;
    let writes = world.cluster.write_requests();
    world.wait_reconciles(settled, 2).await;
    assert_eq!(
        world.cluster.write_requests(),
        writes,
        "no status write loop after the takeover"
    );

    world.delete("migrated").await;
    world.wait_gone("migrated").await;
    assert!(!world.group_exists(&group_path("migrated_members")));
    assert!(!world.group_exists(&format!("/{PARENT}")));
    wait_state("the migrated project is deleted", || match world.project(&project_id) {
        Some(p) if p["state"] != "removing" => Err(format!("{}", p["state"])),
        _ => Ok(()),
    })
    .await;
}

/// A fixture shaped like rancher-keycloak-operator 0.0.3's published example or CRD
/// (`crds/tests/fixtures/original-shapes`).
fn original_shape(file: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crds/tests/fixtures/original-shapes")
        .join(file);
    assert!(path.exists(), "{} is missing", path.display());
    path.to_string_lossy().into_owned()
}
