//! The record of every authorization decision: who asked for what, whether it was allowed, and which rule of
//! which role allowed it. Tests read it through the hooks to assert "no unexpected Forbidden" and to find the
//! rules of the shipped roles that nothing used.
//!
//! Decisions are counted per distinct row rather than appended, so the log stays small under load (the
//! benchmark makes hundreds of thousands of requests as one user).

use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::rbac::{Grant, Verdict};
use super::{Attributes, UserInfo};

/// The binding a `system:masters` decision is recorded under (that group bypasses RBAC).
pub const MASTERS_BYPASS: &str = "group/system:masters";

/// An authorization decision, as the handlers see it.
pub type Decision = Verdict;

/// One distinct decision and how often it was made.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionRow {
    /// The user name.
    pub user: String,
    /// The verb.
    pub verb: String,
    /// The API group (empty for core and for non-resource requests).
    pub group: String,
    /// `resource` or `resource/subresource`; empty for non-resource requests.
    pub resource: String,
    /// The namespace; empty for cluster scope.
    pub namespace: String,
    /// The path of a non-resource request.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// The object's name, where the log knows it (a real apiserver's audit log does; the emulator's rows name the
    /// rule instead), so rules limited to object names can be matched.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Whether it was allowed.
    pub allowed: bool,
    /// The binding that allowed it (`ClusterRoleBinding/x`, `RoleBinding/ns/x`, `group/system:masters`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub binding: String,
    /// The rule that allowed it: `ClusterRole/name#index` or `Role/ns/name#index` of the role it was written in.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub rule: String,
    /// How many times.
    pub count: u64,
}

/// One distinct decision, as counted (the fields of a [`DecisionRow`] but its count).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct RowKey {
    user: String,
    verb: String,
    group: String,
    resource: String,
    namespace: String,
    path: String,
    allowed: bool,
    binding: String,
    rule: String,
}

/// The fields of a decision, borrowed, so an already counted decision is found without allocating.
#[derive(Hash)]
struct RowRef<'a> {
    user: &'a str,
    verb: &'a str,
    group: &'a str,
    resource: &'a str,
    subresource: &'a str,
    namespace: &'a str,
    path: &'a str,
    allowed: bool,
    binding: &'a str,
    rule: Option<&'a super::rbac::RuleSource>,
}

impl RowRef<'_> {
    fn combined_resource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.to_string()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }

    fn matches(&self, key: &RowKey) -> bool {
        let resource_matches = if self.subresource.is_empty() {
            key.resource == self.resource
        } else {
            key.resource.len() == self.resource.len() + 1 + self.subresource.len()
                && key.resource.starts_with(self.resource)
                && key.resource.ends_with(self.subresource)
        };
        key.user == self.user
            && key.verb == self.verb
            && key.group == self.group
            && resource_matches
            && key.namespace == self.namespace
            && key.path == self.path
            && key.allowed == self.allowed
            && key.binding == self.binding
            && self.rule.map_or(key.rule.is_empty(), |r| key.rule == r.to_string())
    }

    fn to_key(&self) -> RowKey {
        RowKey {
            user: self.user.to_string(),
            verb: self.verb.to_string(),
            group: self.group.to_string(),
            resource: self.combined_resource(),
            namespace: self.namespace.to_string(),
            path: self.path.to_string(),
            allowed: self.allowed,
            binding: self.binding.to_string(),
            rule: self.rule.map(ToString::to_string).unwrap_or_default(),
        }
    }
}

/// Counted decisions, bucketed by the hash of their borrowed fields.
type Buckets = HashMap<u64, Vec<(RowKey, u64)>>;

/// One 403 answer: who got it, for which request, and its message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForbiddenResponse {
    /// The user name.
    pub user: String,
    /// The HTTP method.
    pub method: String,
    /// The request path.
    pub path: String,
    /// The Status message.
    pub message: String,
}

