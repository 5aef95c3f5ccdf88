//! The children a controller made, indexed by owner, as its watches last saw them: what lets
//! [`ChildSet::prune`](crate::children::ChildSet::prune) find leftovers without listing.
//!
//! Listing a kind by label selector to prune one owner's children makes the API server scan the whole
//! namespace, so N owners cost O(N²) work per round of reconciles. The controller watches its children anyway
//! (to be triggered when they change); a [`ChildCache`] handed to
//! [`Triggers::record_children`](crate::triggers::Triggers::record_children) keeps, from those same watch
//! events, the little pruning needs of each child labelled as ours: its name, uid, deletion state and
//! `instance` label, under each owner it names (ownerReference uid or owner annotation). Nothing else of the
//! object is kept, so a Secret's content never lands here.
//!
//! Each watch (one per kind and scope) is a *feed*. A kind and namespace are answered from the cache only once
//! every feed covering them has finished its first list; until then, or when no feed covers them, the caller
//! lists as before. A child created by an earlier pass but not seen yet by the watch is missed by one prune; its
//! watch event then triggers the owner again (the cache is updated before the trigger is passed on), and that
//! pass prunes it.
//!
//! The same entries let [`ChildSet::ensure`](crate::children::ChildSet::ensure) skip the read before an apply:
//! each keeps the child's resourceVersion and applied-content hash, and the cache remembers, per child, the
//! resourceVersion at which this process last saw the child hold what it applied (its own apply's answer, or a
//! read that matched). A child whose watched resourceVersion is still that one has not been touched since, so
//! when the desired hash is unchanged too, there is nothing to read or write.
//!
//! A child whose kind tracks `metadata.generation` (custom resources do) stays confirmed across changes that
//! leave its generation, labels, annotations and ownerReferences as confirmed: those are another controller
//! writing its status (a gateway accepting a route), not a change to what this process applied. For kinds fed
//! with [`ChildCache::with_status`], the watch also keeps the part of each child's status its controller reads,
//! so [`ChildSet::apply_observed`](crate::children::ChildSet::apply_observed) reports a confirmed child's status
//! without a read.
//!
//! Those confirmations also tell a watch event that only echoes this process's own write (a child at the
//! resourceVersion its own apply returned) from a change made by someone else: [`ChildCache::is_own_echo`] lets
//! the owner's trigger skip it, since the pass that wrote the child already acted on it. One case needed that
//! echo: a child written by one pass and unwanted by the next, which ran before the watch showed it, was pruned
//! only by the pass its event brought. So each child written is also remembered under its owner until the watch
//! shows it ([`ChildCache::written`]), and pruning considers those too.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::runtime::watcher;
use serde::Serialize;
use serde_json::Value;

use crate::children::{LABEL_INSTANCE, LABEL_MANAGED_BY};
use crate::index::IndexedEvents;

/// Owner-indexed metadata of a controller's children, fed by its watches. Cheap to clone (shared).
#[derive(Clone)]
pub struct ChildCache {
    managed_by: Arc<str>,
    owner_annotation: Arc<str>,
    hash_annotation: Option<Arc<str>>,
    /// The kinds whose watched status is kept, with what of it to keep.
    status_kinds: Arc<Vec<StatusKind>>,
    feeds: Arc<RwLock<Vec<Feed>>>,
    /// Per child uid, how it was last seen holding what this process applied.
    confirmed: Arc<Mutex<HashMap<Box<str>, Confirmed>>>,
    /// Children this process wrote that the watches have not shown yet.
    unseen: Arc<Mutex<Unseen>>,
}

/// What of a watched child's `status` its controller reads (the rest is dropped before caching).
pub type StatusTrim = fn(Value) -> Value;

/// A kind whose watched status is kept.
#[derive(Clone)]
struct StatusKind {
    api_version: String,
    kind: String,
    trim: StatusTrim,
}

