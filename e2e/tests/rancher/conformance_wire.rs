//! Emulator conformance: authentication, error shapes, type names and collections (Part B0, Part C items 1–4
//! and 8 of `keycloak-rancher-api.md`).

use base64::Engine;
use reqwest::Method;
use serde_json::json;

use crate::support::{Env, ids, send};

// Part C 1 / B0 "401": a missing or wrong token gets the odd body with `status` as a string and no code.
#[tokio::test]
async fn missing_or_wrong_tokens_get_the_odd_401_body() {
    let env = Env::start().await;
    let anonymous = send(env.http.get(env.url("/v3/projects"))).await;
    assert_eq!(anonymous.status, 401);
    assert_eq!(
        anonymous.body,
        json!({"type": "error", "status": "401", "message": "must authenticate"})
    );
    let access_key = env.rancher.admin().access_key.clone();
    let wrong = send(
        env.http
            .get(env.url("/v3/projects"))
            .header("authorization", format!("Bearer {access_key}:nope")),
    )
    .await;
    assert_eq!(wrong.status, 401);
    assert!(wrong.body.get("code").is_none() && wrong.body.get("baseType").is_none());
    assert!(wrong.body["status"].is_string());
}

// Part C 1 / B0 "Authentication": bearer `token-x:secret` and HTTP Basic with the same pair both work.
#[tokio::test]
async fn bearer_and_basic_authentication_both_work() {
    let env = Env::start().await;
    let bearer = send(
        env.http
            .get(env.url("/v3/clusters"))
            .header("authorization", format!("Bearer {}", env.rancher.admin_token())),
    )
    .await;
    assert_eq!(bearer.status, 200);
    let basic = base64::engine::general_purpose::STANDARD.encode(env.rancher.admin_token());
    let basic = send(
        env.http
            .get(env.url("/v3/clusters"))
            .header("authorization", format!("Basic {basic}")),
    )
    .await;
    assert_eq!(basic.status, 200);
    assert_eq!(ids(&basic.body), vec!["local".to_string()]);
}

// Part C 2 / B0 "Every other error": the norman shape with alphabetical keys; B1 "GET /v3/projects/{id}" 404 text.
#[tokio::test]
async fn errors_have_the_norman_shape() {
    let env = Env::start().await;
    let answer = env.get("/v3/projects/local:p-zzzzz").await;
    assert_eq!(answer.status, 404);
    assert_eq!(
        answer.body,
        json!({"baseType": "error", "code": "NotFound", "message": "projects.management.cattle.io \"p-zzzzz\" not found",
               "status": 404, "type": "error"})
    );
    assert!(answer.content_type.starts_with("application/json"));
    let raw = env
        .http
        .get(env.url("/v3/projects/local:p-zzzzz"))
        .bearer_auth(env.rancher.admin_token())
        .send()
        .await
        .expect("sent");
    let text = raw.text().await.expect("text");
    assert!(
        text.starts_with(r#"{"baseType":"error","code":"NotFound","message":"#),
        "keys in Go's order: {text}"
    );
}

// Part C 8 / B0 "Type names": case-insensitive type names; unknown types 404 `failed to find schema`.
#[tokio::test]
async fn type_names_are_case_insensitive() {
    let env = Env::start().await;
    let lower = env.get("/v3/projectroletemplatebindings").await;
    let camel = env.get("/v3/projectRoleTemplateBindings").await;
    assert_eq!((lower.status, camel.status), (200, 200));
    assert_eq!(camel.body["resourceType"], "projectRoleTemplateBinding");
    let unknown = env.get("/v3/widgets").await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.body["code"], "NotFound");
    assert_eq!(unknown.body["message"], "failed to find schema widgets");
}

