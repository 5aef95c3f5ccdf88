//! Test hooks: request counters, fault injection, cutting watch streams and compacting the watch history.
//!
//! Reachable in-process through [`Hooks`] (on the server handle) and over HTTP under `/__emulator/`, a path
//! no real client uses:
//!
//! | request | effect |
//! |---|---|
//! | `GET /__emulator/counters` | `[{"verb","group","resource","subresource","count"}]` |
//!
//! In-process only, [`Hooks::count_form`] also tells how many of those requests asked for the object, a Table or
//! metadata only (e.g. to check that a controller watches Secrets by metadata only).
//! | `DELETE /__emulator/counters` | resets the counters |
//! | `POST /__emulator/faults` with a [`Fault`] as JSON | adds a fault rule |
//! | `DELETE /__emulator/faults` | clears every fault rule |
//! | `POST /__emulator/watches/cut[?group=G&resource=R]` | ends open watch streams (of one resource) |
//! | `POST /__emulator/compact` | drops the watch history, so older resourceVersions get 410 |

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use emulator_kit::chance::Chance;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use super::resources::GroupResource;

/// Which request a counter or fault refers to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RequestKey {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`.
    pub verb: String,
    /// The API group (empty for core).
    pub group: String,
    /// The plural resource.
    pub resource: String,
    /// The subresource, or empty.
    #[serde(default)]
    pub subresource: String,
}

/// What form a request asked its answer in (the negotiated Accept header).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ResponseForm {
    /// The object or list itself.
    Object,
    /// A `meta.k8s.io` Table.
    Table,
    /// `PartialObjectMetadata` or `PartialObjectMetadataList`.
    Metadata,
}

/// One counter row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterRow {
    /// What was requested.
    #[serde(flatten)]
    pub key: RequestKey,
    /// How many times.
    pub count: u64,
}

/// A fault rule: requests that match get a delay and/or an error.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fault {
    /// Verbs to match; empty matches every verb.
    #[serde(default)]
    pub verbs: Vec<String>,
    /// Group to match; `None` matches every group.
    #[serde(default)]
    pub group: Option<String>,
    /// Resource to match; `None` matches every resource.
    #[serde(default)]
    pub resource: Option<String>,
    /// Delay added before handling, in milliseconds.
    #[serde(default)]
    pub latency_ms: u64,
    /// HTTP status to answer with instead of handling (e.g. 500, 429, 503).
    #[serde(default)]
    pub error_status: Option<u16>,
    /// How many matching requests the rule applies to; `None` until cleared.
    #[serde(default)]
    pub count: Option<u32>,
    /// The user whose requests it matches; `None` matches everyone (a chaos run fails only the operator's).
    #[serde(default)]
    pub user: Option<String>,
    /// Handle the request first and only then answer with the error: the change is made but the client never
    /// learns it, like an answer lost on the way back.
    #[serde(default)]
    pub after_handling: bool,
    /// The share of matching requests it applies to (default: all).
    #[serde(default, flatten)]
    pub chance: Chance,
}

impl Fault {
    fn matches(&self, key: &RequestKey, user: &str) -> bool {
        (self.verbs.is_empty() || self.verbs.iter().any(|v| v == &key.verb))
            && self.group.as_ref().is_none_or(|g| g == &key.group)
            && self.resource.as_ref().is_none_or(|r| r == &key.resource)
            && self.user.as_ref().is_none_or(|u| u == user)
    }
}

/// What a fault decided for one request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaultAction {
    /// Delay before answering.
    pub latency: Duration,
    /// Error status to answer with.
    pub error_status: Option<u16>,
    /// Answer with the error only after handling the request.
    pub after_handling: bool,
}

/// The shared hook state.
pub struct Hooks {
    counters: Mutex<BTreeMap<RequestKey, u64>>,
    by_user: Mutex<BTreeMap<(String, RequestKey), u64>>,
    forms: Mutex<BTreeMap<(RequestKey, ResponseForm), u64>>,
    faults: Mutex<Vec<Fault>>,
    cut: broadcast::Sender<Option<GroupResource>>,
}

