//! The children applier: server-side apply with standard labels and a controller ownerReference, pruning of
//! children not applied this pass, no write when nothing changed, and repair of drift.

use std::collections::BTreeMap;

use crds::thirdparty::envoy_gateway::{PolicyTargetReference, SecurityPolicy, SecurityPolicySpec};
use e2e::fixtures::third_party_crds;
use e2e::harness::{Deadline, TestCluster, wait_until};
use framework::child_cache::ChildCache;
use framework::children::{
    ChildConfig, ChildError, ChildKinds, ChildSet, LABEL_INSTANCE, LABEL_MANAGED_BY, LABEL_NAME, Placement,
};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ObjectMeta, PartialObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};

fn config() -> ChildConfig {
    ChildConfig {
        field_manager: "framework-test-children".into(),
        managed_by: "framework-test".into(),
        owner_annotation: "test.example.com/owner".into(),
        hash_annotation: "test.example.com/applied-hash".into(),
        kinds: ChildKinds::new().with::<ConfigMap>(Placement::OwnerNamespace),
        cache: None,
    }
}

fn child(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("key".to_string(), value.to_string())])),
        ..Default::default()
    }
}

/// Feeds `cache` from a metadata watch of the test's labelled ConfigMaps in `ns`, as a controller's
/// `Triggers::record_children` would; abort the handle to stop it.
fn record_children(cluster: &TestCluster, ns: &str, cache: &ChildCache) -> tokio::task::JoinHandle<()> {
    let recorder = cache.feed::<ConfigMap>(Some(ns));
    let watched: Api<PartialObjectMeta<ConfigMap>> = Api::namespaced(cluster.client(), ns);
    let selector = format!("{LABEL_MANAGED_BY}=framework-test");
    tokio::spawn(
        watcher(watched, watcher::Config::default().labels(&selector))
            .inspect_ok(move |event| recorder.record(event))
            .for_each(|_| async {}),
    )
}

/// Waits until `cache` shows `child`, one of `parent`'s, at its resourceVersion.
async fn wait_until_cached_at<K: Resource<DynamicType = ()>>(
    cache: &ChildCache,
    parent: &ConfigMap,
    what: &str,
    child: &K,
) {
    let (ns, name) = (child.namespace().expect("namespaced"), child.name_any());
    let version = child.resource_version().expect("rv");
    let (uid, instance) = (parent.uid().expect("uid"), parent.name_any());
    let owner_id = format!("/ConfigMap/{ns}/{instance}");
    wait_until(what, Deadline::secs(30), || {
        let found = cache.find::<K>(Some(&ns), &uid, &owner_id, &instance, &name);
        let version = version.clone();
        async move {
            match found {
                Some(Some(cached)) if cached.resource_version.as_deref() == Some(version.as_str()) => Ok(Some(())),
                other => Err(format!("cache has {other:?}")),
            }
        }
    })
    .await;
}

async fn owner(api: &Api<ConfigMap>, name: &str) -> ConfigMap {
    api.create(&PostParams::default(), &child(name, "owner"))
        .await
        .expect("create owner")
}

#[tokio::test]
async fn children_get_labels_and_an_owner_reference() {
    let cluster = TestCluster::start().await;
    let ns = cluster.create_namespace("children").await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), &ns);
    let parent = owner(&api, "parent").await;

    let mut set = ChildSet::new(cluster.client(), config(), &parent, "widget").expect("owner has a uid");
    let applied = set.apply(child("parent-child", "v1")).await.expect("apply");

    assert_eq!(
        applied.namespace().as_deref(),
        Some(ns.as_str()),
        "namespace defaults to the owner's"
    );
    let labels = applied.labels();
    assert_eq!(labels.get(LABEL_MANAGED_BY).map(String::as_str), Some("framework-test"));
    assert_eq!(labels.get(LABEL_NAME).map(String::as_str), Some("widget"));
    assert_eq!(labels.get(LABEL_INSTANCE).map(String::as_str), Some("parent"));
    let refs = applied.owner_references();
    assert_eq!(refs.len(), 1);
    assert_eq!(refs[0].uid, parent.uid().expect("uid"));
    assert_eq!(refs[0].controller, Some(true));
    let managers: Vec<_> = applied
        .managed_fields()
        .iter()
        .filter_map(|m| m.manager.clone())
        .collect();
    assert!(
        managers.contains(&"framework-test-children".to_string()),
        "applied by SSA under our manager: {managers:?}"
    );
}

