//! Test hooks: per-route request counters, fault injection, a "down" switch, seeding and inspection.
//!
//! Reachable in-process through the [`RancherHandle`](super::RancherHandle) and over HTTP under `/__emulator/`,
//! a path no Rancher client uses (no authentication, not counted):
//!
//! | request | effect |
//! |---|---|
//! | `GET /__emulator/counters` | `[{"verb","resource","count"}]` |
//! | `DELETE /__emulator/counters` | resets the counters |
//! | `POST /__emulator/faults` with a [`Fault`] | adds a fault rule |
//! | `DELETE /__emulator/faults` | clears every fault rule |
//! | `PUT /__emulator/down` `{"down":true}` | drops every API connection until set back to false |
//! | `POST /__emulator/clusters` with a [`ClusterSeed`] | adds a cluster |
//! | `POST /__emulator/projects` with a [`ProjectSeed`] | adds a project, answers it as norman renders it |
//! | `POST /__emulator/namespaces` with a [`NamespaceSeed`] | adds a namespace |
//! | `POST /__emulator/roletemplates` with a [`RoleTemplateSeed`] | adds or replaces a role template |
//! | `POST /__emulator/tokens` with an [`ApiToken`] | accepts another token |
//! | `DELETE /__emulator/tokens/<accessKey>` | revokes a token |
//! | `PUT /__emulator/settings` `{"duplicateBindings":"accept"\|"reject"}` | switches the duplicate policy |
//! | `GET /__emulator/state` | every object, rendered as the API renders it |
//!
//! Verbs are `list`, `get`, `create`, `update`, `patch`, `delete` and `action`; resources are `projects`,
//! `projectroletemplatebindings`, `clusterroletemplatebindings`, `clusters`, `roletemplates`, `namespaces` (the
//! norman cluster API) and `k8s-namespaces` (the Kubernetes proxy).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::http::Method;
use axum::response::Response;
use emulator_kit::chance::Chance;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::config::{ApiToken, ClusterSeed, DuplicateBindingPolicy};
use super::norman::{ApiError, json_response};
use super::server::Shared;
use super::store::{NamespaceSeed, ProjectSeed, RoleTemplateSeed};

/// Which requests a counter or fault refers to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RouteKey {
    /// `list`, `get`, `create`, `update`, `patch`, `delete` or `action`.
    pub verb: String,
    /// e.g. `projects` or `k8s-namespaces`.
    pub resource: String,
}

impl RouteKey {
    /// A key.
    pub fn new(verb: &str, resource: &str) -> Self {
        Self {
            verb: verb.to_string(),
            resource: resource.to_string(),
        }
    }
}

/// One counter row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterRow {
    /// What was requested.
    #[serde(flatten)]
    pub key: RouteKey,
    /// How many times.
    pub count: u64,
}

/// A fault rule: matching requests are delayed, answered with an error, or have their connection dropped.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fault {
    /// Verb to match; `None` matches every verb.
    #[serde(default)]
    pub verb: Option<String>,
    /// Resource to match; `None` matches every resource.
    #[serde(default)]
    pub resource: Option<String>,
    /// Delay added before answering, in milliseconds.
    #[serde(default)]
    pub latency_ms: u64,
    /// Status to answer with (a norman error body) instead of handling the request.
    #[serde(default)]
    pub error_status: Option<u16>,
    /// Close the connection without answering.
    #[serde(default)]
    pub drop_connection: bool,
    /// Handle the request first and only then fail the answer (error status or dropped connection): the
    /// change is made but the client never learns it, like an answer lost on the way back.
    #[serde(default)]
    pub after_handling: bool,
    /// How many matching requests the rule applies to; `None` until cleared.
    #[serde(default)]
    pub count: Option<u32>,
    /// The share of matching requests it applies to (default: all).
    #[serde(default, flatten)]
    pub chance: Chance,
}

impl Fault {
    /// A fault on one verb of one resource (`None` for any).
    pub fn on(verb: Option<&str>, resource: Option<&str>) -> Self {
        Self {
            verb: verb.map(str::to_string),
            resource: resource.map(str::to_string),
            ..Self::default()
        }
    }

    /// Answers with `status`.
    pub fn status(mut self, status: u16) -> Self {
        self.error_status = Some(status);
        self
    }

