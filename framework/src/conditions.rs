//! `metav1.Condition` bookkeeping shared by every controller.
//!
//! Conditions are a list keyed by `type`. Setting one records the object's generation as
//! `observedGeneration` and moves `lastTransitionTime` only when the status actually flips, so
//! `kubectl wait --for=condition=Ready` and dashboards see real transitions rather than reconcile noise.
//! `Ready` is derived from the sub-conditions that apply to the object.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// The type of the aggregate condition every controller publishes.
pub const READY: &str = "Ready";

/// The three values a condition status can take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The condition holds.
    True,
    /// The condition does not hold.
    False,
    /// Not yet known (e.g. the step has not run).
    Unknown,
}

impl Status {
    /// The wire spelling (`"True"`, `"False"`, `"Unknown"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::True => "True",
            Status::False => "False",
            Status::Unknown => "Unknown",
        }
    }

    fn parse(s: &str) -> Status {
        match s {
            "True" => Status::True,
            "False" => Status::False,
            _ => Status::Unknown,
        }
    }
}

impl From<bool> for Status {
    fn from(value: bool) -> Self {
        if value { Status::True } else { Status::False }
    }
}

/// The desired state of one condition, without the bookkeeping fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionUpdate {
    /// The condition type, e.g. `RoutingReady`.
    pub type_: String,
    /// Whether the condition holds.
    pub status: Status,
    /// A PascalCase reason a machine can switch on.
    pub reason: String,
    /// A human-readable message; must be safe to show to anyone who can read the object.
    pub message: String,
}

impl ConditionUpdate {
    /// A condition that holds.
    pub fn ok(type_: &str, reason: &str, message: impl Into<String>) -> Self {
        Self::new(type_, Status::True, reason, message)
    }

    /// A condition that does not hold.
    pub fn failed(type_: &str, reason: &str, message: impl Into<String>) -> Self {
        Self::new(type_, Status::False, reason, message)
    }

    /// A condition whose outcome is not known yet.
    pub fn unknown(type_: &str, reason: &str, message: impl Into<String>) -> Self {
        Self::new(type_, Status::Unknown, reason, message)
    }

    /// A condition with an explicit status.
    pub fn new(type_: &str, status: Status, reason: &str, message: impl Into<String>) -> Self {
        Self {
            type_: type_.to_string(),
            status,
            reason: reason.to_string(),
            message: message.into(),
        }
    }
}

/// What setting a condition did, so callers can emit events only on change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Nothing differs from what was there.
    Unchanged,
    /// The condition did not exist before.
    Added,
    /// The status flipped (lastTransitionTime moved).
    Flipped,
    /// Same status, but reason, message or observedGeneration changed.
    Updated,
}

/// Sets (or adds) one condition in `conditions`, keyed by type.
///
/// `lastTransitionTime` is set to `now` only when the condition is new or its status flips.
pub fn set(
    conditions: &mut Vec<Condition>,
    update: ConditionUpdate,
    generation: Option<i64>,
    now: Timestamp,
) -> Change {
    let existing = conditions.iter_mut().find(|c| c.type_ == update.type_);
    match existing {
        None => {
            conditions.push(Condition {
                type_: update.type_,
                status: update.status.as_str().to_string(),
                reason: update.reason,
                message: update.message,
                observed_generation: generation,
                last_transition_time: Time(now),
            });
            Change::Added
        }
        Some(current) => {
            let flipped = current.status != update.status.as_str();
            let updated = current.reason != update.reason
                || current.message != update.message
                || current.observed_generation != generation;
            if flipped {
                current.last_transition_time = Time(now);
                current.status = update.status.as_str().to_string();
            }
            current.reason = update.reason;
            current.message = update.message;
            current.observed_generation = generation;
            if flipped {
                Change::Flipped
            } else if updated {
                Change::Updated
            } else {
                Change::Unchanged
            }
        }
    }
}

/// Removes the condition of the given type, returning whether it was there (a feature turned off).
pub fn remove(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    before != conditions.len()
}

/// Looks up a condition by type.
pub fn get<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether the condition of this type exists and is `True`.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    get(conditions, type_).is_some_and(|c| c.status == "True")
}

