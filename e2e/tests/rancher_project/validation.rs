//! The API refuses invalid specs at `kubectl apply` with messages that say what is wrong; the original
//! operator's published sample applies unchanged (takeovers of each release's objects: `released_versions.rs`).

use serde_json::{Value, json};

use crate::support::{CLUSTER, NAMESPACE, PARENT, Setup, World};

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
            "a quota that is not a quantity",
            {
                let mut spec = valid_spec();
                spec["resourceQuotas"] = json!({"cpu": "lots"});
                spec
            },
            &["spec.resourceQuotas[cpu]", "must be a non-negative integer or quantity"],
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

    // clusterId can be corrected while no Rancher project exists for the object, and not once one does.
    kubectl.apply(&document("moving", valid_spec())).await;
    let mut corrected = valid_spec();
    corrected["clusterId"] = json!("c-m-corrected");
    kubectl.apply(&document("moving", corrected.clone())).await;
    let recorded = kubectl
        .run(&[
            "patch",
            "managedrancherproject",
            "moving",
            "-n",
            NAMESPACE,
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"rancherProjectId":"c-m-corrected:p-abc12"}}"#,
        ])
        .await;
    assert!(recorded.success, "record the project's id: {}", recorded.stderr);
    let mut moved = corrected;
    moved["clusterId"] = json!("c-m-elsewhere");
    let stderr = kubectl
        .run_with_stdin(&["apply", "-f", "-"], Some(&document("moving", moved)))
        .await
        .expect_failure("clusterId change once the project exists");
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

/// A fixture shaped like rancher-keycloak-operator 0.0.3's published example or CRD
/// (`crds/tests/fixtures/original-shapes`).
fn original_shape(file: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crds/tests/fixtures/original-shapes")
        .join(file);
    assert!(path.exists(), "{} is missing", path.display());
    path.to_string_lossy().into_owned()
}
