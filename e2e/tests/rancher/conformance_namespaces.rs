//! Emulator conformance for namespaces through both entry points (Part B2 and Part C item 6 of
//! `keycloak-rancher-api.md`).

use reqwest::Method;
use serde_json::json;

use crate::support::{Env, ids, send};

// Part C 6 / B2 (a): norman create answers 201 `activating`; the project is an annotation plus a label; the
// quota is a JSON-string annotation; a duplicate is 409 AlreadyExists; `/v3/cluster/…` works too.
#[tokio::test]
async fn norman_namespaces_record_project_and_quota_as_annotations() {
    let env = Env::start().await;
    let project = env.create_project("local", "ns-test").await;
    let created = env
        .post(
            "/v3/cluster/local/namespaces",
            json!({"type": "namespace", "name": "team-a", "projectId": project, "description": "d",
                   "resourceQuota": {"limit": {"pods": "4"}}}),
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    assert_eq!(created.body["id"], "team-a");
    assert_eq!(created.body["type"], "namespace");
    assert_eq!(created.body["state"], "activating");
    assert_eq!(created.body["projectId"], json!(project));
    let kube = env.get("/k8s/clusters/local/api/v1/namespaces/team-a").await;
    assert_eq!(kube.status, 200);
    let annotations = &kube.body["metadata"]["annotations"];
    assert_eq!(annotations["field.cattle.io/projectId"], json!(project));
    let quota: serde_json::Value = serde_json::from_str(
        annotations["field.cattle.io/resourceQuota"]
            .as_str()
            .expect("a JSON string"),
    )
    .expect("JSON");
    assert_eq!(quota, json!({"limit": {"pods": "4"}}));
    let project_name = project.split_once(':').map(|(_, n)| n).expect("project name");
    assert_eq!(
        kube.body["metadata"]["labels"]["field.cattle.io/projectId"],
        project_name
    );
    let duplicate = env
        .post("/v3/clusters/local/namespaces", json!({"name": "team-a"}))
        .await;
    assert_eq!(duplicate.status, 409);
    assert_eq!(duplicate.body["code"], "AlreadyExists");
    assert_eq!(duplicate.body["message"], "namespaces \"team-a\" already exists");
    let listed = env
        .get(&format!("/v3/clusters/local/namespaces?projectId={project}"))
        .await;
    assert_eq!(ids(&listed.body), vec!["team-a".to_string()]);
}

// B2 (a): system namespaces are hidden from norman lists.
#[tokio::test]
async fn system_namespaces_are_hidden_from_norman_lists() {
    let env = Env::start().await;
    let listed = env.get("/v3/clusters/local/namespaces").await;
    assert_eq!(ids(&listed.body), vec!["default".to_string()]);
    let kube = env.get("/k8s/clusters/local/api/v1/namespaces").await;
    let names: Vec<_> = kube.body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| n["metadata"]["name"].clone())
        .collect();
    assert!(
        names.contains(&json!("kube-system")),
        "the Kubernetes proxy shows them: {names:?}"
    );
}

