//! What waits in a controller's work queue, for controller-runtime's `workqueue_depth` and
//! `workqueue_queue_duration_seconds`. kube-runtime's scheduler does not expose its queue, so the framework
//! observes what goes into it instead: every trigger (the object's own watch, its children, related objects; see
//! [`crate::triggers`]) marks the object as waiting from now, and every requeue the reconcile asks for (or the
//! error backoff) marks it as waiting from when it comes due. A reconcile that starts takes the object out and
//! reports how long it waited.
//!
//! Semantics, as controller-runtime's queue: an object is counted once however often it is triggered; an object
//! due later (a requeue-after, a backoff) is counted only once it is due, and its wait is measured from then; the
//! depth is read at each scrape. One difference: an object triggered while it is being reconciled counts as
//! waiting at once (kube-runtime runs it again right after), where controller-runtime counts it when the running
//! reconcile ends.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, RandomState};
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::Resource;
use kube::runtime::reflector::ObjectRef;

/// The objects of one controller waiting to be reconciled, and since when.
///
/// Objects are known by a 64-bit hash of their reference, not the reference itself: with every object of a
/// large install queued at once (a restart, a first rollout) the references' strings were megabytes. Two objects
/// whose hashes collide (odds about n²/2⁶⁵) would be counted as one, which only blurs the metrics.
pub struct QueueProbe<K: Resource<DynamicType = ()>> {
    due: Arc<Mutex<HashMap<u64, Instant>>>,
    hasher: RandomState,
    kind: PhantomData<fn() -> K>,
}

impl<K: Resource<DynamicType = ()>> Clone for QueueProbe<K> {
    fn clone(&self) -> Self {
        Self {
            due: self.due.clone(),
            hasher: self.hasher.clone(),
            kind: PhantomData,
        }
    }
}

impl<K: Resource<DynamicType = ()>> Default for QueueProbe<K> {
    fn default() -> Self {
        Self {
            due: Arc::new(Mutex::new(HashMap::new())),
            hasher: RandomState::new(),
            kind: PhantomData,
        }
    }
}

impl<K> QueueProbe<K>
where
    K: Resource<DynamicType = ()>,
    ObjectRef<K>: Hash + Eq,
{
    /// `object` was triggered: it waits from now (or from earlier, if it was already waiting).
    pub fn triggered(&self, object: ObjectRef<K>) {
        self.due_at(object, Instant::now());
    }

    /// The reconcile asked to run `object` again after `delay` (a requeue, or the error backoff).
    pub fn requeued(&self, object: ObjectRef<K>, delay: Duration) {
        self.due_at(object, Instant::now() + delay);
    }

    fn due_at(&self, object: ObjectRef<K>, at: Instant) {
        let key = self.hasher.hash_one(&object);
        if let Ok(mut due) = self.due.lock() {
            due.entry(key).and_modify(|t| *t = (*t).min(at)).or_insert(at);
        }
    }

    /// A reconcile of `object` starts (or kube-runtime gave up on it, the object being gone): it leaves the
    /// queue. Returns how long it waited since it came due, if it was seen entering.
    pub fn started(&self, object: &ObjectRef<K>) -> Option<Duration> {
        let at = self.due.lock().ok()?.remove(&self.hasher.hash_one(object))?;
        Some(Instant::now().saturating_duration_since(at))
    }

    /// How many objects are due and not yet started.
    pub fn depth(&self) -> usize {
        let now = Instant::now();
        self.due
            .lock()
            .map(|due| due.values().filter(|at| **at <= now).count())
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    fn object(name: &str) -> ObjectRef<ConfigMap> {
        ObjectRef::new(name).within("ns")
    }

    #[test]
    fn an_object_counts_once_and_leaves_when_its_reconcile_starts() {
        let probe = QueueProbe::<ConfigMap>::default();
        probe.triggered(object("a"));
        probe.triggered(object("a"));
        probe.triggered(object("b"));
        assert_eq!(probe.depth(), 2);
        std::thread::sleep(Duration::from_millis(20));
        let waited = probe.started(&object("a")).expect("seen entering");
        assert!(waited >= Duration::from_millis(20), "{waited:?}");
        assert_eq!(probe.depth(), 1);
        assert_eq!(probe.started(&object("a")), None, "not waiting any more");
    }

    #[test]
    fn a_requeue_counts_only_once_it_is_due_and_a_trigger_brings_it_forward() {
        let probe = QueueProbe::<ConfigMap>::default();
        probe.requeued(object("a"), Duration::from_secs(60));
        assert_eq!(probe.depth(), 0, "not due yet");
        probe.triggered(object("a"));
        assert_eq!(probe.depth(), 1, "a trigger makes it due now");
        let waited = probe.started(&object("a")).expect("waiting");
        assert!(
            waited < Duration::from_secs(1),
            "measured from the trigger, not the requeue: {waited:?}"
        );
    }
}
