//! The status the Waldur plugin reads: phase, ids, per-binding members, and the conditions
//! `RancherProjectReady`, `ResourceQuotaReady`, `KeycloakGroupsReady`, `RancherBindingsReady`,
//! `MembershipSynced` with the summary `Ready` first.
//!
//! Everything here is pure and deterministic, so a reconcile that changes nothing computes exactly the status
//! the object has and writes nothing: condition messages carry no times, `lastTransitionTime` moves only when a
//! condition flips, and `lastReconcileTime` moves only when something else in the status changed.
//!
//! Phase: `Error` only for persistent failures (a refused request, a name taken, missing configuration, or an
//! outage that has lasted longer than `--rancher-error-after-seconds`), because the plugin marks the Waldur
//! project erred on `Error`; `Creating` until a Rancher project exists; `Ready` when every condition holds
//! (members still waiting for their first Keycloak login do not hold it back, the plugin reports them itself);
//! `Updating` otherwise; `Deleting` while cleanup is blocked.

use std::collections::BTreeSet;
use std::time::Duration;

use crds::rancher::{ManagedRancherProject, ManagedRancherProjectStatus, Phase};
use framework::conditions::{self, ConditionUpdate, READY, Status};
use framework::status::{Precondition, write_if_changed};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

/// Condition: the Rancher project exists (created or adopted) with the spec's name, description, annotations.
pub const RANCHER_PROJECT_READY: &str = "RancherProjectReady";
/// Condition: the project quota and namespace default quota match `spec.resourceQuotas`.
pub const RESOURCE_QUOTA_READY: &str = "ResourceQuotaReady";
/// Condition: the parent and binding groups exist in Keycloak.
pub const KEYCLOAK_GROUPS_READY: &str = "KeycloakGroupsReady";
/// Condition: the project (and cluster) role template bindings exist, and removed ones are gone.
pub const RANCHER_BINDINGS_READY: &str = "RancherBindingsReady";
/// Condition: every listed user who exists in Keycloak is a member; reason `MembersPending` when some users
/// do not exist yet.
pub const MEMBERSHIP_SYNCED: &str = "MembershipSynced";

/// The sub-conditions that apply: the access ones only when the object manages Keycloak groups or bindings.
pub fn applicable(manages_access: bool) -> Vec<&'static str> {
    let mut types = vec![RANCHER_PROJECT_READY, RESOURCE_QUOTA_READY];
    if manages_access {
        types.extend([KEYCLOAK_GROUPS_READY, RANCHER_BINDINGS_READY, MEMBERSHIP_SYNCED]);
    }
    types
}

/// Whole seconds: what the API server stores for timestamps, so what the next reconcile compares against.
pub fn to_seconds(at: Timestamp) -> Timestamp {
    Timestamp::from_second(at.as_second()).unwrap_or(at)
}

/// Sets the sub-conditions in `updates` (applicable ones not mentioned become Unknown if absent), drops
/// condition types that do not apply (including the original operator's `Reconciled` and `NamespaceReady`),
/// derives `Ready` and keeps it first.
pub fn set_conditions(
    status: &mut ManagedRancherProjectStatus,
    updates: Vec<ConditionUpdate>,
    applicable: &[&str],
    generation: Option<i64>,
    now: Timestamp,
) {
    status
        .conditions
        .retain(|c| c.type_ == READY || applicable.contains(&c.type_.as_str()));
    for type_ in applicable {
        let update = updates.iter().find(|u| u.type_ == *type_).cloned().or_else(|| {
            conditions::get(&status.conditions, type_)
                .is_none()
                .then(|| ConditionUpdate::unknown(type_, "Pending", "not reconciled yet"))
        });
        if let Some(update) = update {
            conditions::set(&mut status.conditions, update, generation, now);
        }
    }
    let mut ready = conditions::aggregate_ready(&status.conditions, applicable);
    if ready.status == Status::True {
        ready = ConditionUpdate::ok(READY, "Ready", ready_message(status));
    }
    conditions::set(&mut status.conditions, ready, generation, now);
    if let Some(index) = status.conditions.iter().position(|c| c.type_ == READY)
        && index != 0
    {
        let ready = status.conditions.remove(index);
        status.conditions.insert(0, ready);
    }
}