// Part C 6 / B2 (a) quota checks: keys must match the project quota (422 MissingRequired) and fit (422
// MaxLimitExceeded); without a namespace quota the project's default applies.
#[tokio::test]
async fn namespace_quotas_must_match_and_fit_the_project_quota() {
    let env = Env::start().await;
    let created = env
        .post(
            "/v3/projects",
            json!({"clusterId": "local", "name": "quota",
                   "resourceQuota": {"limit": {"limitsCpu": "2", "pods": "10"}},
                   "namespaceDefaultResourceQuota": {"limit": {"limitsCpu": "1", "pods": "5"}}}),
        )
        .await;
    let project = created.body["id"].as_str().expect("id").to_string();
    let missing = env
        .post(
            "/v3/clusters/local/namespaces",
            json!({"name": "a", "projectId": project, "resourceQuota": {"limit": {"pods": "1"}}}),
        )
        .await;
    assert_eq!(missing.status, 422);
    assert_eq!(missing.body["code"], "MissingRequired");
    assert_eq!(missing.body["fieldName"], "resourceQuota");
    assert_eq!(
        missing.body["message"],
        "does not have all fields defined on a project quota"
    );
    let defaulted = env
        .post(
            "/v3/clusters/local/namespaces",
            json!({"name": "b", "projectId": project}),
        )
        .await;
    assert_eq!(defaulted.status, 201);
    assert_eq!(
        defaulted.body["resourceQuota"],
        json!({"limit": {"limitsCpu": "1", "pods": "5"}})
    );
    let second = env
        .post(
            "/v3/clusters/local/namespaces",
            json!({"name": "c", "projectId": project}),
        )
        .await;
    assert_eq!(second.status, 201, "two defaults fit exactly");
    let third = env
        .post(
            "/v3/clusters/local/namespaces",
            json!({"name": "d", "projectId": project}),
        )
        .await;
    assert_eq!(third.status, 422);
    assert_eq!(third.body["code"], "MaxLimitExceeded");
    assert!(
        third.body["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("exceeds projectLimit on fields:"))
    );
    let used = env.get(&format!("/v3/projects/{project}")).await;
    assert_eq!(
        used.body["resourceQuota"]["usedLimit"],
        json!({"limitsCpu": "2", "pods": "10"})
    );
}

// B2 (a): projectId cannot change by PUT; the `move` action moves a namespace.
#[tokio::test]
async fn namespaces_move_between_projects_with_the_move_action() {
    let env = Env::start().await;
    let first = env.create_project("local", "one").await;
    let second = env.create_project("local", "two").await;
    env.post(
        "/v3/clusters/local/namespaces",
        json!({"name": "mover", "projectId": first}),
    )
    .await;
    let put = env
        .put(
            "/v3/clusters/local/namespaces/mover",
            json!({"projectId": second, "description": "x"}),
        )
        .await;
    assert_eq!(put.status, 200);
    assert_eq!(put.body["projectId"], json!(first), "PUT leaves projectId alone");
    let moved = env
        .post(
            "/v3/clusters/local/namespaces/mover?action=move",
            json!({"projectId": second}),
        )
        .await;
    assert_eq!(moved.status, 200, "{:?}", moved.body);
    assert_eq!(moved.body["projectId"], json!(second));
    let kube = env.get("/k8s/clusters/local/api/v1/namespaces/mover").await;
    assert_eq!(
        kube.body["metadata"]["labels"]["field.cattle.io/projectId"],
        second.split_once(':').map(|(_, n)| n).unwrap_or_default()
    );
}

// Part C 6 / B2 (b): the Kubernetes proxy speaks Kubernetes: Status errors, label selectors, the annotation
// puts a namespace in a project and Rancher adds the label.
#[tokio::test]
async fn the_kubernetes_proxy_speaks_kubernetes() {
    let env = Env::start().await;
    let project = env.create_project("local", "proxy").await;
    let project_name = project.split_once(':').map(|(_, n)| n.to_string()).expect("name");
    let created = env
        .post(
            "/k8s/clusters/local/api/v1/namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": "via-proxy", "annotations": {"field.cattle.io/projectId": project}}}),
        )
        .await;
    assert_eq!(created.status, 201);
    assert_eq!(created.body["kind"], "Namespace");
    assert_eq!(
        created.body["metadata"]["labels"]["field.cattle.io/projectId"],
        json!(project_name)
    );
    let again = env
        .post(
            "/k8s/clusters/local/api/v1/namespaces",
            json!({"metadata": {"name": "via-proxy"}}),
        )
        .await;
    assert_eq!(again.status, 409);
    assert_eq!(again.body["kind"], "Status");
    assert_eq!(again.body["reason"], "AlreadyExists");
    assert_eq!(again.body["code"], 409);
    let selected = env
        .get(&format!(
            "/k8s/clusters/local/api/v1/namespaces?labelSelector=field.cattle.io/projectId%3D{project_name}"
        ))
        .await;
    let names: Vec<_> = selected.body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| n["metadata"]["name"].clone())
        .collect();
    assert_eq!(names, vec![json!("via-proxy")]);
    let norman = env
        .get(&format!("/v3/clusters/local/namespaces?projectId={project}"))
        .await;
    assert_eq!(
        ids(&norman.body),
        vec!["via-proxy".to_string()],
        "both entry points show the same namespace"
    );
    let patched = send(
        env.http
            .request(
                Method::PATCH,
                env.url("/k8s/clusters/local/api/v1/namespaces/via-proxy"),
            )
            .bearer_auth(env.rancher.admin_token())
            .header("content-type", "application/merge-patch+json")
            .body(r#"{"metadata":{"annotations":{"field.cattle.io/projectId":null}}}"#),
    )
    .await;
    assert_eq!(patched.status, 200, "{:?}", patched.body);
    assert!(
        patched.body["metadata"]["labels"]
            .get("field.cattle.io/projectId")
            .is_none(),
        "{:?}",
        patched.body
    );
    let missing = env.get("/k8s/clusters/local/api/v1/namespaces/nope").await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.body["reason"], "NotFound");
    assert_eq!(missing.body["message"], "namespaces \"nope\" not found");
}
