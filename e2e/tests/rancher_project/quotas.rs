//! Quotas set, changed and removed in the spec reach the Rancher project's quota and its namespace default
//! quota; a removed key is removed downstream, and an emptied map removes the quota.

use serde_json::{Value, json};

use crate::support::{Setup, World, condition, wait_state, writer_labels, writer_spec};

fn limits(project: &Value) -> (Value, Value) {
    (
        project["resourceQuota"]["limit"].clone(),
        project["namespaceDefaultResourceQuota"]["limit"].clone(),
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
    let expected = json!({"limitsCpu": "4000m", "limitsMemory": "8192Mi", "requestsStorage": "100Gi"});
    let project = world.project(&id).expect("project");
    assert_eq!(limits(&project), (expected.clone(), expected));
    let quota = condition(&object, "ResourceQuotaReady").expect("ResourceQuotaReady");
    assert_eq!(quota["status"], "True");
    assert_eq!(quota["reason"], "QuotaPartiallyApplied", "{quota}");
    assert!(quota["message"].as_str().is_some_and(|m| m.contains("gpu")), "{quota}");

    // Changed: more CPU, memory removed.
    world
        .write(
            "quotas-6666ffff",
            spec(Some(json!({"cpu": 8000, "storage": "100Gi"}))),
            writer_labels(rp),
        )
        .await;
    let expected = json!({"limitsCpu": "8000m", "requestsStorage": "100Gi"});
    wait_state("the changed quota reached Rancher", || {
        let project = world.project(&id).ok_or("no project")?;
        let found = limits(&project);
        if found == (expected.clone(), expected.clone()) {
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
