//! Test hooks: request counters, fault injection, the down switch, the clock, feature switches, seeding and
//! inspection.
//!
//! Usable in-process through [`Hooks`] (from the emulator handle) and over HTTP under `/__emulator/`, a path
//! no Keycloak client calls (see `control.rs` for the HTTP routes). Counters and faults name requests by
//! method and route template without the path prefix, e.g. `GET /admin/realms/{realm}/groups/{id}/children`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use emulator_kit::chance::Chance;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::watch;

use super::app::{App, Shared};
use super::config::{ClientSeed, GroupSeed, UserSeed};
use super::model::{Policy, Realm};
use super::representations::client_rep;
use super::wire::{ApiError, CONSULT_LOG, JSON, json_with};

/// Path under which the HTTP hooks live.
pub const HOOKS_PATH: &str = "/__emulator";

/// One request counter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterRow {
    /// HTTP method.
    pub method: String,
    /// Route template without the path prefix, e.g. `/admin/realms/{realm}/groups`.
    pub route: String,
    /// Requests seen.
    pub count: u64,
}

/// A fault rule: matching requests are delayed, answered with an error, or have their connection dropped.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fault {
    /// Method to match (e.g. `GET`); `None` matches every method.
    #[serde(default)]
    pub method: Option<String>,
    /// Route template to match (as in [`CounterRow::route`]); `None` matches every Keycloak route.
    #[serde(default)]
    pub route: Option<String>,
    /// Delay before the request is handled (or failed), in milliseconds.
    #[serde(default)]
    pub latency_ms: u64,
    /// Answer with this status instead of handling the request.
    #[serde(default)]
    pub status: Option<u16>,
    /// Body for `status` (default: Keycloak's shape for that status).
    #[serde(default)]
    pub body: Option<Value>,
    /// Close the connection without answering.
    #[serde(default)]
    pub drop_connection: bool,
    /// How many matching requests the rule applies to; `None` until cleared.
    #[serde(default)]
    pub times: Option<u32>,
    /// The share of matching requests it applies to (default: all).
    #[serde(default, flatten)]
    pub chance: Chance,
}

impl Fault {
    /// A rule matching one method and route template.
    pub fn on(method: &str, route: &str) -> Self {
        Self {
            method: Some(method.into()),
            route: Some(route.into()),
            ..Self::default()
        }
    }

    /// A rule matching every Keycloak request.
    pub fn everywhere() -> Self {
        Self::default()
    }

    /// Answer with `status`.
    pub fn status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// Delay by `latency`.
    pub fn latency(mut self, latency: Duration) -> Self {
        self.latency_ms = u64::try_from(latency.as_millis()).unwrap_or(u64::MAX);
        self
    }

    /// Drop the connection.
    pub fn drop_connection(mut self) -> Self {
        self.drop_connection = true;
        self
    }

    /// Apply to the next `n` matching requests only.
    pub fn times(mut self, n: u32) -> Self {
        self.times = Some(n);
        self
    }

    /// Apply to `percent` % of the matching requests, drawn from `seed`.
    pub fn percent(mut self, percent: u8, seed: u64) -> Self {
        self.chance = Chance::percent(percent, seed);
        self
    }

    fn matches(&self, method: &str, route: &str) -> bool {
        self.method.as_deref().is_none_or(|m| m.eq_ignore_ascii_case(method))
            && self.route.as_deref().is_none_or(|r| r == route)
    }
}

/// How the server is down.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DownMode {
    /// The listener is closed and open connections are shut: clients get connection refused.
    Refuse,
    /// Every Keycloak request gets 503 with an HTML body, as from a reverse proxy with no backend.
    Unavailable,
}

/// Whether and how the server is down, and until when.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DownState {
    /// `None` when up.
    pub mode: Option<DownMode>,
    /// When the server comes back by itself (`None`: only when told).
    pub until: Option<Instant>,
}

