//! Storage, watch and lifecycle semantics checked over raw HTTP, where exact bodies, codes and event
//! sequences are visible.

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};

use crate::support::{Env, gizmo, is_cluster_furniture, wait_for};

const GIZMOS: &str = "/apis/conformance.example.com/v1/namespaces/default/gizmos";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// A watch response read line by line.
pub struct WatchLines {
    stream: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<axum::body::Bytes>> + Send>>,
    buffer: Vec<u8>,
}

impl WatchLines {
    pub async fn open(env: &Env, path_and_query: &str) -> (u16, WatchLines) {
        Self::open_accepting(env, path_and_query, None).await
    }

    /// Opens a watch sending `accept` as the Accept header.
    pub async fn open_accepting(env: &Env, path_and_query: &str, accept: Option<&str>) -> (u16, WatchLines) {
        let mut req = env.http.get(env.url(path_and_query));
        if let Some(accept) = accept {
            req = req.header("accept", accept);
        }
        let resp = req.send().await.expect("watch request");
        let status = resp.status().as_u16();
        (
            status,
            WatchLines {
                stream: Box::pin(resp.bytes_stream()),
                buffer: Vec::new(),
            },
        )
    }

    /// The next event, or `None` when the stream ended; fails after 10 s.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(pos) = self.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=pos).collect();
                return Some(serde_json::from_slice(&line).expect("watch line is JSON"));
            }
            let chunk = tokio::time::timeout(Duration::from_secs(10), self.stream.next())
                .await
                .expect("watch event within 10s");
            match chunk {
                Some(Ok(bytes)) => self.buffer.extend_from_slice(&bytes),
                _ => return None,
            }
        }
    }
}

async fn create_cm(env: &Env, name: &str) -> Value {
    let (status, body, _) = env
        .request(
            "POST",
            CONFIGMAPS,
            Some("application/json"),
            Some(json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":name},"data":{"k":"v"}})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    body
}

/// Status envelope key order and details for NotFound; unknown paths are a
/// plain-text 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_found_bodies_are_exact() {
    let env = Env::start().await;
    env.install_gizmo_crd().await;
    let resp = env.http.get(env.url(&format!("{GIZMOS}/g1"))).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 404);
    assert_eq!(
        resp.text().await.unwrap(),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"gizmos.conformance.example.com \"g1\" not found","reason":"NotFound","details":{"name":"g1","group":"conformance.example.com","kind":"gizmos"},"code":404}"#.to_owned() + "\n"
    );
    let resp = env
        .http
        .get(env.url("/apis/nope.example.com/v1/things"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);
    assert_eq!(resp.text().await.unwrap(), "404 page not found\n");
}