    /// Drops the connection.
    pub fn drop_connection(mut self) -> Self {
        self.drop_connection = true;
        self
    }

    /// Makes the change first, then fails the answer.
    pub fn after_handling(mut self) -> Self {
        self.after_handling = true;
        self
    }

    /// Delays by `latency`.
    pub fn latency(mut self, latency: Duration) -> Self {
        self.latency_ms = u64::try_from(latency.as_millis()).unwrap_or(u64::MAX);
        self
    }

    /// Applies to the next `count` matching requests only.
    pub fn times(mut self, count: u32) -> Self {
        self.count = Some(count);
        self
    }

    /// Applies to `percent` % of the matching requests, drawn from `seed`.
    pub fn percent(mut self, percent: u8, seed: u64) -> Self {
        self.chance = Chance::percent(percent, seed);
        self
    }

    fn matches(&self, key: &RouteKey) -> bool {
        self.verb.as_ref().is_none_or(|v| v == &key.verb) && self.resource.as_ref().is_none_or(|r| r == &key.resource)
    }
}

/// What the hooks decided for one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultAction {
    /// Delay before answering.
    pub latency: Duration,
    /// Error status to answer with.
    pub error_status: Option<u16>,
    /// Drop the connection.
    pub drop_connection: bool,
    /// Apply the error or drop after handling the request.
    pub after_handling: bool,
}

/// Counters, fault rules and the down switch.
#[derive(Default)]
pub struct Hooks {
    counters: Mutex<BTreeMap<RouteKey, u64>>,
    faults: Mutex<Vec<Fault>>,
    down: AtomicBool,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Each holder does a single insert, removal or read, so the data stays consistent after a panic.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Hooks {
    /// Counts one request and returns what to do with it, consuming one use of the first matching rule.
    pub fn on_request(&self, key: &RouteKey) -> FaultAction {
        *lock(&self.counters).entry(key.clone()).or_default() += 1;
        let mut action = FaultAction {
            drop_connection: self.is_down(),
            ..FaultAction::default()
        };
        let mut faults = lock(&self.faults);
        if let Some(index) = faults.iter_mut().position(|f| f.matches(key) && f.chance.draw()) {
            let fault = &mut faults[index];
            action.latency = Duration::from_millis(fault.latency_ms);
            action.error_status = fault.error_status;
            action.drop_connection |= fault.drop_connection;
            action.after_handling = fault.after_handling && !self.is_down();
            if let Some(remaining) = fault.count.as_mut() {
                *remaining = remaining.saturating_sub(1);
                if *remaining == 0 {
                    faults.remove(index);
                }
            }
        }
        action
    }

    /// All counters.
    pub fn counters(&self) -> Vec<CounterRow> {
        lock(&self.counters)
            .iter()
            .map(|(key, count)| CounterRow {
                key: key.clone(),
                count: *count,
            })
            .collect()
    }

    /// One counter.
    pub fn count(&self, verb: &str, resource: &str) -> u64 {
        lock(&self.counters)
            .get(&RouteKey::new(verb, resource))
            .copied()
            .unwrap_or(0)
    }

    /// Resets the counters.
    pub fn reset_counters(&self) {
        lock(&self.counters).clear();
    }

    /// Adds a fault rule (rules are tried in the order added).
    pub fn inject(&self, fault: Fault) {
        lock(&self.faults).push(fault);
    }

    /// Clears every fault rule.
    pub fn clear_faults(&self) {
        lock(&self.faults).clear();
    }

    /// Turns the down switch on or off.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// Whether the emulator plays dead.
    pub fn is_down(&self) -> bool {
        self.down.load(Ordering::SeqCst)
    }
}

/// The norman code for an injected error status.
pub fn fault_code(status: u16) -> &'static str {
    match status {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "PermissionDenied",
        404 => "NotFound",
        409 => "Conflict",
        422 => "InvalidBodyContent",
        429 => "TooManyRequests",
        503 => "ClusterUnavailable",
        _ => "ServerError",
    }
}

