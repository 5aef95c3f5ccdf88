//! How many of a controller's objects stand where, by their Ready condition, for the
//! `platform_operator_objects` gauge. The tally follows the controller's own watch event by event, so a scrape
//! reads a handful of counters instead of walking the cache: with 10,000 objects the walk (every object's Ready
//! condition copied and counted) cost milliseconds per scrape, paid as often as anyone scrapes.
//!
//! It mirrors the cache exactly: an object is counted once its event reaches the watch, forgotten on its
//! deletion, and a re-list replaces the whole tally when it completes (objects deleted while the watch was down
//! leave it then), as the reflector store does.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex};

use kube::Resource;
use kube::runtime::watcher;

use crate::metrics::ObjectReadiness;

/// The objects of one controller in one scope, counted by readiness. Cheap to clone (one shared tally).
///
/// Objects are known by a 64-bit hash of their namespace and name, as in [`crate::queue::QueueProbe`]; two whose
/// hashes collide (odds about n²/2⁶⁵) would be counted as one.
#[derive(Clone)]
pub struct ReadyTally {
    inner: Arc<Mutex<Tally>>,
    hasher: RandomState,
}

/// The tally's state: which standing each object has, and how many objects have each standing.
#[derive(Default)]
struct Tally {
    /// Every distinct standing seen, in order of first sight; objects refer to them by index.
    standings: Vec<ObjectReadiness>,
    /// How many objects have each standing (same index as `standings`).
    counts: Vec<i64>,
    /// Each counted object's standing.
    objects: HashMap<u64, usize>,
    /// The objects of a re-list in progress; they replace `objects` when it completes.
    relisting: Option<HashMap<u64, usize>>,
}

impl Default for ReadyTally {
    fn default() -> Self {
        Self {
            inner: Arc::new(Mutex::new(Tally::default())),
            hasher: RandomState::new(),
        }
    }
}

impl ReadyTally {
    /// Follows one event of the watch; `standing` says where an object stands, or `None` for an object not
    /// counted here (another shard's).
    pub fn observe<K: Resource>(&self, event: &watcher::Event<K>, standing: impl Fn(&K) -> Option<ObjectReadiness>) {
        let Ok(mut tally) = self.inner.lock() else {
            return;
        };
        match event {
            watcher::Event::Init => tally.relisting = Some(HashMap::new()),
            watcher::Event::InitApply(obj) => {
                if let Some(standing) = standing(obj) {
                    let index = tally.index_of(standing);
                    let key = self.key_of(obj);
                    if let Some(relisting) = tally.relisting.as_mut() {
                        relisting.insert(key, index);
                    }
                }
            }
            watcher::Event::InitDone => {
                if let Some(objects) = tally.relisting.take() {
                    tally.replace(objects);
                }
            }
            watcher::Event::Apply(obj) => match standing(obj) {
                Some(standing) => {
                    let index = tally.index_of(standing);
                    let previous = tally.objects.insert(self.key_of(obj), index);
                    tally.moved(previous, Some(index));
                }
                None => {
                    let previous = tally.objects.remove(&self.key_of(obj));
                    tally.moved(previous, None);
                }
            },
            watcher::Event::Delete(obj) => {
                let previous = tally.objects.remove(&self.key_of(obj));
                tally.moved(previous, None);
            }
        }
    }

    /// The standings with at least one object, and how many objects have each.
    pub fn counts(&self) -> Vec<(ObjectReadiness, i64)> {
        let Ok(tally) = self.inner.lock() else {
            return Vec::new();
        };
        tally
            .standings
            .iter()
            .zip(&tally.counts)
            .filter(|(_, count)| **count > 0)
            .map(|(standing, count)| (standing.clone(), *count))
            .collect()
    }

    fn key_of<K: Resource>(&self, obj: &K) -> u64 {
        let meta = obj.meta();
        self.hasher.hash_one((&meta.namespace, &meta.name))
    }
}

impl Tally {
    /// The index of `standing`, added if new (there are a few per controller: one per Ready reason).
    fn index_of(&mut self, standing: ObjectReadiness) -> usize {
        match self.standings.iter().position(|known| *known == standing) {
            Some(index) => index,
            None => {
                self.standings.push(standing);
                self.counts.push(0);
                self.standings.len() - 1
            }
        }
    }