impl DownState {
    /// The mode in effect at `now`.
    pub fn effective(&self, now: Instant) -> Option<DownMode> {
        match self.until {
            Some(until) if until <= now => None,
            _ => self.mode,
        }
    }
}

/// Hook state inside the shared emulator state.
pub struct HookState {
    counters: Mutex<BTreeMap<(String, String), u64>>,
    faults: Mutex<Vec<(u64, Fault)>>,
    next_fault: Mutex<u64>,
    down: watch::Sender<DownState>,
}

impl Default for HookState {
    fn default() -> Self {
        Self {
            counters: Mutex::default(),
            faults: Mutex::default(),
            next_fault: Mutex::new(1),
            down: watch::Sender::new(DownState::default()),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Counters and rule lists are changed by single inserts and removes; a poisoned lock still holds valid data.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the fault rules decided for one request.
#[derive(Clone, Debug, Default, PartialEq)]
struct FaultAction {
    latency: Duration,
    status: Option<u16>,
    body: Option<Value>,
    drop_connection: bool,
}

impl HookState {
    fn on_request(&self, method: &str, route: &str) -> FaultAction {
        *lock(&self.counters)
            .entry((method.to_string(), route.to_string()))
            .or_default() += 1;
        let mut faults = lock(&self.faults);
        let Some(index) = faults
            .iter_mut()
            .position(|(_, f)| f.matches(method, route) && f.chance.draw())
        else {
            return FaultAction::default();
        };
        let fault = &mut faults[index].1;
        let action = FaultAction {
            latency: Duration::from_millis(fault.latency_ms),
            status: fault.status,
            body: fault.body.clone(),
            drop_connection: fault.drop_connection,
        };
        if let Some(remaining) = fault.times.as_mut() {
            *remaining = remaining.saturating_sub(1);
            if *remaining == 0 {
                faults.remove(index);
            }
        }
        action
    }

    /// A receiver of down-state changes (the listener supervisor watches it).
    pub fn subscribe_down(&self) -> watch::Receiver<DownState> {
        self.down.subscribe()
    }

    fn down_now(&self) -> Option<DownMode> {
        self.down.borrow().effective(Instant::now())
    }
}

/// Route-level middleware: counts the request under its route template, then applies the first matching fault.
pub async fn count_and_fault(State(app): State<App>, request: Request, next: Next) -> Response {
    let method = request.method().as_str().to_string();
    let matched = request
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_string())
        .unwrap_or_default();
    let route = matched
        .strip_prefix(app.prefix.as_str())
        .unwrap_or(&matched)
        .to_string();
    let action = app.hooks.on_request(&method, &route);
    if !action.latency.is_zero() {
        tokio::time::sleep(action.latency).await;
    }
    if action.drop_connection {
        if let Some(control) = request.extensions().get::<super::server::ConnectionControl>() {
            control.drop_now();
            // The connection task closes the socket and drops this future; nothing is ever answered.
            std::future::pending::<()>().await;
        }
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    if let Some(status) = action.status {
        return fault_response(status, action.body);
    }
    next.run(request).await
}

fn fault_response(status: u16, body: Option<Value>) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = body.unwrap_or_else(|| {
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            serde_json::json!({ "error": "unknown_error", "error_description": CONSULT_LOG })
        } else {
            let reason = status.canonical_reason().unwrap_or("");
            serde_json::json!({ "error": format!("HTTP {} {reason}", status.as_u16()) })
        }
    });
    json_with(status, JSON, &body)
}

/// Outer middleware: while the server is "down" in [`DownMode::Unavailable`], every request except the hooks
/// gets 503 with an HTML body.
pub async fn unavailable_gate(State(app): State<App>, request: Request, next: Next) -> Response {
    if request.uri().path().starts_with(HOOKS_PATH) || app.hooks.down_now() != Some(DownMode::Unavailable) {
        return next.run(request).await;
    }
    let mut response = (
        StatusCode::SERVICE_UNAVAILABLE,
        "<html><body><h1>503 Service Temporarily Unavailable</h1></body></html>",
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html"));
    response
}

/// A seed or hook request the emulator refused (unknown realm, duplicate name, …).
#[derive(Debug, thiserror::Error)]
#[error("keycloak emulator refused the seed: {0}")]
pub struct SeedError(pub String);

impl From<ApiError> for SeedError {
    fn from(error: ApiError) -> Self {
        SeedError(format!("{error:?}"))
    }
}

/// A group and its subgroups by name (for inspecting the tree in tests).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupNode {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
    /// Attributes.
    pub attributes: BTreeMap<String, Vec<String>>,
    /// Children ordered by name.
    pub children: Vec<GroupNode>,
}

fn group_node(realm: &Realm, id: &str) -> Option<GroupNode> {
    let group = realm.groups.get(id)?;
    Some(GroupNode {
        id: group.id.clone(),
        name: group.name.clone(),
        attributes: group.attributes.clone(),
        children: realm
            .children_of(Some(id))
            .iter()
            .filter_map(|c| group_node(realm, &c.id))
            .collect(),
    })
}

/// Handle on the test hooks of one emulator.
#[derive(Clone)]
pub struct Hooks {
    shared: Arc<Shared>,
}

impl Hooks {
    /// Hooks of the emulator whose state is `shared`.
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    /// The access token `username` would hold after logging in through the client `client_id` in the browser
    /// (signed, with the client's mapper claims); `Err` names what does not exist.
    pub fn login(&self, realm: &str, client_id: &str, username: &str) -> Result<String, String> {
        super::token::login(&self.shared, realm, client_id, username)
    }