/// Server-set fields on create, optimistic concurrency texts, PUT without
/// resourceVersion on a CR, and no-op updates that keep the resourceVersion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_update_conflicts_and_noops() {
    let env = Env::start().await;
    env.install_gizmo_crd().await;
    let (status, created, _) = env
        .request("POST", GIZMOS, Some("application/json"), Some(gizmo("g1", 1)))
        .await;
    assert_eq!(status, 201);
    assert_eq!(created["metadata"]["generation"], 1);
    assert_eq!(created["metadata"]["uid"].as_str().unwrap().len(), 36);
    let rv: u64 = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();

    let (status, body, _) = env
        .request("POST", GIZMOS, Some("application/json"), Some(gizmo("g1", 1)))
        .await;
    assert_eq!((status, body["reason"].as_str()), (409, Some("AlreadyExists")));

    let mut stale = created.clone();
    stale["metadata"]["resourceVersion"] = json!((rv - 1).to_string());
    let (status, body, _) = env
        .request("PUT", &format!("{GIZMOS}/g1"), Some("application/json"), Some(stale))
        .await;
    assert_eq!(status, 409);
    assert_eq!(
        body["message"],
        "Operation cannot be fulfilled on gizmos.conformance.example.com \"g1\": the object has been modified; please apply your changes to the latest version and try again"
    );

    let mut unconditional = gizmo("g1", 2);
    unconditional["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    let (status, body, _) = env
        .request(
            "PUT",
            &format!("{GIZMOS}/g1"),
            Some("application/json"),
            Some(unconditional),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(
        body["message"],
        "gizmos.conformance.example.com \"g1\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update"
    );

    // Byte-identical PUT: no new resourceVersion (and, below, no watch event).
    let (status, same, _) = env
        .request(
            "PUT",
            &format!("{GIZMOS}/g1"),
            Some("application/json"),
            Some(created.clone()),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        same["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );

    // A spec change bumps generation; a metadata-only change does not.
    let (_, changed, _) = env
        .request(
            "PATCH",
            &format!("{GIZMOS}/g1"),
            Some("application/merge-patch+json"),
            Some(json!({"spec":{"size":3}})),
        )
        .await;
    assert_eq!(changed["metadata"]["generation"], 2);
    let (_, labelled, _) = env
        .request(
            "PATCH",
            &format!("{GIZMOS}/g1"),
            Some("application/merge-patch+json"),
            Some(json!({"metadata":{"labels":{"a":"b"}}})),
        )
        .await;
    assert_eq!(labelled["metadata"]["generation"], 2);

    // Creating with a resourceVersion is a plain 500 from the storage layer.
    let mut with_rv = gizmo("g2", 1);
    with_rv["metadata"]["resourceVersion"] = json!("5");
    let (status, body, _) = env
        .request("POST", GIZMOS, Some("application/json"), Some(with_rv))
        .await;
    assert_eq!(
        (status, body["message"].as_str(), body.get("reason")),
        (
            500,
            Some("resourceVersion should not be set on objects to be created"),
            None
        )
    );
}

/// With a status subresource the main endpoint ignores status and /status changes
/// only status (labels sent there are dropped) without bumping generation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_subresource_splits_spec_and_status() {
    let env = Env::start().await;
    env.install_gizmo_crd().await;
    let mut body = gizmo("g1", 1);
    body["status"] = json!({"observedGeneration": 7});
    let (_, created, _) = env.request("POST", GIZMOS, Some("application/json"), Some(body)).await;
    assert!(created.get("status").is_none(), "status dropped on create: {created}");
    let (status, updated, _) = env
        .request(
            "PATCH",
            &format!("{GIZMOS}/g1/status"),
            Some("application/merge-patch+json"),
            Some(json!({"metadata":{"labels":{"x":"y"}},"spec":{"size":9},"status":{"observedGeneration":1}})),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(updated["status"]["observedGeneration"], 1);
    assert_eq!(updated["spec"]["size"], 1);
    assert!(updated["metadata"].get("labels").is_none());
    assert_eq!(updated["metadata"]["generation"], 1);
    let (_, main, _) = env
        .request(
            "PATCH",
            &format!("{GIZMOS}/g1"),
            Some("application/merge-patch+json"),
            Some(json!({"status":{"observedGeneration":5}})),
        )
        .await;
    assert_eq!(main["status"]["observedGeneration"], 1);
}

/// Paging with limit/continue, remainingItemCount, `resourceVersion=0` ignoring
/// limit, bad tokens, and the list shapes of CRs and typed lists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_page_with_continue_tokens() {
    let env = Env::start().await;
    env.install_gizmo_crd().await;
    for i in 0..5 {
        env.request(
            "POST",
            GIZMOS,
            Some("application/json"),
            Some(gizmo(&format!("g{i}"), i)),
        )
        .await;
    }
    let (_, page1, _) = env.request("GET", &format!("{GIZMOS}?limit=2"), None, None).await;
    assert_eq!(page1["kind"], "GizmoList");
    assert_eq!(page1["items"].as_array().unwrap().len(), 2);
    assert_eq!(page1["metadata"]["remainingItemCount"], 3);
    assert_eq!(page1["items"][0]["kind"], "Gizmo");
    let token = page1["metadata"]["continue"].as_str().unwrap().to_string();
    let (_, page2, _) = env
        .request("GET", &format!("{GIZMOS}?limit=2&continue={token}"), None, None)
        .await;
    assert_eq!(page2["items"][0]["metadata"]["name"], "g2");
    assert_eq!(
        page2["metadata"]["resourceVersion"],
        page1["metadata"]["resourceVersion"]
    );
    let token = page2["metadata"]["continue"].as_str().unwrap().to_string();
    let (_, page3, _) = env
        .request("GET", &format!("{GIZMOS}?limit=2&continue={token}"), None, None)
        .await;
    assert_eq!(page3["items"].as_array().unwrap().len(), 1);
    assert_eq!(
        page3["metadata"]["continue"], "",
        "the last CR page carries an empty continue"
    );

    let (_, all, _) = env
        .request("GET", &format!("{GIZMOS}?limit=2&resourceVersion=0"), None, None)
        .await;
    assert_eq!(all["items"].as_array().unwrap().len(), 5);

    let (status, body, _) = env
        .request("GET", &format!("{GIZMOS}?continue=garbage"), None, None)
        .await;
    assert_eq!(status, 400);
    assert!(body["message"].as_str().unwrap().starts_with("invalid continue token"));

    create_cm(&env, "c1").await;
    let text = env
        .http
        .get(env.url(CONFIGMAPS))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.starts_with(r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"#),
        "{text}"
    );
    let list: Value = serde_json::from_str(&text).unwrap();
    assert!(list["items"][0].get("kind").is_none(), "typed list items carry no kind");

    let (status, body, _) = env
        .request("GET", &format!("{GIZMOS}?resourceVersion=999999"), None, None)
        .await;
    assert_eq!((status, body["reason"].as_str()), (504, Some("Timeout")));
}

/// Selectors (API conventions "Label selectors"): set-based label selectors and
/// field selectors, unsupported field labels rejected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn label_and_field_selectors_filter_lists() {
    let env = Env::start().await;
    for (name, tier) in [("a", "web"), ("b", "db"), ("c", "cache")] {
        env.request(
            "POST",
            CONFIGMAPS,
            Some("application/json"),
            Some(json!({"metadata":{"name":name,"labels":{"tier":tier}}})),
        )
        .await;
    }
    let names = |v: &Value| {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
            .filter(|name| !is_cluster_furniture(name))
            .collect::<Vec<_>>()
    };
    let (_, list, _) = env
        .request(
            "GET",
            &format!("{CONFIGMAPS}?labelSelector=tier%20in%20(web,db)"),
            None,
            None,
        )
        .await;
    assert_eq!(names(&list), vec!["a", "b"]);
    let (_, list, _) = env
        .request("GET", &format!("{CONFIGMAPS}?labelSelector=tier!%3Dweb"), None, None)
        .await;
    assert_eq!(names(&list), vec!["b", "c"]);
    let (_, list, _) = env
        .request(
            "GET",
            &format!("{CONFIGMAPS}?fieldSelector=metadata.name%3Dc"),
            None,
            None,
        )
        .await;
    assert_eq!(names(&list), vec!["c"]);
    let (status, body, _) = env
        .request("GET", &format!("{CONFIGMAPS}?fieldSelector=spec.foo%3Dx"), None, None)
        .await;
    assert_eq!(
        (status, body["message"].as_str()),
        (
            400,
            Some("\"spec.foo\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"")
        )
    );
}

/// Watch from a resourceVersion streams ADDED/MODIFIED/DELETED; no-op writes emit
/// nothing; a compacted history gives HTTP 200 with one in-stream ERROR 410.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_streams_changes_and_expires_in_stream() {
    let env = Env::start_emulated().await;
    let created = create_cm(&env, "w1").await;
    let rv = created["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let (status, mut watch) = WatchLines::open(&env, &format!("{CONFIGMAPS}?watch=true&resourceVersion={rv}")).await;
    assert_eq!(status, 200);
    // A no-op PUT, then a real change, then a delete: the watcher sees exactly MODIFIED, DELETED.
    env.request(
        "PUT",
        &format!("{CONFIGMAPS}/w1"),
        Some("application/json"),
        Some(created.clone()),
    )
    .await;
    env.request(
        "PATCH",
        &format!("{CONFIGMAPS}/w1"),
        Some("application/merge-patch+json"),
        Some(json!({"data":{"k":"w"}})),
    )
    .await;
    env.request("DELETE", &format!("{CONFIGMAPS}/w1"), None, None).await;
    let first = watch.next().await.unwrap();
    assert_eq!(first["type"], "MODIFIED");
    assert_eq!(first["object"]["data"]["k"], "w");
    let second = watch.next().await.unwrap();
    assert_eq!(second["type"], "DELETED");

    env.emulator().compact_history();
    let (status, mut expired) = WatchLines::open(&env, &format!("{CONFIGMAPS}?watch=true&resourceVersion={rv}")).await;
    assert_eq!(status, 200, "an expired watch is still HTTP 200");
    let error = expired.next().await.unwrap();
    assert_eq!(error["type"], "ERROR");
    assert_eq!(error["object"]["code"], 410);
    assert_eq!(error["object"]["reason"], "Expired");
    assert!(
        error["object"]["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("too old resource version: {rv} ("))
    );
    assert!(expired.next().await.is_none(), "the stream closes after the error");
}

/// `sendInitialEvents` sends the current state and the initial-events-end bookmark;
/// without `resourceVersionMatch=NotOlderThan` it is a 422.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_lists_end_with_the_initial_events_bookmark() {
    let env = Env::start().await;
    create_cm(&env, "s1").await;
    create_cm(&env, "s2").await;
    let (status, body, _) = env
        .request(
            "GET",
            &format!("{CONFIGMAPS}?watch=true&sendInitialEvents=true"),
            None,
            None,
        )
        .await;
    assert_eq!(status, 422, "{body}");
    let (_, mut watch) = WatchLines::open(
        &env,
        &format!("{CONFIGMAPS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=0&allowWatchBookmarks=true"),
    )
    .await;
    let mut added = Vec::new();
    let bookmark = loop {
        let event = watch.next().await.unwrap();
        if event["type"] != "ADDED" {
            break event;
        }
        let name = event["object"]["metadata"]["name"].as_str().unwrap().to_string();
        if !is_cluster_furniture(&name) {
            added.push(name);
        }
    };
    added.sort();
    assert_eq!(added, ["s1", "s2"], "the current state comes first");
    assert_eq!(bookmark["type"], "BOOKMARK");
    assert_eq!(bookmark["object"]["kind"], "ConfigMap");
    assert_eq!(bookmark["object"]["apiVersion"], "v1");
    assert_eq!(
        bookmark["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
}

/// DELETE with finalizers marks the object (200 with the object, deletionTimestamp,
/// grace 0, generation bump), new finalizers are refused, emptying finalizers deletes it and watchers see
/// only DELETED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalizers_hold_deletion_until_removed() {
    let env = Env::start().await;
    env.install_gizmo_crd().await;
    let mut body = gizmo("g1", 1);
    body["metadata"]["finalizers"] = json!(["example.com/hold"]);
    env.request("POST", GIZMOS, Some("application/json"), Some(body)).await;
    let (status, marked, _) = env.request("DELETE", &format!("{GIZMOS}/g1"), None, None).await;
    assert_eq!(status, 200);
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(marked["metadata"]["generation"], 2);
    let rv = marked["metadata"]["resourceVersion"].as_str().unwrap().to_string();

    let (status, body, _) = env
        .request(
            "PATCH",
            &format!("{GIZMOS}/g1"),
            Some("application/merge-patch+json"),
            Some(json!({"metadata":{"finalizers":["example.com/hold","x.io/new"]}})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("no new finalizers can be added if the object is being deleted")
    );

    let (_, mut watch) = WatchLines::open(&env, &format!("{GIZMOS}?watch=true&resourceVersion={rv}")).await;
    let (status, _, _) = env
        .request(
            "PATCH",
            &format!("{GIZMOS}/g1"),
            Some("application/json-patch+json"),
            Some(json!([{"op":"test","path":"/metadata/finalizers/0","value":"example.com/hold"},{"op":"remove","path":"/metadata/finalizers/0"}])),
        )
        .await;
    assert_eq!(status, 200);
    let event = watch.next().await.unwrap();
    assert_eq!(event["type"], "DELETED");
    let (status, _, _) = env.request("GET", &format!("{GIZMOS}/g1"), None, None).await;
    assert_eq!(status, 404);
}

/// The immediate delete reply, and the finalizer helper's JSON patch (`test` for null passes when absent; a
/// failing test is the generic 422).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_patch_test_null_and_delete_status() {
    let env = Env::start().await;
    let created = create_cm(&env, "j1").await;
    let add = json!([{"op":"test","path":"/metadata/finalizers","value":null},{"op":"add","path":"/metadata/finalizers","value":["a.io/f"]}]);
    let (status, patched, _) = env
        .request(
            "PATCH",
            &format!("{CONFIGMAPS}/j1"),
            Some("application/json-patch+json"),
            Some(add.clone()),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(patched["metadata"]["finalizers"], json!(["a.io/f"]));
    let (status, body, _) = env
        .request(
            "PATCH",
            &format!("{CONFIGMAPS}/j1"),
            Some("application/json-patch+json"),
            Some(add),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(
        body["message"],
        "the server rejected our request due to an error in our request"
    );
    assert_eq!(body["details"], json!({}), "details are empty: {body}");
    env.request(
        "PATCH",
        &format!("{CONFIGMAPS}/j1"),
        Some("application/merge-patch+json"),
        Some(json!({"metadata":{"finalizers":null}})),
    )
    .await;
    let resp = env
        .http
        .delete(env.url(&format!("{CONFIGMAPS}/j1")))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let uid = created["metadata"]["uid"].as_str().unwrap();
    assert_eq!(
        resp.text().await.unwrap(),
        format!(
            r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Success","details":{{"name":"j1","kind":"configmaps","uid":"{uid}"}}}}"#
        ) + "\n"
    );
}

/// The garbage collector deletes dependents of a
/// deleted owner (background), waits for blocking dependents (foreground) and orphans on request; an owner
/// in another namespace counts as absent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_collector_follows_owner_references() {
    let env = Env::start().await;
    env.request(
        "POST",
        "/api/v1/namespaces",
        Some("application/json"),
        Some(json!({"metadata":{"name":"other"}})),
    )
    .await;
    let owner = create_cm(&env, "owner").await;
    let uid = owner["metadata"]["uid"].as_str().unwrap();
    let owned = |name: &str, ns: &str, block: bool| json!({"metadata":{"name":name,"namespace":ns,"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":uid,"blockOwnerDeletion":block}]}});
    env.request(
        "POST",
        CONFIGMAPS,
        Some("application/json"),
        Some(owned("dep", "default", false)),
    )
    .await;
    env.request(
        "POST",
        "/api/v1/namespaces/other/configmaps",
        Some("application/json"),
        Some(owned("cross", "other", false)),
    )
    .await;
    wait_for("cross-namespace dependent collected", || async {
        env.request("GET", "/api/v1/namespaces/other/configmaps/cross", None, None)
            .await
            .0
            == 404
    })
    .await;
    assert_eq!(
        env.request("GET", &format!("{CONFIGMAPS}/dep"), None, None).await.0,
        200
    );
    let (_, events, _) = env
        .request(
            "GET",
            "/api/v1/namespaces/other/events?fieldSelector=reason%3DOwnerRefInvalidNamespace",
            None,
            None,
        )
        .await;
    assert_eq!(events["items"][0]["involvedObject"]["name"], "cross", "{events}");
    assert_eq!(events["items"][0]["type"], "Warning");
    env.request("DELETE", &format!("{CONFIGMAPS}/owner"), None, None).await;
    wait_for("background dependent collected", || async {
        env.request("GET", &format!("{CONFIGMAPS}/dep"), None, None).await.0 == 404
    })
    .await;

    // Foreground: the owner waits for its blocking dependent.
    let owner = create_cm(&env, "owner").await;
    let uid = owner["metadata"]["uid"].as_str().unwrap().to_string();
    let mut blocking = json!({"metadata":{"name":"blocker","finalizers":["example.com/hold"],"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":uid,"blockOwnerDeletion":true}]}});
    env.request("POST", CONFIGMAPS, Some("application/json"), Some(blocking.clone()))
        .await;
    let (status, marked, _) = env
        .request(
            "DELETE",
            &format!("{CONFIGMAPS}/owner"),
            Some("application/json"),
            Some(json!({"propagationPolicy":"Foreground"})),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(marked["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    wait_for("blocking dependent is terminating", || async {
        env.request("GET", &format!("{CONFIGMAPS}/blocker"), None, None).await.1["metadata"]["deletionTimestamp"]
            .is_string()
    })
    .await;
    assert_eq!(
        env.request("GET", &format!("{CONFIGMAPS}/owner"), None, None).await.0,
        200,
        "owner waits"
    );
    blocking["metadata"]["finalizers"] = json!(null);
    env.request(
        "PATCH",
        &format!("{CONFIGMAPS}/blocker"),
        Some("application/merge-patch+json"),
        Some(json!({"metadata":{"finalizers":null}})),
    )
    .await;
    wait_for("foreground owner removed", || async {
        env.request("GET", &format!("{CONFIGMAPS}/owner"), None, None).await.0 == 404
    })
    .await;

    // Orphan: the dependent stays, without its owner reference.
    let owner = create_cm(&env, "owner").await;
    let uid = owner["metadata"]["uid"].as_str().unwrap().to_string();
    env.request(
        "POST",
        CONFIGMAPS,
        Some("application/json"),
        Some(json!({"metadata":{"name":"orphan","ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":uid}]}})),
    )
    .await;
    env.request(
        "DELETE",
        &format!("{CONFIGMAPS}/owner?propagationPolicy=Orphan"),
        None,
        None,
    )
    .await;
    wait_for("orphaning owner removed", || async {
        env.request("GET", &format!("{CONFIGMAPS}/owner"), None, None).await.0 == 404
    })
    .await;
    let (status, orphan, _) = env.request("GET", &format!("{CONFIGMAPS}/orphan"), None, None).await;
    assert_eq!(status, 200);
    assert!(orphan["metadata"].get("ownerReferences").is_none(), "{orphan}");
}

