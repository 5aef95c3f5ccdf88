//! Group membership. Spec identifiers (a Keycloak user id, or a username when `lookupByID` is false) are
//! resolved to Keycloak user ids *before* diffing, so an unchanged spec never flaps (the 0.0.3 operator compared
//! usernames with ids). Members already in the group are recognised from the member listing itself; only
//! identifiers not found there are looked up, so a steady state costs one listing per group.
//!
//! Policy: users are never created. A user Keycloak does not know yet is *pending* (reported with a reason,
//! retried on every resync, added once it exists). Only members this operator manages — those it reported as
//! synced before — are removed when the spec stops listing them; members added by hand stay, unless the manager
//! runs with `--rancher-authoritative-membership`.

use std::collections::BTreeSet;

use crds::rancher::{PendingMember, RoleBindingStatus, SyncedMember};

use super::desired::DesiredMember;
use super::error::MrpError;
use super::found::Synced;
use super::groups::{self, Removal};
use super::reconcile::Pass;
use super::status::{KEYCLOAK_GROUPS_READY, MEMBERSHIP_SYNCED};
use crate::keycloak::{RealmClient, User};

/// Reason of a member whose user does not exist in Keycloak yet.
pub const USER_NOT_FOUND: &str = "UserNotFound";
/// Reason of a member whose lookup or addition failed.
pub const SYNC_FAILED: &str = "SyncFailed";

/// The current members to remove (pure): those not wanted that this operator manages, or every unwanted one
/// when membership is authoritative.
pub fn removals<'a>(
    current: &'a [User],
    wanted_ids: &BTreeSet<String>,
    managed_ids: &BTreeSet<String>,
    authoritative: bool,
) -> Vec<&'a User> {
    current
        .iter()
        .filter(|u| !wanted_ids.contains(&u.id))
        .filter(|u| authoritative || managed_ids.contains(&u.id))
        .collect()
}

fn pending(member: &DesiredMember, reason: &str, message: String) -> PendingMember {
    PendingMember {
        user_identifier: member.identifier.clone(),
        reason: reason.to_string(),
        message: Some(message),
    }
}

/// Brings the members of group `group_id` in line with `wanted`. `current` is the group's member listing
/// (`None` to list it here); `managed_ids` are the Keycloak ids this operator reported as synced before.
///
/// Individual failures leave the member pending (or, for removals, in the group) and are returned as the error
/// after every other member was handled, so one bad user never blocks the rest.
pub async fn sync(
    realm: &RealmClient,
    group_id: &str,
    current: Option<Vec<User>>,
    wanted: &[DesiredMember],
    managed_ids: &BTreeSet<String>,
    authoritative: bool,
) -> (Synced, Option<MrpError>) {
    let mut error: Option<MrpError> = None;
    let current = match current {
        Some(current) => current,
        None => match realm.group_members(group_id).await {
            Ok(current) => current,
            Err(e) => return (Synced::default(), Some(e.into())),
        },
    };
    let mut out = Synced::default();
    let mut wanted_ids = BTreeSet::new();
    let mut present: BTreeSet<String> = current.iter().map(|u| u.id.clone()).collect();
    for member in wanted {
        if let Some(user) = current.iter().find(|u| member.is(u)) {
            wanted_ids.insert(user.id.clone());
            out.synced.push(SyncedMember {
                user_identifier: member.identifier.clone(),
                keycloak_user_id: Some(user.id.clone()),
            });
            continue;
        }
        let user = match realm.find_user(&member.reference()).await {
            Ok(Some(user)) => user,
            Ok(None) => {
                let what = if member.by_id { "id" } else { "username" };
                out.pending.push(pending(
                    member,
                    USER_NOT_FOUND,
                    format!(
                        "no Keycloak user with {what} {} yet; the user is added once it exists (usually after \
                         the first login)",
                        member.identifier
                    ),
                ));
                continue;
            }
            Err(e) => {
                out.pending.push(pending(
                    member,
                    SYNC_FAILED,
                    framework::sanitize::sanitize(&e.to_string()),
                ));
                error.get_or_insert(e.into());
                continue;
            }
        };
        wanted_ids.insert(user.id.clone());
        if !present.contains(&user.id) {
            if let Err(e) = realm.add_group_member(group_id, &user.id).await {
                out.pending.push(pending(
                    member,
                    SYNC_FAILED,
                    framework::sanitize::sanitize(&e.to_string()),
                ));
                error.get_or_insert(e.into());
                continue;
            }
            present.insert(user.id.clone());
            out.added.push(user.username.clone());
        }
        out.synced.push(SyncedMember {
            user_identifier: member.identifier.clone(),
            keycloak_user_id: Some(user.id.clone()),
        });
    }
    for user in removals(&current, &wanted_ids, managed_ids, authoritative) {
        match realm.remove_group_member(group_id, &user.id).await {
            Ok(()) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => {
                error.get_or_insert(e.into());
                continue;
            }
        }
        present.remove(&user.id);
        out.removed.push(user.username.clone());
    }
    out.synced.sort_by(|a, b| a.user_identifier.cmp(&b.user_identifier));
    out.synced.dedup();
    out.pending.sort_by(|a, b| a.user_identifier.cmp(&b.user_identifier));
    out.member_count = i64::try_from(present.len()).unwrap_or(i64::MAX);
    (out, error)
}

