//! The one path from what a reconcile found to the object's status.
//!
//! During a reconcile a controller assembles a [`StatusUpdate`]: it sets sub-conditions, derives `Ready` from
//! those that apply, and fills in its own status fields. [`publish`] then, the same way for every controller:
//!
//! 1. publishes an event for each condition that appeared, flipped, or changed its reason (a Warning when the
//!    condition is False), so `kubectl describe` shows transitions rather than every retry;
//! 2. writes nothing when the status equals the stored one (nulls and empty lists count as absent);
//! 3. otherwise applies it server-side to `/status` with the object's resourceVersion as a precondition, so a
//!    status computed from a stale copy is refused (409) instead of overwriting newer facts.
//!
//! A refused write is settled by the controller's [`StatusPolicy`]: [`OnConflict::Drop`] abandons it (the
//! change that caused the conflict brings another reconcile, which recomputes everything);
//! [`OnConflict::Rebase`] re-reads the stored object and writes the policy's merge of what the pass computed
//! and what is stored now, up to [`MAX_WRITE_ATTEMPTS`] writes in all. A controller whose status records facts
//! about external systems (what it created, whom it added) rebases, so those records are never lost; one whose
//! status is a pure function of the spec and the world drops.

use std::fmt::Debug;

use jiff::Timestamp;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, Patch, PatchParams};
use kube::core::object::HasStatus;
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::conditions::{self, Change, ConditionUpdate, READY, Status};
use crate::events::Severity;
use crate::runner::Context;

/// How many status writes one [`publish`] makes at most when each is refused as stale.
pub const MAX_WRITE_ATTEMPTS: usize = 3;

/// What to do when a status write is refused because the object changed since the pass read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnConflict {
    /// Abandon the write: the reconcile the change brings recomputes the status.
    Drop,
    /// Re-read the object and write [`StatusPolicy::rebase`] of both onto it.
    Rebase,
}

/// The `Ready` condition of `obj`, if its status has one (what `Reconciler::ready_condition` usually returns).
pub fn ready_condition<P: StatusPolicy>(obj: &P::Resource) -> Option<Condition> {
    let status = obj.status()?;
    conditions::get(P::conditions(status), conditions::READY).cloned()
}

/// How a controller's status is laid out, and how its writes settle a conflict.
///
/// Implemented by the controller, once, next to its status builders.
pub trait StatusPolicy: Send + Sync {
    /// The kind whose status is written.
    type Resource: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + HasStatus<Status = Self::Status>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + Sync;
    /// The type of its `.status`.
    type Status: Clone + Default + PartialEq + Serialize + Send + Sync;

    /// The policy applied when a write is refused as stale.
    const ON_CONFLICT: OnConflict;

    /// Whether fields other writers left in the status (top-level fields or condition types this controller
    /// never writes) are removed. Server-side apply never removes fields another manager owns, so the first
    /// write that finds such leftovers is a JSON merge patch (with the same precondition) instead.
    const CLEARS_FOREIGN_FIELDS: bool = false;

    /// Reasons of a `False` condition that mean "under way, as expected" (a certificate being issued) rather
    /// than "something is wrong": their transitions are announced as Normal events, not Warnings, so a healthy
    /// object's history has no Warning in it.
    const IN_PROGRESS_REASONS: &'static [&'static str] = &[];

    /// The status's conditions.
    fn conditions(status: &Self::Status) -> &[Condition];

    /// The status's conditions, to change them.
    fn conditions_mut(status: &mut Self::Status) -> &mut Vec<Condition>;

    /// The status's `observedGeneration`.
    fn observed_generation(status: &mut Self::Status) -> &mut Option<i64>;

    /// The status to write after a write computed from `base` (the status the pass read) was refused and the
    /// stored status turned out to be `theirs`. By default what the pass computed wins.
    fn rebase(&self, ours: &Self::Status, _base: &Self::Status, _theirs: &Self::Status) -> Self::Status {
        ours.clone()
    }
}

/// The status being assembled during one reconcile.
pub struct StatusUpdate<S> {
    base: S,
    /// The status to write; controllers fill in their own fields directly.
    pub status: S,
    generation: Option<i64>,
    now: Timestamp,
    transitions: Vec<ConditionUpdate>,
    conditions: fn(&S) -> &[Condition],
    conditions_mut: fn(&mut S) -> &mut Vec<Condition>,
    observed_generation: fn(&mut S) -> &mut Option<i64>,
}

impl<S: Clone + Default> StatusUpdate<S> {
    /// Starts from `obj`'s stored status; conditions set at `now` (whole seconds, as the API stores them).
    pub fn new<P>(obj: &P::Resource, now: Timestamp) -> Self
    where
        P: StatusPolicy<Status = S>,
    {
        let base = obj.status().cloned().unwrap_or_default();
        Self {
            status: base.clone(),
            base,
            generation: obj.meta().generation,
            now: Timestamp::from_second(now.as_second()).unwrap_or(now),
            transitions: Vec::new(),
            conditions: P::conditions,
            conditions_mut: P::conditions_mut,
            observed_generation: P::observed_generation,
        }
    }