/// Protected namespaces, creating in a terminating namespace (403), the namespace
/// controller removing content and then the namespace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_deletion_cascades() {
    let env = Env::start().await;
    let (status, body, _) = env.request("DELETE", "/api/v1/namespaces/default", None, None).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (
            403,
            Some("namespaces \"default\" is forbidden: this namespace may not be deleted")
        )
    );
    let (status, body, _) = env
        .request(
            "POST",
            "/api/v1/namespaces/nope/configmaps",
            Some("application/json"),
            Some(json!({"metadata":{"name":"x"}})),
        )
        .await;
    assert_eq!(
        (status, body["message"].as_str()),
        (404, Some("namespaces \"nope\" not found"))
    );

    let (_, ns, _) = env
        .request(
            "POST",
            "/api/v1/namespaces",
            Some("application/json"),
            Some(json!({"metadata":{"name":"team"}})),
        )
        .await;
    assert_eq!(ns["status"]["phase"], "Active");
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
    env.request(
        "POST",
        "/api/v1/namespaces/team/configmaps",
        Some("application/json"),
        Some(json!({"metadata":{"name":"held","finalizers":["example.com/hold"]}})),
    )
    .await;
    env.request(
        "POST",
        "/api/v1/namespaces/team/secrets",
        Some("application/json"),
        Some(json!({"metadata":{"name":"s"}})),
    )
    .await;
    let (status, deleted, _) = env.request("DELETE", "/api/v1/namespaces/team", None, None).await;
    assert_eq!(status, 200);
    assert_eq!(deleted["status"]["phase"], "Terminating");
    let (status, body, _) = env
        .request(
            "POST",
            "/api/v1/namespaces/team/configmaps",
            Some("application/json"),
            Some(json!({"metadata":{"name":"late"}})),
        )
        .await;
    assert_eq!(status, 403);
    assert_eq!(body["details"]["causes"][0]["reason"], "NamespaceTerminating");
    wait_for("secret removed and finalizer condition reported", || async {
        let (_, ns, _) = env.request("GET", "/api/v1/namespaces/team", None, None).await;
        let remaining = ns["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "NamespaceFinalizersRemaining").cloned());
        env.request("GET", "/api/v1/namespaces/team/secrets/s", None, None)
            .await
            .0
            == 404
            && remaining.is_some_and(|c| {
                c["status"] == "True"
                    && c["message"] == "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
            })
    })
    .await;
    env.request(
        "PATCH",
        "/api/v1/namespaces/team/configmaps/held",
        Some("application/merge-patch+json"),
        Some(json!({"metadata":{"finalizers":null}})),
    )
    .await;
    wait_for("namespace removed", || async {
        env.request("GET", "/api/v1/namespaces/team", None, None).await.0 == 404
    })
    .await;
}

