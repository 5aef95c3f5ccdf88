//! The emulator's test hooks, in-process and over HTTP: counters, faults, the down switch, seeding.

use std::time::Duration;

use e2e::harness::{Deadline, wait_until};
use keycloak_emulator::{DownMode, EmulatorConfig, Fault};
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{REALM, admin, admin_token, http, route, start, start_with};

#[tokio::test]
async fn counters_count_by_method_and_route_template() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    for _ in 0..3 {
        admin(&kc, &token, Method::GET, "/groups", None).await;
    }
    admin(&kc, &token, Method::GET, "/groups/anything", None).await;
    assert_eq!(kc.hooks().count("GET", &route("/groups")), 3);
    assert_eq!(kc.hooks().count("GET", &route("/groups/{id}")), 1);
    assert_eq!(kc.hooks().count("POST", crate::support::TOKEN_ROUTE), 1);
    let over_http: Value = http()
        .get(format!("{}/__emulator/counters", kc.origin()))
        .send()
        .await
        .expect("hooks")
        .json()
        .await
        .expect("json");
    assert!(
        over_http
            .as_array()
            .expect("array")
            .contains(&json!({ "method": "GET", "route": route("/groups"), "count": 3 }))
    );
    kc.hooks().reset_counters();
    assert_eq!(kc.hooks().total_requests(), 0);
}

#[tokio::test]
async fn status_faults_apply_a_given_number_of_times() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    kc.hooks()
        .add_fault(Fault::on("GET", &route("/groups")).status(503).times(2));
    assert_eq!(admin(&kc, &token, Method::GET, "/groups", None).await.status(), 503);
    assert_eq!(admin(&kc, &token, Method::GET, "/groups", None).await.status(), 503);
    assert_eq!(admin(&kc, &token, Method::GET, "/groups", None).await.status(), 200);
    assert_eq!(
        admin(&kc, &token, Method::POST, "/groups", Some(json!({ "name": "x" })))
            .await
            .status(),
        201,
        "other methods are untouched"
    );
    let id = kc.hooks().add_fault(Fault::everywhere().status(500));
    let failed = admin(&kc, &token, Method::GET, "/users", None).await;
    assert_eq!(failed.status(), 500);
    assert_eq!(failed.json::<Value>().await.expect("json")["error"], "unknown_error");
    assert!(kc.hooks().remove_fault(id));
    assert_eq!(admin(&kc, &token, Method::GET, "/users", None).await.status(), 200);
}

#[tokio::test]
async fn latency_faults_delay_answers() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    kc.hooks().add_fault(
        Fault::on("GET", &route("/groups"))
            .latency(Duration::from_millis(300))
            .times(1),
    );
    let started = std::time::Instant::now();
    assert_eq!(admin(&kc, &token, Method::GET, "/groups", None).await.status(), 200);
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn dropped_connections_never_answer() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    kc.hooks()
        .add_fault(Fault::on("GET", &route("/groups")).drop_connection().times(1));
    let result = http()
        .get(format!("{}/admin/realms/{REALM}/groups", kc.url()))
        .bearer_auth(&token)
        .send()
        .await;
    assert!(
        result.is_err(),
        "the connection was closed without an answer: {result:?}"
    );
    assert_eq!(
        admin(&kc, &token, Method::GET, "/groups", None).await.status(),
        200,
        "the next request is served"
    );
}

#[tokio::test]
async fn going_down_refuses_connections_until_the_server_comes_back() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    kc.hooks().go_down(DownMode::Refuse);
    let url = format!("{}/admin/realms/{REALM}/groups", kc.url());
    let refused = wait_until("connections to be refused", Deadline::secs(5), || {
        let url = url.clone();
        let token = token.clone();
        async move {
            match http().get(&url).bearer_auth(&token).send().await {
                Err(error) if error.is_connect() => Ok(Some(())),
                other => Err(format!("{other:?}")),
            }
        }
    });
    refused.await;
    kc.hooks().come_up();
    let back = wait_until("the server to accept again on the same port", Deadline::secs(5), || {
        let url = url.clone();
        let token = token.clone();
        async move {
            match http().get(&url).bearer_auth(&token).send().await {
                Ok(response) if response.status() == 200 => Ok(Some(())),
                other => Err(format!("{other:?}")),
            }
        }
    });
    back.await;
}