    /// Every request counter, ordered by method and route.
    pub fn counters(&self) -> Vec<CounterRow> {
        lock(&self.shared.hooks.counters)
            .iter()
            .map(|((method, route), count)| CounterRow {
                method: method.clone(),
                route: route.clone(),
                count: *count,
            })
            .collect()
    }

    /// Requests seen for one method and route template (e.g. `"GET"`, `"/admin/realms/{realm}/groups"`).
    pub fn count(&self, method: &str, route: &str) -> u64 {
        lock(&self.shared.hooks.counters)
            .get(&(method.to_string(), route.to_string()))
            .copied()
            .unwrap_or(0)
    }

    /// Requests seen across every Keycloak route.
    pub fn total_requests(&self) -> u64 {
        lock(&self.shared.hooks.counters).values().sum()
    }

    /// Sets every counter back to zero.
    pub fn reset_counters(&self) {
        lock(&self.shared.hooks.counters).clear();
    }

    /// Adds a fault rule (the first matching rule wins); returns its id.
    pub fn add_fault(&self, fault: Fault) -> u64 {
        let mut next = lock(&self.shared.hooks.next_fault);
        let id = *next;
        *next += 1;
        lock(&self.shared.hooks.faults).push((id, fault));
        id
    }

    /// Removes one fault rule; false if it was not there (expired or never added).
    pub fn remove_fault(&self, id: u64) -> bool {
        let mut faults = lock(&self.shared.hooks.faults);
        let before = faults.len();
        faults.retain(|(fid, _)| *fid != id);
        faults.len() != before
    }

    /// Removes every fault rule.
    pub fn clear_faults(&self) {
        lock(&self.shared.hooks.faults).clear();
    }

    /// Takes the server down until [`Hooks::come_up`].
    pub fn go_down(&self, mode: DownMode) {
        self.shared.hooks.down.send_replace(DownState {
            mode: Some(mode),
            until: None,
        });
    }

    /// Takes the server down for a while; it comes back by itself.
    pub fn go_down_for(&self, mode: DownMode, duration: Duration) {
        self.shared.hooks.down.send_replace(DownState {
            mode: Some(mode),
            until: Some(Instant::now() + duration),
        });
    }