#[derive(Deserialize)]
struct DownBody {
    down: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SettingsBody {
    #[serde(default)]
    duplicate_bindings: Option<DuplicateBindingPolicy>,
    #[serde(default)]
    project_removal_delay_ms: Option<u64>,
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError::new(400, "BadRequest", format!("invalid hook body: {e}")))
}

fn ok() -> Response {
    json_response(200, &json!({}))
}

/// Serves `/__emulator/<segments>`.
pub fn handle_http(shared: &Shared, base: &str, method: &Method, segments: &[String], body: &[u8]) -> Response {
    match serve(shared, base, method, segments, body) {
        Ok(response) => response,
        Err(error) => json_response(error.status, &error.body()),
    }
}

fn serve(shared: &Shared, base: &str, method: &Method, segments: &[String], body: &[u8]) -> Result<Response, ApiError> {
    let parts: Vec<&str> = segments.iter().map(String::as_str).collect();
    let bad_request = |e: super::store::SeedError| ApiError::new(400, "BadRequest", e.to_string());
    match (method.as_str(), parts.as_slice()) {
        ("GET", ["counters"]) => Ok(json_response(200, &json!(shared.hooks.counters()))),
        ("DELETE", ["counters"]) => {
            shared.hooks.reset_counters();
            Ok(ok())
        }
        ("POST", ["faults"]) => {
            shared.hooks.inject(parse::<Fault>(body)?);
            Ok(ok())
        }
        ("DELETE", ["faults"]) => {
            shared.hooks.clear_faults();
            Ok(ok())
        }
        ("PUT", ["down"]) => {
            shared.hooks.set_down(parse::<DownBody>(body)?.down);
            Ok(ok())
        }
        ("POST", ["clusters"]) => {
            let seed: ClusterSeed = parse(body)?;
            shared.with_state(|state| state.add_cluster(&seed));
            Ok(ok())
        }
        ("POST", ["projects"]) => {
            let seed: ProjectSeed = parse(body)?;
            let rendered = shared.with_state(|state| {
                let id = state.add_project(&seed, "user-admin").map_err(bad_request)?;
                Ok::<_, ApiError>(state.projects.get(&id).map(|p| super::projects::render(state, p, base)))
            })?;
            Ok(json_response(201, &rendered.unwrap_or(Value::Null)))
        }
        ("POST", ["namespaces"]) => {
            let seed: NamespaceSeed = parse(body)?;
            shared
                .with_state(|state| state.add_namespace(&seed))
                .map_err(bad_request)?;
            Ok(ok())
        }
        ("POST", ["roletemplates"]) => {
            let seed: RoleTemplateSeed = parse(body)?;
            shared.with_state(|state| state.add_role_template(seed));
            Ok(ok())
        }
        ("POST", ["tokens"]) => {
            let token: ApiToken = parse(body)?;
            shared.with_state(|state| state.tokens.push(token));
            Ok(ok())
        }
        ("DELETE", ["tokens", access_key]) => {
            shared.with_state(|state| state.tokens.retain(|t| t.access_key != *access_key));
            Ok(ok())
        }
        ("PUT", ["settings"]) => {
            let settings: SettingsBody = parse(body)?;
            shared.with_state(|state| {
                if let Some(policy) = settings.duplicate_bindings {
                    state.duplicate_bindings = policy;
                }
                if let Some(delay) = settings.project_removal_delay_ms {
                    state.project_removal_delay = Duration::from_millis(delay);
                }
            });
            Ok(ok())
        }
        ("GET", ["state"]) => Ok(json_response(200, &shared.dump(base))),
        _ => Err(ApiError::not_found(format!(
            "no emulator hook {method} /__emulator/{}",
            parts.join("/")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_match_by_route_and_expire_after_their_count() {
        let hooks = Hooks::default();
        hooks.inject(Fault::on(Some("create"), Some("projects")).status(503).times(1));
        let create = RouteKey::new("create", "projects");
        assert_eq!(hooks.on_request(&RouteKey::new("list", "projects")).error_status, None);
        assert_eq!(hooks.on_request(&create).error_status, Some(503));
        assert_eq!(hooks.on_request(&create).error_status, None, "the rule was used up");
        assert_eq!(hooks.count("create", "projects"), 2);
        hooks.set_down(true);
        assert!(hooks.on_request(&create).drop_connection);
    }
}
