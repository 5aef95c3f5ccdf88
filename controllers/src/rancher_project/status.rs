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

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crds::rancher::{ManagedRancherProject, ManagedRancherProjectStatus, Phase, RoleBindingStatus, SyncedMember};
use framework::conditions::{self, ConditionUpdate, READY, Status};
use framework::status::{OnConflict, StatusPolicy, StatusUpdate};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::Resource;

use super::RancherProjectController;
use super::desired::{BindingKey, Desired};
use super::found::{Done, GroupsDone};

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

/// The sub-conditions `Ready` requires, of those that apply: without Keycloak in the operator, the Keycloak ones
/// are shown (saying what is not managed) but do not hold the project back, as the original operator skipped
/// its Keycloak steps.
pub fn required_for_ready(applicable: &[&'static str], keycloak_configured: bool) -> Vec<&'static str> {
    applicable
        .iter()
        .copied()
        .filter(|type_| keycloak_configured || !matches!(*type_, KEYCLOAK_GROUPS_READY | MEMBERSHIP_SYNCED))
        .collect()
}

/// Whole seconds: what the API server stores for timestamps, so what the next reconcile compares against.
pub fn to_seconds(at: Timestamp) -> Timestamp {
    Timestamp::from_second(at.as_second()).unwrap_or(at)
}

/// The status being assembled during one reconcile.
pub type StatusBuilder = StatusUpdate<ManagedRancherProjectStatus>;

/// Starts assembling `mrp`'s status.
pub fn begin(mrp: &ManagedRancherProject, now: Timestamp) -> StatusBuilder {
    StatusUpdate::new::<RancherProjectController>(mrp, now)
}

/// Sets the sub-conditions in `updates` (applicable ones not mentioned become Unknown if absent), drops
/// condition types that do not apply (including the original operator's `Reconciled` and `NamespaceReady`) and
/// derives `Ready` from the `required` ones.
pub fn set_conditions(
    update: &mut StatusBuilder,
    updates: Vec<ConditionUpdate>,
    applicable: &[&str],
    required: &[&str],
) {
    update.keep_only(applicable);
    for type_ in applicable {
        let condition = updates.iter().find(|u| u.type_ == *type_).cloned().or_else(|| {
            conditions::get(update.conditions(), type_)
                .is_none()
                .then(|| ConditionUpdate::unknown(type_, "Pending", "not reconciled yet"))
        });
        if let Some(condition) = condition {
            update.set(condition);
        }
    }
    let mut message = ready_message(&update.status);
    if let Some(skipped) = applicable
        .iter()
        .find(|type_| !required.contains(type_))
        .and_then(|type_| conditions::get(update.conditions(), type_))
        .filter(|c| c.status == Status::False.as_str())
    {
        message.push_str(&format!("; not managed: {}", skipped.message));
    }
    update.derive_ready(required, Some(message));
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
/// Only the conditions `Ready` requires count.
pub fn phase(
    status: &ManagedRancherProjectStatus,
    required: &[&str],
    persistent: bool,
    now: Timestamp,
    error_after: Duration,
) -> Phase {
    let error_after = SignedDuration::try_from(error_after).unwrap_or(SignedDuration::MAX);
    let lasting = status
        .conditions
        .iter()
        .filter(|c| c.type_ != READY && required.contains(&c.type_.as_str()))
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

/// The status records facts about Rancher and Keycloak (the members the pass added, with their Keycloak ids;
/// the groups and bindings it made), which later passes rely on to remove only what the operator added. A write
/// refused as stale (a new spec, our own finalizer, a status written meanwhile that the cache had not shown) must
/// not lose them: a member added for a spec that has changed since would count as added by hand and never be
/// removed, and a binding made for it would never be deleted. So conflicts rebase: the pass's records are
/// written onto the stored object, merged with what it records ([`rebase`]). Persisting an intention before
/// every external write (as the ApplicationCredential controller does for its one secret) would cost a status
/// write per membership.
///
/// The original operator wrote the status with merge patches; fields it left are cleared on the first write.
impl StatusPolicy for RancherProjectController {
    type Resource = ManagedRancherProject;
    type Status = ManagedRancherProjectStatus;
    const ON_CONFLICT: OnConflict = OnConflict::Rebase;
    const CLEARS_FOREIGN_FIELDS: bool = true;

    fn conditions(status: &ManagedRancherProjectStatus) -> &[Condition] {
        &status.conditions
    }

    fn conditions_mut(status: &mut ManagedRancherProjectStatus) -> &mut Vec<Condition> {
        &mut status.conditions
    }

    fn observed_generation(status: &mut ManagedRancherProjectStatus) -> &mut Option<i64> {
        &mut status.observed_generation
    }

    fn rebase(
        &self,
        ours: &ManagedRancherProjectStatus,
        base: &ManagedRancherProjectStatus,
        theirs: &ManagedRancherProjectStatus,
    ) -> ManagedRancherProjectStatus {
        let mut merged = rebase(ours, base, theirs);
        stamp(theirs, &mut merged, to_seconds(self.clock.now()));
        merged
    }
}

/// The status to write on a fresh copy of the object after a write computed from `base` (the status the pass
/// read) was refused as stale: `ours` (what the pass computed), plus the records `theirs` (the status stored
/// now) holds that `base` did not, i.e. anything written since the pass read the object.
///
/// The records are facts about Rancher and Keycloak, true whatever the spec says now: the members the pass
/// added or found (`syncedMembers` with their Keycloak ids, which make them "managed", so removable later), the
/// groups and bindings it made or found (their ids), the project, the parent group, and the entries of removed
/// bindings whose cleanup is unfinished. Dropping one would make a later pass treat what the operator granted as
/// made by hand and never revoke it. So nothing recorded is dropped: an entry `theirs` has and `ours` does not is
/// kept (the next pass removes it unless the spec wants it), members are the union, and an id is `ours` unless
/// the pass did not find one. Only what the pass itself removed (absent from `ours` but present in `base`) stays
/// removed. When `theirs` equals `base` — the usual case: only the spec or the metadata changed — this is `ours`.
///
/// Conditions, phase and `observedGeneration` are the pass's: they describe the generation it reconciled; the
/// change that caused the conflict brings another pass for the new one. `lastReconcileTime` is stamped by the
/// policy against `theirs`.
pub fn rebase(
    ours: &ManagedRancherProjectStatus,
    base: &ManagedRancherProjectStatus,
    theirs: &ManagedRancherProjectStatus,
) -> ManagedRancherProjectStatus {
    let mut merged = ours.clone();
    if merged.rancher_project_id.as_deref().unwrap_or_default().is_empty() {
        merged.rancher_project_id = theirs.rancher_project_id.clone();
    }
    if theirs.keycloak_parent_group_id != base.keycloak_parent_group_id
        && merged
            .keycloak_parent_group_id
            .as_deref()
            .unwrap_or_default()
            .is_empty()
    {
        merged.keycloak_parent_group_id = theirs.keycloak_parent_group_id.clone();
    }
    rebase_entries(
        &mut merged.keycloak_role_bindings,
        &base.keycloak_role_bindings,
        &theirs.keycloak_role_bindings,
    );
    rebase_entries(
        &mut merged.cluster_keycloak_role_bindings,
        &base.cluster_keycloak_role_bindings,
        &theirs.cluster_keycloak_role_bindings,
    );
    merged
}

/// A synced member's identity: its Keycloak id (the record removal relies on), else its identifier.
fn member_key(member: &SyncedMember) -> &str {
    member.keycloak_user_id.as_deref().unwrap_or(&member.user_identifier)
}

/// Whether two entries record the same facts (ids and managed members; counts and pending members aside).
fn same_records(a: &RoleBindingStatus, b: &RoleBindingStatus) -> bool {
    let members = |e: &RoleBindingStatus| -> BTreeSet<String> {
        e.synced_members.iter().map(|m| member_key(m).to_string()).collect()
    };
    a.keycloak_group_id == b.keycloak_group_id
        && a.replaced_keycloak_group_id == b.replaced_keycloak_group_id
        && a.rancher_binding_id == b.rancher_binding_id
        && members(a) == members(b)
}

fn rebase_entries(ours: &mut Vec<RoleBindingStatus>, base: &[RoleBindingStatus], theirs: &[RoleBindingStatus]) {
    for their in theirs {
        let before = base
            .iter()
            .find(|b| b.group_name == their.group_name && b.rancher_role == their.rancher_role);
        if before.is_some_and(|b| same_records(b, their)) {
            // Nothing recorded since the pass read it: the pass's own entry (or its removal) stands.
            continue;
        }
        let known_before = |member: &SyncedMember| {
            before.is_some_and(|b| b.synced_members.iter().any(|m| member_key(m) == member_key(member)))
        };
        // An entry of the 0.0.3 operator (no role) is the one the pass rewrote with the role.
        let mine = ours.iter_mut().find(|o| {
            o.group_name == their.group_name && (their.rancher_role.is_none() || o.rancher_role == their.rancher_role)
        });
        let Some(mine) = mine else {
            // Recorded by someone else since the pass read the object, or changed since the pass removed it:
            // kept as it is, so the next pass cleans it up (or keeps it, if the spec wants it).
            ours.push(their.clone());
            continue;
        };
        if mine.keycloak_group_id.is_none() {
            mine.keycloak_group_id = their.keycloak_group_id.clone();
        }
        if mine.replaced_keycloak_group_id.is_none() {
            // Removing a group that is gone already is a no-op; forgetting one that is not would orphan it.
            mine.replaced_keycloak_group_id = their.replaced_keycloak_group_id.clone();
        }
        if mine.rancher_binding_id.is_none() {
            mine.rancher_binding_id = their.rancher_binding_id.clone();
        }
        let mut added = false;
        for member in &their.synced_members {
            if !known_before(member) && !mine.synced_members.iter().any(|m| member_key(m) == member_key(member)) {
                mine.synced_members.push(member.clone());
                added = true;
            }
        }
        if added {
            mine.synced_members
                .sort_by(|a, b| a.user_identifier.cmp(&b.user_identifier));
        }
    }
}

/// The records of the status after a pass: the project id, the parent group id and one entry per wanted
/// binding (this pass's findings, else what the previous status said), plus the entries of removed bindings whose
/// cleanup is unfinished. Conditions are carried over for [`set_conditions`].
pub fn records(
    mrp: &ManagedRancherProject,
    previous: &ManagedRancherProjectStatus,
    desired: &Desired,
    done: Done,
) -> ManagedRancherProjectStatus {
    let Done {
        project,
        groups: groups_done,
        bindings: bindings_done,
        project_leftovers,
        cluster_leftovers,
    } = done;
    let mut next = ManagedRancherProjectStatus {
        rancher_project_id: project
            .as_ref()
            .map(|p| p.id.clone())
            .or_else(|| previous.rancher_project_id.clone()),
        conditions: previous.conditions.clone(),
        observed_generation: mrp.meta().generation,
        ..ManagedRancherProjectStatus::default()
    };
    next.keycloak_parent_group_id = match (&desired.project, &desired.parent) {
        (None, _) => previous.keycloak_parent_group_id.clone(),
        (Some(_), Some(_)) if groups_done.parent_known => groups_done.parent_id.clone(),
        (Some(_), Some(_)) => previous.keycloak_parent_group_id.clone(),
        (Some(_), None) => None,
    };
    next.keycloak_role_bindings = match &desired.project {
        None => previous.keycloak_role_bindings.clone(),
        Some(keys) => keys
            .iter()
            .map(|k| {
                entry(
                    k,
                    &previous.keycloak_role_bindings,
                    &groups_done,
                    &bindings_done.project_ids,
                )
            })
            .chain(project_leftovers)
            .collect(),
    };
    next.cluster_keycloak_role_bindings = match &desired.cluster {
        None => previous.cluster_keycloak_role_bindings.clone(),
        Some(keys) => keys
            .iter()
            .map(|k| {
                entry(
                    k,
                    &previous.cluster_keycloak_role_bindings,
                    &groups_done,
                    &bindings_done.cluster_ids,
                )
            })
            .chain(cluster_leftovers)
            .collect(),
    };
    next
}

/// The status entry of one wanted binding: this pass's findings, else what the previous status said.
fn entry(
    key: &BindingKey,
    previous: &[RoleBindingStatus],
    groups: &GroupsDone,
    binding_ids: &BTreeMap<BindingKey, String>,
) -> RoleBindingStatus {
    let before = previous
        .iter()
        .find(|e| e.group_name == key.group && e.rancher_role.as_deref() == Some(key.role.as_str()))
        .or_else(|| {
            previous
                .iter()
                .find(|e| e.group_name == key.group && e.rancher_role.is_none())
        })
        .cloned()
        .unwrap_or_default();
    let (member_count, synced_members, pending_members) = match groups.members.get(&key.group) {
        Some(synced) => (synced.member_count, synced.synced.clone(), synced.pending.clone()),
        None => (before.member_count, before.synced_members, before.pending_members),
    };
    RoleBindingStatus {
        group_name: key.group.clone(),
        rancher_role: Some(key.role.clone()),
        keycloak_group_id: groups.ids.get(&key.group).cloned().or(before.keycloak_group_id),
        // Decided by this pass when it found the group (removed, or still waiting); else as recorded.
        replaced_keycloak_group_id: if groups.ids.contains_key(&key.group) {
            groups.replaced.get(&key.group).cloned()
        } else {
            before.replaced_keycloak_group_id
        },
        rancher_binding_id: binding_ids.get(key).cloned().or(before.rancher_binding_id),
        member_count,
        synced_members,
        pending_members,
    }
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

    /// The status after one pass that reports `updates` on an object whose status is `status`.
    fn after_pass(
        status: ManagedRancherProjectStatus,
        updates: Vec<ConditionUpdate>,
        applicable: &[&str],
        now: &str,
    ) -> ManagedRancherProjectStatus {
        let mut mrp: ManagedRancherProject = serde_json::from_value(serde_json::json!({
            "apiVersion": "waldur.io/v1alpha1", "kind": "ManagedRancherProject",
            "metadata": {"name": "genomics", "namespace": "waldur-system", "generation": 1},
            "spec": {"projectName": "Genomics", "clusterId": "c-1", "organization": "org"},
        }))
        .expect("valid object");
        mrp.status = Some(status);
        let mut update = begin(&mrp, t(now));
        set_conditions(&mut update, updates, applicable, applicable);
        update.status
    }

    #[test]
    fn ready_summarizes_first_and_a_repeat_changes_nothing() {
        let status = ManagedRancherProjectStatus {
            rancher_project_id: Some("c:p-1".into()),
            ..Default::default()
        };
        let status = after_pass(status, all_ok(), &applicable(true), "2026-01-01T00:00:00Z");
        assert_eq!(status.conditions[0].type_, READY);
        assert_eq!(status.conditions[0].status, "True");
        assert_eq!(status.conditions.len(), 6);
        assert_eq!(status.observed_generation, Some(1));
        let again = after_pass(status.clone(), all_ok(), &applicable(true), "2026-01-01T01:00:00Z");
        assert_eq!(again, status);
        assert_eq!(
            phase(
                &again,
                &applicable(true),
                false,
                t("2026-01-01T01:00:00Z"),
                Duration::from_secs(600)
            ),
            Phase::Ready
        );
    }

    #[test]
    fn the_original_operators_conditions_are_dropped() {
        let status = after_pass(
            ManagedRancherProjectStatus::default(),
            vec![ConditionUpdate::failed("Reconciled", "Error", "boom")],
            &["Reconciled"],
            "2026-01-01T00:00:00Z",
        );
        assert!(conditions::get(&status.conditions, "Reconciled").is_some());
        let status = after_pass(status, all_ok(), &applicable(true), "2026-01-01T00:00:00Z");
        assert!(conditions::get(&status.conditions, "Reconciled").is_none());
    }

    #[test]
    fn outages_become_errors_only_when_they_last() {
        let mut updates = all_ok();
        updates[0] = ConditionUpdate::failed(RANCHER_PROJECT_READY, "RancherUnavailable", "down");
        let initial = ManagedRancherProjectStatus {
            rancher_project_id: Some("c:p-1".into()),
            ..Default::default()
        };
        let mut status = after_pass(initial, updates, &applicable(true), "2026-01-01T00:00:00Z");
        let limit = Duration::from_secs(600);
        assert_eq!(
            phase(&status, &applicable(true), false, t("2026-01-01T00:05:00Z"), limit),
            Phase::Updating
        );
        assert_eq!(
            phase(&status, &applicable(true), false, t("2026-01-01T00:10:00Z"), limit),
            Phase::Error
        );
        assert_eq!(
            phase(&status, &applicable(true), true, t("2026-01-01T00:00:01Z"), limit),
            Phase::Error
        );
        status.rancher_project_id = None;
        assert_eq!(
            phase(&status, &applicable(true), false, t("2026-01-01T00:00:01Z"), limit),
            Phase::Creating
        );
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

    fn member(name: &str) -> SyncedMember {
        SyncedMember {
            user_identifier: name.into(),
            keycloak_user_id: Some(format!("id-{name}")),
        }
    }

    fn entry(group: &str, role: &str, members: &[&str]) -> RoleBindingStatus {
        RoleBindingStatus {
            group_name: group.into(),
            rancher_role: Some(role.into()),
            keycloak_group_id: Some(format!("gid-{group}")),
            rancher_binding_id: Some(format!("p:prtb-{group}")),
            member_count: i64::try_from(members.len()).unwrap_or_default(),
            synced_members: members.iter().map(|m| member(m)).collect(),
            ..Default::default()
        }
    }

    fn with_bindings(bindings: Vec<RoleBindingStatus>) -> ManagedRancherProjectStatus {
        ManagedRancherProjectStatus {
            rancher_project_id: Some("c:p-1".into()),
            keycloak_parent_group_id: Some("parent".into()),
            keycloak_role_bindings: bindings,
            ..Default::default()
        }
    }

    #[test]
    fn a_conflict_caused_by_a_spec_change_writes_what_the_pass_recorded() {
        // The pass read alice; it added bob and made the admin binding for a spec that has changed since.
        let base = with_bindings(vec![entry("members", "project-member", &["alice"])]);
        let ours = with_bindings(vec![
            entry("members", "project-member", &["alice", "bob"]),
            entry("admins", "project-owner", &["carol"]),
        ]);
        assert_eq!(
            rebase(&ours, &base, &base),
            ours,
            "the stored status is the one read: ours as it is"
        );
    }

    #[test]
    fn what_the_pass_removed_stays_removed_and_what_others_recorded_is_kept() {
        let base = with_bindings(vec![
            entry("members", "project-member", &["alice", "bob"]),
            entry("gone", "project-member", &["dave"]),
        ]);
        // The pass removed bob and the binding "gone".
        let ours = with_bindings(vec![entry("members", "project-member", &["alice"])]);
        // Meanwhile another write recorded carol as a member and a binding the pass never saw.
        let mut theirs = base.clone();
        theirs.keycloak_role_bindings[0].synced_members.push(member("carol"));
        theirs.keycloak_role_bindings.push(entry("new", "read-only", &["erin"]));
        let merged = rebase(&ours, &base, &theirs);
        let names: Vec<&str> = merged
            .keycloak_role_bindings
            .iter()
            .map(|e| e.group_name.as_str())
            .collect();
        assert_eq!(
            names,
            vec!["members", "new"],
            "gone stays removed, new is kept for the next pass"
        );
        let members: Vec<&str> = merged.keycloak_role_bindings[0]
            .synced_members
            .iter()
            .map(|m| m.user_identifier.as_str())
            .collect();
        assert_eq!(
            members,
            vec!["alice", "carol"],
            "bob stays removed, carol stays managed"
        );
    }

    #[test]
    fn ids_the_pass_did_not_find_are_taken_from_the_stored_status() {
        let base = ManagedRancherProjectStatus::default();
        let mut ours = with_bindings(vec![entry("members", "project-member", &["alice"])]);
        ours.rancher_project_id = None;
        ours.keycloak_parent_group_id = None;
        ours.keycloak_role_bindings[0].rancher_binding_id = None;
        let theirs = with_bindings(vec![entry("members", "project-member", &["alice"])]);
        let merged = rebase(&ours, &base, &theirs);
        assert_eq!(merged.rancher_project_id.as_deref(), Some("c:p-1"));
        assert_eq!(merged.keycloak_parent_group_id.as_deref(), Some("parent"));
        assert_eq!(
            merged.keycloak_role_bindings[0].rancher_binding_id.as_deref(),
            Some("p:prtb-members")
        );
        // A parent the pass dropped on purpose (no parent in the spec) stays dropped when nothing changed it.
        let merged = rebase(&ours, &theirs, &theirs);
        assert_eq!(merged.keycloak_parent_group_id, None);
    }

    #[test]
    fn a_legacy_entry_rewritten_with_its_role_is_not_duplicated() {
        let mut legacy = entry("members", "ignored", &["alice"]);
        legacy.rancher_role = None;
        let base = ManagedRancherProjectStatus::default();
        let theirs = with_bindings(vec![legacy]);
        let ours = with_bindings(vec![entry("members", "project-member", &["alice"])]);
        let merged = rebase(&ours, &base, &theirs);
        assert_eq!(merged.keycloak_role_bindings.len(), 1);
        assert_eq!(merged.keycloak_role_bindings[0].synced_members.len(), 1);
    }
}