    /// One object moved from one standing (or none) to another (or none).
    fn moved(&mut self, from: Option<usize>, to: Option<usize>) {
        if let Some(count) = from.and_then(|index| self.counts.get_mut(index)) {
            *count -= 1;
        }
        if let Some(count) = to.and_then(|index| self.counts.get_mut(index)) {
            *count += 1;
        }
    }

    /// A completed re-list: these are now all the objects there are.
    fn replace(&mut self, objects: HashMap<u64, usize>) {
        self.counts.iter_mut().for_each(|count| *count = 0);
        for index in objects.values() {
            if let Some(count) = self.counts.get_mut(*index) {
                *count += 1;
            }
        }
        self.objects = objects;
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::*;

    fn object(name: &str, reason: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("team".into()),
                labels: Some([("reason".to_string(), reason.to_string())].into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    /// Reads the standing from the `reason` label; objects named `other-*` belong to another shard.
    fn standing(obj: &ConfigMap) -> Option<ObjectReadiness> {
        let name = obj.metadata.name.as_deref().unwrap_or_default();
        let reason = obj.metadata.labels.as_ref()?.get("reason")?.clone();
        let ready = if reason == "AllReady" { "true" } else { "false" };
        (!name.starts_with("other-")).then_some(ObjectReadiness { ready, reason })
    }

    fn counted(tally: &ReadyTally) -> Vec<(String, i64)> {
        let mut counts: Vec<(String, i64)> = tally
            .counts()
            .into_iter()
            .map(|(standing, count)| (standing.reason, count))
            .collect();
        counts.sort();
        counts
    }

    fn pairs(expected: &[(&str, i64)]) -> Vec<(String, i64)> {
        expected
            .iter()
            .map(|(reason, count)| (reason.to_string(), *count))
            .collect()
    }

    #[test]
    fn follows_changes_and_deletions_and_skips_other_shards() {
        let tally = ReadyTally::default();
        tally.observe(&watcher::Event::Apply(object("a", "Pending")), standing);
        tally.observe(&watcher::Event::Apply(object("b", "Pending")), standing);
        tally.observe(&watcher::Event::Apply(object("other-c", "Pending")), standing);
        assert_eq!(counted(&tally), pairs(&[("Pending", 2)]));

        tally.observe(&watcher::Event::Apply(object("a", "AllReady")), standing);
        tally.observe(&watcher::Event::Apply(object("a", "AllReady")), standing);
        assert_eq!(counted(&tally), pairs(&[("AllReady", 1), ("Pending", 1)]));

        tally.observe(&watcher::Event::Delete(object("b", "Pending")), standing);
        tally.observe(&watcher::Event::Delete(object("never-seen", "Pending")), standing);
        assert_eq!(counted(&tally), pairs(&[("AllReady", 1)]));
    }

    #[test]
    fn a_completed_relist_replaces_the_tally_and_an_unfinished_one_changes_nothing() {
        let tally = ReadyTally::default();
        tally.observe(&watcher::Event::Apply(object("a", "AllReady")), standing);
        tally.observe(&watcher::Event::Apply(object("b", "Pending")), standing);

        tally.observe(&watcher::Event::<ConfigMap>::Init, standing);
        tally.observe(&watcher::Event::InitApply(object("b", "AllReady")), standing);
        tally.observe(&watcher::Event::InitApply(object("c", "Failed")), standing);
        assert_eq!(
            counted(&tally),
            pairs(&[("AllReady", 1), ("Pending", 1)]),
            "not replaced before InitDone"
        );

        tally.observe(&watcher::Event::<ConfigMap>::InitDone, standing);
        assert_eq!(
            counted(&tally),
            pairs(&[("AllReady", 1), ("Failed", 1)]),
            "a, deleted while down, is gone"
        );

        tally.observe(&watcher::Event::Delete(object("b", "AllReady")), standing);
        assert_eq!(counted(&tally), pairs(&[("Failed", 1)]));
    }
}
