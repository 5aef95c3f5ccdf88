//! Emulator conformance for projects (Part B1 and Part C items 4–5 of `keycloak-rancher-api.md`).

use std::time::Duration;

use e2e::harness::{Deadline, wait_until};

use serde_json::json;

use crate::support::{Env, ids};

// Part C 4–5 / B1 "POST": 201 with the full resource; ids are `<cluster>:p-xxxxx`; duplicate names allowed.
#[tokio::test]
async fn creates_answer_201_and_allow_duplicate_display_names() {
    let env = Env::start().await;
    let first = env
        .post(
            "/v3/projects",
            json!({"type": "project", "clusterId": "local", "name": "Genomics 2026", "description": "d",
                   "annotations": {"waldur/managed": "true"}}),
        )
        .await;
    assert_eq!(first.status, 201, "{:?}", first.body);
    let id = first.body["id"].as_str().expect("id");
    let (cluster, name) = id.split_once(':').expect("cluster:name");
    assert_eq!(cluster, "local");
    assert!(name.starts_with("p-") && name.len() == 7, "{name}");
    for field in [
        "type",
        "baseType",
        "created",
        "createdTS",
        "creatorId",
        "uuid",
        "links",
        "actions",
        "labels",
    ] {
        assert!(first.body.get(field).is_some(), "{field} missing: {:?}", first.body);
    }
    assert_eq!(first.body["type"], "project");
    assert_eq!(first.body["annotations"]["waldur/managed"], "true");
    assert_eq!(first.body["namespaceId"], json!(null));
    assert_eq!(first.body["resourceQuota"], json!(null));
    let second = env
        .post("/v3/projects", json!({"clusterId": "local", "name": "Genomics 2026"}))
        .await;
    assert_eq!(second.status, 201, "Rancher never refuses a duplicate display name");
    let found = env.get("/v3/projects?clusterId=local&name=Genomics%202026").await;
    assert_eq!(ids(&found.body).len(), 2);
}

// B1 "POST" errors: 422 MissingRequired with fieldName; 400 webhook denial for an unknown cluster.
#[tokio::test]
async fn creates_reject_missing_fields_and_unknown_clusters() {
    let env = Env::start().await;
    let missing = env.post("/v3/projects", json!({"clusterId": "local"})).await;
    assert_eq!(missing.status, 422);
    assert_eq!(missing.body["code"], "MissingRequired");
    assert_eq!(missing.body["fieldName"], "name");
    let no_cluster = env.post("/v3/projects", json!({"name": "x"})).await;
    assert_eq!(
        (no_cluster.status, no_cluster.body["fieldName"].clone()),
        (422, json!("clusterId"))
    );
    let unknown = env
        .post("/v3/projects", json!({"clusterId": "c-m-nope", "name": "x"}))
        .await;
    assert_eq!(unknown.status, 400);
    assert_eq!(unknown.body["code"], "BadRequest");
    let message = unknown.body["message"].as_str().expect("message");
    assert!(
        message
            .starts_with("admission webhook \"rancher.cattle.io.projects.management.cattle.io\" denied the request:")
    );
    assert!(message.contains("cluster not found"), "{message}");
}

