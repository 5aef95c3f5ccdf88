//! What makes a controller reconcile an object: its own watch, its children (by controller ownerReference) and
//! related objects (by a mapper). [`Triggers`] wraps kube-runtime's `Controller` builder so that every trigger is
//! also reported to the controller's [`QueueProbe`] (the work-queue metrics); reconcilers declare their watches on
//! it exactly as on the builder. Every watch retries a failed list or watch with kube-runtime's default backoff
//! (a refused or failing API server is not hammered in a loop). With [`Triggers::record_children`], the same
//! watch events also keep a [`ChildCache`] current, so pruning needs no list.

use std::fmt::Debug;
use std::hash::{DefaultHasher, Hash, Hasher};

use futures::{Stream, TryStreamExt};
use kube::api::Api;
use kube::runtime::controller::Controller;
#[allow(deprecated)]
use kube::runtime::metadata_watcher;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::utils::PredicateConfig;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::child_cache::{ChildCache, FeedRecorder};
use crate::metrics::ObjectReadiness;
use crate::object_cache::ObjectCache;
use crate::own_writes::OwnWrites;
use crate::queue::QueueProbe;
use crate::ready_tally::ReadyTally;
use crate::shard::Shard;

/// How a controller watches its own kind: what the watch asks for, what triggers, what the cache keeps.
pub struct OwnWatch<K: Resource<DynamicType = ()>> {
    /// The watch's list and watch options.
    pub config: watcher::Config,
    /// Receives every trigger (the work-queue metrics).
    pub probe: QueueProbe<K>,
    /// Whether a status change written by someone else triggers (see `Reconciler::STATUS_TRIGGERS`).
    pub status_triggers: bool,
    /// The share of the objects this replica reconciles.
    pub shard: Shard,
    /// Drops from each object what nothing reads from the cache.
    pub trim: fn(&mut K),
    /// How an object counts in the readiness tally.
    pub readiness: fn(&K) -> ObjectReadiness,
    /// This process's writes the watch has not shown yet; the watch ends each entry with its echo.
    pub own_writes: OwnWrites,
}

/// The watches of one controller in one scope, with every trigger reported to its queue probe. Only objects of
/// the replica's [`Shard`] are ever triggered, whichever watch names them.
pub struct Triggers<K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static> {
    controller: Controller<K>,
    store: Store<K>,
    tally: ReadyTally,
    probe: QueueProbe<K>,
    children: Option<ChildCache>,
    shard: Shard,
}