    /// Brings the server back.
    pub fn come_up(&self) {
        self.shared.hooks.down.send_replace(DownState::default());
    }

    /// How the server is down right now, if it is.
    pub fn down_mode(&self) -> Option<DownMode> {
        self.shared.hooks.down_now()
    }

    /// Moves the emulator's clock forward (tokens issued before expire as if the time had passed).
    pub fn advance_clock(&self, by: Duration) {
        self.shared.clock.advance(by);
    }

    /// Switches the fine-grained admin permissions (v1) feature on or off.
    pub fn set_fine_grained_authz_v1(&self, enabled: bool) {
        self.shared.lock().fgap_v1 = enabled;
    }

    /// Turns standard token exchange (`token-exchange-standard:v2`) on or off, as a server restarted with
    /// `--features-disabled` would have it.
    pub fn set_standard_token_exchange(&self, enabled: bool) {
        self.shared.lock().standard_token_exchange = enabled;
    }

    /// Creates a realm (no-op if it exists).
    pub fn create_realm(&self, name: &str) {
        self.shared.lock().add_realm(name);
    }

    /// Creates a user; returns its id.
    pub fn seed_user(&self, seed: &UserSeed) -> Result<String, SeedError> {
        let now = self.shared.clock.epoch_millis();
        Ok(self.shared.lock().seed_user(seed, now)?)
    }

    /// Creates the missing groups of a path; returns the id of the last one.
    pub fn seed_group(&self, seed: &GroupSeed) -> Result<String, SeedError> {
        Ok(self.shared.lock().seed_group(seed)?)
    }

    /// Creates a client; returns its internal id.
    pub fn seed_client(&self, seed: &ClientSeed) -> Result<String, SeedError> {
        let now = self.shared.clock.epoch_millis();
        Ok(self.shared.lock().seed_client(seed, now)?)
    }

    fn with_realm<T>(&self, realm: &str, f: impl FnOnce(&mut Realm) -> T) -> Option<T> {
        self.shared.lock().realms.get_mut(realm).map(f)
    }

    /// The id of the group at `path`.
    pub fn group_id(&self, realm: &str, path: &str) -> Option<String> {
        self.with_realm(realm, |r| r.group_by_path(path).map(|g| g.id.clone()))
            .flatten()
    }

    /// Usernames of the direct members of the group at `path`, ordered.
    pub fn group_members(&self, realm: &str, path: &str) -> Option<Vec<String>> {
        self.with_realm(realm, |r| {
            let group = r.group_by_path(path)?;
            Some(r.members_of(&group.id).iter().map(|u| u.username.clone()).collect())
        })
        .flatten()
    }

    /// The whole group tree of a realm.
    pub fn group_tree(&self, realm: &str) -> Vec<GroupNode> {
        self.with_realm(realm, |r| {
            r.children_of(None)
                .iter()
                .filter_map(|g| group_node(r, &g.id))
                .collect()
        })
        .unwrap_or_default()
    }

    /// Deletes the group at `path` as an administrator would by hand; false if it did not exist.
    pub fn delete_group(&self, realm: &str, path: &str) -> bool {
        self.with_realm(realm, |r| {
            let Some(id) = r.group_by_path(path).map(|g| g.id.clone()) else {
                return false;
            };
            r.remove_group(&id);
            true
        })
        .unwrap_or(false)
    }

    /// Adds a direct membership by hand (an external change the operator did not make).
    pub fn add_membership(&self, realm: &str, username: &str, path: &str) -> Result<(), SeedError> {
        self.with_realm(realm, |r| {
            let user = r
                .user_by_username(username)
                .map(|u| u.id.clone())
                .ok_or_else(|| SeedError(format!("no user {username}")))?;
            let group = r
                .group_by_path(path)
                .map(|g| g.id.clone())
                .ok_or_else(|| SeedError(format!("no group {path}")))?;
            r.memberships.insert((user, group));
            Ok(())
        })
        .unwrap_or_else(|| Err(SeedError(format!("no realm {realm}"))))
    }