/// CRD status conditions and acceptedNames; deleting a CRD deletes its instances and
/// stops serving the resource.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crd_lifecycle_serves_then_cleans_up() {
    let env = Env::start_emulated().await;
    env.install_gizmo_crd().await;
    let (_, crd, _) = env
        .request(
            "GET",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.conformance.example.com",
            None,
            None,
        )
        .await;
    let conditions = crd["status"]["conditions"].as_array().unwrap();
    assert!(
        conditions
            .iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True" && c["reason"] == "InitialNamesAccepted")
    );
    assert!(
        conditions
            .iter()
            .any(|c| c["type"] == "NamesAccepted" && c["reason"] == "NoConflicts")
    );
    assert_eq!(crd["status"]["acceptedNames"]["kind"], "Gizmo");
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
    env.request("POST", GIZMOS, Some("application/json"), Some(gizmo("g1", 1)))
        .await;
    let (status, _, _) = env
        .request(
            "DELETE",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.conformance.example.com",
            None,
            None,
        )
        .await;
    assert_eq!(status, 200);
    wait_for("CRD and instances gone", || async {
        env.request(
            "GET",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.conformance.example.com",
            None,
            None,
        )
        .await
        .0 == 404
    })
    .await;
    let resp = env.http.get(env.url(GIZMOS)).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 404);
    assert_eq!(env.emulator().object_count("conformance.example.com", "gizmos"), 0);
}