    /// The status as the pass read it.
    pub fn base(&self) -> &S {
        &self.base
    }

    /// The conditions set so far.
    pub fn conditions(&self) -> &[Condition] {
        (self.conditions)(&self.status)
    }

    /// Sets one condition; an event is published for it if it appeared, flipped or changed its reason.
    pub fn set(&mut self, update: ConditionUpdate) {
        let previous_reason = conditions::get(self.conditions(), &update.type_).map(|c| c.reason.clone());
        let change = self.set_quietly(update.clone());
        let new_reason = previous_reason.is_some_and(|reason| reason != update.reason);
        if matches!(change, Change::Added | Change::Flipped) || (change == Change::Updated && new_reason) {
            self.transitions.push(update);
        }
    }

    /// Sets a condition that records a deliberate choice (a feature left off) rather than an outcome: it appears
    /// in the status but publishes no event.
    pub fn set_quietly(&mut self, update: ConditionUpdate) -> Change {
        conditions::set(
            (self.conditions_mut)(&mut self.status),
            update,
            self.generation,
            self.now,
        )
    }

    /// Removes a condition that no longer applies.
    pub fn remove(&mut self, type_: &str) {
        conditions::remove((self.conditions_mut)(&mut self.status), type_);
    }

    /// Drops every condition but `Ready` and the `applicable` ones (types of a feature turned off, or left by
    /// another writer).
    pub fn keep_only(&mut self, applicable: &[&str]) {
        (self.conditions_mut)(&mut self.status).retain(|c| c.type_ == READY || applicable.contains(&c.type_.as_str()));
    }

    /// Derives `Ready` from the `applicable` sub-conditions ([`conditions::aggregate_ready`]), using
    /// `message_when_ready` as its message when it holds, and records the observed generation.
    pub fn derive_ready(&mut self, applicable: &[&str], message_when_ready: Option<String>) {
        let mut ready = conditions::aggregate_ready(self.conditions(), applicable);
        if let (Status::True, Some(message)) = (ready.status, message_when_ready) {
            ready.message = message;
        }
        self.finish_with(ready);
    }

    /// Sets `Ready` directly (a failure that stops the pass, a blocked deletion) and records the observed
    /// generation. `Ready` is kept first in the list: older consumers read `conditions[0]`.
    pub fn finish_with(&mut self, ready: ConditionUpdate) {
        self.set(ready);
        let conditions = (self.conditions_mut)(&mut self.status);
        if let Some(index) = conditions.iter().position(|c| c.type_ == READY)
            && index != 0
        {
            let ready = conditions.remove(index);
            conditions.insert(0, ready);
        }
        *(self.observed_generation)(&mut self.status) = self.generation;
    }

    /// The conditions that will be announced as events.
    pub fn transitions(&self) -> &[ConditionUpdate] {
        &self.transitions
    }
}

/// What [`publish`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Published {
    /// The stored status already was the desired one.
    Unchanged,
    /// The status was written.
    Written,
    /// The write was refused as stale and the policy dropped it.
    Dropped,
    /// The object is gone; nothing could be written.
    Gone,
}

/// Announces `update`'s transitions and writes its status to `obj` when it changed, settling conflicts by
/// `policy`. Fails with the last conflict when every one of [`MAX_WRITE_ATTEMPTS`] writes was refused.
pub async fn publish<P: StatusPolicy>(
    policy: &P,
    ctx: &Context,
    obj: &P::Resource,
    update: StatusUpdate<P::Status>,
) -> Result<Published, kube::Error> {
    let reference = obj.object_ref(&());
    for transition in &update.transitions {
        let severity = match transition.status {
            Status::False if !P::IN_PROGRESS_REASONS.contains(&transition.reason.as_str()) => Severity::Warning,
            Status::False | Status::True | Status::Unknown => Severity::Normal,
        };
        ctx.events
            .publish(
                &reference,
                severity,
                &transition.reason,
                "Reconcile",
                &transition.message,
            )
            .await;
    }
    let api: Api<P::Resource> = Api::namespaced(ctx.client.clone(), &obj.namespace().unwrap_or_default());
    let mut stored = obj.clone();
    let mut desired = update.status.clone();
    let mut attempt = 1;
    loop {
        let refused = match write(&api, &stored, &desired, &ctx.field_manager, P::CLEARS_FOREIGN_FIELDS).await {
            Ok(Some(written)) => {
                crate::changes::record("status");
                ctx.own_writes.wrote(&written);
                return Ok(Published::Written);
            }
            Ok(None) => return Ok(Published::Unchanged),
            Err(kube::Error::Api(response)) if response.code == 409 => kube::Error::Api(response),
            Err(error) => {
                // The answer may have been lost after the write was made.
                ctx.own_writes.may_have_written(obj);
                return Err(error);
            }
        };
        if P::ON_CONFLICT == OnConflict::Drop {
            tracing::debug!("status computed from an outdated copy; the newer object is reconciled next");
            return Ok(Published::Dropped);
        }
        if attempt == MAX_WRITE_ATTEMPTS {
            return Err(refused);
        }
        attempt += 1;
        let Some(fresh) = crate::live::reread(&api, &stored).await? else {
            tracing::warn!("the object is gone: its status cannot be written");
            return Ok(Published::Gone);
        };
        let theirs = fresh.status().cloned().unwrap_or_default();
        desired = policy.rebase(&update.status, &update.base, &theirs);
        tracing::debug!(attempt, "status write refused as stale; writing onto the stored object");
        stored = fresh;
    }
}