/// The decision log.
pub struct DecisionLog {
    enabled: bool,
    rows: Mutex<Buckets>,
    forbidden: Mutex<Vec<ForbiddenResponse>>,
    labels: Mutex<BTreeSet<String>>,
}

impl Default for DecisionLog {
    fn default() -> Self {
        DecisionLog {
            enabled: true,
            rows: Mutex::default(),
            forbidden: Mutex::default(),
            labels: Mutex::default(),
        }
    }
}

/// A decision log as written to disk for a check across a whole test run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionLogFile {
    /// What the test installed (e.g. the overlays whose RBAC it applied).
    pub labels: Vec<String>,
    /// Every distinct decision.
    pub rows: Vec<DecisionRow>,
}

impl DecisionLog {
    /// A log that records nothing (in-process writes of the emulator itself).
    pub fn disabled() -> Self {
        DecisionLog {
            enabled: false,
            ..DecisionLog::default()
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Buckets> {
        // Counter increments only: a panicking holder cannot leave the map inconsistent.
        self.rows.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records one decision.
    pub fn record(&self, user: &UserInfo, attributes: &Attributes, decision: &Decision) {
        if !self.enabled {
            return;
        }
        let row = match attributes {
            Attributes::Resource(r) => RowRef {
                user: &user.name,
                verb: &r.verb,
                group: &r.group,
                resource: &r.resource,
                subresource: &r.subresource,
                namespace: &r.namespace,
                path: "",
                allowed: decision.allowed,
                binding: "",
                rule: None,
            },
            Attributes::NonResource { verb, path } => RowRef {
                user: &user.name,
                verb,
                group: "",
                resource: "",
                subresource: "",
                namespace: "",
                path,
                allowed: decision.allowed,
                binding: "",
                rule: None,
            },
        };
        let row = match &decision.grant {
            Some(Grant { binding, rule, .. }) => RowRef {
                binding,
                rule: rule.as_ref(),
                ..row
            },
            None if decision.allowed => RowRef {
                binding: MASTERS_BYPASS,
                ..row
            },
            None => row,
        };
        let mut hasher = std::hash::DefaultHasher::new();
        row.hash(&mut hasher);
        let mut buckets = self.lock();
        let bucket = buckets.entry(hasher.finish()).or_default();
        match bucket.iter_mut().find(|(key, _)| row.matches(key)) {
            Some((_, count)) => *count += 1,
            None => bucket.push((row.to_key(), 1)),
        }
    }

    /// Every distinct decision so far.
    pub fn rows(&self) -> Vec<DecisionRow> {
        let mut counted: Vec<(RowKey, u64)> = self.lock().values().flatten().cloned().collect();
        counted.sort();
        counted
            .into_iter()
            .map(|(key, count)| DecisionRow {
                name: String::new(),
                user: key.user,
                verb: key.verb,
                group: key.group,
                resource: key.resource,
                namespace: key.namespace,
                path: key.path,
                allowed: key.allowed,
                binding: key.binding,
                rule: key.rule,
                count,
            })
            .collect()
    }

    /// Notes something about the run the decisions came from (the harness labels the overlays it installed).
    pub fn label(&self, label: &str) {
        self.labels
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(label.to_string());
    }

    /// The log as written to disk.
    pub fn to_file(&self) -> DecisionLogFile {
        DecisionLogFile {
            labels: self
                .labels
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .cloned()
                .collect(),
            rows: self.rows(),
        }
    }

    /// Records a 403 answer (from RBAC, the escalation check, admission or a terminating namespace alike).
    pub fn record_forbidden(&self, response: ForbiddenResponse) {
        if self.enabled {
            self.forbidden.lock().unwrap_or_else(|p| p.into_inner()).push(response);
        }
    }

    /// Every 403 answered so far, in order.
    pub fn forbidden_responses(&self) -> Vec<ForbiddenResponse> {
        self.forbidden.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Forgets every decision and 403.
    pub fn clear(&self) {
        self.lock().clear();
        self.forbidden.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}