// Part C 8 / B0 "HTML trap": a browser-like request still gets JSON.
#[tokio::test]
async fn browser_like_requests_still_get_json() {
    let env = Env::start().await;
    let answer = send(
        env.http
            .get(env.url("/v3/clusters"))
            .header("user-agent", "Mozilla/5.0 (X11; Linux x86_64)")
            .header("accept", "*/*")
            .bearer_auth(env.rancher.admin_token()),
    )
    .await;
    assert_eq!(answer.status, 200);
    assert!(answer.content_type.starts_with("application/json"));
    assert_eq!(answer.body["type"], "collection");
}

// Part C 3 / B0 "Collections": the envelope, exact case-sensitive filters, unknown filters ignored.
#[tokio::test]
async fn collections_filter_exactly_and_ignore_unknown_parameters() {
    let env = Env::start().await;
    let a = env.create_project("local", "Alpha").await;
    env.create_project("local", "alpha").await;
    let answer = env.get("/v3/projects?clusterId=local&name=Alpha").await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body["type"], "collection");
    assert_eq!(answer.body["resourceType"], "project");
    assert_eq!(
        ids(&answer.body),
        vec![a.clone()],
        "the name filter is exact and case-sensitive"
    );
    assert_eq!(
        answer.body["filters"]["name"],
        json!([{"modifier": "eq", "value": "Alpha"}])
    );
    assert_eq!(answer.body["filters"]["description"], json!(null));
    assert_eq!(answer.body["pagination"]["limit"], 1000);
    assert_eq!(answer.body["pagination"]["total"], 1);
    assert_eq!(answer.body["sort"]["order"], "asc");
    assert!(
        answer.body["createTypes"]["project"]
            .as_str()
            .is_some_and(|u| u.ends_with("/v3/projects"))
    );
    let typo = env.get("/v3/projects?clusterId=local&nmae=Alpha").await;
    assert_eq!(
        typo.body["data"].as_array().map(Vec::len),
        Some(4),
        "Default, System and both new projects"
    );
    let not_equal = env.get("/v3/projects?clusterId=local&name_ne=Alpha").await;
    assert!(!ids(&not_equal.body).contains(&a));
}

// Part C 3 / B0 "Paging" and "Sorting": limit with a marker; sorted by id; `order=desc`; `limit=-1`.
#[tokio::test]
async fn collections_page_with_markers_and_sort_by_id() {
    let env = Env::start().await;
    for index in 0..5 {
        env.create_project("local", &format!("p{index}")).await;
    }
    let everything = env.get("/v3/projects?limit=-1").await;
    let all = ids(&everything.body);
    assert_eq!(all.len(), 7);
    let mut sorted = all.clone();
    sorted.sort();
    assert_eq!(all, sorted, "sorted by id by default");
    let mut collected = Vec::new();
    let mut path = "/v3/projects?limit=3".to_string();
    loop {
        let page = env.get(&path).await;
        collected.extend(ids(&page.body));
        if page.body["pagination"]["partial"] != json!(true) {
            break;
        }
        let next = page.body["pagination"]["next"].as_str().expect("next link").to_string();
        path = next.trim_start_matches(env.rancher.url()).to_string();
        assert!(path.contains("marker="), "{path}");
    }
    assert_eq!(collected, all);
    let descending = env.get("/v3/projects?order=desc").await;
    let mut reversed = all.clone();
    reversed.reverse();
    assert_eq!(ids(&descending.body), reversed);
    let by_name = env.get("/v3/projects?sort=name&clusterId=local&name_prefix=p").await;
    let names: Vec<_> = by_name.body["data"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| p["name"].clone())
        .collect();
    assert_eq!(names, (0..5).map(|i| json!(format!("p{i}"))).collect::<Vec<_>>());
}

// B0 "Status codes": an unsupported method gets 405 `MethodNotAllow`.
#[tokio::test]
async fn unsupported_methods_get_405() {
    let env = Env::start().await;
    let answer = env.call(Method::PATCH, "/v3/projects", None).await;
    assert_eq!(answer.status, 405);
    assert_eq!(answer.body["code"], "MethodNotAllow");
}