fn ready_message(status: &ManagedRancherProjectStatus) -> String {
    let bindings = status.keycloak_role_bindings.len() + status.cluster_keycloak_role_bindings.len();
    let pending: usize = status
        .keycloak_role_bindings
        .iter()
        .chain(&status.cluster_keycloak_role_bindings)
        .map(|b| b.pending_members.len())
        .sum();
    let mut message = format!(
        "Rancher project {} is ready with {bindings} role binding(s)",
        status.rancher_project_id.as_deref().unwrap_or_default()
    );
    if pending > 0 {
        message.push_str(&format!(
            "; {pending} member(s) wait for their user to exist in Keycloak"
        ));
    }
    message
}

/// The phase, from the conditions just set. `persistent` is true when this pass failed in a way retrying will
/// not fix; a failing condition that has been False for longer than `error_after` counts as persistent too.
pub fn phase(status: &ManagedRancherProjectStatus, persistent: bool, now: Timestamp, error_after: Duration) -> Phase {
    let error_after = SignedDuration::try_from(error_after).unwrap_or(SignedDuration::MAX);
    let lasting = status
        .conditions
        .iter()
        .filter(|c| c.type_ != READY)
        .any(|c| c.status == Status::False.as_str() && now.duration_since(c.last_transition_time.0) >= error_after);
    if persistent || lasting {
        Phase::Error
    } else if status.rancher_project_id.as_deref().unwrap_or_default().is_empty() {
        Phase::Creating
    } else if conditions::is_true(&status.conditions, READY) {
        Phase::Ready
    } else {
        Phase::Updating
    }
}

/// Stamps `lastReconcileTime` when anything else changed (so a no-op reconcile writes nothing).
pub fn stamp(previous: &ManagedRancherProjectStatus, desired: &mut ManagedRancherProjectStatus, now: Timestamp) {
    desired.last_reconcile_time = previous.last_reconcile_time.clone();
    if desired != previous {
        desired.last_reconcile_time = Some(Time(now));
    }
}