#[tokio::test]
async fn going_down_as_unavailable_answers_503_except_for_the_hooks() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    let down = http()
        .post(format!("{}/__emulator/down", kc.origin()))
        .json(&json!({ "mode": "unavailable" }))
        .send()
        .await
        .expect("hook answers");
    assert_eq!(down.status(), 204);
    let response = admin(&kc, &token, Method::GET, "/groups", None).await;
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["content-type"], "text/html");
    let state: Value = http()
        .get(format!("{}/__emulator/down", kc.origin()))
        .send()
        .await
        .expect("hook")
        .json()
        .await
        .expect("json");
    assert_eq!(state, json!({ "mode": "unavailable" }));
    http()
        .delete(format!("{}/__emulator/down", kc.origin()))
        .send()
        .await
        .expect("hook");
    assert_eq!(admin(&kc, &token, Method::GET, "/groups", None).await.status(), 200);
}

#[tokio::test]
async fn a_timed_outage_ends_by_itself_and_the_control_listener_stays_up() {
    let config = EmulatorConfig {
        control_listen: Some("127.0.0.1:0".parse().expect("addr")),
        ..EmulatorConfig::with_realm(REALM)
    };
    let kc = start_with(config).await;
    let control = kc.control_url().expect("control listener").to_string();
    let token = admin_token(&kc).await;
    let down = http()
        .post(format!("{control}/__emulator/down"))
        .json(&json!({ "mode": "refuse", "seconds": 0.5 }))
        .send()
        .await
        .expect("control listener answers while the main one goes down");
    assert_eq!(down.status(), 204);
    let state: Value = http()
        .get(format!("{control}/__emulator/down"))
        .send()
        .await
        .expect("control")
        .json()
        .await
        .expect("json");
    assert_eq!(state, json!({ "mode": "refuse" }));
    let url = format!("{}/admin/realms/{REALM}/groups", kc.url());
    wait_until("the outage to end by itself", Deadline::secs(10), || {
        let url = url.clone();
        let token = token.clone();
        async move {
            match http().get(&url).bearer_auth(&token).send().await {
                Ok(response) if response.status() == 200 => Ok(Some(())),
                other => Err(format!("{other:?}")),
            }
        }
    })
    .await;
    assert_eq!(kc.hooks().down_mode(), None);
}

#[tokio::test]
async fn seeding_and_inspection_work_over_http() {
    let kc = start().await;
    let base = format!("{}/__emulator", kc.origin());
    let user = http()
        .post(format!("{base}/users"))
        .json(&json!({ "realm": REALM, "username": "dora", "password": "pw", "groups": ["/lab/members"] }))
        .send()
        .await
        .expect("seed user");
    assert_eq!(user.status(), 201);
    let group = http()
        .post(format!("{base}/groups"))
        .json(&json!({ "realm": REALM, "path": "/lab/admins" }))
        .send()
        .await
        .expect("seed group");
    assert_eq!(group.status(), 201);
    let client = http()
        .post(format!("{base}/clients"))
        .json(&json!({ "realm": REALM, "clientId": "web" }))
        .send()
        .await
        .expect("seed client");
    assert_eq!(client.status(), 201);
    let members: Value = http()
        .get(format!("{base}/realms/{REALM}/group-members?path=/lab/members"))
        .send()
        .await
        .expect("members")
        .json()
        .await
        .expect("json");
    assert_eq!(members, json!(["dora"]));
    let tree: Value = http()
        .get(format!("{base}/realms/{REALM}/groups"))
        .send()
        .await
        .expect("tree")
        .json()
        .await
        .expect("json");
    assert_eq!(tree[0]["name"], "lab");
    assert_eq!(tree[0]["children"].as_array().expect("children").len(), 2);
    let web: Value = http()
        .get(format!("{base}/realms/{REALM}/clients/web"))
        .send()
        .await
        .expect("client")
        .json()
        .await
        .expect("json");
    assert_eq!(web["clientId"], "web");
    let bad = http()
        .post(format!("{base}/users"))
        .json(&json!({ "realm": "nowhere", "username": "x" }))
        .send()
        .await
        .expect("seed");
    assert_eq!(bad.status(), 400);
    let faulted = http()
        .post(format!("{base}/faults"))
        .json(&json!({ "method": "GET", "route": route("/users"), "status": 502, "times": 1 }))
        .send()
        .await
        .expect("fault");
    assert_eq!(faulted.status(), 200);
    let token = admin_token(&kc).await;
    assert_eq!(admin(&kc, &token, Method::GET, "/users", None).await.status(), 502);
    assert_eq!(admin(&kc, &token, Method::GET, "/users", None).await.status(), 200);
    let advanced = http()
        .post(format!("{base}/clock/advance"))
        .json(&json!({ "seconds": 61 }))
        .send()
        .await
        .expect("clock");
    assert_eq!(advanced.status(), 204);
    assert_eq!(
        admin(&kc, &token, Method::GET, "/users", None).await.status(),
        401,
        "the master token lives 60 s"
    );
}