/// Writes `desired` as the status of `stored` (guarded by its resourceVersion) unless it already has it; returns
/// the object as written, or `None` when nothing was written.
async fn write<K, S>(
    api: &Api<K>,
    stored: &K,
    desired: &S,
    field_manager: &str,
    clear_foreign: bool,
) -> Result<Option<K>, kube::Error>
where
    K: Resource<DynamicType = ()> + HasStatus<Status = S> + Clone + DeserializeOwned + Debug,
    S: Serialize + PartialEq,
{
    if stored.status() == Some(desired) {
        return Ok(None);
    }
    let wanted = serde_json::to_value(desired).map_err(kube::Error::SerdeError)?;
    let current = match stored.status() {
        Some(status) => serde_json::to_value(status).map_err(kube::Error::SerdeError)?,
        None => Value::Null,
    };
    if normalized(&current) == normalized(&wanted) {
        return Ok(None);
    }
    let name = stored.name_any();
    if clear_foreign && has_foreign_leftovers(&current, &wanted) {
        let mut status = wanted;
        if let (Some(status), Some(current)) = (status.as_object_mut(), current.as_object()) {
            for key in current.keys() {
                status.entry(key.clone()).or_insert(Value::Null);
            }
        }
        let patch = json!({
            "metadata": {"resourceVersion": stored.resource_version()},
            "status": status,
        });
        let params = PatchParams {
            field_manager: Some(field_manager.to_string()),
            ..PatchParams::default()
        };
        let written = api.patch_status(&name, &params, &Patch::Merge(&patch)).await?;
        tracing::info!("replaced a status left by another writer");
        return Ok(Some(written));
    }
    let body = json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "metadata": {"name": name, "resourceVersion": stored.resource_version()},
        "status": wanted,
    });
    api.patch_status(&name, &PatchParams::apply(field_manager).force(), &Patch::Apply(&body))
        .await
        .map(Some)
}

