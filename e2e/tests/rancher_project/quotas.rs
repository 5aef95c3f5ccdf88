//! Quotas set, changed and removed in the spec reach the Rancher project's quota and its namespace default
//! quota; a removed key is removed downstream, and an emptied map removes the quota.

use serde_json::{Value, json};

use crate::support::{Setup, World, condition, wait_state, writer_labels, writer_spec};

/// The project's quota and namespace default `limit`s, an `extended` map left empty by a removal dropped.
fn limits(project: &Value) -> (Value, Value) {
    let limit = |quota: &Value| {
        let mut limit = quota["limit"].clone();
        if let Some(map) = limit.as_object_mut()
            && map
                .get("extended")
                .is_some_and(|e| e.as_object().is_some_and(|e| e.is_empty()))
        {
            map.remove("extended");
        }
        limit
    };
    (
        limit(&project["resourceQuota"]),
        limit(&project["namespaceDefaultResourceQuota"]),
    )
}

fn has_no_quota(project: &Value) -> bool {
    let empty = |v: &Value| v.is_null() || v.as_object().is_some_and(|m| m.values().all(Value::is_null));
    empty(&project["resourceQuota"]["limit"]) && empty(&project["namespaceDefaultResourceQuota"]["limit"])
}

#[tokio::test]
async fn quotas_set_changed_and_removed_reach_the_rancher_project() {
    let world = World::start(Setup::default()).await;
    let rp = "6666ffff4b2c4e7f9a0b1c2d3e4f5a6b";
    let spec = |quotas: Option<Value>| {
        let mut spec = writer_spec("Quotas", rp, vec![]);
        if let Some(quotas) = quotas {
            spec["resourceQuotas"] = quotas;
        }
        spec
    };
    world
        .write(
            "quotas-6666ffff",
            spec(Some(
                json!({"cpu": 4000, "memory": "8192Mi", "storage": "100Gi", "gpu": 2}),
            )),
            writer_labels(rp),
        )
        .await;
    let object = world.wait_ready("quotas-6666ffff").await;
    let id = object["status"]["rancherProjectId"]
        .as_str()
        .expect("project id")
        .to_string();
    // GPUs are an extended resource quota (Rancher v2.14+); each namespace defaults to half the project's quota
    // (the manager's default), whole GPUs rounded up.
    let expected = json!({"limitsCpu": "4000m", "limitsMemory": "8192Mi", "requestsStorage": "100Gi",
        "extended": {"requests.nvidia.com/gpu": "2"}});
    let namespace_default = json!({"limitsCpu": "2000m", "limitsMemory": "4096Mi", "requestsStorage": "50Gi",
        "extended": {"requests.nvidia.com/gpu": "1"}});
    let project = world.project(&id).expect("project");
    assert_eq!(limits(&project), (expected, namespace_default));
    let quota = condition(&object, "ResourceQuotaReady").expect("ResourceQuotaReady");
    assert_eq!(quota["status"], "True");
    assert_eq!(quota["reason"], "QuotaApplied", "{quota}");
    assert!(
        quota["message"]
            .as_str()
            .is_some_and(|m| m.contains("requests.nvidia.com/gpu=2")),
        "{quota}"
    );

    // Two namespaces fit in the project, each with the default share (with the whole quota as the default,
    // Rancher refuses the second).
    for name in ["quotas-first", "quotas-second"] {
        let namespace = world
            .rancher_call(
                reqwest::Method::POST,
                &format!("/v3/clusters/{}/namespaces", crate::support::CLUSTER),
                Some(json!({"name": name, "projectId": id})),
            )
            .await;
        assert_eq!(
            namespace["resourceQuota"]["limit"]["extended"]["requests.nvidia.com/gpu"], "1",
            "{namespace}"
        );
    }

    // Changed: more CPU, memory and GPUs removed.
    world
        .write(
            "quotas-6666ffff",
            spec(Some(json!({"cpu": 8000, "storage": "100Gi"}))),
            writer_labels(rp),
        )
        .await;
    let expected = json!({"limitsCpu": "8000m", "requestsStorage": "100Gi"});
    let namespace_default = json!({"limitsCpu": "4000m", "requestsStorage": "50Gi"});
    wait_state("the changed quota reached Rancher", || {
        let project = world.project(&id).ok_or("no project")?;
        let found = limits(&project);
        if found == (expected.clone(), namespace_default.clone()) {
            Ok(())
        } else {
            Err(format!("{found:?}"))
        }
    })
    .await;
    world.wait_ready("quotas-6666ffff").await;

    // Removed: no quota at all.
    world.write("quotas-6666ffff", spec(None), writer_labels(rp)).await;
    wait_state("the quota is gone from Rancher", || {
        let project = world.project(&id).ok_or("no project")?;
        if has_no_quota(&project) {
            Ok(())
        } else {
            Err(format!("{:?}", limits(&project)))
        }
    })
    .await;
    let object = world.wait_ready("quotas-6666ffff").await;
    assert_eq!(
        condition(&object, "ResourceQuotaReady").expect("condition")["reason"],
        "QuotaApplied"
    );
    world.wait_event("quotas-6666ffff", "QuotaUpdated").await;
}

#[tokio::test]
async fn a_rancher_without_extended_quotas_is_named_in_the_condition() {
    let world = World::start(Setup::default()).await;
    world.env.rancher.set_extended_quotas(false);
    let rp = "6767ffff4b2c4e7f9a0b1c2d3e4f5a6b";
    let mut spec = writer_spec("Old Rancher", rp, vec![]);
    spec["resourceQuotas"] = json!({"cpu": 2000, "gpu": 4});
    world.write("old-rancher-6767ffff", spec, writer_labels(rp)).await;
    let object = world
        .wait_for("old-rancher-6767ffff", "the quota condition", |o| {
            condition(o, "ResourceQuotaReady").is_some_and(|c| c["reason"] == "QuotaPartiallyApplied")
        })
        .await;
    let quota = condition(&object, "ResourceQuotaReady").expect("condition");
    let message = quota["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("requests.nvidia.com/gpu") && message.contains("v2.14"),
        "{message}"
    );
    let id = object["status"]["rancherProjectId"].as_str().expect("project id");
    let project = world.project(id).expect("project");
    assert_eq!(limits(&project).0, json!({"limitsCpu": "2000m"}));
}