/// How a child was last seen holding what this process applied.
struct Confirmed {
    resource_version: Box<str>,
    /// Its [`fingerprint`] then, when its kind tracks generation.
    fingerprint: Option<u64>,
}

/// Children written but not yet watched, by owner and by their own uid (to forget them when seen).
#[derive(Default)]
struct Unseen {
    by_owner: HashMap<String, Vec<WrittenChild>>,
    owner_of: HashMap<String, String>,
}

/// A child this process wrote, as pruning needs it until the watch shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WrittenChild {
    /// Its apiVersion.
    pub api_version: String,
    /// Its kind.
    pub kind: String,
    /// Its namespace.
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// Its uid.
    pub uid: String,
}

impl std::fmt::Debug for ChildCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildCache")
            .field("managed_by", &self.managed_by)
            .field("feeds", &self.read().len())
            .finish()
    }
}

/// One child as pruning sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedChild {
    /// The child's namespace.
    pub namespace: Option<String>,
    /// The child's name.
    pub name: String,
    /// The child's uid (deletes are guarded by it).
    pub uid: Option<String>,
    /// Whether its deletion was already requested.
    pub deleting: bool,
    /// Its resourceVersion as the watch last saw it.
    pub resource_version: Option<String>,
    /// Its applied-content hash annotation, when the cache records one.
    pub content_hash: Option<String>,
    /// Its `metadata.generation`, for kinds that track one.
    pub generation: Option<i64>,
    /// Its [`fingerprint`], for kinds that track generation.
    pub fingerprint: Option<u64>,
    /// What its controller reads of its status (JSON), for kinds fed with [`ChildCache::with_status`].
    pub status: Option<Arc<str>>,
}

/// One watch's view of one kind in one scope.
struct Feed {
    api_version: String,
    kind: String,
    /// The namespace the watch covers; `None`: all namespaces.
    namespace: Option<String>,
    /// Children by owner key (an owner uid or owner annotation value).
    children: IndexedEvents<Entry>,
}

#[derive(Clone)]
struct Entry {
    uid: Option<String>,
    deleting: bool,
    instance: Option<String>,
    resource_version: Option<Box<str>>,
    content_hash: Option<Box<str>>,
    generation: Option<i64>,
    fingerprint: Option<u64>,
    status: Option<Arc<str>>,
}

impl ChildCache {
    /// An empty cache for children labelled `app.kubernetes.io/managed-by=<managed_by>`, whose cross-namespace
    /// owner is named by `owner_annotation` (as in [`ChildConfig`](crate::children::ChildConfig)).
    pub fn new(managed_by: &str, owner_annotation: &str) -> Self {
        Self {
            managed_by: crate::names::label_value(managed_by).into(),
            owner_annotation: owner_annotation.into(),
            hash_annotation: None,
            status_kinds: Arc::default(),
            feeds: Arc::default(),
            confirmed: Arc::default(),
            unseen: Arc::default(),
        }
    }

    /// Remembers `child`, just written for the owner `owner_uid`, until a watch shows it (see the module docs).
    pub fn written(&self, owner_uid: &str, child: WrittenChild) {
        let mut unseen = self.unseen_map();
        unseen.owner_of.insert(child.uid.clone(), owner_uid.to_string());
        let children = unseen.by_owner.entry(owner_uid.to_string()).or_default();
        children.retain(|c| c.uid != child.uid && !(c.kind == child.kind && c.name == child.name));
        children.push(child);
    }

    /// The children of kind `K` in `namespace` written for `owner_uid` that no watch has shown yet.
    pub fn written_unseen<K: Resource<DynamicType = ()>>(
        &self,
        namespace: Option<&str>,
        owner_uid: &str,
    ) -> Vec<CachedChild> {
        let (api_version, kind) = (K::api_version(&()), K::kind(&()));
        self.unseen_map()
            .by_owner
            .get(owner_uid)
            .into_iter()
            .flatten()
            .filter(|c| c.api_version == api_version && c.kind == kind)
            .filter(|c| namespace.is_none() || c.namespace.as_deref() == namespace)
            .map(|c| CachedChild {
                namespace: c.namespace.clone(),
                name: c.name.clone(),
                uid: Some(c.uid.clone()),
                deleting: false,
                resource_version: None,
                content_hash: None,
                generation: None,
                fingerprint: None,
                status: None,
            })
            .collect()
    }

