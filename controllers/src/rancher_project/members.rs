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
use futures::stream::{self, StreamExt};

use super::desired::DesiredMember;
use super::error::MrpError;
use super::found::Synced;
use super::groups::{self, Removal};
use super::reconcile::Pass;
use super::status::{KEYCLOAK_GROUPS_READY, MEMBERSHIP_SYNCED};
use crate::keycloak::{Group, KeycloakError, RealmClient, User};

/// Users looked up at once for members not in their group yet: enough to hide Keycloak's per-request latency,
/// few enough not to load it.
const USER_LOOKUP_CONCURRENCY: usize = 8;

/// The group attribute recording which members each object added (values `<namespace>/<name>:<user id>`),
/// written *before* the members are added: a manager killed between adding a member and writing the status still
/// knows the member is one it manages, so it is removed when the spec stops listing it.
pub const ADDED_MEMBERS_ATTRIBUTE: &str = "waldur.io/added-members";

/// The user ids `group` records as added by `owner` (`<namespace>/<name>`).
pub fn recorded_members(group: &Group, owner: &str) -> BTreeSet<String> {
    let prefix = format!("{owner}:");
    group
        .attributes
        .get(ADDED_MEMBERS_ATTRIBUTE)
        .into_iter()
        .flatten()
        .filter_map(|value| value.strip_prefix(&prefix).map(str::to_string))
        .collect()
}

/// Adds (`add`) or removes the record of `ids` as added by `owner` on group `group_id`; writes only on change.
async fn update_record(
    realm: &RealmClient,
    group_id: &str,
    owner: &str,
    ids: &[String],
    add: bool,
) -> Result<(), crate::keycloak::KeycloakError> {
    if ids.is_empty() {
        return Ok(());
    }
    let Some(group) = realm.get_group(group_id).await? else {
        return Ok(());
    };
    let mut attributes = group.attributes.clone();
    let values = attributes.entry(ADDED_MEMBERS_ATTRIBUTE.to_string()).or_default();
    let before = values.clone();
    for id in ids {
        let value = format!("{owner}:{id}");
        if add && !values.contains(&value) {
            values.push(value);
        } else if !add {
            values.retain(|v| *v != value);
        }
    }
    if *values == before {
        return Ok(());
    }
    if values.is_empty() {
        attributes.remove(ADDED_MEMBERS_ATTRIBUTE);
    }
    realm.set_group_attributes(&group, &attributes).await
}

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

/// The Keycloak users of members not in their group yet. One by one, a list of thousands of users who have not
/// logged in yet took a minute per pass on a real Keycloak (about 18 ms per lookup), so: when reading the realm's
/// whole user list takes fewer requests than the lookups, it is read once; otherwise the lookups run a few at a
/// time.
async fn look_up_all<'a>(
    realm: &RealmClient,
    missing: Vec<&'a DesiredMember>,
) -> Vec<(&'a DesiredMember, Result<Option<User>, KeycloakError>)> {
    if missing.len() > USER_LOOKUP_CONCURRENCY
        && let Ok(count) = realm.count_users().await
        && realm.pages_for(count) < missing.len()
        && let Ok(users) = realm.list_users().await
    {
        return missing
            .into_iter()
            .map(|member| (member, Ok(users.iter().find(|user| member.is(user)).cloned())))
            .collect();
    }
    // A realm that could not be counted or listed is asked member by member (each failure then says why).
    let lookups: Vec<_> = missing.into_iter().map(|member| look_up(realm, member)).collect();
    stream::iter(lookups).buffered(USER_LOOKUP_CONCURRENCY).collect().await
}

/// One member's Keycloak user, if there is one.
async fn look_up<'a>(
    realm: &RealmClient,
    member: &'a DesiredMember,
) -> (&'a DesiredMember, Result<Option<User>, KeycloakError>) {
    (member, realm.find_user(&member.reference()).await)
}

