//! The NebariApp status: sub-conditions per feature, Ready as their conjunction, and the reference fields the
//! original declared but never filled.

use crds::nebari::{NebariApp, NebariAppStatus};
use framework::conditions::{self, Change, ConditionUpdate};
use jiff::Timestamp;

/// Routing: the HTTPRoutes.
pub const ROUTING_READY: &str = "RoutingReady";
/// TLS: the certificate and the app's listener.
pub const TLS_READY: &str = "TLSReady";
/// Auth: the OIDC client, its Secret and the SecurityPolicy.
pub const AUTH_READY: &str = "AuthReady";

/// The status being assembled during one reconcile, with the condition changes made so far (for events).
pub struct StatusBuilder {
    /// The status to write.
    pub status: NebariAppStatus,
    generation: Option<i64>,
    now: Timestamp,
    /// Conditions that flipped or appeared, for events.
    pub changes: Vec<(ConditionUpdate, Change)>,
}

impl StatusBuilder {
    /// Starts from the app's current status.
    pub fn new(app: &NebariApp, now: Timestamp) -> Self {
        Self {
            status: app.status.clone().unwrap_or_default(),
            generation: app.metadata.generation,
            now,
            changes: Vec::new(),
        }
    }

    /// Sets one condition.
    pub fn set(&mut self, update: ConditionUpdate) {
        let change = conditions::set(&mut self.status.conditions, update.clone(), self.generation, self.now);
        if matches!(change, Change::Added | Change::Flipped) {
            self.changes.push((update, change));
        }
    }

    /// Sets a condition that records a deliberate choice (a feature left off) rather than an outcome: it appears
    /// in the status but publishes no event, so an app without auth or routing gets no Warning about it.
    pub fn set_quietly(&mut self, update: ConditionUpdate) {
        conditions::set(&mut self.status.conditions, update, self.generation, self.now);
    }

    /// Removes a condition that no longer applies (TLSReady once there is no operator routing).
    pub fn remove(&mut self, type_: &str) {
        conditions::remove(&mut self.status.conditions, type_);
    }

    /// Computes Ready from the conditions that apply and records the observed generation.
    pub fn finish_ready(&mut self, applicable: &[&str]) {
        let ready = conditions::aggregate_ready(&self.status.conditions, applicable);
        self.set(ready);
        self.status.observed_generation = self.generation;
    }

    /// Sets Ready directly (for validation failures that stop the pipeline).
    pub fn finish_with(&mut self, ready: ConditionUpdate) {
        self.set(ready);
        self.status.observed_generation = self.generation;
    }
}
