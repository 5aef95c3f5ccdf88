//! kube-rs 4.2 against the emulator: typed `Api` CRUD, the `watcher` across a forced 410, the
//! `finalizer` helper, server-side apply ownership, and a `Controller` reconciling end to end.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{Event as FinalizerEvent, finalizer};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use serde_json::json;

use crate::support::{Env, wait_for};

fn config_map(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("k".to_string(), value.to_string())])),
        ..Default::default()
    }
}

/// API conventions (CRUD verbs) with kube-rs's request shapes (`?` and `?&` URLs, no User-Agent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_api_crud() {
    let env = Env::start().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    let created = api
        .create(&PostParams::default(), &config_map("c1", "a"))
        .await
        .unwrap();
    assert!(created.metadata.uid.is_some());
    let mut fetched = api.get("c1").await.unwrap();
    fetched.data.as_mut().unwrap().insert("k".into(), "b".into());
    let replaced = api.replace("c1", &PostParams::default(), &fetched).await.unwrap();
    assert_ne!(replaced.resource_version(), created.resource_version());
    let patched = api
        .patch("c1", &PatchParams::default(), &Patch::Merge(json!({"data":{"x":"y"}})))
        .await
        .unwrap();
    assert_eq!(patched.data.unwrap().get("x").map(String::as_str), Some("y"));
    let list = api.list(&ListParams::default().labels("")).await.unwrap();
    assert_eq!(list.items.len(), 1);
    assert!(list.metadata.resource_version.is_some());
    let stale = api.replace("c1", &PostParams::default(), &fetched).await.unwrap_err();
    assert!(matches!(&stale, kube::Error::Api(s) if s.code == 409), "{stale:?}");
    api.delete("c1", &DeleteParams::default()).await.unwrap();
    let gone = api.get("c1").await.unwrap_err();
    assert!(
        matches!(&gone, kube::Error::Api(s) if s.code == 404 && s.reason == "NotFound"),
        "{gone:?}"
    );
}

/// Wire reference §4.3/§4.4: after the history is compacted and streams are cut, the watcher's re-watch
/// gets an in-stream 410 and re-lists, and later changes still arrive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_relists_after_forced_410() {
    let env = Env::start().await;
    let client = env.client().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.create(&PostParams::default(), &config_map("before", "1"))
        .await
        .unwrap();
    let mut stream = watcher(api.clone(), watcher::Config::default()).boxed();
    let mut init_done = 0;
    let mut expired_errors = 0;
    let mut seen_after = false;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !seen_after {
        let event = match tokio::time::timeout_at(deadline, stream.next())
            .await
            .expect("watcher progresses")
        {
            Some(Ok(event)) => Some(event),
            // The watcher reports the in-stream 410 as an error item and then re-lists by itself.
            Some(Err(watcher::Error::WatchError(status))) if status.code == 410 => {
                expired_errors += 1;
                continue;
            }
            Some(Err(other)) => panic!("unexpected watcher error: {other:?}"),
            None => None,
        };
        match event {
            Some(watcher::Event::InitDone) => {
                init_done += 1;
                if init_done == 1 {
                    // Force the 410: compact, cut, and change something while the watcher reconnects.
                    env.server.compact_history();
                    api.create(&PostParams::default(), &config_map("during", "1"))
                        .await
                        .unwrap();
                    env.server.compact_history();
                    env.server.cut_watches(None);
                } else {
                    api.create(&PostParams::default(), &config_map("after", "1"))
                        .await
                        .unwrap();
                }
            }
            Some(watcher::Event::Apply(cm)) if cm.name_any() == "after" => seen_after = true,
            Some(_) => {}
            None => panic!("watcher stream ended"),
        }
    }
    assert!(expired_errors >= 1, "the re-watch got an in-stream 410");
    assert!(init_done >= 2, "the watcher re-listed after the 410");
    assert!(env.server.hooks().count("list", "", "configmaps", "") >= 2);
}

/// ssa reference §9: kube-runtime's `finalizer` helper adds its finalizer with a JSON patch whose `test`
/// against null must pass, runs cleanup on deletion, and removes it, which completes the deletion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalizer_helper_adds_and_removes() {
    let env = Env::start().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    api.create(&PostParams::default(), &config_map("f1", "1"))
        .await
        .unwrap();
    const NAME: &str = "conformance.example.com/cleanup";
    let run = |obj: Arc<ConfigMap>| {
        let api = api.clone();
        async move {
            finalizer(&api, NAME, obj, |event| async move {
                match event {
                    FinalizerEvent::Apply(_) => Ok::<_, std::convert::Infallible>(Action::await_change()),
                    FinalizerEvent::Cleanup(_) => Ok(Action::await_change()),
                }
            })
            .await
        }
    };
    // First pass adds the finalizer (and returns); second pass runs Apply.
    run(Arc::new(api.get("f1").await.unwrap())).await.unwrap();
    let with = api.get("f1").await.unwrap();
    assert_eq!(with.finalizers(), &[NAME.to_string()]);
    run(Arc::new(with)).await.unwrap();
    api.delete("f1", &DeleteParams::default()).await.unwrap();
    let terminating = api.get("f1").await.unwrap();
    assert!(terminating.meta().deletion_timestamp.is_some());
    run(Arc::new(terminating)).await.unwrap();
    let gone = api.get("f1").await.unwrap_err();
    assert!(matches!(gone, kube::Error::Api(s) if s.code == 404));
}