// B1 "POST" webhook quota rules: both quota maps or neither, same keys, namespace default within the project.
#[tokio::test]
async fn quota_mistakes_are_denied_by_the_webhook() {
    let env = Env::start().await;
    let only_project = env
        .post(
            "/v3/projects",
            json!({"clusterId": "local", "name": "q", "resourceQuota": {"limit": {"limitsCpu": "2"}}}),
        )
        .await;
    assert_eq!(only_project.status, 400);
    assert!(
        only_project.body["message"]
            .as_str()
            .is_some_and(|m| m.contains("required when resourceQuota is set"))
    );
    let only_default = env
        .post(
            "/v3/projects",
            json!({"clusterId": "local", "name": "q", "namespaceDefaultResourceQuota": {"limit": {"limitsCpu": "2"}}}),
        )
        .await;
    assert!(
        only_default.body["message"]
            .as_str()
            .is_some_and(|m| m.contains("required when namespaceDefaultResourceQuota is set"))
    );
    let different_keys = env
        .post(
            "/v3/projects",
            json!({"clusterId": "local", "name": "q", "resourceQuota": {"limit": {"limitsCpu": "2"}},
                   "namespaceDefaultResourceQuota": {"limit": {"pods": "2"}}}),
        )
        .await;
    assert_eq!(different_keys.status, 400);
    let too_big = env
        .post(
            "/v3/projects",
            json!({"clusterId": "local", "name": "q", "resourceQuota": {"limit": {"limitsCpu": "2"}},
                   "namespaceDefaultResourceQuota": {"limit": {"limitsCpu": "3"}}}),
        )
        .await;
    assert_eq!(too_big.status, 400);
    assert!(
        too_big.body["message"]
            .as_str()
            .is_some_and(|m| m.contains("exceeds project limit on fields: limits.cpu=3"))
    );
    let container = env
        .post(
            "/v3/projects",
            json!({"clusterId": "local", "name": "q",
                   "containerDefaultResourceLimit": {"requestsCpu": "2", "limitsCpu": "1"}}),
        )
        .await;
    assert_eq!(container.status, 400);
    let good = env
        .post(
            "/v3/projects",
            json!({"clusterId": "local", "name": "q", "resourceQuota": {"limit": {"limitsCpu": "2000m", "limits.memory": "1Gi"}},
                   "namespaceDefaultResourceQuota": {"limit": {"limitsCpu": "1"}}}),
        )
        .await;
    assert_eq!(
        good.status, 201,
        "unknown limit keys are dropped silently, as norman does: {:?}",
        good.body
    );
    assert_eq!(good.body["resourceQuota"]["limit"], json!({"limitsCpu": "2000m"}));
}

// Part C 5 / B1 "PUT": a merge; omitted fields stay; null clears a quota key; annotations replace user keys but
// keep protected ones; clusterId is immutable; a missing project 404s.
#[tokio::test]
async fn updates_merge_and_protect_cattle_keys() {
    let env = Env::start().await;
    let created = env
        .post(
            "/v3/projects",
            json!({"clusterId": "local", "name": "m", "description": "keep me",
                   "annotations": {"a": "1", "b": "2"},
                   "resourceQuota": {"limit": {"limitsCpu": "2", "pods": "10"}},
                   "namespaceDefaultResourceQuota": {"limit": {"limitsCpu": "1", "pods": "5"}}}),
        )
        .await;
    let id = created.body["id"].as_str().expect("id").to_string();
    let creator = created.body["annotations"]["field.cattle.io/creatorId"].clone();
    assert!(creator.is_string(), "Rancher records the creator");
    let renamed = env.put(&format!("/v3/projects/{id}"), json!({"name": "m2"})).await;
    assert_eq!(renamed.status, 200);
    assert_eq!(
        renamed.body["description"], "keep me",
        "omitted fields keep their value"
    );
    assert_eq!(
        renamed.body["resourceQuota"]["limit"],
        json!({"limitsCpu": "2", "pods": "10"})
    );
    let without_pods = env
        .put(
            &format!("/v3/projects/{id}"),
            json!({"resourceQuota": {"limit": {"pods": null}}, "namespaceDefaultResourceQuota": {"limit": {"pods": null}}}),
        )
        .await;
    assert_eq!(without_pods.status, 200, "{:?}", without_pods.body);
    assert_eq!(without_pods.body["resourceQuota"]["limit"], json!({"limitsCpu": "2"}));
    let left_out = env
        .put(
            &format!("/v3/projects/{id}"),
            json!({"resourceQuota": {"limit": {"limitsCpu": "4"}}, "namespaceDefaultResourceQuota": {"limit": {"limitsCpu": "4"}}}),
        )
        .await;
    assert_eq!(left_out.body["resourceQuota"]["limit"], json!({"limitsCpu": "4"}));
    let annotated = env
        .put(&format!("/v3/projects/{id}"), json!({"annotations": {"b": "3"}}))
        .await;
    assert_eq!(annotated.body["annotations"]["b"], "3");
    assert!(
        annotated.body["annotations"].get("a").is_none(),
        "user keys the body omits go"
    );
    assert_eq!(
        annotated.body["annotations"]["field.cattle.io/creatorId"], creator,
        "field.cattle.io keys stay"
    );
    let moved = env
        .put(&format!("/v3/projects/{id}"), json!({"clusterId": "elsewhere"}))
        .await;
    assert_eq!(moved.status, 400);
    assert!(
        moved.body["message"]
            .as_str()
            .is_some_and(|m| m.contains("field is immutable"))
    );
    let replaced = env
        .put(&format!("/v3/projects/{id}?_replace=true"), json!({"name": "m3"}))
        .await;
    assert_eq!(replaced.status, 200);
    assert_eq!(
        replaced.body["description"], "",
        "with _replace omitted fields are cleared"
    );
    let missing = env.put("/v3/projects/local:p-zzzzz", json!({"name": "x"})).await;
    assert_eq!(missing.status, 404);
}