/// Computes `Ready` from the sub-conditions that apply to this object.
///
/// Ready is True when every listed sub-condition is True; False (with the first failing condition's reason and
/// message) when any is False; Unknown otherwise (missing or Unknown sub-conditions: work still in progress).
pub fn aggregate_ready(conditions: &[Condition], applicable: &[&str]) -> ConditionUpdate {
    let mut pending: Option<&Condition> = None;
    let mut missing: Option<&str> = None;
    for type_ in applicable {
        match get(conditions, type_) {
            Some(c) => match Status::parse(&c.status) {
                Status::False => return ConditionUpdate::failed(READY, &c.reason, c.message.clone()),
                Status::Unknown => {
                    pending.get_or_insert(c);
                }
                Status::True => {}
            },
            None => {
                missing.get_or_insert(type_);
            }
        }
    }
    if let Some(c) = pending {
        return ConditionUpdate::unknown(READY, &c.reason, c.message.clone());
    }
    if let Some(type_) = missing {
        return ConditionUpdate::unknown(READY, "Reconciling", format!("{type_} has not been evaluated yet"));
    }
    ConditionUpdate::ok(READY, "Ready", "All conditions are met")
}

#[cfg(test)]
mod tests {
    use super::*;
    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).expect("valid timestamp")
    }

    #[test]
    fn new_condition_gets_transition_time_and_generation() {
        let mut list = Vec::new();
        let change = set(&mut list, ConditionUpdate::ok("A", "Done", "fine"), Some(3), t(0));
        assert_eq!(change, Change::Added);
        assert_eq!(list[0].last_transition_time, Time(t(0)));
        assert_eq!(list[0].observed_generation, Some(3));
        assert_eq!(list[0].status, "True");
    }

    #[test]
    fn unchanged_status_keeps_last_transition_time() {
        let mut list = Vec::new();
        set(&mut list, ConditionUpdate::failed("A", "Waiting", "one"), Some(1), t(0));
        let change = set(
            &mut list,
            ConditionUpdate::failed("A", "StillWaiting", "two"),
            Some(2),
            t(60),
        );
        assert_eq!(change, Change::Updated);
        assert_eq!(
            list[0].last_transition_time,
            Time(t(0)),
            "no flip, so no new transition time"
        );
        assert_eq!(list[0].reason, "StillWaiting");
        assert_eq!(list[0].observed_generation, Some(2));
    }

    #[test]
    fn flip_moves_last_transition_time() {
        let mut list = Vec::new();
        set(&mut list, ConditionUpdate::failed("A", "Waiting", "x"), Some(1), t(0));
        let change = set(&mut list, ConditionUpdate::ok("A", "Done", "y"), Some(1), t(90));
        assert_eq!(change, Change::Flipped);
        assert_eq!(list[0].last_transition_time, Time(t(90)));
    }

    #[test]
    fn identical_update_reports_unchanged() {
        let mut list = Vec::new();
        set(&mut list, ConditionUpdate::ok("A", "Done", "y"), Some(1), t(0));
        assert_eq!(
            set(&mut list, ConditionUpdate::ok("A", "Done", "y"), Some(1), t(5)),
            Change::Unchanged
        );
        assert_eq!(list.len(), 1, "conditions are keyed by type");
    }

    #[test]
    fn ready_is_the_conjunction_of_applicable_conditions() {
        let mut list = Vec::new();
        set(&mut list, ConditionUpdate::ok("A", "Ok", ""), None, t(0));
        set(
            &mut list,
            ConditionUpdate::failed("B", "Broken", "b is broken"),
            None,
            t(0),
        );
        assert_eq!(aggregate_ready(&list, &["A"]).status, Status::True);
        let ready = aggregate_ready(&list, &["A", "B"]);
        assert_eq!(ready.status, Status::False);
        assert_eq!(ready.reason, "Broken");
        assert_eq!(ready.message, "b is broken");
        let pending = aggregate_ready(&list, &["A", "C"]);
        assert_eq!(pending.status, Status::Unknown);
    }

    #[test]
    fn a_false_condition_wins_over_an_unknown_one() {
        let mut list = Vec::new();
        set(&mut list, ConditionUpdate::unknown("A", "Pending", ""), None, t(0));
        set(&mut list, ConditionUpdate::failed("B", "Broken", ""), None, t(0));
        assert_eq!(aggregate_ready(&list, &["A", "B"]).reason, "Broken");
    }

    #[test]
    fn remove_drops_a_condition() {
        let mut list = Vec::new();
        set(&mut list, ConditionUpdate::ok("TLSReady", "Ok", ""), None, t(0));
        assert!(remove(&mut list, "TLSReady"));
        assert!(!remove(&mut list, "TLSReady"));
        assert!(list.is_empty());
    }
}