/// ssa reference §3.4, §11 items 12–14: two managers share a field applied with the same value; a forced
/// apply with a new value makes the applier the sole owner and drops the other manager's entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_transfers_ownership() {
    let env = Env::start().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client().await, "default");
    let body = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s1"},"data":{"k":"v"}});
    api.patch("s1", &PatchParams::apply("alice"), &Patch::Apply(&body))
        .await
        .unwrap();
    api.patch("s1", &PatchParams::apply("bob"), &Patch::Apply(&body))
        .await
        .unwrap();
    let shared = api.get("s1").await.unwrap();
    let managers: Vec<String> = shared
        .managed_fields()
        .iter()
        .filter_map(|m| m.manager.clone())
        .collect();
    // bob's new entry has no time (nothing changed), so it sorts first (ssa reference §2.1, §7).
    assert_eq!(managers, vec!["bob".to_string(), "alice".to_string()]);
    assert!(shared.managed_fields()[0].time.is_none());
    let changed = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s1"},"data":{"k":"w"}});
    let conflict = api
        .patch("s1", &PatchParams::apply("bob"), &Patch::Apply(&changed))
        .await
        .unwrap_err();
    assert!(
        matches!(&conflict, kube::Error::Api(s) if s.code == 409 && s.message.contains("conflict with \"alice\"")),
        "{conflict:?}"
    );
    let forced = api
        .patch("s1", &PatchParams::apply("bob").force(), &Patch::Apply(&changed))
        .await
        .unwrap();
    assert_eq!(forced.data.unwrap()["k"], "w");
    let managers: Vec<String> = forced
        .metadata
        .managed_fields
        .unwrap_or_default()
        .iter()
        .filter_map(|m| m.manager.clone())
        .collect();
    assert_eq!(managers, vec!["bob".to_string()]);
}

/// rust-operator-practice §5: a `Controller` watching ConfigMaps creates an owned Secret per ConfigMap
/// (server-side apply, controller owner reference); deleting the ConfigMap garbage-collects the Secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_reconciles_end_to_end() {
    let env = Env::start().await;
    let client = env.client().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    struct Ctx {
        secrets: Api<Secret>,
    }
    async fn reconcile(cm: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, kube::Error> {
        let owner = cm.controller_owner_ref(&()).expect("config maps have uids");
        let name = format!("{}-child", cm.name_any());
        let secret = json!({"apiVersion":"v1","kind":"Secret","metadata":{"name": name, "ownerReferences":[owner]},
            "stringData":{"source": cm.data.clone().unwrap_or_default().get("k").cloned().unwrap_or_default()}});
        ctx.secrets
            .patch(
                &name,
                &PatchParams::apply("gizmo-controller").force(),
                &Patch::Apply(&secret),
            )
            .await?;
        Ok(Action::await_change())
    }
    fn error_policy(_: Arc<ConfigMap>, _: &kube::Error, _: Arc<Ctx>) -> Action {
        Action::requeue(Duration::from_millis(200))
    }
    let ctx = Arc::new(Ctx {
        secrets: secrets.clone(),
    });
    let controller = tokio::spawn(
        Controller::new(cms.clone(), watcher::Config::default())
            .owns(secrets.clone(), watcher::Config::default())
            .run(reconcile, error_policy, ctx)
            .for_each(|_| async {}),
    );
    cms.create(&PostParams::default(), &config_map("app", "hello"))
        .await
        .unwrap();
    wait_for("the controller created the child secret", || async {
        secrets.get_opt("app-child").await.ok().flatten().is_some()
    })
    .await;
    let child = secrets.get("app-child").await.unwrap();
    assert_eq!(child.owner_references()[0].name, "app");
    cms.delete("app", &DeleteParams::default()).await.unwrap();
    wait_for("the child secret is garbage-collected", || async {
        secrets.get_opt("app-child").await.ok().flatten().is_none()
    })
    .await;
    controller.abort();
}

/// Wire reference §7 Events: kube-rs's `Recorder` creates an events.k8s.io/v1 event, then sends a merge
/// patch with `series` for the repeat; core/v1 readers (kubectl describe) see one event with the series.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorder_events_create_then_patch_series() {
    use k8s_openapi::api::core::v1::Event as CoreEvent;
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};
    let env = Env::start().await;
    let client = env.client().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm = cms
        .create(&PostParams::default(), &config_map("evented", "1"))
        .await
        .unwrap();
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "gizmo-controller".into(),
            instance: Some("pod-1".into()),
        },
    );
    let event = Event {
        type_: EventType::Normal,
        reason: "Synced".into(),
        note: Some("configmap synced".into()),
        action: "Reconcile".into(),
        secondary: None,
    };
    recorder.publish(&event, &cm.object_ref(&())).await.unwrap();
    recorder.publish(&event, &cm.object_ref(&())).await.unwrap();
    let core: Api<CoreEvent> = Api::namespaced(client, "default");
    let events = core
        .list(&ListParams::default().fields("involvedObject.name=evented"))
        .await
        .unwrap();
    assert_eq!(events.items.len(), 1);
    let stored = &events.items[0];
    assert_eq!(stored.message.as_deref(), Some("configmap synced"));
    assert_eq!(stored.reporting_component.as_deref(), Some("gizmo-controller"));
    assert_eq!(stored.series.as_ref().and_then(|s| s.count), Some(2));
}