    /// Forgets the written child `uid` (a watch showed it, or it is gone).
    pub fn seen(&self, uid: &str) {
        let mut unseen = self.unseen_map();
        let Some(owner) = unseen.owner_of.remove(uid) else {
            return;
        };
        if let Some(children) = unseen.by_owner.get_mut(&owner) {
            children.retain(|c| c.uid != uid);
            if children.is_empty() {
                unseen.by_owner.remove(&owner);
            }
        }
    }

    /// Whether `event` only shows a child as this process last wrote (or read) it: nothing its owner has not
    /// already acted on. Deletions are never echoes.
    pub fn is_own_echo<K: Resource>(&self, event: &watcher::Event<K>) -> bool {
        let watcher::Event::Apply(obj) = event else {
            return false;
        };
        let meta = obj.meta();
        match (meta.uid.as_deref(), meta.resource_version.as_deref()) {
            (Some(uid), Some(version)) => self
                .confirmed_map()
                .get(uid)
                .is_some_and(|confirmed| *confirmed.resource_version == *version),
            _ => false,
        }
    }

    /// Also records each child's applied-content hash (the annotation `hash_annotation`, as in
    /// [`ChildConfig`](crate::children::ChildConfig)), which lets unchanged children be applied without a read.
    #[must_use]
    pub fn with_hash_annotation(mut self, hash_annotation: &str) -> Self {
        self.hash_annotation = Some(hash_annotation.into());
        self
    }

    /// Also keeps, for children of kind `K`, what `trim` leaves of their watched `status`, which lets
    /// [`ChildSet::apply_observed`](crate::children::ChildSet::apply_observed) report it without a read. Only
    /// watches that see the children's content record it
    /// ([`Triggers::owns_with_status`](crate::triggers::Triggers::owns_with_status)).
    #[must_use]
    pub fn with_status<K: Resource<DynamicType = ()>>(mut self, trim: StatusTrim) -> Self {
        Arc::make_mut(&mut self.status_kinds).push(StatusKind {
            api_version: K::api_version(&()).to_string(),
            kind: K::kind(&()).to_string(),
            trim,
        });
        self
    }

    /// What is kept of `obj`'s status (compact JSON), when its kind is one [`Self::with_status`] names.
    pub fn status_of<K: Resource<DynamicType = ()> + Serialize>(&self, obj: &K) -> Option<Arc<str>> {
        let trim = self.status_trim::<K>()?;
        Some(trim(status_json(obj)).to_string().into())
    }

    /// What [`Self::with_status`] keeps of the status of kind `K`, when it names the kind.
    pub fn status_trim<K: Resource<DynamicType = ()>>(&self) -> Option<StatusTrim> {
        let (api_version, kind) = (K::api_version(&()), K::kind(&()));
        self.status_kinds
            .iter()
            .find(|s| s.api_version == api_version && s.kind == kind)
            .map(|s| s.trim)
    }

    /// Notes that the child `meta` describes held what this process applied.
    pub fn confirm(&self, meta: &ObjectMeta) {
        let (Some(uid), Some(version)) = (meta.uid.as_deref(), meta.resource_version.as_deref()) else {
            return;
        };
        let confirmed = Confirmed {
            resource_version: version.into(),
            fingerprint: fingerprint(meta),
        };
        self.confirmed_map().insert(uid.into(), confirmed);
    }