impl<K> Triggers<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    /// Watches `api` (the controller's own kind) into a cache, triggering each object whose wanted state changed
    /// (see [`wanted_state`]; with `status_triggers`, any change but the resourceVersion and managedFields); every
    /// change still reaches the cache, without its managedFields and what `trim` drops. Only objects of `shard`
    /// trigger, and only they are counted by `readiness` in [`Self::ready_tally`].
    pub fn new(api: Api<K>, own: OwnWatch<K>) -> Self {
        let OwnWatch {
            config,
            probe,
            status_triggers,
            shard,
            trim,
            readiness,
            own_writes,
        } = own;
        let (store, writer) = reflector::store();
        let tally = ReadyTally::default();
        let counted = tally.clone();
        let seen = probe.clone();
        let predicate = move |obj: &K| match status_triggers {
            true => any_change(obj),
            false => wanted_state(obj),
        };
        let watched = watcher(api, config)
            .default_backoff()
            .modify(move |obj| {
                strip_unread(obj);
                trim(obj);
            })
            .inspect_ok(move |event| counted.observe(event, |obj| shard.owns_object(obj).then(|| readiness(obj))));
        // The store keeps every object (peers span shards); only this shard's objects trigger. A write's echo
        // is noted once the store holds it, so no reconcile can take the entry's end for a current copy early.
        let own = reflector::reflector(writer, watched)
            .inspect_ok(move |event| own_writes.observe(event))
            .applied_objects()
            .try_filter(move |obj| std::future::ready(shard.owns_object(obj)))
            .predicate_filter(predicate, PredicateConfig::default())
            .inspect_ok(move |obj| seen.triggered(ObjectRef::from_obj(obj)));
        Self {
            controller: Controller::for_stream(own, store.clone()).trigger_backoff(NoPause),
            store,
            tally,
            probe,
            children: None,
            shard,
        }
    }

    /// Records what every later [`Self::owns`] and [`Self::watches`] sees of the children labelled as the
    /// cache's into `cache` (before the trigger is passed on), so that pruning reads it instead of listing.
    #[must_use]
    pub fn record_children(mut self, cache: ChildCache) -> Self {
        self.children = Some(cache);
        self
    }

    /// What records the events of a watch of `Child` through `api` into the child cache, if there is one.
    fn recorder<Child: Resource<DynamicType = ()>>(&self, namespace: Option<&str>) -> Option<FeedRecorder> {
        self.children.as_ref().map(|cache| cache.feed::<Child>(namespace))
    }

    /// The cache of the controller's own objects (for mappers that look at other objects).
    pub fn store(&self) -> Store<K> {
        self.store.clone()
    }

    /// This shard's objects counted by readiness, kept current by the own watch (for the objects gauge).
    pub fn ready_tally(&self) -> ReadyTally {
        self.tally.clone()
    }

    /// Triggers the owner of each changed `Child` (its controller ownerReference of kind `K`). Children are
    /// watched by metadata only: their data (a Secret's, say) never reaches the manager.
    #[must_use]
    pub fn owns<Child>(self, api: Api<Child>, config: watcher::Config) -> Self
    where
        Child: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        let recorder = self.recorder::<Child>(api.namespace());
        // kube-runtime's own `owns` watches children this way (metadata only).
        #[allow(deprecated)]
        let events = metadata_watcher(api, config)
            .default_backoff()
            .inspect_ok(move |event| record(recorder.as_ref(), event));
        self.owned_events(events)
    }

    /// As [`Self::owns`], watching the children's content so that the child cache keeps the part of their
    /// status it is told to keep ([`ChildCache::with_status`]); nothing else of the content is kept. For kinds
    /// whose status the controller reports (a gateway's verdict on a route), so a pass need not read it.
    #[must_use]
    pub fn owns_with_status<Child>(self, api: Api<Child>, config: watcher::Config) -> Self
    where
        Child: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug + Send + Sync + 'static,
    {
        let recorder = self.recorder::<Child>(api.namespace());
        let cache = self.children.clone();
        let events = watcher(api, config).default_backoff().inspect_ok(move |event| {
            if let (Some(recorder), Some(cache)) = (recorder.as_ref(), cache.as_ref()) {
                recorder.record_with_status(event, |child| cache.status_of(child));
            }
        });
        self.owned_events(events)
    }

    /// Triggers the owners of the children in `events` (already recorded in the child cache), skipping the
    /// echoes of this process's own writes.
    fn owned_events<Child>(
        self,
        events: impl Stream<Item = Result<watcher::Event<Child>, watcher::Error>> + Send + 'static,
    ) -> Self
    where
        Child: Resource<DynamicType = ()> + Clone + Debug + Send + Sync + 'static,
    {
        let (seen, shard) = (self.probe.clone(), self.shard);
        let echoes = self.children.clone();
        let children = events
            // A child exactly as this process wrote it brings nothing its owner's pass did not know.
            .try_filter(move |event| std::future::ready(!echoes.as_ref().is_some_and(|cache| cache.is_own_echo(event))))
            .touched_objects()
            .try_filter(move |child| {
                let ours = controller_owners::<K, _>(child)
                    .iter()
                    .any(|owner| shard.owns_ref(owner));
                std::future::ready(ours)
            })
            .inspect_ok(move |child| {
                for owner in controller_owners::<K, _>(child) {
                    seen.triggered(owner);
                }
            });
        self.with_controller(|controller| controller.owns_stream(children))
    }

    /// Triggers the objects `mapper` names for each changed `Other`.
    #[must_use]
    pub fn watches<Other, I>(
        self,
        api: Api<Other>,
        config: watcher::Config,
        mapper: impl Fn(Other) -> I + Sync + Send + 'static,
    ) -> Self
    where
        Other: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
        I: IntoIterator<Item = ObjectRef<K>> + 'static,
        I::IntoIter: Send,
    {
        self.watches_with(api, config, |_| {}, mapper)
    }

    /// As [`Self::watches`], passing every watch event to `observe` first (e.g. to keep a
    /// [`KeyIndex`](crate::index::KeyIndex) current that `mapper` then reads).
    #[must_use]
    pub fn watches_with<Other, I>(
        self,
        api: Api<Other>,
        config: watcher::Config,
        observe: impl Fn(&watcher::Event<Other>) + Send + 'static,
        mapper: impl Fn(Other) -> I + Sync + Send + 'static,
    ) -> Self
    where
        Other: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
        I: IntoIterator<Item = ObjectRef<K>> + 'static,
        I::IntoIter: Send,
    {
        let mapper = self.shard_mapper(mapper);
        let recorder = self.recorder::<Other>(api.namespace());
        let others = watcher(api, config)
            .default_backoff()
            .inspect_ok(move |event| {
                record(recorder.as_ref(), event);
                observe(event);
            })
            .touched_objects();
        self.with_controller(|controller| controller.watches_stream(others, mapper))
    }

    /// As [`Self::watches`], keeping what the watch sees (without managedFields, and after `strip`, which drops
    /// what no reader needs) in `cache` for reconciles to read instead of a GET.
    #[must_use]
    pub fn watches_cached<Other, I>(
        self,
        api: Api<Other>,
        config: watcher::Config,
        cache: &ObjectCache<Other>,
        strip: impl Fn(&mut Other) + Send + 'static,
        mapper: impl Fn(Other) -> I + Sync + Send + 'static,
    ) -> Self
    where
        Other: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
        I: IntoIterator<Item = ObjectRef<K>> + 'static,
        I::IntoIter: Send,
    {
        let mapper = self.shard_mapper(mapper);
        let recorder = self.recorder::<Other>(api.namespace());
        let (mut writer, synced) = cache.feed(api.namespace());
        let watched = watcher(api, config).default_backoff().modify(move |obj| {
            strip_unread(obj);
            strip(obj);
        });
        let others = watched
            .inspect_ok(move |event| {
                writer.apply(event);
                record(recorder.as_ref(), event);
                synced.observe(event);
            })
            .touched_objects();
        self.with_controller(|controller| controller.watches_stream(others, mapper))
    }

    /// `mapper`, keeping only the shard's objects and reporting each to the queue probe.
    fn shard_mapper<Other, I>(
        &self,
        mapper: impl Fn(Other) -> I + Sync + Send + 'static,
    ) -> impl Fn(Other) -> Vec<ObjectRef<K>> + Sync + Send + 'static
    where
        I: IntoIterator<Item = ObjectRef<K>>,
    {
        let (seen, shard) = (self.probe.clone(), self.shard);
        move |other: Other| {
            let objects: Vec<ObjectRef<K>> = mapper(other).into_iter().filter(|o| shard.owns_ref(o)).collect();
            for object in &objects {
                seen.triggered(object.clone());
            }
            objects
        }
    }

    /// Triggers every cached object of the shard each time `signal` yields (a change that concerns them all, e.g. the
    /// endpoint they share).
    #[must_use]
    pub fn reconcile_all_on(self, signal: impl Stream<Item = ()> + Send + 'static) -> Self {
        let (seen, store, shard) = (self.probe.clone(), self.store.clone(), self.shard);
        let objects = futures::StreamExt::flat_map(signal, move |()| {
            let ours: Vec<ObjectRef<K>> = store
                .state()
                .iter()
                .filter(|obj| shard.owns_object(obj.as_ref()))
                .map(|obj| ObjectRef::from_obj(obj.as_ref()))
                .collect();
            for object in &ours {
                seen.triggered(object.clone());
            }
            futures::stream::iter(ours)
        });
        self.with_controller(|controller| controller.reconcile_on(objects))
    }

    fn with_controller(self, change: impl FnOnce(Controller<K>) -> Controller<K>) -> Self {
        Self {
            controller: change(self.controller),
            store: self.store,
            tally: self.tally,
            probe: self.probe,
            children: self.children,
            shard: self.shard,
        }
    }

    /// The kube-runtime controller these triggers feed.
    pub fn into_controller(self) -> Controller<K> {
        self.controller
    }
}

