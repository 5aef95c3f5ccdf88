//! The record of every authorization decision: who asked for what, whether it was allowed, and which rule of
//! which role allowed it. Tests read it through the hooks to assert "no unexpected Forbidden" and to find the
//! rules of the shipped roles that nothing used.
//!
//! Decisions are counted per distinct row rather than appended, so the log stays small under load (the
//! benchmark makes hundreds of thousands of requests as one user).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::rbac::{Grant, Verdict};
use super::{Attributes, UserInfo};

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

type RowKey = (String, String, String, String, String, String, bool, String, String);

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
    rows: Mutex<BTreeMap<RowKey, u64>>,
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

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<RowKey, u64>> {
        // Counter increments only: a panicking holder cannot leave the map inconsistent.
        self.rows.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records one decision.
    pub fn record(&self, user: &UserInfo, attributes: &Attributes, decision: &Decision) {
        if !self.enabled {
            return;
        }
        let (verb, group, resource, namespace, path) = match attributes {
            Attributes::Resource(r) => (
                r.verb.clone(),
                r.group.clone(),
                r.combined_resource(),
                r.namespace.clone(),
                String::new(),
            ),
            Attributes::NonResource { verb, path } => {
                (verb.clone(), String::new(), String::new(), String::new(), path.clone())
            }
        };
        let (binding, rule) = match &decision.grant {
            Some(Grant { binding, rule, .. }) => (
                binding.clone(),
                rule.as_ref().map(ToString::to_string).unwrap_or_default(),
            ),
            None => (String::new(), String::new()),
        };
        let key = (
            user.name.clone(),
            verb,
            group,
            resource,
            namespace,
            path,
            decision.allowed,
            binding,
            rule,
        );
        *self.lock().entry(key).or_default() += 1;
    }

    /// Every distinct decision so far.
    pub fn rows(&self) -> Vec<DecisionRow> {
        self.lock()
            .iter()
            .map(|(key, count)| DecisionRow {
                user: key.0.clone(),
                verb: key.1.clone(),
                group: key.2.clone(),
                resource: key.3.clone(),
                namespace: key.4.clone(),
                path: key.5.clone(),
                allowed: key.6,
                binding: key.7.clone(),
                rule: key.8.clone(),
                count: *count,
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
