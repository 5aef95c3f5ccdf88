//! Objects filed under keys derived from them, kept current by a watch's events: what turns "every object that
//! shares X with this one" from a scan of the whole cache into a lookup.
//!
//! A scan per event or per reconcile costs O(N) each, so O(N²) for a round over N objects; at 10,000 objects
//! that was most of the manager's CPU. [`KeyIndex`] files each object of one kind under the keys a function
//! derives from it (e.g. its lower-cased hostname) and answers a key with the objects filed under it.
//! [`IndexedEvents`] is the bookkeeping both it and [`ChildCache`](crate::child_cache::ChildCache) share: it
//! applies a watch's events (a relist replaces the old view only when complete) to a map from key to objects.

use std::borrow::Borrow;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, PoisonError, RwLock};

use kube::Resource;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;

/// An object's place: its namespace and name.
pub type ObjectKey = (Option<String>, String);

/// Objects (with a value `V` each) filed under keys, as one watch last saw them.
pub struct IndexedEvents<V> {
    synced: bool,
    current: Filed<V>,
    /// Objects of a relist in progress, swapped in when it is done.
    relisting: Option<Filed<V>>,
}

impl<V> Default for IndexedEvents<V> {
    fn default() -> Self {
        Self {
            synced: false,
            current: Filed::default(),
            relisting: None,
        }
    }
}

struct Filed<V> {
    /// Per key, the objects filed under it: a few each (an owner's children), so a list sized to them costs far
    /// less than a map per key would. An object filed under several keys is stored once and shared.
    by_key: HashMap<Arc<str>, Vec<Arc<Filing<V>>>>,
    /// Every filed object, found by its namespace and name (to take it out again).
    filings: HashSet<ByObject<V>>,
}

/// One object as filed: where it is, the keys it is filed under (shared with the map's keys) and its value.
struct Filing<V> {
    object: ObjectKey,
    keys: Box<[Arc<str>]>,
    value: V,
}

/// A filing as a member of the set of all filings, which is looked up by the object's namespace and name.
struct ByObject<V>(Arc<Filing<V>>);

impl<V> Hash for ByObject<V> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // As the `ObjectKey` it borrows as hashes, so a lookup by `ObjectKey` finds it.
        self.0.object.hash(state);
    }
}

impl<V> PartialEq for ByObject<V> {
    fn eq(&self, other: &Self) -> bool {
        self.0.object == other.0.object
    }
}

impl<V> Eq for ByObject<V> {}

impl<V> Borrow<ObjectKey> for ByObject<V> {
    fn borrow(&self) -> &ObjectKey {
        &self.0.object
    }
}

impl<V> Default for Filed<V> {
    fn default() -> Self {
        Self {
            by_key: HashMap::new(),
            filings: HashSet::new(),
        }
    }
}

impl<V> IndexedEvents<V> {
    /// Applies one watch event; `file` says under which keys, with which value, an applied object goes (no keys:
    /// it is not filed).
    pub fn apply<K: Resource>(&mut self, event: &watcher::Event<K>, file: impl FnOnce(&K) -> (Vec<String>, V)) {
        match event {
            watcher::Event::Init => self.relisting = Some(Filed::default()),
            watcher::Event::InitApply(obj) => {
                let (keys, value) = file(obj);
                match self.relisting.as_mut() {
                    Some(filed) => filed.put(object_key(obj), keys, value),
                    None => self.current.put(object_key(obj), keys, value),
                }
            }
            watcher::Event::InitDone => {
                if let Some(filed) = self.relisting.take() {
                    self.current = filed;
                }
                self.synced = true;
            }
            watcher::Event::Apply(obj) => {
                let (keys, value) = file(obj);
                self.current.put(object_key(obj), keys, value);
            }
            watcher::Event::Delete(obj) => self.current.remove(&object_key(obj)),
        }
    }

    /// Whether the watch finished its first list (before that, the index knows only part of the kind).
    pub fn synced(&self) -> bool {
        self.synced
    }

    /// The objects filed under `key`, with their values.
    pub fn get(&self, key: &str) -> impl Iterator<Item = (&ObjectKey, &V)> {
        self.current
            .by_key
            .get(key)
            .into_iter()
            .flatten()
            .map(|filing| (&filing.object, &filing.value))
    }
}

impl<V> Filed<V> {
    fn put(&mut self, object: ObjectKey, keys: Vec<String>, value: V) {
        self.remove(&object);
        if keys.is_empty() {
            return;
        }
        // A key already in the map (another object's, e.g. a sibling's owner uid) is shared, not copied.
        let keys: Box<[Arc<str>]> = keys
            .into_iter()
            .map(|key| match self.by_key.get_key_value(key.as_str()) {
                Some((shared, _)) => shared.clone(),
                None => Arc::from(key),
            })
            .collect();
        let filing = Arc::new(Filing { object, keys, value });
        for key in filing.keys.iter() {
            let filed = self.by_key.entry(key.clone()).or_insert_with(|| Vec::with_capacity(1));
            filed.push(filing.clone());
        }
        self.filings.insert(ByObject(filing));
    }

