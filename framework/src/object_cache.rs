//! Reads of related objects from the watches that trigger on them, instead of a GET per reconcile.
//!
//! A controller that watches a kind anyway (the Namespaces whose label it needs, the Services it routes to, the
//! Gateway it adds listeners to) keeps what that watch sees in an [`ObjectCache`] (fed by
//! [`Triggers::watches_cached`](crate::triggers::Triggers::watches_cached)) and reads it there. The cache answers
//! only for namespaces a watch covers and only once that watch has listed; otherwise it says [`Cached::Unknown`]
//! and the caller reads from the API server as before. Like any informer cache it may lag a write by the time
//! the watch event takes; that event triggers the readers again, so a decision made on the older copy is
//! revisited.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kube::Resource;
use kube::runtime::reflector::{self, ObjectRef, Store, store::Writer};
use kube::runtime::watcher;
use tokio::sync::watch;

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
    synced: watch::Receiver<bool>,
}

impl<K: Resource<DynamicType = ()> + 'static> Feed<K> {
    fn covers(&self, namespace: Option<&str>) -> bool {
        self.namespace.is_none() || self.namespace.as_deref() == namespace
    }

    fn is_synced(&self) -> bool {
        *self.synced.borrow()
    }
}

/// Which of a watch's objects a cache keeps.
type Keep<K> = Arc<dyn Fn(&K) -> bool + Send + Sync>;

/// The objects of kind `K` that the controller's watches saw, per watched namespace (or all). Cheap to clone.
pub struct ObjectCache<K: Resource<DynamicType = ()> + 'static> {
    feeds: Arc<Mutex<Vec<Feed<K>>>>,
    keep: Option<Keep<K>>,
}

impl<K: Resource<DynamicType = ()> + 'static> Clone for ObjectCache<K> {
    fn clone(&self) -> Self {
        Self {
            feeds: self.feeds.clone(),
            keep: self.keep.clone(),
        }
    }
}

impl<K: Resource<DynamicType = ()> + 'static> Default for ObjectCache<K> {
    fn default() -> Self {
        Self {
            feeds: Arc::default(),
            keep: None,
        }
    }
}

/// What a watch's events go through on their way into an [`ObjectCache`]: the reflector writer, behind the
/// cache's filter.
pub struct CacheWriter<K: Resource<DynamicType = ()> + Clone + 'static> {
    writer: Writer<K>,
    keep: Option<Keep<K>>,
}

impl<K> CacheWriter<K>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    /// Applies one watch event to the cache. An object the filter refuses is not stored, and one that stops
    /// passing it (a label removed) is dropped.
    pub fn apply(&mut self, event: &watcher::Event<K>) {
        let Some(keep) = &self.keep else {
            self.writer.apply_watcher_event(event);
            return;
        };
        match event {
            watcher::Event::Apply(obj) if !keep(obj) => {
                self.writer.apply_watcher_event(&watcher::Event::Delete(obj.clone()));
            }
            watcher::Event::InitApply(obj) if !keep(obj) => {}
            event => self.writer.apply_watcher_event(event),
        }
    }
}

/// Marks one watch's share of an [`ObjectCache`] as listed once its first list completes.
#[derive(Clone)]
pub struct SyncMark(Arc<watch::Sender<bool>>);

impl SyncMark {
    /// Notes a watch event after the reflector applied it.
    pub fn observe<K>(&self, event: &watcher::Event<K>) {
        if matches!(event, watcher::Event::InitDone) {
            self.0.send_if_modified(|synced| !std::mem::replace(synced, true));
        }
    }
}