#[tokio::test]
async fn an_unchanged_child_is_not_written_again_but_drift_is_repaired() {
    let cluster = TestCluster::start().await;
    let ns = cluster.create_namespace("noop").await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), &ns);
    let parent = owner(&api, "parent").await;

    let mut first = ChildSet::new(cluster.client(), config(), &parent, "widget").expect("owner");
    first.apply(child("parent-child", "v1")).await.expect("apply");
    assert_eq!(first.writes(), 1);

    let before = cluster.write_requests();
    let mut second = ChildSet::new(cluster.client(), config(), &parent, "widget").expect("owner");
    second.apply(child("parent-child", "v1")).await.expect("re-apply");
    assert_eq!(second.writes(), 0, "identical desired state must not be written");
    assert_eq!(
        cluster.write_requests(),
        before,
        "no write request reached the API server"
    );

    // Someone edits the child behind the controller's back.
    let drift = serde_json::json!({"data": {"key": "edited"}});
    api.patch("parent-child", &PatchParams::default(), &Patch::Merge(&drift))
        .await
        .expect("edit");
    let mut third = ChildSet::new(cluster.client(), config(), &parent, "widget").expect("owner");
    let repaired = third.apply(child("parent-child", "v1")).await.expect("repair");
    assert_eq!(third.writes(), 1);
    assert_eq!(repaired.data.expect("data")["key"], "v1", "drift is repaired");
}

#[tokio::test]
async fn children_not_applied_this_pass_are_pruned_but_others_are_kept() {
    let cluster = TestCluster::start().await;
    let ns = cluster.create_namespace("prune").await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), &ns);
    let parent = owner(&api, "parent").await;
    let other_parent = owner(&api, "other").await;

    let mut pass1 = ChildSet::new(cluster.client(), config(), &parent, "widget").expect("owner");
    pass1.apply(child("parent-a", "a")).await.expect("a");
    pass1.apply(child("parent-b", "b")).await.expect("b");
    let mut foreign = ChildSet::new(cluster.client(), config(), &other_parent, "widget").expect("owner");
    foreign.apply(child("other-a", "x")).await.expect("foreign child");

    // The feature that made parent-b is turned off: the next pass applies only parent-a.
    let mut pass2 = ChildSet::new(cluster.client(), config(), &parent, "widget").expect("owner");
    pass2.apply(child("parent-a", "a")).await.expect("a again");
    let deleted = pass2.prune().await.expect("prune");

    assert_eq!(deleted, vec!["ConfigMap/parent-b".to_string()]);
    assert!(api.get_opt("parent-b").await.expect("get").is_none());
    assert!(api.get_opt("parent-a").await.expect("get").is_some());
    assert!(
        api.get_opt("other-a").await.expect("get").is_some(),
        "another owner's child is never pruned"
    );
    assert!(
        api.get_opt("parent").await.expect("get").is_some(),
        "unlabelled objects are never pruned"
    );
}