    fn remove(&mut self, object: &ObjectKey) {
        let Some(ByObject(filing)) = self.filings.take(object) else {
            return;
        };
        for key in filing.keys.iter() {
            if let Some(objects) = self.by_key.get_mut(key) {
                objects.retain(|filed| !Arc::ptr_eq(filed, &filing));
                if objects.is_empty() {
                    self.by_key.remove(key);
                }
            }
        }
    }
}

/// The namespace and name of `obj`.
pub fn object_key<K: Resource>(obj: &K) -> ObjectKey {
    let meta = obj.meta();
    (meta.namespace.clone(), meta.name.clone().unwrap_or_default())
}

type KeysOf<K> = dyn Fn(&K) -> Vec<String> + Send + Sync;

/// Objects of kind `K` filed under the keys `keys_of` derives from each, fed by one watch
/// ([`Self::record`]). Cheap to clone (shared).
pub struct KeyIndex<K> {
    keys_of: Arc<KeysOf<K>>,
    events: Arc<RwLock<IndexedEvents<()>>>,
}

impl<K> Clone for KeyIndex<K> {
    fn clone(&self) -> Self {
        Self {
            keys_of: self.keys_of.clone(),
            events: self.events.clone(),
        }
    }
}

impl<K: Resource<DynamicType = ()>> KeyIndex<K> {
    /// An empty index filing each object under `keys_of(object)`.
    pub fn new(keys_of: impl Fn(&K) -> Vec<String> + Send + Sync + 'static) -> Self {
        Self {
            keys_of: Arc::new(keys_of),
            events: Arc::default(),
        }
    }

    /// Applies one event of the watch that feeds the index.
    pub fn record(&self, event: &watcher::Event<K>) {
        let mut events = self.events.write().unwrap_or_else(PoisonError::into_inner);
        events.apply(event, |obj| ((self.keys_of)(obj), ()));
    }

    /// The keys `obj` is filed under.
    pub fn keys_of(&self, obj: &K) -> Vec<String> {
        (self.keys_of)(obj)
    }

    /// The objects filed under `key`, or `None` while the feeding watch has not finished its first list.
    pub fn get(&self, key: &str) -> Option<Vec<ObjectRef<K>>> {
        // Each update is a few map operations, so a lock poisoned by a panic elsewhere still guards a
        // consistent index.
        let events = self.events.read().unwrap_or_else(PoisonError::into_inner);
        events.synced().then(|| {
            events
                .get(key)
                .map(|((namespace, name), ())| {
                    let reference = ObjectRef::new(name);
                    match namespace {
                        Some(namespace) => reference.within(namespace),
                        None => reference,
                    }
                })
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    fn labelled(name: &str, team: &str) -> ConfigMap {
        let mut obj = ConfigMap::default();
        obj.metadata.namespace = Some("ns".into());
        obj.metadata.name = Some(name.into());
        obj.metadata.labels = Some([("team".to_string(), team.to_string())].into());
        obj
    }

    fn by_team() -> KeyIndex<ConfigMap> {
        KeyIndex::new(|obj: &ConfigMap| obj.metadata.labels.iter().flatten().map(|(_, v)| v.clone()).collect())
    }

    fn names(found: Option<Vec<ObjectRef<ConfigMap>>>) -> Option<Vec<String>> {
        found.map(|refs| {
            let mut names: Vec<String> = refs.into_iter().map(|r| r.name).collect();
            names.sort();
            names
        })
    }

    #[test]
    fn answers_after_the_first_list_and_follows_changes_and_deletes() {
        let index = by_team();
        index.record(&watcher::Event::<ConfigMap>::Init);
        index.record(&watcher::Event::InitApply(labelled("a", "blue")));
        assert_eq!(index.get("blue"), None, "not synced yet");
        index.record(&watcher::Event::<ConfigMap>::InitDone);
        index.record(&watcher::Event::Apply(labelled("b", "blue")));
        assert_eq!(names(index.get("blue")), Some(vec!["a".into(), "b".into()]));
        index.record(&watcher::Event::Apply(labelled("a", "red")));
        assert_eq!(names(index.get("blue")), Some(vec!["b".into()]), "a moved to red");
        assert_eq!(names(index.get("red")), Some(vec!["a".into()]));
        index.record(&watcher::Event::Delete(labelled("b", "blue")));
        assert_eq!(names(index.get("blue")), Some(vec![]));
    }

    #[test]
    fn a_relist_replaces_the_view_only_when_complete() {
        let index = by_team();
        index.record(&watcher::Event::<ConfigMap>::Init);
        index.record(&watcher::Event::InitApply(labelled("gone", "blue")));
        index.record(&watcher::Event::<ConfigMap>::InitDone);
        index.record(&watcher::Event::<ConfigMap>::Init);
        index.record(&watcher::Event::InitApply(labelled("new", "blue")));
        assert_eq!(names(index.get("blue")), Some(vec!["gone".into()]));
        index.record(&watcher::Event::<ConfigMap>::InitDone);
        assert_eq!(names(index.get("blue")), Some(vec!["new".into()]));
    }
}