/// A dry-run create answers 201 with uid and no resourceVersion and
/// stores nothing: strategic merge patch on a CR is 415.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_and_unsupported_patch_types() {
    let env = Env::start().await;
    env.install_gizmo_crd().await;
    let (status, body, _) = env
        .request(
            "POST",
            &format!("{GIZMOS}?dryRun=All"),
            Some("application/json"),
            Some(gizmo("dry", 1)),
        )
        .await;
    assert_eq!(status, 201);
    assert!(body["metadata"]["uid"].is_string());
    assert!(body["metadata"].get("resourceVersion").is_none());
    assert_eq!(env.request("GET", &format!("{GIZMOS}/dry"), None, None).await.0, 404);
    env.request("POST", GIZMOS, Some("application/json"), Some(gizmo("g1", 1)))
        .await;
    let (status, body, _) = env
        .request(
            "PATCH",
            &format!("{GIZMOS}/g1"),
            Some("application/strategic-merge-patch+json"),
            Some(json!({"spec":{"size":2}})),
        )
        .await;
    assert_eq!(status, 415);
    assert_eq!(
        body["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );
}

/// The emulator's test hooks: counters per verb/resource, injected errors for N requests, and watch cuts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_count_inject_and_cut() {
    let env = Env::start_emulated().await;
    create_cm(&env, "h1").await;
    env.request("GET", &format!("{CONFIGMAPS}/h1"), None, None).await;
    assert_eq!(env.emulator().hooks().count("get", "", "configmaps", ""), 1);
    assert_eq!(env.emulator().hooks().count("create", "", "configmaps", ""), 1);
    let (status, _, _) = env
        .request(
            "POST",
            "/__emulator/faults",
            Some("application/json"),
            Some(json!({"verbs":["get"],"resource":"configmaps","errorStatus":503,"count":1})),
        )
        .await;
    assert_eq!(status, 201);
    assert_eq!(env.request("GET", &format!("{CONFIGMAPS}/h1"), None, None).await.0, 503);
    assert_eq!(env.request("GET", &format!("{CONFIGMAPS}/h1"), None, None).await.0, 200);
    let (_, mut watch) = WatchLines::open(
        &env,
        &format!(
            "{CONFIGMAPS}?watch=true&resourceVersion={}",
            env.emulator().resource_version()
        ),
    )
    .await;
    env.request("POST", "/__emulator/watches/cut?resource=configmaps", None, None)
        .await;
    assert!(watch.next().await.is_none(), "the cut stream ends");
    let (_, counters, _) = env.request("GET", "/__emulator/counters", None, None).await;
    assert!(
        counters
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["verb"] == "watch" && c["resource"] == "configmaps")
    );
}

/// Events: one stored event is visible through core/v1 and events.k8s.io/v1 with the
/// renamed fields; field selectors on involvedObject work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_served_by_both_apis() {
    let env = Env::start().await;
    let event = json!({"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e1","namespace":"default"},
        "eventTime":"2026-01-01T00:00:00.000000Z","action":"Reconcile","reason":"Synced","note":"all good","type":"Normal",
        "reportingController":"ctl","reportingInstance":"ctl-1","regarding":{"kind":"Gizmo","name":"g1","namespace":"default","uid":"u1"}});
    let (status, body, _) = env
        .request(
            "POST",
            "/apis/events.k8s.io/v1/namespaces/default/events",
            Some("application/json"),
            Some(event),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let (_, core, _) = env
        .request(
            "GET",
            "/api/v1/namespaces/default/events?fieldSelector=involvedObject.uid%3Du1",
            None,
            None,
        )
        .await;
    let item = &core["items"][0];
    assert_eq!(item["message"], "all good");
    assert_eq!(item["involvedObject"]["name"], "g1");
    assert_eq!(item["reportingComponent"], "ctl");
    let (_, patched, _) = env
        .request(
            "PATCH",
            "/apis/events.k8s.io/v1/namespaces/default/events/e1",
            Some("application/merge-patch+json"),
            Some(json!({"series":{"count":2,"lastObservedTime":"2026-01-01T00:01:00.000000Z"}})),
        )
        .await;
    assert_eq!(patched["series"]["count"], 2);
    assert_eq!(patched["note"], "all good");
}

