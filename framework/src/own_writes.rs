//! What this process last wrote to each of a controller's objects, until the watch has shown it.
//!
//! A reconcile starts from the watch cache, and the cache can lag behind the controller's own last write by
//! however long the watch is down (cut, compacted, failing). A pass that starts from such a copy decides against
//! facts its own previous pass already replaced. The harm is silent when the stale copy happens to look right:
//! a failed pass wrote `Ready=False`, the retry 100 ms later read the cached `Ready=True` from before, found
//! nothing to write, and the echo of the failure (a status-only change) never triggered again; the object stayed
//! failed for the whole resync interval (found by the chaos run). The runner therefore re-reads an object whose
//! cached copy is not the version this process last wrote, until the watch delivers that version.
//!
//! A write that failed may still have been made (the answer was lost on the way back); its version is unknown, so
//! the next pass reads the stored object whatever the cache holds.
//!
//! Entries live only between a write and its echo (or the next pass's read), so the map stays small however many
//! objects there are.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use kube::Resource;
use kube::runtime::watcher;

/// Per object (by uid), the resourceVersion of this process's last write that the watch has not shown yet (`None`:
/// a write whose outcome is unknown).
#[derive(Clone, Debug, Default)]
pub struct OwnWrites {
    unseen: Arc<Mutex<HashMap<String, Option<String>>>>,
}

impl OwnWrites {
    /// Records `written`, the object as a write of this process returned it.
    pub fn wrote<K: Resource>(&self, written: &K) {
        let meta = written.meta();
        if let (Some(uid), Some(version)) = (&meta.uid, &meta.resource_version) {
            self.lock().insert(uid.clone(), Some(version.clone()));
        }
    }

    /// Records that a write to `obj` failed in a way that may have come after the change was made (a 5xx, a
    /// dropped connection): the next pass reads the stored object.
    pub fn may_have_written<K: Resource>(&self, obj: &K) {
        if let Some(uid) = &obj.meta().uid {
            self.lock().insert(uid.clone(), None);
        }
    }

    /// Whether `cached` may be older than this process's last write to the object, so the reconcile must read
    /// the stored object instead. An entry the copy has caught up with is forgotten.
    pub fn is_behind<K: Resource>(&self, cached: &K) -> bool {
        let meta = cached.meta();
        let Some(uid) = &meta.uid else {
            return false;
        };
        let mut unseen = self.lock();
        if !unseen.contains_key(uid) {
            return false;
        }
        !Self::forget_if_shown(&mut unseen, uid, meta.resource_version.as_ref())
    }

    /// Forgets the object: a read of the stored object is at least as new as any write before it.
    pub fn read<K: Resource>(&self, fresh: &K) {
        if let Some(uid) = &fresh.meta().uid {
            self.lock().remove(uid);
        }
    }

    /// Follows the controller's own watch: the echo of a write (or the object's deletion) ends its entry.
    pub fn observe<K: Resource>(&self, event: &watcher::Event<K>) {
        match event {
            watcher::Event::Apply(obj) | watcher::Event::InitApply(obj) => {
                let meta = obj.meta();
                if let Some(uid) = &meta.uid {
                    Self::forget_if_shown(&mut self.lock(), uid, meta.resource_version.as_ref());
                }
            }
            watcher::Event::Delete(obj) => self.read(obj),
            watcher::Event::Init | watcher::Event::InitDone => {}
        }
    }

    /// Ends the object's entry if `version` is the one its recorded write produced; returns whether it did.
    fn forget_if_shown(unseen: &mut HashMap<String, Option<String>>, uid: &str, version: Option<&String>) -> bool {
        let shown = matches!(unseen.get(uid), Some(Some(written)) if Some(written) == version);
        if shown {
            unseen.remove(uid);
        }
        shown
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Option<String>>> {
        // Every critical section is a single map operation, so a panic elsewhere cannot leave it half-done.
        self.unseen.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    fn version(uid: &str, resource_version: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("app".into()),
                namespace: Some("team".into()),
                uid: Some(uid.into()),
                resource_version: Some(resource_version.into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    #[test]
    fn a_copy_other_than_the_last_write_is_behind_until_the_watch_shows_the_write() {
        let writes = OwnWrites::default();
        assert!(!writes.is_behind(&version("u1", "10")), "nothing written yet");
        writes.wrote(&version("u1", "11"));
        assert!(
            writes.is_behind(&version("u1", "10")),
            "the cache still holds the version before the write"
        );
        assert!(!writes.is_behind(&version("u2", "10")), "another object is unaffected");
        writes.observe(&watcher::Event::Apply(version("u1", "10")));
        assert!(writes.is_behind(&version("u1", "10")), "an older event is not the echo");
        writes.observe(&watcher::Event::Apply(version("u1", "11")));
        assert!(writes.is_empty(), "the echo ends the entry");
        assert!(!writes.is_behind(&version("u1", "10")));
    }

    #[test]
    fn a_copy_at_the_written_version_a_fresh_read_or_a_deletion_ends_the_entry() {
        let writes = OwnWrites::default();
        writes.wrote(&version("u1", "11"));
        assert!(
            !writes.is_behind(&version("u1", "11")),
            "the cache caught up before the echo was seen"
        );
        assert!(writes.is_empty());

        writes.wrote(&version("u1", "12"));
        writes.read(&version("u1", "13"));
        assert!(writes.is_empty(), "a read is newer than the write");

        writes.wrote(&version("u1", "14"));
        writes.observe(&watcher::Event::InitApply(version("u1", "14")));
        assert!(writes.is_empty(), "a relist that shows the write ends it too");

        writes.wrote(&version("u1", "15"));
        writes.observe(&watcher::Event::Delete(version("u1", "15")));
        assert!(writes.is_empty());
    }

    #[test]
    fn a_write_of_unknown_outcome_is_behind_until_a_read() {
        let writes = OwnWrites::default();
        writes.may_have_written(&version("u1", "10"));
        assert!(
            writes.is_behind(&version("u1", "10")),
            "the write may have been made after all"
        );
        writes.observe(&watcher::Event::Apply(version("u1", "11")));
        assert!(
            writes.is_behind(&version("u1", "11")),
            "no event can be recognised as its echo"
        );
        writes.read(&version("u1", "11"));
        assert!(writes.is_empty());
    }

    #[test]
    fn the_latest_write_is_the_one_that_counts() {
        let writes = OwnWrites::default();
        writes.wrote(&version("u1", "11"));
        writes.wrote(&version("u1", "12"));
        writes.observe(&watcher::Event::Apply(version("u1", "11")));
        assert!(
            writes.is_behind(&version("u1", "11")),
            "the second write is not shown yet"
        );
        assert_eq!(writes.len(), 1);
    }
}
