//! kube-rs 4.2 against the emulator: typed `Api` CRUD, the `watcher` across a forced 410, metadata-only lists,
//! gets and watches (`list_metadata`, `get_metadata`, `metadata_watcher`, `Api<PartialObjectMeta<K>>`), the
//! `finalizer` helper, server-side apply ownership, and a `Controller` reconciling end to end.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, ListParams, PartialObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{Event as FinalizerEvent, finalizer};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde_json::json;

use crate::support::{Env, is_cluster_furniture, wait_for};

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
    let ours: Vec<_> = list
        .items
        .iter()
        .filter(|cm| !is_cluster_furniture(&cm.name_any()))
        .collect();
    assert_eq!(ours.len(), 1);
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

/// After the history is compacted and streams are cut, the watcher's re-watch
/// gets an in-stream 410 and re-lists, and later changes still arrive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_relists_after_forced_410() {
    let env = Env::start_emulated().await;
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
                    env.emulator().compact_history();
                    api.create(&PostParams::default(), &config_map("during", "1"))
                        .await
                        .unwrap();
                    env.emulator().compact_history();
                    env.emulator().cut_watches(None);
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
    assert!(env.emulator().hooks().count("list", "", "configmaps", "") >= 2);
}

fn secret(name: &str, value: &str) -> Secret {
    Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([("app".to_string(), "meta".to_string())])),
            ..Default::default()
        },
        string_data: Some(BTreeMap::from([("password".to_string(), value.to_string())])),
        ..Default::default()
    }
}

/// The `kind` of a metadata-only answer: kube-rs keeps the TypeMeta the server sent, so this tells a real
/// `PartialObjectMetadata` from a full object read as metadata.
fn partial_kind<K>(meta: &PartialObjectMeta<K>) -> (String, String) {
    let types = meta.types.clone().unwrap_or_default();
    (types.kind, types.api_version)
}

/// Metadata-only reads (apimachinery `asPartialObjectMetadata[List]`): kube-rs's
/// `list_metadata` (with paging), `get_metadata` and an `Api<PartialObjectMeta<K>>` get `meta.k8s.io/v1`
/// `PartialObjectMetadata[List]` answers with the objects' metadata and no data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_and_get_metadata_answer_partial_object_metadata() {
    let env = Env::start().await;
    let client = env.client().await;
    let api: Api<Secret> = Api::namespaced(client.clone(), "default");
    let first = api.create(&PostParams::default(), &secret("m1", "one")).await.unwrap();
    api.create(&PostParams::default(), &secret("m2", "two")).await.unwrap();

    let list = api
        .list_metadata(&ListParams::default().labels("app=meta"))
        .await
        .unwrap();
    assert_eq!(list.types.kind, "PartialObjectMetadataList");
    assert_eq!(list.types.api_version, "meta.k8s.io/v1");
    assert!(list.metadata.resource_version.is_some());
    let names: Vec<String> = list.items.iter().map(ResourceExt::name_any).collect();
    assert_eq!(names, ["m1", "m2"]);
    for item in &list.items {
        assert_eq!(
            partial_kind(item),
            ("PartialObjectMetadata".to_string(), "meta.k8s.io/v1".to_string())
        );
        assert_eq!(item.labels().get("app").map(String::as_str), Some("meta"));
    }

    let page = api.list_metadata(&ListParams::default().limit(1)).await.unwrap();
    assert_eq!(page.items.len(), 1);
    let token = page.metadata.continue_.clone().expect("a continue token");
    assert_eq!(page.metadata.remaining_item_count, Some(1));
    let rest = api
        .list_metadata(&ListParams::default().limit(1).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(rest.items.iter().map(ResourceExt::name_any).collect::<Vec<_>>(), ["m2"]);

    let none = api
        .list_metadata(&ListParams::default().labels("app=none"))
        .await
        .unwrap();
    assert!(
        none.items.is_empty(),
        "an empty metadata list (items: null) reads as empty"
    );

    let one = api.get_metadata("m1").await.unwrap();
    assert_eq!(one.metadata.uid, first.metadata.uid);
    assert_eq!(one.metadata.resource_version, first.metadata.resource_version);
    assert_eq!(partial_kind(&one).0, "PartialObjectMetadata");

    // What the controllers use: an `Api<PartialObjectMeta<Secret>>` asks for metadata on every read.
    let meta_api: Api<PartialObjectMeta<Secret>> = Api::namespaced(client, "default");
    let listed = meta_api.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 2);
    assert!(
        listed
            .items
            .iter()
            .all(|m| partial_kind(m).0 == "PartialObjectMetadata")
    );
    assert_eq!(
        partial_kind(&meta_api.get("m2").await.unwrap()).0,
        "PartialObjectMetadata"
    );
    let missing = meta_api.get("absent").await.unwrap_err();
    assert!(
        matches!(&missing, kube::Error::Api(s) if s.code == 404 && s.reason == "NotFound"),
        "errors stay plain Status objects: {missing:?}"
    );
}