/// The pause of a controller's *whole* trigger stream after any one watch fails: none. kube-runtime's default
/// pauses every trigger of the controller after each error of any of its watches (0.8 s, doubling to 30 s per
/// further error), so a burst of errors — every watch expiring after the API server compacted its history —
/// stopped a controller for minutes (the chaos run saw NebariApp deletions ignored for 5 minutes). Each watch
/// here backs off on its own instead (`default_backoff` on every watcher), so one failing watch never holds up
/// the others.
struct NoPause;

impl Iterator for NoPause {
    type Item = std::time::Duration;

    fn next(&mut self) -> Option<Self::Item> {
        Some(std::time::Duration::ZERO)
    }
}

impl kube::runtime::utils::Backoff for NoPause {
    fn reset(&mut self) {}
}

fn record<K: Resource>(recorder: Option<&FeedRecorder>, event: &watcher::Event<K>) {
    if let Some(recorder) = recorder {
        recorder.record(event);
    }
}

/// What in one of the controller's own objects asks for a reconcile: its spec (the generation, which the API
/// server also bumps when deletion is requested), a deletion, its labels and its annotations. Status,
/// finalizers, managedFields and the resourceVersion are left out: they change with the operator's own status,
/// finalizer and health writes, whose echoes would otherwise each start another full pass.
fn wanted_state<K: Resource>(obj: &K) -> Option<u64> {
    let meta = obj.meta();
    let mut hasher = DefaultHasher::new();
    meta.uid.hash(&mut hasher);
    meta.generation.hash(&mut hasher);
    meta.deletion_timestamp.is_some().hash(&mut hasher);
    meta.labels.hash(&mut hasher);
    meta.annotations.hash(&mut hasher);
    Some(hasher.finish())
}