#[tokio::test]
async fn with_a_synced_child_cache_pruning_lists_nothing() {
    let cluster = TestCluster::start().await;
    let ns = cluster.create_namespace("cached-prune").await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), &ns);
    let parent = owner(&api, "parent").await;
    let other_parent = owner(&api, "other").await;
    let cache = ChildCache::new("framework-test", "test.example.com/owner");
    let watch = record_children(&cluster, &ns, &cache);
    let cached = || ChildConfig {
        cache: Some(cache.clone()),
        ..config()
    };

    let mut pass1 = ChildSet::new(cluster.client(), cached(), &parent, "widget").expect("owner");
    pass1.apply(child("parent-a", "a")).await.expect("a");
    pass1.apply(child("parent-b", "b")).await.expect("b");
    let mut foreign = ChildSet::new(cluster.client(), cached(), &other_parent, "widget").expect("owner");
    foreign.apply(child("other-a", "x")).await.expect("foreign child");
    let parent_uid = parent.uid().expect("uid");
    let owner_id = format!("/ConfigMap/{ns}/parent");
    wait_until("the cache sees both children", Deadline::secs(30), || {
        let seen = cache.owned::<ConfigMap>(Some(&ns), &parent_uid, &owner_id, "parent");
        async move {
            match seen {
                Some(children) if children.len() == 2 => Ok(Some(())),
                other => Err(format!("cache answers {other:?}")),
            }
        }
    })
    .await;

    let lists = || cluster.count_requests("list", "", "configmaps", "");
    let before = lists();
    let mut pass2 = ChildSet::new(cluster.client(), cached(), &parent, "widget").expect("owner");
    pass2.apply(child("parent-a", "a")).await.expect("a again");
    let deleted = pass2.prune().await.expect("prune");
    assert_eq!(deleted, vec!["ConfigMap/parent-b".to_string()]);
    assert_eq!(lists(), before, "pruning from a synced cache makes no list request");
    assert!(api.get_opt("parent-b").await.expect("get").is_none());
    assert!(
        api.get_opt("other-a").await.expect("get").is_some(),
        "another owner's child stays"
    );
    watch.abort();
}

#[tokio::test]
async fn a_child_of_an_undeclared_kind_or_place_is_refused_before_any_write() {
    let cluster = TestCluster::start().await;
    let ns = cluster.create_namespace("undeclared").await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), &ns);
    let parent = owner(&api, "parent").await;
    let mut set = ChildSet::new(cluster.client(), config(), &parent, "widget").expect("owner");
    let before = cluster.write_requests();

    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("parent-secret".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let refused = set.apply(secret).await.expect_err("Secret is not a declared kind");
    assert!(
        matches!(refused, ChildError::Undeclared { ref kind, .. } if kind == "Secret"),
        "{refused}"
    );

    let mut elsewhere = child("parent-elsewhere", "x");
    elsewhere.metadata.namespace = Some("default".into());
    let refused = set
        .apply(elsewhere)
        .await
        .expect_err("ConfigMaps are declared in the owner's namespace only");
    assert!(matches!(refused, ChildError::Undeclared { .. }), "{refused}");
    assert_eq!(set.writes(), 0);
    assert_eq!(cluster.write_requests(), before, "nothing reached the API server");
}