/// The HTTP side of server-side apply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_http_contract() {
    let env = Env::start().await;
    let apply = "application/apply-patch+yaml";
    let body =
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":{"app":"x"}},"data":{"k":"v"}});
    let resp = env
        .http
        .patch(env.url(&format!("{CONFIGMAPS}/cm")))
        .header("content-type", apply)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 422);
    assert_eq!(
        resp.text().await.unwrap(),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch","reason":"Invalid","details":{"group":"meta.k8s.io","kind":"PatchOptions","causes":[{"reason":"FieldValueRequired","message":"Required value: is required for apply patch","field":"fieldManager"}]},"code":422}"#.to_owned() + "\n"
    );
    let (status, body_out, _) = env
        .request(
            "PATCH",
            &format!("{CONFIGMAPS}/cm?fieldManager=alice&dryRun=All"),
            Some(apply),
            Some(body.clone()),
        )
        .await;
    assert_eq!(status, 201);
    assert!(body_out["metadata"].get("resourceVersion").is_none());
    assert_eq!(env.request("GET", &format!("{CONFIGMAPS}/cm"), None, None).await.0, 404);

    let (status, created, _) = env
        .request(
            "PATCH",
            &format!("{CONFIGMAPS}/cm?fieldManager=alice"),
            Some(apply),
            Some(body.clone()),
        )
        .await;
    assert_eq!(status, 201);
    let entries = created["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["manager"], "alice");
    assert_eq!(entries[0]["operation"], "Apply");
    assert_eq!(
        entries[0]["fieldsV1"],
        json!({"f:data":{"f:k":{}},"f:metadata":{"f:labels":{"f:app":{}}}})
    );

    let rv = created["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let (_, mut watch) = WatchLines::open(&env, &format!("{CONFIGMAPS}?watch=true&resourceVersion={rv}")).await;
    let (status, again, _) = env
        .request(
            "PATCH",
            &format!("{CONFIGMAPS}/cm?fieldManager=alice"),
            Some(apply),
            Some(body.clone()),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(again, created, "an idempotent re-apply changes nothing");
    let (status, body_err, _) = env
        .request(
            "PATCH",
            &format!("{CONFIGMAPS}/cm?force=false"),
            Some("application/merge-patch+json"),
            Some(json!({})),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(
        body_err["details"]["causes"][0]["message"],
        "Forbidden: may not be specified for non-apply patch"
    );
    // The next event is the label patch below, not the no-op apply.
    env.request(
        "PATCH",
        &format!("{CONFIGMAPS}/cm"),
        Some("application/merge-patch+json"),
        Some(json!({"metadata":{"labels":{"b":"c"}}})),
    )
    .await;
    let event = watch.next().await.unwrap();
    assert_eq!(event["type"], "MODIFIED");
    assert_eq!(event["object"]["metadata"]["labels"]["b"], "c");
    let updaters: Vec<String> = event["object"]["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{}/{}",
                e["manager"].as_str().unwrap(),
                e["operation"].as_str().unwrap()
            )
        })
        .collect();
    // A write without fieldManager or User-Agent is recorded as manager `unknown`.
    assert!(updaters.contains(&"unknown/Update".to_string()), "{updaters:?}");

    env.install_gizmo_crd().await;
    let status_apply = json!({"apiVersion":"conformance.example.com/v1","kind":"Gizmo","metadata":{"name":"ghost"},"status":{"observedGeneration":1}});
    let (status, _, _) = env
        .request(
            "PATCH",
            &format!("{GIZMOS}/ghost/status?fieldManager=ctl"),
            Some(apply),
            Some(status_apply),
        )
        .await;
    assert_eq!(status, 404, "subresources never create");
}

/// Unknown fields of a CR are pruned; `fieldValidation=Strict` rejects them
/// (400 on create, 422 on a merge patch), `Warn` answers with a `Warning` header, `Ignore` drops them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn field_validation_strict_warn_ignore() {
    let env = Env::start().await;
    env.install_gizmo_crd().await;
    let mut body = gizmo("g1", 1);
    body["spec"]["foo"] = json!(1);
    let (status, err, _) = env
        .request(
            "POST",
            &format!("{GIZMOS}?fieldValidation=Strict"),
            Some("application/json"),
            Some(body.clone()),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        err["message"],
        "Gizmo in version \"v1\" cannot be handled as a Gizmo: strict decoding error: unknown field \"spec.foo\""
    );
    let (status, created, headers) = env
        .request(
            "POST",
            &format!("{GIZMOS}?fieldValidation=Warn"),
            Some("application/json"),
            Some(body.clone()),
        )
        .await;
    assert_eq!(status, 201);
    assert!(created["spec"].get("foo").is_none(), "pruned: {created}");
    assert_eq!(
        headers.get("warning").unwrap().to_str().unwrap(),
        r#"299 - "unknown field \"spec.foo\"""#
    );
    let (status, err, _) = env
        .request(
            "PATCH",
            &format!("{GIZMOS}/g1?fieldValidation=Strict"),
            Some("application/merge-patch+json"),
            Some(json!({"spec":{"bar":2}})),
        )
        .await;
    assert_eq!(status, 422);
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .starts_with(" \"\" is invalid: patch: Invalid value: "),
        "{err}"
    );
    let (status, ignored, headers) = env
        .request(
            "PATCH",
            &format!("{GIZMOS}/g1?fieldValidation=Ignore"),
            Some("application/merge-patch+json"),
            Some(json!({"spec":{"bar":2}})),
        )
        .await;
    assert_eq!(status, 200);
    assert!(ignored["spec"].get("bar").is_none());
    assert!(headers.get("warning").is_none());
    let (status, err, _) = env
        .request("POST", GIZMOS, Some("application/json"), Some(gizmo("big", 11)))
        .await;
    assert_eq!(status, 422);
    assert_eq!(
        err["message"],
        "Gizmo.conformance.example.com \"big\" is invalid: spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"
    );
    assert_eq!(err["details"]["causes"][0]["reason"], "FieldValueInvalid");
}

/// Leases: a Lease PUT must carry a resourceVersion; leases are created,
/// renewed with optimistic concurrency and listed like any object (leader election's access pattern).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_require_resource_versions_on_update() {
    let env = Env::start().await;
    let leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let lease = json!({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"leader"},
        "spec":{"holderIdentity":"a","leaseDurationSeconds":15,"acquireTime":"2026-01-01T00:00:00.000000Z","renewTime":"2026-01-01T00:00:00.000000Z","leaseTransitions":0}});
    let (status, created, _) = env
        .request("POST", leases, Some("application/json"), Some(lease.clone()))
        .await;
    assert_eq!(status, 201, "{created}");
    let (status, err, _) = env
        .request(
            "PUT",
            &format!("{leases}/leader"),
            Some("application/json"),
            Some(lease.clone()),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(
        err["message"],
        "leases.coordination.k8s.io \"leader\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update"
    );
    let mut renewed = created.clone();
    renewed["spec"]["holderIdentity"] = json!("b");
    let (status, updated, _) = env
        .request(
            "PUT",
            &format!("{leases}/leader"),
            Some("application/json"),
            Some(renewed.clone()),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(updated["spec"]["holderIdentity"], "b");
    let (status, _, _) = env
        .request(
            "PUT",
            &format!("{leases}/leader"),
            Some("application/json"),
            Some(renewed),
        )
        .await;
    assert_eq!(status, 409, "the second writer with the old resourceVersion loses");
}

/// With a label selector, an object that starts matching
/// arrives as ADDED and one that stops matching as DELETED; a named watch sees only its object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selector_watches_translate_transitions() {
    let env = Env::start().await;
    let created = create_cm(&env, "sel").await;
    let rv = created["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let (_, mut labelled) = WatchLines::open(
        &env,
        &format!("{CONFIGMAPS}?watch=true&resourceVersion={rv}&labelSelector=tier%3Dweb"),
    )
    .await;
    // One object is watched through a name field selector (a named path with `watch=true` is a plain GET on a
    // real apiserver).
    let (_, mut named) = WatchLines::open(
        &env,
        &format!("{CONFIGMAPS}?watch=true&fieldSelector=metadata.name%3Dsel&resourceVersion={rv}"),
    )
    .await;
    create_cm(&env, "other").await;
    let label = |tier: &str| json!({"metadata":{"labels":{"tier": tier}}});
    env.request(
        "PATCH",
        &format!("{CONFIGMAPS}/sel"),
        Some("application/merge-patch+json"),
        Some(label("web")),
    )
    .await;
    env.request(
        "PATCH",
        &format!("{CONFIGMAPS}/sel"),
        Some("application/merge-patch+json"),
        Some(label("db")),
    )
    .await;
    let first = labelled.next().await.unwrap();
    assert_eq!(
        (first["type"].as_str(), first["object"]["metadata"]["name"].as_str()),
        (Some("ADDED"), Some("sel"))
    );
    let second = labelled.next().await.unwrap();
    assert_eq!(second["type"], "DELETED");
    assert_eq!(
        second["object"]["metadata"]["labels"]["tier"], "web",
        "DELETED carries the state before the change (as kube-apiserver 1.36 sends it)"
    );
    let only = named.next().await.unwrap();
    assert_eq!(
        (only["type"].as_str(), only["object"]["metadata"]["name"].as_str()),
        (Some("MODIFIED"), Some("sel")),
        "{only}"
    );
}

