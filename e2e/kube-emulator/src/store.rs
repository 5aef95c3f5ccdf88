//! The in-memory object store: one global resourceVersion, per-resource shelves (a hash map to find an object,
//! an ordered index of keys to list them), a bounded history of changes for watches, and a broadcast channel
//! that fans changes out to watchers and controllers.
//!
//! All mutation happens inside [`Store::write`], which hands out a [`Txn`]. Events are appended to the
//! history and broadcast while the lock is held, so every watcher sees them in resourceVersion order. The
//! lock is a plain mutex that is never held across an `.await`.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::broadcast;

use super::meta;
use super::resources::{GroupResource, Registry, storage_key};

/// The key of an object inside one resource: `(namespace, name)`, namespace empty for cluster scope.
pub type ObjectKey = (String, String);

/// `(namespace, name)` borrowed: finds an object without building an owned [`ObjectKey`]. Hashes as the
/// owned key does (a tuple hashes its fields in order, a `String` as its `str`).
#[derive(Hash)]
struct KeyRef<'a>(&'a str, &'a str);

impl hashbrown::Equivalent<ObjectKey> for KeyRef<'_> {
    fn equivalent(&self, key: &ObjectKey) -> bool {
        self.0 == key.0 && self.1 == key.1
    }
}

/// The objects of one resource. Requests find objects by key far more often than they list them, so a hash map
/// answers lookups and writes (no key comparisons that grow with the count), and a sorted set of the keys,
/// touched only when an object is created or removed, gives lists their key order and continue points.
#[derive(Default)]
struct Shelf {
    objects: hashbrown::HashMap<ObjectKey, Arc<Value>>,
    order: BTreeSet<ObjectKey>,
}

impl Shelf {
    fn get(&self, namespace: &str, name: &str) -> Option<&Arc<Value>> {
        self.objects.get(&KeyRef(namespace, name))
    }

    /// Stores `object` under `key`; returns the object it replaced.
    fn insert(&mut self, key: ObjectKey, object: Arc<Value>) -> Option<Arc<Value>> {
        match self.objects.entry(key) {
            hashbrown::hash_map::Entry::Occupied(mut stored) => Some(stored.insert(object)),
            hashbrown::hash_map::Entry::Vacant(vacant) => {
                self.order.insert(vacant.key().clone());
                vacant.insert(object);
                None
            }
        }
    }

    fn remove(&mut self, namespace: &str, name: &str) -> Option<Arc<Value>> {
        let (key, object) = self.objects.remove_entry(&KeyRef(namespace, name))?;
        self.order.remove(&key);
        Some(object)
    }

    /// The objects in key order, from `lower` on, while they are in `namespace` (`None`: all).
    fn from<'a>(
        &'a self,
        lower: Bound<ObjectKey>,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a ObjectKey, &'a Arc<Value>)> + 'a {
        self.order
            .range((lower, Bound::Unbounded))
            .take_while(move |(ns, _)| namespace.is_none_or(|want| ns == want))
            .filter_map(|key| self.objects.get(key).map(|object| (key, object)))
    }

    fn len(&self) -> usize {
        self.objects.len()
    }

    fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

/// Where a range of one resource's objects starts: after `after`, else at the start of `namespace`, else first.
fn lower_bound(namespace: Option<&str>, after: Option<&ObjectKey>) -> Bound<ObjectKey> {
    match (after, namespace) {
        (Some(key), _) => Bound::Excluded(key.clone()),
        (None, Some(ns)) => Bound::Included((ns.to_string(), String::new())),
        (None, None) => Bound::Unbounded,
    }
}

/// What happened to an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// The object was created.
    Added,
    /// The object was changed.
    Modified,
    /// The object was removed.
    Deleted,
}

impl EventType {
    /// The watch event type string.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, as recorded in the history and broadcast to watchers.
#[derive(Debug)]
pub struct StoredEvent {
    /// The resourceVersion of the change.
    pub rv: u64,
    /// What happened.
    pub event_type: EventType,
    /// The storage key of the resource.
    pub resource: GroupResource,
    /// The object after the change (for DELETED: its last state, with the deletion resourceVersion).
    pub object: Arc<Value>,
    /// The object before the change, for MODIFIED and DELETED.
    pub previous: Option<Arc<Value>>,
    /// `object` serialized once, shared by every watcher that serves it unconverted.
    serialized: std::sync::OnceLock<Arc<Vec<u8>>>,
}

impl StoredEvent {
    fn new(
        rv: u64,
        event_type: EventType,
        resource: GroupResource,
        object: Arc<Value>,
        previous: Option<Arc<Value>>,
    ) -> Self {
        StoredEvent {
            rv,
            event_type,
            resource,
            object,
            previous,
            serialized: std::sync::OnceLock::new(),
        }
    }