    /// Whether `child`, as last watched, still holds what this process last confirmed: at the confirmed
    /// resourceVersion, or (for kinds that track generation) with the confirmed [`fingerprint`].
    pub fn is_confirmed(&self, child: &CachedChild) -> bool {
        let Some(uid) = child.uid.as_deref() else {
            return false;
        };
        self.confirmed_map().get(uid).is_some_and(|confirmed| {
            child.resource_version.as_deref() == Some(&*confirmed.resource_version)
                || (confirmed.fingerprint.is_some() && confirmed.fingerprint == child.fingerprint)
        })
    }

    /// The child `name` of kind `K` in `namespace` owned by `owner_uid`/`owner_id` with instance `instance`:
    /// `Some(None)` when the watches know it does not exist (as this owner's), `None` when they cannot answer.
    pub fn find<K: Resource<DynamicType = ()>>(
        &self,
        namespace: Option<&str>,
        owner_uid: &str,
        owner_id: &str,
        instance: &str,
        name: &str,
    ) -> Option<Option<CachedChild>> {
        self.owned::<K>(namespace, owner_uid, owner_id, instance)
            .map(|children| children.into_iter().find(|child| child.name == name))
    }

    /// Starts a feed for kind `K` watched in `namespace` (`None`: all namespaces) and returns what records its
    /// events.
    pub fn feed<K: Resource<DynamicType = ()>>(&self, namespace: Option<&str>) -> FeedRecorder {
        let mut feeds = self.write();
        feeds.push(Feed {
            api_version: K::api_version(&()).to_string(),
            kind: K::kind(&()).to_string(),
            namespace: namespace.map(str::to_string),
            children: IndexedEvents::default(),
        });
        FeedRecorder {
            cache: self.clone(),
            index: feeds.len() - 1,
        }
    }

    /// The children of kind `K` in `namespace` (`None`: all) that name `owner_uid` or `owner_id` as their owner
    /// and carry `instance` as their instance label, or `None` when the watches cannot answer yet (no feed
    /// covers the namespace, or one that does has not finished its first list).
    pub fn owned<K: Resource<DynamicType = ()>>(
        &self,
        namespace: Option<&str>,
        owner_uid: &str,
        owner_id: &str,
        instance: &str,
    ) -> Option<Vec<CachedChild>> {
        let (api_version, kind) = (K::api_version(&()), K::kind(&()));
        let feeds = self.read();
        let covering: Vec<&Feed> = feeds
            .iter()
            .filter(|f| f.api_version == api_version && f.kind == kind)
            .filter(|f| f.namespace.is_none() || f.namespace.as_deref() == namespace)
            .collect();
        if covering.is_empty() || covering.iter().any(|f| !f.children.synced()) {
            return None;
        }
        let mut found: HashMap<(Option<String>, String), CachedChild> = HashMap::new();
        for feed in covering {
            for owner in [owner_uid, owner_id] {
                for ((child_ns, name), entry) in feed.children.get(owner) {
                    let in_namespace = namespace.is_none() || child_ns.as_deref() == namespace;
                    if !in_namespace || entry.instance.as_deref() != Some(instance) {
                        continue;
                    }
                    found
                        .entry((child_ns.clone(), name.clone()))
                        .or_insert_with(|| CachedChild {
                            namespace: child_ns.clone(),
                            name: name.clone(),
                            uid: entry.uid.clone(),
                            deleting: entry.deleting,
                            resource_version: entry.resource_version.as_deref().map(str::to_string),
                            content_hash: entry.content_hash.as_deref().map(str::to_string),
                            generation: entry.generation,
                            fingerprint: entry.fingerprint,
                            status: entry.status.clone(),
                        });
                }
            }
        }
        let mut children: Vec<CachedChild> = found.into_values().collect();
        children.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        Some(children)
    }