/// A CRD serving two versions stores one object and returns it with the
/// requested apiVersion; discovery lists both versions, the storage version's schema validates both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_version_crds_serve_one_object_in_each_version() {
    let env = Env::start().await;
    let mut crd = crate::support::gizmo_crd();
    let mut beta = crd["spec"]["versions"][0].clone();
    beta["name"] = json!("v1beta1");
    beta["storage"] = json!(false);
    crd["spec"]["versions"].as_array_mut().unwrap().push(beta);
    let (status, body, _) = env
        .request(
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            Some("application/json"),
            Some(crd),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let beta_path = "/apis/conformance.example.com/v1beta1/namespaces/default/gizmos";
    // A real apiserver serves a new CRD's versions a moment after accepting it; a client waits.
    wait_for("both versions served", || async {
        env.request("GET", beta_path, None, None).await.0 == 200
            && env.request("GET", GIZMOS, None, None).await.0 == 200
    })
    .await;
    let mut obj = gizmo("g1", 2);
    obj["apiVersion"] = json!("conformance.example.com/v1beta1");
    let (status, created, _) = env
        .request("POST", beta_path, Some("application/json"), Some(obj))
        .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["apiVersion"], "conformance.example.com/v1beta1");
    let (_, as_v1, _) = env.request("GET", &format!("{GIZMOS}/g1"), None, None).await;
    assert_eq!(as_v1["apiVersion"], "conformance.example.com/v1");
    assert_eq!(as_v1["spec"]["size"], 2);
    let (_, group, _) = env.request("GET", "/apis/conformance.example.com", None, None).await;
    assert_eq!(group["preferredVersion"]["version"], "v1");
    assert_eq!(group["versions"].as_array().unwrap().len(), 2);
    let mut too_big = gizmo("g2", 50);
    too_big["apiVersion"] = json!("conformance.example.com/v1beta1");
    assert_eq!(
        env.request("POST", beta_path, Some("application/json"), Some(too_big))
            .await
            .0,
        422
    );
}

/// kube-rs's Accept for one object's metadata (gets, watch events, patches).
const PARTIAL: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
/// kube-rs's Accept for a list's metadata.
const PARTIAL_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const SECRETS: &str = "/api/v1/namespaces/default/secrets";

/// Sends a request with an Accept header; returns (status, JSON body or Null, Content-Type).
async fn request_accepting(
    env: &Env,
    method: &str,
    path: &str,
    accept: &str,
    patch: Option<Value>,
) -> (u16, Value, String) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
    let mut req = env.http.request(method, env.url(path)).header("accept", accept);
    if let Some(patch) = patch {
        req = req
            .header("content-type", "application/merge-patch+json")
            .body(serde_json::to_vec(&patch).expect("json"));
    }
    let resp = req.send().await.expect("request sent");
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let bytes = resp.bytes().await.expect("body");
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        content_type,
    )
}