#[tokio::test]
async fn ensure_skips_an_untouched_child_and_reads_and_repairs_one_edited_by_someone_else() {
    let cluster = TestCluster::start().await;
    let ns = cluster.create_namespace("ensure").await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), &ns);
    let parent = owner(&api, "parent").await;
    let cache = ChildCache::new("framework-test", "test.example.com/owner")
        .with_hash_annotation("test.example.com/applied-hash");
    let watch = record_children(&cluster, &ns, &cache);
    let cached = || ChildConfig {
        cache: Some(cache.clone()),
        ..config()
    };
    let mut first = ChildSet::new(cluster.client(), cached(), &parent, "widget").expect("owner");
    first.ensure(child("parent-a", "a")).await.expect("create");
    let created = api.get("parent-a").await.expect("created");
    wait_until_cached_at(&cache, &parent, "the watch sees the child", &created).await;

    let gets = || cluster.count_requests("get", "", "configmaps", "");
    let (gets_before, writes_before) = (gets(), cluster.write_requests());
    let mut second = ChildSet::new(cluster.client(), cached(), &parent, "widget").expect("owner");
    second.ensure(child("parent-a", "a")).await.expect("unchanged");
    assert_eq!(gets(), gets_before, "an untouched, unchanged child is not read");
    assert_eq!(cluster.write_requests(), writes_before, "nor written");
    assert!(
        second.prune().await.expect("prune").is_empty(),
        "an ensured child still counts as wanted"
    );

    let mut edited = api.get("parent-a").await.expect("get");
    edited.data = Some(BTreeMap::from([("key".to_string(), "tampered".to_string())]));
    let edited = api
        .replace("parent-a", &PostParams::default(), &edited)
        .await
        .expect("someone else edits the child");
    wait_until_cached_at(&cache, &parent, "the watch sees the edit", &edited).await;
    let gets_before = gets();
    let mut third = ChildSet::new(cluster.client(), cached(), &parent, "widget").expect("owner");
    third.ensure(child("parent-a", "a")).await.expect("repair");
    assert_eq!(
        gets(),
        gets_before + 1,
        "a child changed since it was confirmed is read"
    );
    assert_eq!(third.writes(), 1, "and repaired");
    let repaired = api.get("parent-a").await.expect("get");
    assert_eq!(
        repaired.data.as_ref().and_then(|d| d.get("key")).map(String::as_str),
        Some("a")
    );

    let mut changed = ChildSet::new(cluster.client(), cached(), &parent, "widget").expect("owner");
    changed.ensure(child("parent-a", "b")).await.expect("new content");
    assert_eq!(
        changed.writes(),
        1,
        "new desired content is applied even when the child is untouched"
    );
    watch.abort();
}

#[tokio::test]
async fn a_child_written_by_an_earlier_pass_and_not_yet_watched_is_still_pruned() {
    let cluster = TestCluster::start().await;
    let ns = cluster.create_namespace("unseen").await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), &ns);
    let parent = owner(&api, "parent").await;
    // A cache whose watch has listed (nothing) but shows no event after that: every child written is one the
    // watch has not shown yet, as when a pass runs before the watch event of the previous pass's write.
    let cache = ChildCache::new("framework-test", "test.example.com/owner")
        .with_hash_annotation("test.example.com/applied-hash");
    let feed = cache.feed::<ConfigMap>(Some(&ns));
    feed.record(&watcher::Event::<ConfigMap>::Init);
    feed.record(&watcher::Event::<ConfigMap>::InitDone);
    let cached = || ChildConfig {
        cache: Some(cache.clone()),
        ..config()
    };

    let mut first = ChildSet::new(cluster.client(), cached(), &parent, "widget").expect("owner");
    first.apply(child("parent-a", "a")).await.expect("a");
    let written = api.get("parent-a").await.expect("written");
    assert!(
        cache.is_own_echo(&watcher::Event::Apply(written.clone())),
        "its watch event would be skipped as this process's own write"
    );

    let lists = || cluster.count_requests("list", "", "configmaps", "");
    let before = lists();
    let mut second = ChildSet::new(cluster.client(), cached(), &parent, "widget").expect("owner");
    let deleted = second.prune().await.expect("prune");
    assert_eq!(
        deleted,
        vec!["ConfigMap/parent-a".to_string()],
        "pruned though never watched"
    );
    assert_eq!(
        lists(),
        before,
        "from the cache's record of what was written, not a list"
    );
    assert!(api.get_opt("parent-a").await.expect("get").is_none());

    let mut third = ChildSet::new(cluster.client(), cached(), &parent, "widget").expect("owner");
    assert!(
        third.prune().await.expect("prune again").is_empty(),
        "nothing is left to prune"
    );
}

/// A SecurityPolicy child (a kind with a generation and a status subresource) targeting route `route`.
fn policy(name: &str, route: &str) -> SecurityPolicy {
    let mut policy = SecurityPolicy::new(
        name,
        SecurityPolicySpec {
            target_refs: Some(vec![PolicyTargetReference {
                group: "gateway.networking.k8s.io".into(),
                kind: "HTTPRoute".into(),
                name: route.into(),
            }]),
            ..Default::default()
        },
    );
    policy.metadata.namespace = None;
    policy
}

