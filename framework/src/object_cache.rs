//! Reads of related objects from the watches that trigger on them, instead of a GET per reconcile.
//!
//! A controller that watches a kind anyway (the Namespaces whose label it needs, the Services it routes to, the
//! Gateway it adds listeners to) keeps what that watch sees in an [`ObjectCache`] (fed by
//! [`Triggers::watches_cached`](crate::triggers::Triggers::watches_cached)) and reads it there. The cache answers
//! only for namespaces a watch covers and only once that watch has listed; otherwise it says [`Cached::Unknown`]
//! and the caller reads from the API server as before. Like any informer cache it may lag a write by the time
//! the watch event takes; that event triggers the readers again, so a decision made on the older copy is
//! revisited.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use kube::Resource;
use kube::runtime::reflector::{self, ObjectRef, Store, store::Writer};
use kube::runtime::watcher;

/// What the cache knows of one object.
#[derive(Debug)]
pub enum Cached<K> {
    /// The watch has it.
    Found(Arc<K>),
    /// A synced watch covering its namespace does not have it: it does not exist.
    Absent,
    /// No synced watch covers its namespace: ask the API server.
    Unknown,
}

impl<K> Cached<K> {
    /// `Some(found or not)` when the cache knows, `None` when the caller must read elsewhere.
    pub fn known(self) -> Option<Option<Arc<K>>> {
        match self {
            Cached::Found(obj) => Some(Some(obj)),
            Cached::Absent => Some(None),
            Cached::Unknown => None,
        }
    }
}

struct Feed<K: Resource<DynamicType = ()> + 'static> {
    namespace: Option<String>,
    store: Store<K>,
    synced: Arc<AtomicBool>,
}

/// The objects of kind `K` that the controller's watches saw, per watched namespace (or all). Cheap to clone.
pub struct ObjectCache<K: Resource<DynamicType = ()> + 'static> {
    feeds: Arc<Mutex<Vec<Feed<K>>>>,
}

impl<K: Resource<DynamicType = ()> + 'static> Clone for ObjectCache<K> {
    fn clone(&self) -> Self {
        Self {
            feeds: self.feeds.clone(),
        }
    }
}

impl<K: Resource<DynamicType = ()> + 'static> Default for ObjectCache<K> {
    fn default() -> Self {
        Self { feeds: Arc::default() }
    }
}

/// Marks one watch's share of an [`ObjectCache`] as listed once its first list completes.
#[derive(Clone)]
pub struct SyncMark(Arc<AtomicBool>);

impl SyncMark {
    /// Notes a watch event after the reflector applied it.
    pub fn observe<K>(&self, event: &watcher::Event<K>) {
        if matches!(event, watcher::Event::InitDone) {
            self.0.store(true, Ordering::Release);
        }
    }
}

impl<K> ObjectCache<K>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    /// Registers the watch of `namespace` (`None`: every namespace, or a cluster-scoped kind): the reflector
    /// writer its events go through, and the mark its events are then shown to.
    pub fn feed(&self, namespace: Option<&str>) -> (Writer<K>, SyncMark) {
        let (store, writer) = reflector::store();
        let synced = Arc::new(AtomicBool::new(false));
        self.feeds.lock().unwrap_or_else(PoisonError::into_inner).push(Feed {
            namespace: namespace.map(str::to_string),
            store,
            synced: synced.clone(),
        });
        (writer, SyncMark(synced))
    }

    /// The object `name` in `namespace` (`None` for a cluster-scoped kind), if a synced watch covers it.
    pub fn get(&self, namespace: Option<&str>, name: &str) -> Cached<K> {
        let feeds = self.feeds.lock().unwrap_or_else(PoisonError::into_inner);
        let covering = feeds
            .iter()
            .filter(|feed| feed.synced.load(Ordering::Acquire))
            .find(|feed| feed.namespace.is_none() || feed.namespace.as_deref() == namespace);
        let Some(feed) = covering else {
            return Cached::Unknown;
        };
        let key = ObjectRef::<K>::new(name);
        let key = match namespace {
            Some(namespace) => key.within(namespace),
            None => key,
        };
        match feed.store.get(&key) {
            Some(obj) => Cached::Found(obj),
            None => Cached::Absent,
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Service;

    use super::*;

    fn service(namespace: &str, name: &str) -> Service {
        let mut service = Service::default();
        service.metadata.namespace = Some(namespace.into());
        service.metadata.name = Some(name.into());
        service
    }

    fn apply(feed: &mut (Writer<Service>, SyncMark), event: watcher::Event<Service>) {
        feed.0.apply_watcher_event(&event);
        feed.1.observe(&event);
    }

    #[test]
    fn answers_only_for_covered_namespaces_once_listed() {
        let cache = ObjectCache::<Service>::default();
        let mut team = cache.feed(Some("team"));
        assert!(
            matches!(cache.get(Some("team"), "web"), Cached::Unknown),
            "not listed yet"
        );
        apply(&mut team, watcher::Event::Init);
        apply(&mut team, watcher::Event::InitApply(service("team", "web")));
        assert!(
            matches!(cache.get(Some("team"), "web"), Cached::Unknown),
            "still listing"
        );
        apply(&mut team, watcher::Event::InitDone);
        assert!(matches!(cache.get(Some("team"), "web"), Cached::Found(_)));
        assert!(matches!(cache.get(Some("team"), "db"), Cached::Absent));
        assert!(
            matches!(cache.get(Some("other"), "web"), Cached::Unknown),
            "no watch covers it"
        );
        apply(&mut team, watcher::Event::Delete(service("team", "web")));
        assert!(matches!(cache.get(Some("team"), "web"), Cached::Absent));
    }

    #[test]
    fn a_cluster_wide_watch_covers_every_namespace() {
        let cache = ObjectCache::<Service>::default();
        let mut all = cache.feed(None);
        apply(&mut all, watcher::Event::Init);
        apply(&mut all, watcher::Event::InitApply(service("a", "web")));
        apply(&mut all, watcher::Event::InitDone);
        assert!(matches!(cache.get(Some("a"), "web"), Cached::Found(_)));
        assert!(matches!(cache.get(Some("b"), "web"), Cached::Absent));
        assert_eq!(
            cache.get(Some("b"), "web").known().map(|found| found.is_some()),
            Some(false)
        );
    }
}
