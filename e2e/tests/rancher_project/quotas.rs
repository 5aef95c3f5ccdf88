//! Quotas set, changed and removed in the spec reach the Rancher project's quota and its namespace default
//! quota; a removed key is removed downstream, and an emptied map removes the quota; a value that is not a
//! quantity keeps the key's last applied limit.

use e2e::harness::{Deadline, wait_until};
use kube::api::PostParams;
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

/// A quota value that is not a quantity never lifts a limit. The CRD refuses one at admission
/// (`validation.rs`); one stored before that rule existed keeps the key's last applied value in Rancher, the
/// condition names the value and the one kept, and a valid change beside it still applies.
#[tokio::test]
async fn a_quota_typo_stored_before_the_rule_keeps_the_last_applied_limit() {
    let world = World::start(Setup::default()).await;
    let rp = "6868ffff4b2c4e7f9a0b1c2d3e4f5a6b";
    let name = "typo-6868ffff";
    let spec = |quotas: Value| {
        let mut spec = writer_spec("Typo", rp, vec![]);
        spec["resourceQuotas"] = quotas;
        spec
    };
    world
        .write(name, spec(json!({"cpu": 4000, "memory": "8192Mi"})), writer_labels(rp))
        .await;
    let id = world.wait_ready_project(name).await;

    // The CRD as it was before it checked quota values.
    let mut crd = crds::all()
        .into_iter()
        .find(|crd| crd.spec.names.kind == "ManagedRancherProject")
        .expect("the ManagedRancherProject CRD");
    for version in &mut crd.spec.versions {
        let quotas = version
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
            .and_then(|root| root.properties.as_mut()?.get_mut("spec"))
            .and_then(|spec| spec.properties.as_mut()?.get_mut("resourceQuotas"))
            .expect("spec.resourceQuotas in the schema");
        use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaPropsOrBool;
        if let Some(JSONSchemaPropsOrBool::Schema(value)) = quotas.additional_properties.as_mut() {
            value.x_kubernetes_validations = None;
        }
    }
    world.cluster.install_crds(&[crd]).await;
    let typo = spec(json!({"cpu": "lots", "memory": "4096Mi"}));
    wait_until("the API stores the typo", Deadline::secs(30), || {
        let api = world.mrps();
        let typo = typo.clone();
        async move {
            let mut object = api.get(name).await.map_err(|e| e.to_string())?;
            object.data["spec"] = typo;
            match api.replace(name, &PostParams::default(), &object).await {
                Ok(_) => Ok(Some(())),
                Err(error) => Err(error.to_string()),
            }
        }
    })
    .await;

    let object = world
        .wait_for(name, "the quota refused", |o| {
            condition(o, "ResourceQuotaReady").is_some_and(|c| c["reason"] == "InvalidQuota")
        })
        .await;
    let quota = condition(&object, "ResourceQuotaReady").expect("condition");
    let message = quota["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(r#"cpu="lots" is not a quantity"#) && message.contains("limitsCpu=4000m is kept"),
        "{message}"
    );
    wait_state("the valid memory change applied, the CPU limit kept", || {
        let project = world.project(&id).ok_or("no project")?;
        let found = limits(&project);
        let expected = (
            json!({"limitsCpu": "4000m", "limitsMemory": "4096Mi"}),
            json!({"limitsCpu": "2000m", "limitsMemory": "2048Mi"}),
        );
        if found == expected {
            Ok(())
        } else {
            Err(format!("{found:?}"))
        }
    })
    .await;
}