    /// The JSON bytes of `object`, computed on first use.
    pub fn object_json(&self) -> Arc<Vec<u8>> {
        self.serialized
            .get_or_init(|| Arc::new(serde_json::to_vec(&*self.object).unwrap_or_default()))
            .clone()
    }
}

/// A watch resourceVersion that is no longer in the history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("too old resource version: {requested} ({compacted})")]
pub struct Expired {
    /// The resourceVersion asked for.
    pub requested: u64,
    /// The newest resourceVersion no longer retained (oldest retained minus one).
    pub compacted: u64,
}

/// The retained changes after a resourceVersion, and a receiver for the ones after them.
pub type WatchStart = (Vec<Arc<StoredEvent>>, broadcast::Receiver<Arc<StoredEvent>>);

/// The default number of changes kept for watches.
pub const DEFAULT_HISTORY: usize = 10_000;

struct Inner {
    rv: u64,
    registry: Registry,
    objects: HashMap<GroupResource, Shelf>,
    history: VecDeque<Arc<StoredEvent>>,
    history_capacity: usize,
    compacted_rv: u64,
    /// Bumped by every write of an RBAC object, so the authorizer knows when to rebuild its snapshot.
    rbac_generation: u64,
}

/// The shared store.
pub struct Store {
    inner: Mutex<Inner>,
    events: broadcast::Sender<Arc<StoredEvent>>,
}

impl Store {
    /// An empty store serving the built-in kinds, keeping `history_capacity` changes for watches.
    pub fn new(history_capacity: usize) -> Self {
        let (events, _) = broadcast::channel(65_536);
        Store {
            inner: Mutex::new(Inner {
                rv: 1,
                registry: Registry::with_builtins(),
                objects: HashMap::new(),
                history: VecDeque::new(),
                history_capacity: history_capacity.max(1),
                compacted_rv: 1,
                rbac_generation: 0,
            }),
            events,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A poisoned lock means a panic inside a transaction; the data is still structurally sound (every
        // mutation is a single map insert or remove), so keep serving rather than failing every request.
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs `f` with exclusive access; changes it makes are recorded and broadcast before the lock is released.
    pub fn write<R>(&self, f: impl FnOnce(&mut Txn<'_>) -> R) -> R {
        let mut guard = self.lock();
        let mut txn = Txn {
            inner: &mut guard,
            pending: Vec::new(),
        };
        let result = f(&mut txn);
        let pending = std::mem::take(&mut txn.pending);
        for event in pending {
            guard.history.push_back(event.clone());
            while guard.history.len() > guard.history_capacity {
                if let Some(dropped) = guard.history.pop_front() {
                    guard.compacted_rv = dropped.rv;
                }
            }
            // No receiver is not an error: nobody is watching.
            let _ = self.events.send(event);
        }
        result
    }

    /// Runs `f` with shared read access.
    pub fn read<R>(&self, f: impl FnOnce(&ReadView<'_>) -> R) -> R {
        let guard = self.lock();
        f(&ReadView { inner: &guard })
    }

    /// The current resourceVersion.
    pub fn current_rv(&self) -> u64 {
        self.lock().rv
    }

    /// A receiver of every future change.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<StoredEvent>> {
        self.events.subscribe()
    }

    /// The changes after `rv` still in the history plus a receiver for later ones, taken atomically.
    pub fn watch_from(&self, rv: u64) -> Result<WatchStart, Expired> {
        let guard = self.lock();
        if rv < guard.compacted_rv {
            return Err(Expired {
                requested: rv,
                compacted: guard.compacted_rv,
            });
        }
        let receiver = self.events.subscribe();
        let backlog = guard.history.iter().filter(|e| e.rv > rv).cloned().collect();
        Ok((backlog, receiver))
    }

    /// Drops the whole history, so any watch from an older resourceVersion gets 410 Expired.
    pub fn compact(&self) {
        let mut guard = self.lock();
        guard.history.clear();
        guard.compacted_rv = guard.rv;
    }
}

/// Read access to the store.
pub struct ReadView<'a> {
    inner: &'a Inner,
}

impl ReadView<'_> {
    /// The current resourceVersion.
    pub fn rv(&self) -> u64 {
        self.inner.rv
    }

    /// The newest resourceVersion no longer retained in the history.
    pub fn compacted_rv(&self) -> u64 {
        self.inner.compacted_rv
    }

    /// The registry.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// A number that changes whenever a Role, ClusterRole or binding changes.
    pub fn rbac_generation(&self) -> u64 {
        self.inner.rbac_generation
    }

    /// One object.
    pub fn get(&self, gr: &GroupResource, namespace: &str, name: &str) -> Option<Arc<Value>> {
        get(self.inner, gr, namespace, name)
    }

    /// The objects of a resource, optionally in one namespace, starting after `after` (exclusive), in key order.
    pub fn range(
        &self,
        gr: &GroupResource,
        namespace: Option<&str>,
        after: Option<&ObjectKey>,
    ) -> Vec<(ObjectKey, Arc<Value>)> {
        range(self.inner, gr, namespace, after)
    }

    /// Visits the objects of a resource in key order (optionally one namespace, starting after `after`)
    /// until `visit` returns false; returns how many objects remained unvisited after the last one visited.
    pub fn scan(
        &self,
        gr: &GroupResource,
        namespace: Option<&str>,
        after: Option<&ObjectKey>,
        mut visit: impl FnMut(&ObjectKey, &Arc<Value>) -> bool,
    ) -> usize {
        let Some(shelf) = self.inner.objects.get(&storage_key(gr)) else {
            return 0;
        };
        let mut iter = shelf.from(lower_bound(namespace, after), namespace);
        for (key, obj) in iter.by_ref() {
            if !visit(key, obj) {
                return iter.count();
            }
        }
        0
    }

    /// Every resource that has at least one stored object.
    pub fn stored_resources(&self) -> Vec<GroupResource> {
        self.inner
            .objects
            .iter()
            .filter(|(_, m)| !m.is_empty())
            .map(|(gr, _)| gr.clone())
            .collect()
    }

    /// How many objects a resource holds in total (all namespaces).
    pub fn count(&self, gr: &GroupResource) -> usize {
        self.inner.objects.get(&storage_key(gr)).map_or(0, Shelf::len)
    }
}

fn get(inner: &Inner, gr: &GroupResource, namespace: &str, name: &str) -> Option<Arc<Value>> {
    inner.objects.get(&storage_key(gr))?.get(namespace, name).cloned()
}

fn range(
    inner: &Inner,
    gr: &GroupResource,
    namespace: Option<&str>,
    after: Option<&ObjectKey>,
) -> Vec<(ObjectKey, Arc<Value>)> {
    let Some(shelf) = inner.objects.get(&storage_key(gr)) else {
        return Vec::new();
    };
    shelf
        .from(lower_bound(namespace, after), namespace)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Exclusive access to the store inside [`Store::write`].
pub struct Txn<'a> {
    inner: &'a mut Inner,
    pending: Vec<Arc<StoredEvent>>,
}

impl Txn<'_> {
    /// The current resourceVersion.
    pub fn rv(&self) -> u64 {
        self.inner.rv
    }

    /// The registry.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// The registry, for CRD establishment and removal.
    pub fn registry_mut(&mut self) -> &mut Registry {
        &mut self.inner.registry
    }

    /// One object.
    pub fn get(&self, gr: &GroupResource, namespace: &str, name: &str) -> Option<Arc<Value>> {
        get(self.inner, gr, namespace, name)
    }

    /// The objects of a resource, optionally in one namespace.
    pub fn range(&self, gr: &GroupResource, namespace: Option<&str>) -> Vec<(ObjectKey, Arc<Value>)> {
        range(self.inner, gr, namespace, None)
    }

    /// Every resource that has at least one stored object.
    pub fn stored_resources(&self) -> Vec<GroupResource> {
        self.inner
            .objects
            .iter()
            .filter(|(_, m)| !m.is_empty())
            .map(|(gr, _)| gr.clone())
            .collect()
    }

    fn note_rbac_change(&mut self, gr: &GroupResource) {
        if gr.group == "rbac.authorization.k8s.io" {
            self.inner.rbac_generation += 1;
        }
    }

    /// Stores `object` (created or changed), stamping a new resourceVersion; returns the stored object.
    pub fn put(&mut self, gr: &GroupResource, mut object: Value) -> Arc<Value> {
        self.note_rbac_change(gr);
        self.inner.rv += 1;
        let rv = self.inner.rv;
        meta::set_resource_version(&mut object, rv);
        let key = (meta::namespace(&object).to_string(), meta::name(&object).to_string());
        let stored = Arc::new(object);
        let resource = storage_key(gr);
        let previous = self
            .inner
            .objects
            .entry(resource.clone())
            .or_default()
            .insert(key, stored.clone());
        let event_type = if previous.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        self.pending.push(Arc::new(StoredEvent::new(
            rv,
            event_type,
            resource,
            stored.clone(),
            previous,
        )));
        stored
    }

    /// Removes an object; `last_state` is what watchers see in DELETED (it gets the deletion resourceVersion).
    pub fn remove(
        &mut self,
        gr: &GroupResource,
        namespace: &str,
        name: &str,
        mut last_state: Value,
    ) -> Option<Arc<Value>> {
        let resource = storage_key(gr);
        let previous = self.inner.objects.get_mut(&resource)?.remove(namespace, name)?;
        self.note_rbac_change(gr);
        self.inner.rv += 1;
        let rv = self.inner.rv;
        meta::set_resource_version(&mut last_state, rv);
        let stored = Arc::new(last_state);
        self.pending.push(Arc::new(StoredEvent::new(
            rv,
            EventType::Deleted,
            resource,
            stored.clone(),
            Some(previous),
        )));
        Some(stored)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cm(name: &str) -> Value {
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":name,"namespace":"default"}})
    }

    #[test]
    fn every_write_gets_a_new_increasing_resource_version() {
        let store = Store::new(10);
        let gr = GroupResource::new("", "configmaps");
        let a = store.write(|t| t.put(&gr, cm("a")));
        let b = store.write(|t| t.put(&gr, cm("b")));
        let rv_a: u64 = meta::resource_version(&a).parse().unwrap();
        let rv_b: u64 = meta::resource_version(&b).parse().unwrap();
        assert!(rv_b > rv_a);
        assert_eq!(store.current_rv(), rv_b);
    }

    #[test]
    fn history_is_bounded_and_old_watches_expire() {
        let store = Store::new(2);
        let gr = GroupResource::new("", "configmaps");
        let start = store.current_rv();
        for name in ["a", "b", "c"] {
            store.write(|t| t.put(&gr, cm(name)));
        }
        let err = store.watch_from(start).unwrap_err();
        assert_eq!(err.compacted, start + 1);
        let (backlog, _) = store.watch_from(start + 1).unwrap();
        assert_eq!(backlog.len(), 2);
    }

    #[test]
    fn range_stays_inside_one_namespace() {
        let store = Store::new(10);
        let gr = GroupResource::new("", "configmaps");
        store.write(|t| {
            t.put(&gr, json!({"metadata":{"name":"x","namespace":"a"}}));
            t.put(&gr, json!({"metadata":{"name":"y","namespace":"b"}}));
        });
        let in_a = store.read(|r| r.range(&gr, Some("a"), None));
        assert_eq!(in_a.len(), 1);
        assert_eq!(in_a[0].0, ("a".to_string(), "x".to_string()));
    }

    #[test]
    fn objects_are_found_by_key_and_listed_in_key_order_whatever_the_write_order() {
        let store = Store::new(10);
        let gr = GroupResource::new("", "configmaps");
        let names = ["m", "c", "x", "a", "k"];
        store.write(|t| {
            for name in names {
                t.put(&gr, cm(name));
            }
            t.put(&gr, json!({"metadata":{"name":"b","namespace":"other"}}));
            // A rewrite replaces the object in place; it does not add a second key.
            t.put(&gr, cm("c"));
            t.remove(&gr, "default", "x", cm("x"));
        });
        let listed = |after: Option<&ObjectKey>| {
            store.read(|r| {
                r.range(&gr, Some("default"), after)
                    .into_iter()
                    .map(|(k, _)| k.1)
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(listed(None), ["a", "c", "k", "m"]);
        assert_eq!(listed(Some(&("default".into(), "c".into()))), ["k", "m"]);
        assert_eq!(store.read(|r| r.count(&gr)), 5);
        assert!(store.read(|r| r.get(&gr, "default", "k").is_some()));
        assert!(store.read(|r| r.get(&gr, "default", "x").is_none()));
        assert!(store.read(|r| r.get(&gr, "other", "k").is_none()));
        let mut visited = Vec::new();
        let unvisited = store.read(|r| {
            r.scan(&gr, None, None, |key, _| {
                visited.push(key.clone());
                visited.len() < 2
            })
        });
        assert_eq!(
            visited,
            [("default".to_string(), "a".to_string()), ("default".into(), "c".into())]
        );
        assert_eq!(unvisited, 3);
    }

    #[test]
    fn remove_emits_deleted_with_a_new_resource_version() {
        let store = Store::new(10);
        let gr = GroupResource::new("", "configmaps");
        let mut rx = store.subscribe();
        let stored = store.write(|t| t.put(&gr, cm("a")));
        store.write(|t| t.remove(&gr, "default", "a", (*stored).clone()));
        let added = rx.try_recv().unwrap();
        let deleted = rx.try_recv().unwrap();
        assert_eq!(added.event_type, EventType::Added);
        assert_eq!(deleted.event_type, EventType::Deleted);
        assert!(deleted.rv > added.rv);
    }
}