/// kube-runtime's `metadata_watcher`: the initial list and every watch event are `PartialObjectMetadata`; an
/// update (a data-only change still moves the resourceVersion) and a delete arrive as Apply and Delete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_watcher_sees_updates_and_deletes() {
    // Counts the metadata-only watch requests through the emulator's hooks.
    let env = Env::start_emulated().await;
    let api: Api<Secret> = Api::namespaced(env.client().await, "default");
    // kube 4.2 deprecates `metadata_watcher` for `watcher(Api<PartialObjectMeta<K>>)` (next test); both send
    // the same requests, and operators built on older kube-rs still call it.
    #[allow(deprecated)]
    let stream = kube::runtime::metadata_watcher(api.clone(), watcher::Config::default());
    watch_metadata_across_update_and_delete(&env, &api, "w1", stream).await;
}

/// `watcher` over an `Api<PartialObjectMeta<K>>` (kube 4.2's replacement of `metadata_watcher`, what the
/// controllers use): the same metadata-only list and watch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_of_partial_object_meta_sees_updates_and_deletes() {
    let env = Env::start_emulated().await;
    let client = env.client().await;
    let api: Api<Secret> = Api::namespaced(client.clone(), "default");
    let meta: Api<PartialObjectMeta<Secret>> = Api::namespaced(client, "default");
    let stream = watcher(meta, watcher::Config::default());
    watch_metadata_across_update_and_delete(&env, &api, "w2", stream).await;
}

async fn watch_metadata_across_update_and_delete(
    env: &Env,
    api: &Api<Secret>,
    name: &str,
    stream: impl futures::Stream<Item = Result<watcher::Event<PartialObjectMeta<Secret>>, watcher::Error>> + Send,
) {
    use kube_emulator::ResponseForm;
    api.create(&PostParams::default(), &secret(name, "one")).await.unwrap();
    let mut stream = stream.default_backoff().boxed();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut next = async || {
        tokio::time::timeout_at(deadline, stream.next())
            .await
            .expect("the metadata watcher progresses")
            .expect("the stream goes on")
            .expect("no watcher error")
    };
    let mut initial = Vec::new();
    loop {
        match next().await {
            watcher::Event::InitApply(meta) => initial.push(meta),
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(initial.len(), 1);
    assert_eq!(partial_kind(&initial[0]).0, "PartialObjectMetadata");
    let before = initial[0].resource_version();

    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"stringData": {"password": "two"}})),
    )
    .await
    .unwrap();
    let updated = loop {
        if let watcher::Event::Apply(meta) = next().await {
            break meta;
        }
    };
    assert_eq!(updated.name_any(), name);
    assert_ne!(
        updated.resource_version(),
        before,
        "the data change moved the resourceVersion"
    );
    assert_eq!(
        partial_kind(&updated),
        ("PartialObjectMetadata".to_string(), "meta.k8s.io/v1".to_string())
    );

    api.delete(name, &DeleteParams::default()).await.unwrap();
    let deleted = loop {
        if let watcher::Event::Delete(meta) = next().await {
            break meta;
        }
    };
    assert_eq!(deleted.name_any(), name);
    assert_eq!(partial_kind(&deleted).0, "PartialObjectMetadata");
    let hooks = env.emulator().hooks();
    assert!(hooks.count_form("watch", "", "secrets", ResponseForm::Metadata) >= 1);
    assert_eq!(hooks.count_form("watch", "", "secrets", ResponseForm::Object), 0);
    assert_eq!(hooks.count_form("list", "", "secrets", ResponseForm::Object), 0);
}

/// Kube-runtime's `finalizer` helper adds its finalizer with a JSON patch whose `test`
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

/// Two managers share a field applied with the same value; a forced
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
    // bob's new entry has no time (nothing changed), so it sorts first.
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

/// A `Controller` watching ConfigMaps creates an owned Secret per ConfigMap
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

/// Events: kube-rs's `Recorder` creates an events.k8s.io/v1 event, then sends a merge
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