/// Whether the stored status has something the desired one does not: a top-level field or a condition type
/// another writer (the original operator, through kopf's merge patches) left. Server-side apply never removes
/// fields another manager owns, so such leftovers are cleared with one merge patch instead.
pub fn has_foreign_leftovers(current: &Value, desired: &Value) -> bool {
    let (Some(current), Some(desired)) = (current.as_object(), desired.as_object()) else {
        return false;
    };
    let meaningful = |v: &Value| !(v.is_null() || v.as_array().is_some_and(Vec::is_empty));
    let extra_key = current
        .iter()
        .any(|(key, value)| meaningful(value) && !desired.get(key).is_some_and(meaningful));
    let types = |status: &serde_json::Map<String, Value>| -> BTreeSet<String> {
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
    extra_key || !types(current).is_subset(&types(desired))
}

/// Writes `desired` as the object's status when it differs: normally by server-side apply with the object's
/// resourceVersion as a precondition ([`write_if_changed`]); when another writer's leftovers are present, by one
/// JSON merge patch (same precondition) that replaces them. Returns whether it wrote.
pub async fn write(
    api: &Api<ManagedRancherProject>,
    obj: &ManagedRancherProject,
    desired: &ManagedRancherProjectStatus,
    field_manager: &str,
) -> Result<bool, kube::Error> {
    let current = serde_json::to_value(obj.status.clone().unwrap_or_default()).map_err(kube::Error::SerdeError)?;
    let wanted = serde_json::to_value(desired).map_err(kube::Error::SerdeError)?;
    if !has_foreign_leftovers(&current, &wanted) {
        return write_if_changed(
            api,
            obj,
            obj.status.as_ref(),
            desired,
            field_manager,
            Precondition::ResourceVersion,
        )
        .await;
    }
    let mut status = wanted;
    if let (Some(status), Some(current)) = (status.as_object_mut(), current.as_object()) {
        for key in current.keys() {
            status.entry(key.clone()).or_insert(Value::Null);
        }
    }
    let patch = json!({
        "metadata": {"resourceVersion": obj.resource_version()},
        "status": status,
    });
    let params = PatchParams {
        field_manager: Some(field_manager.to_string()),
        ..PatchParams::default()
    };
    api.patch_status(&obj.name_any(), &params, &Patch::Merge(&patch))
        .await?;
    tracing::info!("replaced a status left by another writer (the original operator)");
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Timestamp {
        s.parse().expect("timestamp")
    }

    fn all_ok() -> Vec<ConditionUpdate> {
        applicable(true)
            .into_iter()
            .map(|type_| ConditionUpdate::ok(type_, "Fine", "fine"))
            .collect()
    }

    #[test]
    fn ready_summarizes_first_and_a_repeat_changes_nothing() {
        let mut status = ManagedRancherProjectStatus {
            rancher_project_id: Some("c:p-1".into()),
            ..Default::default()
        };
        set_conditions(
            &mut status,
            all_ok(),
            &applicable(true),
            Some(1),
            t("2026-01-01T00:00:00Z"),
        );
        assert_eq!(status.conditions[0].type_, READY);
        assert_eq!(status.conditions[0].status, "True");
        assert_eq!(status.conditions.len(), 6);
        let before = status.clone();
        set_conditions(
            &mut status,
            all_ok(),
            &applicable(true),
            Some(1),
            t("2026-01-01T01:00:00Z"),
        );
        assert_eq!(before, status);
        assert_eq!(
            phase(&status, false, t("2026-01-01T01:00:00Z"), Duration::from_secs(600)),
            Phase::Ready
        );
    }

    #[test]
    fn the_original_operators_conditions_are_dropped() {
        let mut status = ManagedRancherProjectStatus::default();
        set_conditions(
            &mut status,
            vec![ConditionUpdate::failed("Reconciled", "Error", "boom")],
            &[],
            None,
            t("2026-01-01T00:00:00Z"),
        );
        set_conditions(
            &mut status,
            all_ok(),
            &applicable(true),
            Some(1),
            t("2026-01-01T00:00:00Z"),
        );
        assert!(conditions::get(&status.conditions, "Reconciled").is_none());
    }

    #[test]
    fn outages_become_errors_only_when_they_last() {
        let mut status = ManagedRancherProjectStatus {
            rancher_project_id: Some("c:p-1".into()),
            ..Default::default()
        };
        let mut updates = all_ok();
        updates[0] = ConditionUpdate::failed(RANCHER_PROJECT_READY, "RancherUnavailable", "down");
        set_conditions(
            &mut status,
            updates,
            &applicable(true),
            Some(1),
            t("2026-01-01T00:00:00Z"),
        );
        let limit = Duration::from_secs(600);
        assert_eq!(phase(&status, false, t("2026-01-01T00:05:00Z"), limit), Phase::Updating);
        assert_eq!(phase(&status, false, t("2026-01-01T00:10:00Z"), limit), Phase::Error);
        assert_eq!(phase(&status, true, t("2026-01-01T00:00:01Z"), limit), Phase::Error);
        status.rancher_project_id = None;
        assert_eq!(phase(&status, false, t("2026-01-01T00:00:01Z"), limit), Phase::Creating);
    }

    #[test]
    fn last_reconcile_time_moves_only_with_a_change() {
        let previous = ManagedRancherProjectStatus {
            phase: Some(Phase::Ready),
            last_reconcile_time: Some(Time(t("2026-01-01T00:00:00Z"))),
            ..Default::default()
        };
        let mut same = ManagedRancherProjectStatus {
            phase: Some(Phase::Ready),
            ..Default::default()
        };
        stamp(&previous, &mut same, t("2026-01-02T00:00:00Z"));
        assert_eq!(same, previous);
        let mut changed = ManagedRancherProjectStatus {
            phase: Some(Phase::Updating),
            ..Default::default()
        };
        stamp(&previous, &mut changed, t("2026-01-02T00:00:00Z"));
        assert_eq!(changed.last_reconcile_time, Some(Time(t("2026-01-02T00:00:00Z"))));
    }

    #[test]
    fn leftovers_of_the_original_operator_are_detected() {
        let ours = json!({"phase": "Ready", "conditions": [{"type": "Ready"}, {"type": "MembershipSynced"}]});
        assert!(!has_foreign_leftovers(&ours, &ours));
        let with_namespace = json!({"phase": "Ready", "namespaceName": "ns", "conditions": [{"type": "Ready"}]});
        assert!(has_foreign_leftovers(&with_namespace, &ours));
        let with_reconciled = json!({"conditions": [{"type": "Reconciled"}, {"type": "Ready"}]});
        assert!(has_foreign_leftovers(&with_reconciled, &ours));
        assert!(
            !has_foreign_leftovers(&json!({"keycloakRoleBindings": []}), &ours),
            "empty is absent"
        );
    }
}
