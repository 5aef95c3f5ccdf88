//! The emulator's test hooks, in-process and over HTTP: counters, faults (status, latency, dropped
//! connections, for N requests or until cleared), the down switch, seeding and inspection.

use std::time::{Duration, Instant};

use rancher_emulator::{Fault, NamespaceSeed, ProjectSeed};
use serde_json::json;

use crate::support::{Env, ids, send};

#[tokio::test]
async fn counters_count_per_verb_and_resource_and_reset() {
    let env = Env::start().await;
    env.get("/v3/projects").await;
    env.get("/v3/projects").await;
    env.create_project("local", "counted").await;
    env.get("/v3/clusters/local/namespaces").await;
    assert_eq!(env.rancher.count("list", "projects"), 2);
    assert_eq!(env.rancher.count("create", "projects"), 1);
    assert_eq!(env.rancher.count("list", "namespaces"), 1);
    let over_http = send(env.http.get(env.url("/__emulator/counters"))).await;
    assert!(
        over_http
            .body
            .as_array()
            .is_some_and(|rows| rows.contains(&json!({"verb": "list", "resource": "projects", "count": 2})))
    );
    send(env.http.delete(env.url("/__emulator/counters"))).await;
    assert_eq!(env.rancher.count("list", "projects"), 0);
}

#[tokio::test]
async fn error_faults_apply_to_their_route_for_their_count() {
    let env = Env::start().await;
    env.rancher
        .inject_fault(Fault::on(Some("create"), Some("projects")).status(503).times(2));
    let body = json!({"clusterId": "local", "name": "x"});
    assert_eq!(env.get("/v3/projects").await.status, 200, "other routes are untouched");
    let first = env.post("/v3/projects", body.clone()).await;
    assert_eq!(first.status, 503);
    assert_eq!(first.body["type"], "error");
    assert_eq!(env.post("/v3/projects", body.clone()).await.status, 503);
    assert_eq!(
        env.post("/v3/projects", body.clone()).await.status,
        201,
        "the fault was used up"
    );
    send(
        env.http
            .post(env.url("/__emulator/faults"))
            .json(&json!({"resource": "projects", "errorStatus": 500})),
    )
    .await;
    assert_eq!(env.get("/v3/projects").await.status, 500);
    assert_eq!(env.get("/v3/projects").await.status, 500, "no count: until cleared");
    send(env.http.delete(env.url("/__emulator/faults"))).await;
    assert_eq!(env.get("/v3/projects").await.status, 200);
}

#[tokio::test]
async fn latency_faults_delay_answers() {
    let env = Env::start().await;
    env.rancher.inject_fault(
        Fault::on(Some("list"), Some("clusters"))
            .latency(Duration::from_millis(300))
            .times(1),
    );
    let started = Instant::now();
    assert_eq!(env.get("/v3/clusters").await.status, 200);
    assert!(started.elapsed() >= Duration::from_millis(300));
}

#[tokio::test]
async fn dropped_connections_and_the_down_switch_fail_requests_without_an_answer() {
    let env = Env::start().await;
    env.rancher
        .inject_fault(Fault::on(Some("list"), Some("projects")).drop_connection().times(1));
    let dropped = env
        .http
        .get(env.url("/v3/projects"))
        .bearer_auth(env.rancher.admin_token())
        .send()
        .await;
    assert!(dropped.is_err(), "the connection closes without a response");
    assert_eq!(env.get("/v3/projects").await.status, 200);
    send(env.http.put(env.url("/__emulator/down")).json(&json!({"down": true}))).await;
    let down = env
        .http
        .get(env.url("/v3/clusters"))
        .bearer_auth(env.rancher.admin_token())
        .send()
        .await;
    assert!(down.is_err());
    let hooks_still_work = send(env.http.get(env.url("/__emulator/counters"))).await;
    assert_eq!(hooks_still_work.status, 200);
    env.rancher.set_down(false);
    assert_eq!(env.get("/v3/clusters").await.status, 200);
}

#[tokio::test]
async fn seeding_and_inspection_work_in_process_and_over_http() {
    let env = Env::start().await;
    env.rancher
        .add_cluster(&rancher_emulator::ClusterSeed::new("c-m-seeded"));
    let seeded = env
        .rancher
        .add_project(&ProjectSeed {
            cluster_id: "c-m-seeded".into(),
            name: "Someone else's".into(),
            annotations: [("team".to_string(), "x".to_string())].into(),
            ..ProjectSeed::default()
        })
        .expect("seeded");
    env.rancher
        .add_namespace(&NamespaceSeed {
            cluster_id: "c-m-seeded".into(),
            name: "theirs".into(),
            project_id: Some(seeded.clone()),
            ..NamespaceSeed::default()
        })
        .expect("namespace seeded");
    let listed = env
        .get(&format!("/v3/clusters/c-m-seeded/namespaces?projectId={seeded}"))
        .await;
    assert_eq!(ids(&listed.body), vec!["theirs".to_string()]);
    assert_eq!(env.rancher.projects_named("c-m-seeded", "Someone else's").len(), 1);
    let over_http = send(
        env.http
            .post(env.url("/__emulator/projects"))
            .json(&json!({"clusterId": "c-m-seeded", "name": "via http"})),
    )
    .await;
    assert_eq!(over_http.status, 201);
    assert_eq!(over_http.body["name"], "via http");
    let state = send(env.http.get(env.url("/__emulator/state"))).await;
    assert!(
        state.body["projects"].as_array().is_some_and(|p| p.len() == 2 + 4),
        "two clusters' defaults plus two seeded"
    );
    let settings = send(
        env.http
            .put(env.url("/__emulator/settings"))
            .json(&json!({"duplicateBindings": "reject"})),
    )
    .await;
    assert_eq!(settings.status, 200);
}

#[tokio::test]
async fn tokens_can_be_added_and_revoked() {
    let env = Env::start().await;
    let extra = rancher_emulator::ApiToken::random("user-second");
    env.rancher.add_token(extra.clone());
    let with_extra = send(env.http.get(env.url("/v3/clusters")).bearer_auth(extra.bearer())).await;
    assert_eq!(with_extra.status, 200);
    send(
        env.http
            .delete(env.url(&format!("/__emulator/tokens/{}", extra.access_key))),
    )
    .await;
    let revoked = send(env.http.get(env.url("/v3/clusters")).bearer_auth(extra.bearer())).await;
    assert_eq!(revoked.status, 401);
}