// Part C 5 / B1 "DELETE": 200 with `removing`, then 404; the System project cannot be deleted.
#[tokio::test]
async fn deletes_answer_removing_then_the_project_is_gone() {
    let env = Env::start().await;
    env.rancher.set_project_removal_delay(Duration::from_millis(100));
    let id = env.create_project("local", "doomed").await;
    let deleted = env.delete(&format!("/v3/projects/{id}")).await;
    assert_eq!(deleted.status, 200);
    assert_eq!(deleted.body["state"], "removing");
    let (env_ref, path) = (&env, format!("/v3/projects/{id}"));
    wait_until("the removed project to disappear", Deadline::secs(5), || {
        let path = path.clone();
        async move {
            let answer = env_ref.get(&path).await;
            if answer.status == 404 {
                return Ok(Some(()));
            }
            assert_eq!(answer.body["state"], "removing", "until it is gone");
            Ok(None)
        }
    })
    .await;
    let again = env.delete(&format!("/v3/projects/{id}")).await;
    assert_eq!(again.status, 404);
    let system = env.get("/v3/projects?clusterId=local&name=System").await;
    let system_id = ids(&system.body).pop().expect("System project exists");
    let refused = env.delete(&format!("/v3/projects/{system_id}")).await;
    assert_eq!(refused.status, 400);
    assert!(
        refused.body["message"]
            .as_str()
            .is_some_and(|m| m.ends_with("System Project cannot be deleted"))
    );
}

// B1 "DELETE" namespaces: norman-created namespaces go with the project, others are detached.
#[tokio::test]
async fn deleting_a_project_deletes_norman_namespaces_and_detaches_others() {
    let env = Env::start().await;
    env.rancher.set_project_removal_delay(Duration::ZERO);
    let id = env.create_project("local", "with-namespaces").await;
    let created = env
        .post(
            "/v3/clusters/local/namespaces",
            json!({"name": "made-by-norman", "projectId": id}),
        )
        .await;
    assert_eq!(created.status, 201);
    let kube = env
        .post(
            "/k8s/clusters/local/api/v1/namespaces",
            json!({"metadata": {"name": "made-by-kubectl", "annotations": {"field.cattle.io/projectId": id}}}),
        )
        .await;
    assert_eq!(kube.status, 201);
    assert_eq!(env.delete(&format!("/v3/projects/{id}")).await.status, 200);
    assert_eq!(env.get(&format!("/v3/projects/{id}")).await.status, 404);
    assert_eq!(
        env.get("/v3/clusters/local/namespaces/made-by-norman").await.status,
        404
    );
    let detached = env.get("/v3/clusters/local/namespaces/made-by-kubectl").await;
    assert_eq!(detached.status, 200);
    assert_eq!(detached.body["projectId"], json!(null));
    assert!(detached.body["labels"].get("field.cattle.io/projectId").is_none());
}

// Part C 5: every cluster has Default and System projects.
#[tokio::test]
async fn clusters_start_with_default_and_system_projects() {
    let env = Env::start().await;
    let answer = env.get("/v3/projects?clusterId=local").await;
    let mut names: Vec<String> = answer.body["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["name"].as_str().map(str::to_string))
        .collect();
    names.sort();
    assert_eq!(names, vec!["Default".to_string(), "System".to_string()]);
}