impl<K> ObjectCache<K>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    /// A cache that keeps only the objects `keep` accepts: a watch that must see a whole kind (every Secret, to
    /// trigger on any of them) need not hold all of it.
    pub fn only(keep: impl Fn(&K) -> bool + Send + Sync + 'static) -> Self {
        Self {
            feeds: Arc::default(),
            keep: Some(Arc::new(keep)),
        }
    }

    /// Registers the watch of `namespace` (`None`: every namespace, or a cluster-scoped kind): the writer its
    /// events go through, and the mark its events are then shown to.
    pub fn feed(&self, namespace: Option<&str>) -> (CacheWriter<K>, SyncMark) {
        let (store, writer) = reflector::store();
        let (synced, listed) = watch::channel(false);
        self.feeds.lock().unwrap_or_else(PoisonError::into_inner).push(Feed {
            namespace: namespace.map(str::to_string),
            store,
            synced: listed,
        });
        let writer = CacheWriter {
            writer,
            keep: self.keep.clone(),
        };
        (writer, SyncMark(Arc::new(synced)))
    }

    /// Every object in `namespace` (`None`: all), if a synced watch covers it.
    pub fn list(&self, namespace: Option<&str>) -> Option<Vec<Arc<K>>> {
        let feeds = self.feeds.lock().unwrap_or_else(PoisonError::into_inner);
        let feed = listed_feed(&feeds, namespace)?;
        Some(
            feed.store
                .state()
                .into_iter()
                .filter(|obj| namespace.is_none() || obj.meta().namespace.as_deref() == namespace)
                .collect(),
        )
    }

    /// As [`Self::get`], but when a watch covers the namespace and has not finished its first list yet (a
    /// reconcile right after start-up), waits up to `within` for it instead of answering [`Cached::Unknown`]:
    /// where a watch covers the object the caller then never needs a read grant of its own.
    pub async fn get_when_listed(&self, namespace: Option<&str>, name: &str, within: Duration) -> Cached<K> {
        let pending = {
            let feeds = self.feeds.lock().unwrap_or_else(PoisonError::into_inner);
            let covering: Vec<&Feed<K>> = feeds.iter().filter(|feed| feed.covers(namespace)).collect();
            match covering.iter().any(|feed| feed.is_synced()) {
                true => None,
                false => covering.first().map(|feed| feed.synced.clone()),
            }
        };
        if let Some(mut listed) = pending {
            // A watch that does not list in time (or whose writer is gone) leaves the answer to the caller.
            let _ = tokio::time::timeout(within, listed.wait_for(|synced| *synced)).await;
        }
        self.get(namespace, name)
    }

    /// The object `name` in `namespace` (`None` for a cluster-scoped kind), if a synced watch covers it.
    pub fn get(&self, namespace: Option<&str>, name: &str) -> Cached<K> {
        let feeds = self.feeds.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(feed) = listed_feed(&feeds, namespace) else {
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

/// The feed that answers for `namespace`: one that covers it and has listed.
fn listed_feed<'a, K: Resource<DynamicType = ()>>(
    feeds: &'a [Feed<K>],
    namespace: Option<&str>,
) -> Option<&'a Feed<K>> {
    feeds.iter().find(|feed| feed.is_synced() && feed.covers(namespace))
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

    fn apply(feed: &mut (CacheWriter<Service>, SyncMark), event: watcher::Event<Service>) {
        feed.0.apply(&event);
        feed.1.observe(&event);
    }

    #[test]
    fn a_filtered_cache_keeps_only_what_passes_and_drops_what_stops_passing() {
        let labelled = |namespace: &str, name: &str, label: bool| {
            let mut service = service(namespace, name);
            if label {
                service.metadata.labels = Some([("keep".to_string(), "yes".to_string())].into());
            }
            service
        };
        let cache =
            ObjectCache::<Service>::only(|s| s.metadata.labels.as_ref().is_some_and(|l| l.contains_key("keep")));
        let mut team = cache.feed(Some("team"));
        apply(&mut team, watcher::Event::Init);
        apply(&mut team, watcher::Event::InitApply(labelled("team", "web", true)));
        apply(&mut team, watcher::Event::InitApply(labelled("team", "db", false)));
        apply(&mut team, watcher::Event::InitDone);
        assert!(matches!(cache.get(Some("team"), "web"), Cached::Found(_)));
        assert!(matches!(cache.get(Some("team"), "db"), Cached::Absent), "filtered out");
        apply(&mut team, watcher::Event::Apply(labelled("team", "db", true)));
        assert!(matches!(cache.get(Some("team"), "db"), Cached::Found(_)), "passes now");
        apply(&mut team, watcher::Event::Apply(labelled("team", "web", false)));
        assert!(
            matches!(cache.get(Some("team"), "web"), Cached::Absent),
            "stopped passing"
        );
        assert_eq!(cache.list(Some("team")).map(|l| l.len()), Some(1));
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

    #[tokio::test]
    async fn a_read_waits_for_the_covering_watch_to_list_but_not_for_an_uncovered_namespace() {
        let cache = ObjectCache::<Service>::default();
        let mut team = cache.feed(Some("team"));
        apply(&mut team, watcher::Event::Init);
        apply(&mut team, watcher::Event::InitApply(service("team", "web")));
        let lister = tokio::spawn(async move {
            tokio::task::yield_now().await;
            apply(&mut team, watcher::Event::InitDone);
            team
        });
        let found = cache
            .get_when_listed(Some("team"), "web", Duration::from_secs(30))
            .await;
        assert!(matches!(found, Cached::Found(_)), "{found:?}");
        let _team = lister.await.expect("lister");
        let elsewhere = cache
            .get_when_listed(Some("other"), "web", Duration::from_secs(30))
            .await;
        assert!(matches!(elsewhere, Cached::Unknown), "no watch covers it: no wait");
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