/// The annotation in which client-side `kubectl apply` keeps a copy of the whole object it applied.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Drops from a watched object, before it is cached, what no reconcile reads there and what is often the larger
/// part of it: managedFields, and the copy of the object that client-side `kubectl apply` (how users apply their
/// CRs) keeps in an annotation.
fn strip_unread<K: Resource>(obj: &mut K) {
    obj.managed_fields_mut().clear();
    if let Some(annotations) = obj.meta_mut().annotations.as_mut() {
        annotations.remove(LAST_APPLIED);
    }
}

/// Every change of the object: its resourceVersion, as before this filter existed.
fn any_change<K: Resource>(obj: &K) -> Option<u64> {
    let mut hasher = DefaultHasher::new();
    obj.meta().uid.hash(&mut hasher);
    obj.meta().resource_version.hash(&mut hasher);
    Some(hasher.finish())
}

/// The owners of kind `K` that `child` names as its controller.
fn controller_owners<K, Child>(child: &Child) -> Vec<ObjectRef<K>>
where
    K: Resource<DynamicType = ()>,
    Child: Resource,
{
    let (kind, api_version) = (K::kind(&()), K::api_version(&()));
    child
        .owner_references()
        .iter()
        .filter(|r| r.controller == Some(true) && r.kind == kind && r.api_version == api_version)
        .map(|r| {
            let owner = ObjectRef::new(&r.name);
            match child.namespace() {
                Some(namespace) => owner.within(&namespace),
                None => owner,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;

    #[test]
    fn only_a_controller_owner_of_the_kind_is_triggered() {
        let mut child = Secret::default();
        child.metadata.namespace = Some("ns".into());
        let reference = |kind: &str, name: &str, controller: bool| OwnerReference {
            api_version: "v1".into(),
            kind: kind.into(),
            name: name.into(),
            uid: "u".into(),
            controller: Some(controller),
            ..OwnerReference::default()
        };
        child.metadata.owner_references = Some(vec![
            reference("ConfigMap", "owner", true),
            reference("ConfigMap", "co-owner", false),
            reference("Service", "other", true),
        ]);
        assert_eq!(
            controller_owners::<ConfigMap, _>(&child),
            vec![ObjectRef::new("owner").within("ns")]
        );
    }

    #[test]
    fn only_spec_deletion_labels_and_annotations_ask_for_a_reconcile() {
        let mut app = ConfigMap::default();
        app.metadata.uid = Some("u1".into());
        app.metadata.generation = Some(1);
        let base = wanted_state(&app);
        let mut echo = app.clone();
        echo.metadata.resource_version = Some("42".into());
        echo.metadata.finalizers = Some(vec!["reconcilers.nebari.dev/finalizer".into()]);
        echo.data = Some([("status".to_string(), "written by us".to_string())].into());
        assert_eq!(
            wanted_state(&echo),
            base,
            "status, finalizers and resourceVersion are ignored"
        );
        let changes: [fn(&mut ConfigMap); 4] = [
            |o| o.metadata.generation = Some(2),
            |o| o.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH)),
            |o| o.metadata.labels = Some([("team".to_string(), "a".to_string())].into()),
            |o| o.metadata.annotations = Some([("force".to_string(), "1".to_string())].into()),
        ];
        for change in changes {
            let mut changed = app.clone();
            change(&mut changed);
            assert_ne!(wanted_state(&changed), base, "{changed:?}");
        }
    }

    #[test]
    fn caching_drops_managed_fields_and_kubectls_copy_but_keeps_other_annotations() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
        let mut app = ConfigMap::default();
        app.metadata.managed_fields = Some(vec![ManagedFieldsEntry {
            manager: Some("kubectl".into()),
            ..ManagedFieldsEntry::default()
        }]);
        app.metadata.annotations = Some(
            [
                (
                    LAST_APPLIED.to_string(),
                    r#"{"kind":"ConfigMap","data":{"big":"copy"}}"#.to_string(),
                ),
                ("force".to_string(), "1".to_string()),
            ]
            .into(),
        );
        strip_unread(&mut app);
        assert!(app.metadata.managed_fields.unwrap_or_default().is_empty());
        assert_eq!(
            app.metadata.annotations,
            Some([("force".to_string(), "1".to_string())].into())
        );
    }
}