    /// The id of a user.
    pub fn user_id(&self, realm: &str, username: &str) -> Option<String> {
        self.with_realm(realm, |r| r.user_by_username(username).map(|u| u.id.clone()))
            .flatten()
    }

    /// Deletes a user by hand; false if there was none.
    pub fn delete_user(&self, realm: &str, username: &str) -> bool {
        self.with_realm(realm, |r| {
            let Some(id) = r.user_by_username(username).map(|u| u.id.clone()) else {
                return false;
            };
            r.remove_user(&id);
            true
        })
        .unwrap_or(false)
    }

    /// Paths of a user's direct groups, ordered.
    pub fn user_group_paths(&self, realm: &str, username: &str) -> Vec<String> {
        self.with_realm(realm, |r| {
            let Some(user) = r.user_by_username(username) else {
                return Vec::new();
            };
            let mut paths: Vec<String> = r.groups_of(&user.id).iter().map(|g| r.group_path(&g.id)).collect();
            paths.sort();
            paths
        })
        .unwrap_or_default()
    }

    /// The `clientId` of every client in `realm`, ordered (built-in ones included).
    pub fn client_ids(&self, realm: &str) -> Vec<String> {
        self.with_realm(realm, |r| {
            let mut ids: Vec<String> = r.clients.values().map(|c| c.settings.client_id.clone()).collect();
            ids.sort();
            ids
        })
        .unwrap_or_default()
    }

    /// The full representation of a client by `clientId` (secret, mappers and scope names included).
    pub fn client(&self, realm: &str, client_id: &str) -> Option<Value> {
        self.with_realm(realm, |r| {
            let client = r.client_by_client_id(client_id)?;
            serde_json::to_value(client_rep(r, client, true)).ok()
        })
        .flatten()
    }

    /// Names of the client policies and permissions in `realm-management`'s resource server, ordered.
    pub fn policy_names(&self, realm: &str) -> Vec<String> {
        self.with_realm(realm, |r| {
            let mut names: Vec<String> = r.authz.policies.values().map(|p| p.name.clone()).collect();
            names.sort();
            names
        })
        .unwrap_or_default()
    }

    /// For the permission named `permission`: its decision strategy and the names of the policies it applies.
    pub fn permission_policies(&self, realm: &str, permission: &str) -> Option<(String, Vec<String>)> {
        self.with_realm(realm, |r| {
            let found: &Policy = r.authz.policies.values().find(|p| p.name == permission)?;
            let mut names: Vec<String> = found
                .policies
                .iter()
                .filter_map(|id| r.authz.policies.get(id))
                .map(|p| p.name.clone())
                .collect();
            names.sort();
            Some((found.decision_strategy.clone(), names))
        })
        .flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_match_by_method_and_route_and_expire_after_their_count() {
        let state = HookState::default();
        lock(&state.faults).push((1, Fault::on("GET", "/a").status(503).times(2)));
        assert_eq!(state.on_request("POST", "/a").status, None);
        assert_eq!(state.on_request("GET", "/b").status, None);
        assert_eq!(state.on_request("GET", "/a").status, Some(503));
        assert_eq!(state.on_request("get", "/a").status, Some(503));
        assert_eq!(
            state.on_request("GET", "/a").status,
            None,
            "the rule expired after two uses"
        );
        assert_eq!(
            lock(&state.counters).get(&("GET".to_string(), "/a".to_string())),
            Some(&2)
        );
    }

    #[test]
    fn a_timed_down_state_ends_by_itself() {
        let now = Instant::now();
        let state = DownState {
            mode: Some(DownMode::Refuse),
            until: Some(now + Duration::from_secs(1)),
        };
        assert_eq!(state.effective(now), Some(DownMode::Refuse));
        assert_eq!(state.effective(now + Duration::from_secs(2)), None);
    }
}