impl Default for Hooks {
    fn default() -> Self {
        let (cut, _) = broadcast::channel(16);
        Hooks {
            counters: Mutex::default(),
            by_user: Mutex::default(),
            forms: Mutex::default(),
            faults: Mutex::default(),
            cut,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Counters and fault lists stay consistent even if a holder panicked (single inserts/removes).
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Hooks {
    /// Counts one request of `user` and returns the fault action for it, consuming one use of the first rule
    /// that matches and draws it.
    pub fn on_request(&self, key: &RequestKey, user: &str) -> FaultAction {
        *lock(&self.counters).entry(key.clone()).or_default() += 1;
        *lock(&self.by_user).entry((user.to_string(), key.clone())).or_default() += 1;
        let mut faults = lock(&self.faults);
        let mut action = FaultAction::default();
        if let Some(index) = faults.iter_mut().position(|f| f.matches(key, user) && f.chance.draw()) {
            let fault = &mut faults[index];
            action.latency = Duration::from_millis(fault.latency_ms);
            action.error_status = fault.error_status;
            action.after_handling = fault.after_handling;
            if let Some(remaining) = fault.count.as_mut() {
                *remaining = remaining.saturating_sub(1);
                if *remaining == 0 {
                    faults.remove(index);
                }
            }
        }
        action
    }

    /// Records the form a counted request asked its answer in.
    pub fn on_output(&self, key: &RequestKey, form: ResponseForm) {
        *lock(&self.forms).entry((key.clone(), form)).or_default() += 1;
    }

    /// How many requests `(verb, group, resource)` of any subresource asked for their answer in `form`.
    pub fn count_form(&self, verb: &str, group: &str, resource: &str, form: ResponseForm) -> u64 {
        lock(&self.forms)
            .iter()
            .filter(|((key, f), _)| *f == form && key.verb == verb && key.group == group && key.resource == resource)
            .map(|(_, count)| *count)
            .sum()
    }

    /// How many requests matched `(verb, group, resource, subresource)`.
    pub fn count(&self, verb: &str, group: &str, resource: &str, subresource: &str) -> u64 {
        let key = RequestKey {
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            subresource: subresource.into(),
        };
        lock(&self.counters).get(&key).copied().unwrap_or(0)
    }

    /// Every counter.
    pub fn counters(&self) -> Vec<CounterRow> {
        lock(&self.counters)
            .iter()
            .map(|(k, c)| CounterRow {
                key: k.clone(),
                count: *c,
            })
            .collect()
    }

    /// The counters of one user's requests (a benchmark counts the operator's alone).
    pub fn counters_of(&self, user: &str) -> Vec<CounterRow> {
        lock(&self.by_user)
            .iter()
            .filter(|((u, _), _)| u == user)
            .map(|((_, key), count)| CounterRow {
                key: key.clone(),
                count: *count,
            })
            .collect()
    }

    /// Resets the counters.
    pub fn reset_counters(&self) {
        lock(&self.counters).clear();
        lock(&self.by_user).clear();
        lock(&self.forms).clear();
    }

    /// Adds a fault rule (rules are checked in the order added).
    pub fn inject(&self, fault: Fault) {
        lock(&self.faults).push(fault);
    }

    /// Removes every fault rule.
    pub fn clear_faults(&self) {
        lock(&self.faults).clear();
    }

    /// Ends every open watch stream, or only those of one resource.
    pub fn cut_watches(&self, resource: Option<GroupResource>) {
        // No receiver means no open watch: nothing to cut.
        let _ = self.cut.send(resource);
    }

    /// A receiver of cut requests, for one watch stream.
    pub fn subscribe_cuts(&self) -> broadcast::Receiver<Option<GroupResource>> {
        self.cut.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(verb: &str) -> RequestKey {
        RequestKey {
            verb: verb.into(),
            group: String::new(),
            resource: "configmaps".into(),
            subresource: String::new(),
        }
    }

    #[test]
    fn counted_faults_expire_after_n_requests() {
        let hooks = Hooks::default();
        hooks.inject(Fault {
            verbs: vec!["get".into()],
            error_status: Some(500),
            count: Some(2),
            ..Fault::default()
        });
        assert_eq!(hooks.on_request(&key("list"), "tester").error_status, None);
        assert_eq!(hooks.on_request(&key("get"), "tester").error_status, Some(500));
        assert_eq!(hooks.on_request(&key("get"), "tester").error_status, Some(500));
        assert_eq!(hooks.on_request(&key("get"), "tester").error_status, None);
        assert_eq!(hooks.count("get", "", "configmaps", ""), 3);
    }

    #[test]
    fn a_fault_for_one_user_leaves_the_others_alone_and_applies_to_its_share() {
        let hooks = Hooks::default();
        hooks.inject(Fault {
            error_status: Some(503),
            user: Some("operator".into()),
            chance: Chance::percent(50, 3),
            ..Fault::default()
        });
        assert!((0..50).all(|_| hooks.on_request(&key("get"), "tester").error_status.is_none()));
        let failed = (0..1000)
            .filter(|_| hooks.on_request(&key("get"), "operator").error_status.is_some())
            .count();
        assert!((400..=600).contains(&failed), "{failed} of 1000");
    }
}