/// The Keycloak ids a status reports as synced for `group` (the members this operator manages there).
pub fn managed_ids<'a>(
    entries: impl IntoIterator<Item = &'a crds::rancher::RoleBindingStatus>,
    group: &str,
) -> BTreeSet<String> {
    entries
        .into_iter()
        .filter(|e| e.group_name == group)
        .flat_map(|e| e.synced_members.iter())
        .filter_map(|m| m.keycloak_user_id.clone())
        .collect()
}

/// The ids of groups named `group` that a parent change replaced by `current`: the one still waiting for its
/// removal, and one recorded as the group's id before the change.
fn replaced_ids(previous: &[&RoleBindingStatus], group: &str, current: &str) -> BTreeSet<String> {
    previous
        .iter()
        .filter(|e| e.group_name == group)
        .flat_map(|e| [e.replaced_keycloak_group_id.clone(), e.keycloak_group_id.clone()])
        .flatten()
        .filter(|id| id != current && !id.is_empty())
        .collect()
}

impl Pass<'_> {
    /// Step 5: the members of each group that exists.
    pub async fn members(&mut self) {
        let desired = &self.plan.desired;
        let done = &mut self.done.groups;
        let Some(realm) = self.plan.controller.keycloak.as_ref() else {
            return;
        };
        if !desired.manages_access() || desired.groups.is_empty() || !done.parent_known {
            return;
        }
        let created = done.created.clone();
        let previous_entries: Vec<&RoleBindingStatus> = self
            .plan
            .previous
            .keycloak_role_bindings
            .iter()
            .chain(&self.plan.previous.cluster_keycloak_role_bindings)
            .collect();
        let mut member_error: Option<MrpError> = None;
        let mut pending = 0usize;
        let mut synced_count = 0usize;
        for plan in &desired.groups {
            let Some(group_id) = done.ids.get(&plan.name).cloned() else {
                continue;
            };
            let managed = managed_ids(previous_entries.iter().copied(), &plan.name);
            // A group recorded under another id that still exists was left behind by a parent change: it carries
            // the same name, so the same Rancher principal, and must not keep its members. Its id stays recorded
            // until the removal succeeds.
            for old in replaced_ids(&previous_entries, &plan.name, &group_id) {
                match groups::remove_replaced(realm, &old, &plan.name, &managed).await {
                    Ok(Removal::Gone) => {}
                    Ok(_) => self.report.note(
                        "GroupReplaced",
                        format!(
                            "removed the previous Keycloak group {} (id {old}) after a parent change",
                            plan.name
                        ),
                    ),
                    Err(error) => {
                        tracing::warn!(group = %plan.name, %error, "could not remove the group a parent change replaced");
                        done.replaced.insert(plan.name.clone(), old);
                        self.report.fail(KEYCLOAK_GROUPS_READY, error);
                    }
                }
            }
            // A group made just now has no members: no need to list them.
            let current = created.contains(&plan.name).then(Vec::new);
            let (synced, error) = sync(
                realm,
                &group_id,
                current,
                &plan.members,
                &managed,
                self.plan.controller.settings.authoritative_membership,
            )
            .await;
            if !synced.added.is_empty() || !synced.removed.is_empty() {
                let mut parts = Vec::new();
                if !synced.added.is_empty() {
                    parts.push(format!("added {}", synced.added.join(", ")));
                }
                if !synced.removed.is_empty() {
                    parts.push(format!("removed {}", synced.removed.join(", ")));
                }
                self.report.note(
                    "MembersChanged",
                    format!("Keycloak group {}: {}", plan.name, parts.join("; ")),
                );
            }
            match error {
                Some(error) => {
                    tracing::warn!(group = %plan.name, %error, "membership sync incomplete");
                    member_error.get_or_insert(error);
                }
                None => {
                    pending += synced.pending.len();
                    synced_count += synced.synced.len();
                    done.members.insert(plan.name.clone(), synced);
                }
            }
        }
        match member_error {
            Some(error) => self.report.fail(MEMBERSHIP_SYNCED, error),
            None if done.ids.len() < desired.groups.len() => {
                self.report.wait(MEMBERSHIP_SYNCED, "waiting for the Keycloak groups")
            }
            None if pending > 0 => self.report.ok(
                MEMBERSHIP_SYNCED,
                "MembersPending",
                format!(
                    "{synced_count} member(s) in sync; {pending} member(s) wait for their user to exist in Keycloak \
                     (see pendingMembers) and are added on a later check"
                ),
            ),
            None => self.report.ok(
                MEMBERSHIP_SYNCED,
                "MembersSynced",
                format!("{synced_count} member(s) in sync"),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use crds::rancher::Member;

    use super::*;

    fn user(id: &str, username: &str) -> User {
        User {
            id: id.into(),
            username: username.into(),
            ..User::default()
        }
    }

    #[test]
    fn members_match_by_id_or_case_insensitive_username() {
        let alice = user("id-a", "alice");
        let by_name = DesiredMember::from_spec(&Member {
            user_identifier: "Alice".into(),
            lookup_by_id: false,
        });
        let by_id = DesiredMember::from_spec(&Member {
            user_identifier: "id-a".into(),
            lookup_by_id: true,
        });
        assert!(by_name.is(&alice) && by_id.is(&alice));
        assert!(!by_id.is(&user("id-b", "id-a")), "an id never matches a username");
    }

    #[test]
    fn only_managed_members_are_removed_unless_authoritative() {
        let current = [user("a", "alice"), user("b", "bob"), user("h", "hand-added")];
        let wanted = BTreeSet::from(["a".to_string()]);
        let managed = BTreeSet::from(["a".to_string(), "b".to_string()]);
        let removed: Vec<&str> = removals(&current, &wanted, &managed, false)
            .iter()
            .map(|u| u.username.as_str())
            .collect();
        assert_eq!(removed, vec!["bob"]);
        let removed: Vec<&str> = removals(&current, &wanted, &managed, true)
            .iter()
            .map(|u| u.username.as_str())
            .collect();
        assert_eq!(removed, vec!["bob", "hand-added"]);
    }

    #[test]
    fn managed_ids_come_from_the_synced_members_of_the_group() {
        let entries = vec![
            crds::rancher::RoleBindingStatus {
                group_name: "g".into(),
                synced_members: vec![SyncedMember {
                    user_identifier: "alice".into(),
                    keycloak_user_id: Some("id-a".into()),
                }],
                ..Default::default()
            },
            crds::rancher::RoleBindingStatus {
                group_name: "other".into(),
                synced_members: vec![SyncedMember {
                    user_identifier: "bob".into(),
                    keycloak_user_id: Some("id-b".into()),
                }],
                ..Default::default()
            },
        ];
        assert_eq!(managed_ids(&entries, "g"), BTreeSet::from(["id-a".to_string()]));
    }
}