#[tokio::test]
async fn apply_observed_reports_a_status_written_by_someone_else_from_the_watch_without_a_read() {
    let cluster = TestCluster::start().await;
    cluster.install_crds(&[third_party_crds::security_policy()]).await;
    let ns = cluster.create_namespace("observed").await;
    let owners: Api<ConfigMap> = Api::namespaced(cluster.client(), &ns);
    let parent = owner(&owners, "parent").await;
    let api: Api<SecurityPolicy> = Api::namespaced(cluster.client(), &ns);
    let cache = ChildCache::new("framework-test", "test.example.com/owner")
        .with_hash_annotation("test.example.com/applied-hash")
        .with_status::<SecurityPolicy>(|status| status);
    let recorder = cache.feed::<SecurityPolicy>(Some(&ns));
    let selector = format!("{LABEL_MANAGED_BY}=framework-test");
    let watch = tokio::spawn(
        watcher(api.clone(), watcher::Config::default().labels(&selector))
            .inspect_ok(move |event| {
                let cache = recorder.cache();
                recorder.record_with_status(event, |obj| cache.status_of(obj));
            })
            .for_each(|_| async {}),
    );
    let cached = || ChildConfig {
        cache: Some(cache.clone()),
        kinds: ChildKinds::new().with::<SecurityPolicy>(Placement::OwnerNamespace),
        ..config()
    };
    let gets = || cluster.count_requests("get", "gateway.envoyproxy.io", "securitypolicies", "");

    let mut first = ChildSet::new(cluster.client(), cached(), &parent, "policy").expect("owner");
    let created = first
        .apply_observed(policy("parent-policy", "web"))
        .await
        .expect("create");
    assert_eq!(created.status, serde_json::Value::Null, "a new child has no status");
    assert_eq!(created.generation, Some(1));

    // The gateway accepts the policy: a status write, which leaves the generation as it was.
    let accepted = serde_json::json!({"ancestors": [{"ancestorRef": {"name": "gw"},
        "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted", "observedGeneration": 1}]}]});
    let written = api
        .patch_status(
            "parent-policy",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"status": accepted})),
        )
        .await
        .expect("the gateway writes the status");
    assert_eq!(written.metadata.generation, Some(1));
    wait_until_cached_at(&cache, &parent, "the watch sees the status", &written).await;

    let (gets_before, writes_before) = (gets(), cluster.write_requests());
    let mut second = ChildSet::new(cluster.client(), cached(), &parent, "policy").expect("owner");
    let observed = second
        .apply_observed(policy("parent-policy", "web"))
        .await
        .expect("unchanged");
    assert_eq!(observed.status, accepted, "the status comes from the watch");
    assert_eq!(observed.generation, Some(1));
    assert_eq!(gets(), gets_before, "a child changed only in its status is not read");
    assert_eq!(cluster.write_requests(), writes_before, "nor written");

    // Someone else edits the spec: the generation moves, so the child is read and repaired.
    let edited = api
        .patch(
            "parent-policy",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"targetRefs": [
                {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "elsewhere"}]}})),
        )
        .await
        .expect("someone else edits the spec");
    assert_eq!(edited.metadata.generation, Some(2));
    wait_until_cached_at(&cache, &parent, "the watch sees the edit", &edited).await;
    let gets_before = gets();
    let mut third = ChildSet::new(cluster.client(), cached(), &parent, "policy").expect("owner");
    let repaired = third
        .apply_observed(policy("parent-policy", "web"))
        .await
        .expect("repair");
    assert_eq!(gets(), gets_before + 1, "a child whose spec changed is read");
    assert_eq!(third.writes(), 1, "and repaired");
    assert_eq!(repaired.generation, Some(3));
    let live = api.get("parent-policy").await.expect("get");
    let targets = live.spec.target_refs.unwrap_or_default();
    assert_eq!(targets.first().map(|t| t.name.as_str()), Some("web"));
    watch.abort();
}