/// The keys of a JSON object, in order.
fn keys(value: &Value) -> Vec<&str> {
    value
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// Metadata-only answers (apimachinery `asPartialObjectMetadata[List]`, `transformResponseObject` and the watch
/// encoder): `PartialObjectMetadata` for gets, patches and each watch event
/// (bookmarks included), `PartialObjectMetadataList` for lists (`items: null` when empty), always
/// `Content-Type: application/json`; the wrong form for the request is 406 NotAcceptable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_only_requests_answer_partial_object_metadata() {
    let env = Env::start().await;
    let secret = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "labels": {"app": "meta"}},
            "data": {"password": "c2VjcmV0"}})
    };
    let (status, full, _) = env
        .request("POST", SECRETS, Some("application/json"), Some(secret("p1")))
        .await;
    assert_eq!(status, 201, "{full}");
    env.request("POST", SECRETS, Some("application/json"), Some(secret("p2")))
        .await;

    // GET: only the metadata, the same as the full object's.
    let (status, one, content_type) = request_accepting(&env, "GET", &format!("{SECRETS}/p1"), PARTIAL, None).await;
    assert_eq!((status, content_type.as_str()), (200, "application/json"));
    assert_eq!(
        one,
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": full["metadata"]})
    );

    // LIST: list metadata, items with their own kind, paging as for full lists.
    let (status, list, content_type) = request_accepting(&env, "GET", SECRETS, PARTIAL_LIST, None).await;
    assert_eq!((status, content_type.as_str()), (200, "application/json"));
    assert_eq!(keys(&list), ["apiVersion", "items", "kind", "metadata"]);
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["apiVersion"], "meta.k8s.io/v1");
    assert!(list["metadata"]["resourceVersion"].is_string());
    let items = list["items"].as_array().expect("items");
    assert_eq!(items.len(), 2);
    for item in items {
        assert_eq!(keys(item), ["apiVersion", "kind", "metadata"]);
        assert_eq!(item["kind"], "PartialObjectMetadata");
    }
    let (_, page, _) = request_accepting(&env, "GET", &format!("{SECRETS}?limit=1"), PARTIAL_LIST, None).await;
    assert_eq!(page["items"].as_array().map(Vec::len), Some(1));
    assert!(page["metadata"]["continue"].is_string());
    assert_eq!(page["metadata"]["remainingItemCount"], 1);
    let (_, empty, _) = request_accepting(
        &env,
        "GET",
        &format!("{SECRETS}?labelSelector=app%3Dnone"),
        PARTIAL_LIST,
        None,
    )
    .await;
    assert_eq!(
        empty["items"],
        Value::Null,
        "an empty PartialObjectMetadataList has items: null"
    );
    assert!(
        empty["metadata"].get("continue").is_none(),
        "no empty continue in a typed list"
    );

    // Custom resources too.
    env.install_gizmo_crd().await;
    env.request("POST", GIZMOS, Some("application/json"), Some(gizmo("g1", 1)))
        .await;
    let (status, gizmos, _) = request_accepting(&env, "GET", GIZMOS, PARTIAL_LIST, None).await;
    assert_eq!(status, 200, "{gizmos}");
    assert_eq!(gizmos["items"][0]["metadata"]["name"], "g1");
    assert!(gizmos["items"][0].get("spec").is_none());

    // The wrong form is 406, with apimachinery's texts; a Status is never transformed.
    let (status, refused, _) = request_accepting(&env, "GET", &format!("{SECRETS}/p1"), PARTIAL_LIST, None).await;
    assert_eq!(status, 406, "{refused}");
    assert_eq!(refused["reason"], "NotAcceptable");
    assert_eq!(
        refused["message"],
        "you requested PartialObjectMetadataList, but the requested object is not a list (*core.Secret)"
    );
    let (status, refused, _) = request_accepting(&env, "GET", SECRETS, PARTIAL, None).await;
    assert_eq!(status, 406, "{refused}");
    assert_eq!(
        refused["message"],
        "you requested PartialObjectMetadata, but the requested object is a list (*core.SecretList)"
    );
    // A custom resource asked for as a list is a plain 500 on kube-apiserver 1.36, not a 406.
    let (status, refused, _) = request_accepting(&env, "GET", &format!("{GIZMOS}/g1"), PARTIAL_LIST, None).await;
    assert_eq!(status, 500, "{refused}");
    assert_eq!(refused["message"], "content is not a list");
    assert_eq!(refused.get("reason"), None, "{refused}");
    let (status, refused, _) = request_accepting(
        &env,
        "GET",
        &format!("{SECRETS}/p1"),
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2",
        None,
    )
    .await;
    assert_eq!(status, 406);
    assert_eq!(
        refused["message"],
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
    let (status, missing, _) = request_accepting(&env, "GET", &format!("{SECRETS}/absent"), PARTIAL, None).await;
    assert_eq!((status, missing["kind"].as_str()), (404, Some("Status")));

    // client-go's metadata Accept: protobuf first (answered as JSON here), then JSON.
    let client_go = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
    let (status, one, content_type) = request_accepting(&env, "GET", &format!("{SECRETS}/p2"), client_go, None).await;
    assert_eq!(status, 200);
    // The real apiserver answers client-go's first choice, protobuf; the emulator answers the JSON choice (it
    // writes no protobuf, see docs/api-emulator.md). Either way the JSON form is the metadata only.
    let one = if content_type.starts_with("application/vnd.kubernetes.protobuf") {
        request_accepting(&env, "GET", &format!("{SECRETS}/p2"), PARTIAL, None)
            .await
            .1
    } else {
        one
    };
    assert_eq!(one["kind"].as_str(), Some("PartialObjectMetadata"), "{one}");

    // A write answers with the metadata of the written object (kube-rs `patch_metadata`).
    let rv = one["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let (status, patched, _) = request_accepting(
        &env,
        "PATCH",
        &format!("{SECRETS}/p2"),
        PARTIAL,
        Some(json!({"metadata": {"labels": {"patched": "yes"}}})),
    )
    .await;
    assert_eq!(status, 200, "{patched}");
    assert_eq!(keys(&patched), ["apiVersion", "kind", "metadata"]);
    assert_eq!(patched["metadata"]["labels"]["patched"], "yes");

    // WATCH: every event object is PartialObjectMetadata, the initial-events bookmark too.
    let (status, mut watch) = WatchLines::open_accepting(
        &env,
        &format!("{SECRETS}?watch=true&resourceVersion={rv}&allowWatchBookmarks=true"),
        Some(PARTIAL),
    )
    .await;
    assert_eq!(status, 200);
    let modified = watch.next().await.expect("the patch");
    assert_eq!(modified["type"], "MODIFIED");
    assert_eq!(keys(&modified["object"]), ["apiVersion", "kind", "metadata"]);
    assert_eq!(modified["object"]["kind"], "PartialObjectMetadata");
    env.request(
        "PATCH",
        &format!("{SECRETS}/p2"),
        Some("application/merge-patch+json"),
        Some(json!({"data": {"password": "b3RoZXI="}})),
    )
    .await;
    let data_change = watch.next().await.expect("a data-only change");
    assert_eq!(data_change["type"], "MODIFIED");
    assert!(data_change["object"].get("data").is_none());
    assert_ne!(
        data_change["object"]["metadata"]["resourceVersion"],
        modified["object"]["metadata"]["resourceVersion"]
    );
    env.request("DELETE", &format!("{SECRETS}/p2"), None, None).await;
    let deleted = watch.next().await.expect("the delete");
    assert_eq!(deleted["type"], "DELETED");
    assert_eq!(deleted["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(deleted["object"]["metadata"]["name"], "p2");

    let (_, mut initial) = WatchLines::open_accepting(
        &env,
        &format!(
            "{SECRETS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
        ),
        Some(PARTIAL),
    )
    .await;
    let added = initial.next().await.expect("p1");
    assert_eq!(
        (added["type"].as_str(), added["object"]["kind"].as_str()),
        (Some("ADDED"), Some("PartialObjectMetadata"))
    );
    let bookmark = initial.next().await.expect("the bookmark");
    assert_eq!(bookmark["type"], "BOOKMARK");
    assert_eq!(bookmark["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(bookmark["object"]["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(
        bookmark["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );

    // A watch asking for the list form is answered 200 and ends without an event: the per-event transform fails
    // for every object (kube-apiserver 1.36), even for the initial events and their bookmark.
    let (status, mut silent) = WatchLines::open_accepting(
        &env,
        &format!(
            "{SECRETS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
        ),
        Some(PARTIAL_LIST),
    )
    .await;
    assert_eq!(status, 200);
    let ended = tokio::time::timeout(Duration::from_secs(10), silent.next())
        .await
        .expect("the watch ends");
    assert_eq!(ended, None, "no event arrives");
}