/// Whether the stored status has something the desired one does not: a top-level field or a condition type
/// another writer left.
pub fn has_foreign_leftovers(current: &Value, desired: &Value) -> bool {
    let (Some(current), Some(desired)) = (current.as_object(), desired.as_object()) else {
        return false;
    };
    let meaningful = |v: &Value| !is_empty(v);
    let extra_key = current
        .iter()
        .any(|(key, value)| meaningful(value) && !desired.get(key).is_some_and(meaningful));
    let types = |status: &serde_json::Map<String, Value>| -> Vec<String> {
        status
            .get("conditions")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|c| c["type"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let ours = types(desired);
    extra_key || types(current).iter().any(|type_| !ours.contains(type_))
}

/// Drops nulls and empty objects/arrays so `None` and "absent" compare equal.
fn normalized(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !is_empty(v))
                .map(|(k, v)| (k.clone(), normalized(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
        Value::Null => Value::Object(serde_json::Map::new()),
        other => other.clone(),
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(m) => m.values().all(is_empty),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::Deserialize;

    use super::*;

    #[derive(CustomResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
    #[kube(
        group = "test.example.com",
        version = "v1",
        kind = "Widget",
        namespaced,
        status = "WidgetStatus"
    )]
    struct WidgetSpec {}

    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
    struct WidgetStatus {
        conditions: Vec<Condition>,
        observed_generation: Option<i64>,
    }

    struct WidgetPolicy;

    impl StatusPolicy for WidgetPolicy {
        type Resource = Widget;
        type Status = WidgetStatus;
        const ON_CONFLICT: OnConflict = OnConflict::Drop;

        fn conditions(status: &WidgetStatus) -> &[Condition] {
            &status.conditions
        }

        fn conditions_mut(status: &mut WidgetStatus) -> &mut Vec<Condition> {
            &mut status.conditions
        }

        fn observed_generation(status: &mut WidgetStatus) -> &mut Option<i64> {
            &mut status.observed_generation
        }
    }

    fn update(status: WidgetStatus, generation: i64) -> StatusUpdate<WidgetStatus> {
        let mut widget = Widget::new("w", WidgetSpec {});
        widget.metadata.generation = Some(generation);
        widget.status = Some(status);
        StatusUpdate::new::<WidgetPolicy>(&widget, Timestamp::from_second(1_700_000_000).expect("time"))
    }

    #[test]
    fn new_starts_from_the_stored_status_at_whole_seconds() {
        let mut widget = Widget::new("w", WidgetSpec {});
        widget.metadata.generation = Some(4);
        let now = Timestamp::from_millisecond(1_700_000_000_750).expect("time");
        let mut update = StatusUpdate::new::<WidgetPolicy>(&widget, now);
        assert_eq!(
            *update.base(),
            WidgetStatus::default(),
            "no status yet reads as the default"
        );
        update.set(ConditionUpdate::ok("A", "Done", ""));
        let condition = &update.status.conditions[0];
        assert_eq!(condition.last_transition_time.0.as_second(), 1_700_000_000);
        assert_eq!(condition.last_transition_time.0.subsec_nanosecond(), 0);
        assert_eq!(condition.observed_generation, Some(4));
    }

    #[test]
    fn transitions_are_appearances_flips_and_new_reasons_only() {
        let mut first = update(WidgetStatus::default(), 1);
        first.set(ConditionUpdate::failed("A", "Unreachable", "down"));
        first.set_quietly(ConditionUpdate::ok("B", "Disabled", "off on purpose"));
        assert_eq!(first.transitions().len(), 1, "quiet conditions announce nothing");

        let mut again = update(first.status.clone(), 1);
        again.set(ConditionUpdate::failed("A", "Unreachable", "still down, other words"));
        assert!(again.transitions().is_empty(), "same status and reason: no event");
        again.set(ConditionUpdate::failed("A", "Refused", "credentials rejected"));
        assert_eq!(again.transitions()[0].reason, "Refused", "a new reason is announced");
        again.set(ConditionUpdate::ok("A", "Connected", "up"));
        assert_eq!(again.transitions().len(), 2, "a flip is announced");
    }

    #[test]
    fn ready_is_derived_put_first_and_the_generation_recorded() {
        let mut update = update(WidgetStatus::default(), 7);
        update.set(ConditionUpdate::ok("A", "Done", "a"));
        update.set(ConditionUpdate::ok("B", "Done", "b"));
        update.derive_ready(&["A", "B"], Some("all good".into()));
        let ready = &update.status.conditions[0];
        assert_eq!((ready.type_.as_str(), ready.status.as_str()), (READY, "True"));
        assert_eq!(ready.message, "all good");
        assert_eq!(update.status.observed_generation, Some(7));

        update.set(ConditionUpdate::failed("B", "Broken", "b broke"));
        update.derive_ready(&["A", "B"], Some("all good".into()));
        let ready = &update.status.conditions[0];
        assert_eq!((ready.reason.as_str(), ready.message.as_str()), ("Broken", "b broke"));
    }

    #[test]
    fn keep_only_drops_conditions_that_do_not_apply() {
        let mut update = update(WidgetStatus::default(), 1);
        for type_ in [READY, "A", "Reconciled"] {
            update.set(ConditionUpdate::ok(type_, "X", ""));
        }
        update.keep_only(&["A"]);
        let types: Vec<&str> = update.status.conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, vec![READY, "A"]);
        update.remove("A");
        assert_eq!(update.status.conditions.len(), 1);
    }

    #[test]
    fn normalization_ignores_nulls_and_empties() {
        let a = json!({"x": 1, "y": null, "z": {}, "l": []});
        let b = json!({"x": 1});
        assert_eq!(normalized(&a), normalized(&b));
        assert_eq!(normalized(&Value::Null), normalized(&json!({"conditions": []})));
        assert_ne!(normalized(&json!({"x": 1})), normalized(&json!({"x": 2})));
    }

    #[test]
    fn leftovers_of_another_writer_are_detected() {
        let ours = json!({"phase": "Ready", "conditions": [{"type": "Ready"}, {"type": "Synced"}]});
        assert!(!has_foreign_leftovers(&ours, &ours));
        let extra_field = json!({"phase": "Ready", "namespaceName": "ns", "conditions": [{"type": "Ready"}]});
        assert!(has_foreign_leftovers(&extra_field, &ours));
        let extra_condition = json!({"conditions": [{"type": "Reconciled"}, {"type": "Ready"}]});
        assert!(has_foreign_leftovers(&extra_condition, &ours));
        assert!(
            !has_foreign_leftovers(&json!({"bindings": []}), &ours),
            "empty is absent"
        );
    }
}