    /// The owner keys `obj` is filed under, or none when it is not labelled as ours.
    fn owner_keys<K: Resource>(&self, obj: &K) -> Vec<String> {
        let meta = obj.meta();
        let ours = meta
            .labels
            .as_ref()
            .and_then(|labels| labels.get(LABEL_MANAGED_BY))
            .is_some_and(|value| **value == *self.managed_by);
        if !ours {
            return Vec::new();
        }
        let mut keys: Vec<String> = meta.owner_references.iter().flatten().map(|r| r.uid.clone()).collect();
        if let Some(owner) = meta.annotations.as_ref().and_then(|a| a.get(&*self.owner_annotation)) {
            keys.push(owner.clone());
        }
        keys.sort();
        keys.dedup();
        keys
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<Feed>> {
        // A panic while holding the lock leaves a consistent index (every update is a few map operations), so a
        // poisoned lock is still usable.
        self.feeds.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Vec<Feed>> {
        self.feeds.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn confirmed_map(&self) -> std::sync::MutexGuard<'_, HashMap<Box<str>, Confirmed>> {
        // Each update is a single map operation, so a poisoned lock still guards a consistent map.
        self.confirmed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn unseen_map(&self) -> std::sync::MutexGuard<'_, Unseen> {
        // Updates keep both maps consistent before they can panic (plain inserts and removes).
        self.unseen.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The `status` of `obj` as JSON (`null` when it has none).
pub fn status_json<K: Serialize>(obj: &K) -> Value {
    match serde_json::to_value(obj) {
        Ok(Value::Object(mut fields)) => fields.remove("status").unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

/// What identifies a child's content apart from its status, for a kind that tracks `metadata.generation`
/// (which the API server moves on every change to anything but metadata and status): its generation, labels,
/// annotations, ownerReferences and deletion state. `None` for kinds without a generation (a Secret's data
/// changes no generation), whose confirmations hold only at the exact resourceVersion.
pub fn fingerprint(meta: &ObjectMeta) -> Option<u64> {
    let generation = meta.generation?;
    let mut hasher = DefaultHasher::new();
    generation.hash(&mut hasher);
    meta.labels.hash(&mut hasher);
    meta.annotations.hash(&mut hasher);
    for owner in meta.owner_references.iter().flatten() {
        (&owner.api_version, &owner.kind, &owner.name, &owner.uid).hash(&mut hasher);
        (owner.controller, owner.block_owner_deletion).hash(&mut hasher);
    }
    meta.deletion_timestamp.is_some().hash(&mut hasher);
    Some(hasher.finish())
}

/// Records one watch's events into its feed of a [`ChildCache`].
#[derive(Clone)]
pub struct FeedRecorder {
    cache: ChildCache,
    index: usize,
}

impl FeedRecorder {
    /// The cache this feed records into.
    pub fn cache(&self) -> ChildCache {
        self.cache.clone()
    }

    /// Applies one watch event to the feed.
    pub fn record<K: Resource>(&self, event: &watcher::Event<K>) {
        self.record_with_status(event, |_| None);
    }

    /// Applies one watch event to the feed, keeping `status` of each object (see [`ChildCache::with_status`]).
    pub fn record_with_status<K: Resource>(&self, event: &watcher::Event<K>, status: impl Fn(&K) -> Option<Arc<str>>) {
        match event {
            watcher::Event::Delete(obj) => {
                if let Some(uid) = obj.meta().uid.as_deref() {
                    self.cache.confirmed_map().remove(uid);
                    self.cache.seen(uid);
                }
            }
            watcher::Event::Apply(obj) | watcher::Event::InitApply(obj) => {
                if let Some(uid) = obj.meta().uid.as_deref() {
                    self.cache.seen(uid);
                }
            }
            watcher::Event::Init | watcher::Event::InitDone => {}
        }
        let mut feeds = self.cache.write();
        if let Some(feed) = feeds.get_mut(self.index) {
            feed.children.apply(event, |obj| {
                let meta = obj.meta();
                let content_hash = self
                    .cache
                    .hash_annotation
                    .as_deref()
                    .and_then(|key| meta.annotations.as_ref()?.get(key))
                    .map(|hash| hash.as_str().into());
                let entry = Entry {
                    uid: meta.uid.clone(),
                    deleting: meta.deletion_timestamp.is_some(),
                    instance: meta.labels.as_ref().and_then(|l| l.get(LABEL_INSTANCE)).cloned(),
                    resource_version: meta.resource_version.as_deref().map(Into::into),
                    content_hash,
                    generation: meta.generation,
                    fingerprint: fingerprint(meta),
                    status: status(obj),
                };
                (self.cache.owner_keys(obj), entry)
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
    use kube::ResourceExt;

    use super::*;

    const OWNER_ANNOTATION: &str = "example.com/owner";

    fn child(
        namespace: &str,
        name: &str,
        owner_uid: Option<&str>,
        owner_id: Option<&str>,
        instance: &str,
    ) -> ConfigMap {
        let mut obj = ConfigMap::default();
        obj.metadata.namespace = Some(namespace.into());
        obj.metadata.name = Some(name.into());
        obj.metadata.uid = Some(format!("uid-{name}"));
        obj.metadata.labels = Some(
            [
                (LABEL_MANAGED_BY.to_string(), "op".to_string()),
                (LABEL_INSTANCE.to_string(), instance.to_string()),
            ]
            .into(),
        );
        obj.metadata.owner_references = owner_uid.map(|uid| {
            vec![OwnerReference {
                uid: uid.into(),
                controller: Some(true),
                ..OwnerReference::default()
            }]
        });
        obj.metadata.annotations = owner_id.map(|id| [(OWNER_ANNOTATION.to_string(), id.to_string())].into());
        obj
    }

    fn names(children: Option<Vec<CachedChild>>) -> Option<Vec<String>> {
        children.map(|c| c.into_iter().map(|c| c.name).collect())
    }

    #[test]
    fn answers_only_once_every_covering_feed_has_listed() {
        let cache = ChildCache::new("op", OWNER_ANNOTATION);
        let scope = cache.feed::<ConfigMap>(Some("apps"));
        let everywhere = cache.feed::<ConfigMap>(None);
        assert_eq!(cache.owned::<ConfigMap>(Some("other"), "u", "id", "web"), None);
        scope.record(&watcher::Event::<ConfigMap>::Init);
        scope.record(&watcher::Event::InitApply(child("apps", "a", Some("u"), None, "web")));
        scope.record(&watcher::Event::<ConfigMap>::InitDone);
        assert_eq!(
            cache.owned::<ConfigMap>(Some("apps"), "u", "id", "web"),
            None,
            "the all-namespaces feed has not listed yet"
        );
        everywhere.record(&watcher::Event::<ConfigMap>::Init);
        everywhere.record(&watcher::Event::<ConfigMap>::InitDone);
        assert_eq!(
            names(cache.owned::<ConfigMap>(Some("apps"), "u", "id", "web")),
            Some(vec!["a".into()])
        );
        assert_eq!(
            cache.owned::<ConfigMap>(Some("apps"), "u", "id", "other-instance"),
            Some(vec![])
        );
    }

    #[test]
    fn finds_children_by_owner_reference_or_annotation_and_forgets_deleted_ones() {
        let cache = ChildCache::new("op", OWNER_ANNOTATION);
        let feed = cache.feed::<ConfigMap>(None);
        feed.record(&watcher::Event::<ConfigMap>::Init);
        feed.record(&watcher::Event::<ConfigMap>::InitDone);
        feed.record(&watcher::Event::Apply(child("apps", "by-ref", Some("u"), None, "web")));
        feed.record(&watcher::Event::Apply(child(
            "gw",
            "by-annotation",
            None,
            Some("g/K/apps/web"),
            "web",
        )));
        feed.record(&watcher::Event::Apply(child(
            "apps",
            "someone-else",
            Some("u2"),
            None,
            "web",
        )));
        let mut unlabelled = child("apps", "not-ours", Some("u"), None, "web");
        unlabelled.metadata.labels = None;
        feed.record(&watcher::Event::Apply(unlabelled));
        assert_eq!(
            names(cache.owned::<ConfigMap>(None, "u", "g/K/apps/web", "web")),
            Some(vec!["by-ref".into(), "by-annotation".into()])
        );
        assert_eq!(
            names(cache.owned::<ConfigMap>(Some("gw"), "u", "g/K/apps/web", "web")),
            Some(vec!["by-annotation".into()])
        );
        let mut deleting = child("apps", "by-ref", Some("u"), None, "web");
        deleting.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        feed.record(&watcher::Event::Apply(deleting.clone()));
        let found = cache
            .owned::<ConfigMap>(Some("apps"), "u", "id", "web")
            .unwrap_or_default();
        assert!(found.iter().all(|c| c.deleting), "{found:?}");
        feed.record(&watcher::Event::Delete(deleting));
        assert_eq!(
            names(cache.owned::<ConfigMap>(Some("apps"), "u", "id", "web")),
            Some(vec![])
        );
    }

    #[test]
    fn a_relist_replaces_what_the_feed_knew() {
        let cache = ChildCache::new("op", OWNER_ANNOTATION);
        let feed = cache.feed::<ConfigMap>(Some("apps"));
        feed.record(&watcher::Event::<ConfigMap>::Init);
        feed.record(&watcher::Event::InitApply(child(
            "apps",
            "gone",
            Some("u"),
            None,
            "web",
        )));
        feed.record(&watcher::Event::<ConfigMap>::InitDone);
        feed.record(&watcher::Event::<ConfigMap>::Init);
        feed.record(&watcher::Event::InitApply(child("apps", "new", Some("u"), None, "web")));
        assert_eq!(
            names(cache.owned::<ConfigMap>(Some("apps"), "u", "id", "web")),
            Some(vec!["gone".into()]),
            "the old view holds until the relist is complete"
        );
        feed.record(&watcher::Event::<ConfigMap>::InitDone);
        assert_eq!(
            names(cache.owned::<ConfigMap>(Some("apps"), "u", "id", "web")),
            Some(vec!["new".into()])
        );
    }

    #[test]
    fn a_child_is_confirmed_only_at_the_version_confirmed_and_forgotten_when_deleted() {
        let cache = ChildCache::new("op", OWNER_ANNOTATION).with_hash_annotation("op/hash");
        let feed = cache.feed::<ConfigMap>(Some("apps"));
        let versioned = |version: &str| {
            let mut obj = child("apps", "a", Some("u"), None, "web");
            obj.metadata.resource_version = Some(version.into());
            obj.metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert("op/hash".into(), "h1".into());
            obj
        };
        feed.record(&watcher::Event::<ConfigMap>::Init);
        feed.record(&watcher::Event::InitApply(versioned("1")));
        feed.record(&watcher::Event::<ConfigMap>::InitDone);
        let found = || {
            cache
                .find::<ConfigMap>(Some("apps"), "u", "id", "web", "a")
                .flatten()
                .expect("found")
        };
        assert_eq!(found().content_hash.as_deref(), Some("h1"));
        assert!(!cache.is_confirmed(&found()), "nothing confirmed yet");
        cache.confirm(&versioned("1").metadata);
        assert!(cache.is_confirmed(&found()));
        feed.record(&watcher::Event::Apply(versioned("2")));
        assert!(!cache.is_confirmed(&found()), "changed since");
        cache.confirm(&versioned("2").metadata);
        feed.record(&watcher::Event::Delete(versioned("2")));
        assert_eq!(cache.find::<ConfigMap>(Some("apps"), "u", "id", "web", "a"), Some(None));
        feed.record(&watcher::Event::Apply(versioned("2")));
        assert!(!cache.is_confirmed(&found()), "a deleted child's confirmation is gone");
    }

    #[test]
    fn only_an_update_at_the_confirmed_version_is_an_echo_and_a_written_child_is_forgotten_once_seen() {
        let cache = ChildCache::new("op", OWNER_ANNOTATION);
        let feed = cache.feed::<ConfigMap>(Some("apps"));
        let at = |version: &str| {
            let mut obj = child("apps", "a", Some("u"), None, "web");
            obj.metadata.resource_version = Some(version.into());
            obj
        };
        cache.confirm(&at("1").metadata);
        assert!(cache.is_own_echo(&watcher::Event::Apply(at("1"))));
        assert!(
            !cache.is_own_echo(&watcher::Event::Apply(at("2"))),
            "someone else's write"
        );
        assert!(
            !cache.is_own_echo(&watcher::Event::Delete(at("1"))),
            "a deletion is never an echo"
        );

        let written = WrittenChild {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("apps".into()),
            name: "a".into(),
            uid: "uid-a".into(),
        };
        cache.written("u", written);
        let unseen = || cache.written_unseen::<ConfigMap>(Some("apps"), "u");
        assert_eq!(unseen().len(), 1);
        assert!(cache.written_unseen::<ConfigMap>(Some("other"), "u").is_empty());
        feed.record(&watcher::Event::Apply(at("1")));
        assert!(unseen().is_empty(), "the watch showed it");
    }

    #[test]
    fn a_child_with_a_generation_stays_confirmed_across_changes_to_its_status_only() {
        let cache = ChildCache::new("op", OWNER_ANNOTATION).with_hash_annotation("op/hash");
        let feed = cache.feed::<ConfigMap>(Some("apps"));
        let at = |version: &str, generation: Option<i64>| {
            let mut obj = child("apps", "a", Some("u"), None, "web");
            obj.metadata.resource_version = Some(version.into());
            obj.metadata.generation = generation;
            obj
        };
        let found = || {
            cache
                .find::<ConfigMap>(Some("apps"), "u", "id", "web", "a")
                .flatten()
                .expect("found")
        };
        feed.record(&watcher::Event::<ConfigMap>::Init);
        feed.record(&watcher::Event::InitApply(at("1", Some(1))));
        feed.record(&watcher::Event::<ConfigMap>::InitDone);
        cache.confirm(&at("1", Some(1)).metadata);
        feed.record(&watcher::Event::Apply(at("2", Some(1))));
        assert!(cache.is_confirmed(&found()), "another writer's status change");
        assert!(
            !cache.is_own_echo(&watcher::Event::Apply(at("2", Some(1)))),
            "but it is no echo: the owner must see it"
        );
        let mut relabelled = at("3", Some(1));
        relabelled.labels_mut().insert("extra".into(), "x".into());
        feed.record(&watcher::Event::Apply(relabelled));
        assert!(!cache.is_confirmed(&found()), "a metadata change");
        feed.record(&watcher::Event::Apply(at("4", Some(2))));
        assert!(!cache.is_confirmed(&found()), "a spec change (new generation)");

        cache.confirm(&at("5", None).metadata);
        feed.record(&watcher::Event::Apply(at("6", None)));
        assert!(
            !cache.is_confirmed(&found()),
            "without a generation only the confirmed resourceVersion counts"
        );
    }

    #[test]
    fn only_kinds_named_keep_their_status_and_only_what_the_trim_leaves() {
        let cache =
            ChildCache::new("op", OWNER_ANNOTATION).with_status::<k8s_openapi::api::core::v1::Service>(|mut status| {
                status.as_object_mut().map(|fields| fields.remove("conditions"));
                status
            });
        let service = k8s_openapi::api::core::v1::Service {
            status: Some(
                serde_json::from_value(serde_json::json!({
                    "loadBalancer": {"ingress": [{"ip": "10.0.0.1"}]},
                    "conditions": [{"type": "Ready", "status": "True", "reason": "R", "message": "m",
                                    "lastTransitionTime": "2026-11-25T10:00:00Z"}]
                }))
                .expect("a status"),
            ),
            ..Default::default()
        };
        assert_eq!(
            cache.status_of(&service).as_deref(),
            Some(r#"{"loadBalancer":{"ingress":[{"ip":"10.0.0.1"}]}}"#)
        );
        assert_eq!(cache.status_of(&child("apps", "a", None, None, "web")), None);
    }
}