/// Brings the members of group `group_id` in line with `wanted`. `current` is the group's member listing
/// (`None` to list it here); `managed_ids` are the Keycloak ids the status reports as synced before; `owner`
/// (`<namespace>/<name>`) is recorded on the group for every member added, before adding it.
///
/// Individual failures leave the member pending (or, for removals, in the group) and are returned as the error
/// after every other member was handled, so one bad user never blocks the rest.
pub async fn sync(
    realm: &RealmClient,
    group_id: &str,
    current: Option<Vec<User>>,
    wanted: &[DesiredMember],
    managed_ids: &BTreeSet<String>,
    owner: &str,
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
    let mut to_add: Vec<(&DesiredMember, User)> = Vec::new();
    let mut missing = Vec::new();
    for member in wanted {
        if let Some(user) = current.iter().find(|u| member.is(u)) {
            wanted_ids.insert(user.id.clone());
            out.synced.push(SyncedMember {
                user_identifier: member.identifier.clone(),
                keycloak_user_id: Some(user.id.clone()),
            });
        } else {
            missing.push(member);
        }
    }
    for (member, found) in look_up_all(realm, missing).await {
        match found {
            Ok(Some(user)) => {
                wanted_ids.insert(user.id.clone());
                to_add.push((member, user));
            }
            Ok(None) => {
                let what = if member.by_id { "id" } else { "username" };
                out.pending.push(pending(
                    member,
                    USER_NOT_FOUND,
                    format!(
                        "User {id} not found in Keycloak (no user with {what} {id}); skipped until it exists, \
                         usually after the first login",
                        id = member.identifier
                    ),
                ));
            }
            Err(e) => {
                out.pending.push(pending(
                    member,
                    SYNC_FAILED,
                    framework::sanitize::sanitize(&e.to_string()),
                ));
                error.get_or_insert(e.into());
            }
        }
    }
    let adding: Vec<String> = to_add
        .iter()
        .filter(|(_, user)| !present.contains(&user.id))
        .map(|(_, user)| user.id.clone())
        .collect();
    // The record first: nothing is added that a crash could make us forget we added.
    if let Err(e) = update_record(realm, group_id, owner, &adding, true).await {
        for (member, _) in &to_add {
            out.pending.push(pending(
                member,
                SYNC_FAILED,
                framework::sanitize::sanitize(&e.to_string()),
            ));
        }
        error.get_or_insert(e.into());
        to_add.clear();
    }
    for (member, user) in to_add {
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
    // Members the status does not know may still be ours: a pass that added them may have died before writing
    // the status. The group's record says (read only when such a member is there).
    let mut managed = managed_ids.clone();
    let unknown = current
        .iter()
        .any(|u| !wanted_ids.contains(&u.id) && !managed.contains(&u.id));
    if unknown && !authoritative {
        match realm.get_group(group_id).await {
            Ok(Some(group)) => managed.extend(recorded_members(&group, owner)),
            Ok(None) => {}
            Err(e) => {
                error.get_or_insert(e.into());
            }
        }
    }
    let mut removed_ids = Vec::new();
    for user in removals(&current, &wanted_ids, &managed, authoritative) {
        match realm.remove_group_member(group_id, &user.id).await {
            Ok(()) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => {
                error.get_or_insert(e.into());
                continue;
            }
        }
        present.remove(&user.id);
        removed_ids.push(user.id.clone());
        out.removed.push(user.username.clone());
    }
    if let Err(e) = update_record(realm, group_id, owner, &removed_ids, false).await {
        error.get_or_insert(e.into());
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

/// "User a not found in Keycloak, User b not found in Keycloak" for the first few users, in the site agent's
/// guide's words, then how many more.
fn not_found_summary(users: &BTreeSet<String>) -> String {
    const SHOWN: usize = 5;
    let mut parts: Vec<String> = users
        .iter()
        .take(SHOWN)
        .map(|u| format!("User {u} not found in Keycloak"))
        .collect();
    if users.len() > SHOWN {
        parts.push(format!("and {} more", users.len() - SHOWN));
    }
    if parts.is_empty() {
        "see pendingMembers for why".to_string()
    } else {
        parts.join(", ")
    }
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
        let owner = super::project::owner_key(self.plan.mrp);
        let previous_entries: Vec<&RoleBindingStatus> = self
            .plan
            .previous
            .keycloak_role_bindings
            .iter()
            .chain(&self.plan.previous.cluster_keycloak_role_bindings)
            .collect();
        let mut member_error: Option<MrpError> = None;
        let mut pending = 0usize;
        let mut not_found = BTreeSet::new();
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
                match groups::remove_replaced(realm, &old, &plan.name, &managed, &owner).await {
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
                &owner,
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
                    not_found.extend(
                        synced
                            .pending
                            .iter()
                            .filter(|p| p.reason == USER_NOT_FOUND)
                            .map(|p| p.user_identifier.clone()),
                    );
                    synced_count += synced.synced.len();
                    done.members.insert(plan.name.clone(), synced);
                }
            }
        }
        // The site agent's guide tells operators to look for this line; logged once per user, when it first
        // goes missing, not on every check.
        let known: BTreeSet<&str> = previous_entries
            .iter()
            .flat_map(|entry| &entry.pending_members)
            .filter(|p| p.reason == USER_NOT_FOUND)
            .map(|p| p.user_identifier.as_str())
            .collect();
        for user in not_found.iter().filter(|u| !known.contains(u.as_str())) {
            tracing::warn!(user = %user, "User {user} not found in Keycloak and is skipped");
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
                    "{synced_count} member(s) in sync; {pending} member(s) pending: {}; they are skipped (the \
                     groups and bindings exist) and added on a later check once they exist (see pendingMembers)",
                    not_found_summary(&not_found)
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
