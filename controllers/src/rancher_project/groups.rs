//! Keycloak groups: the shared parent group (`c_<clusterId>` for the Waldur plugin) and one group per binding
//! group name under it (found among the parent's children only, paged; created when missing, a 409 resolved by
//! looking up again). Groups this operator creates carry the original operator's `managed_by` attribute, and
//! only such groups are ever deleted; a group found existing is used, and on removal only the members this
//! operator manages are taken out of it.
//!
//! The parent is shared by every project of a cluster: it is deleted only by the cleanup of the last object
//! using it, and only when Keycloak reports it has no children (`subGroupCount`, not the `subGroups` field
//! Keycloak ≥ 23 leaves empty — the original operator's bug that cut every project of a cluster off).

use std::collections::{BTreeMap, BTreeSet};

use framework::conditions::ConditionUpdate;

use super::desired::Desired;
use super::error::MrpError;
use super::reconcile::Pass;
use super::status::{KEYCLOAK_GROUPS_READY, MEMBERSHIP_SYNCED};
use crate::keycloak::{Ensured, Group, KeycloakError, RealmClient};

/// Attribute marking groups this operator (or the original one, which used the same value) created.
pub const MANAGED_BY_ATTRIBUTE: &str = "managed_by";
/// Its value.
pub const MANAGED_BY: &str = "rancher-keycloak-operator";
/// Attribute recording the ManagedRancherProject (`<namespace>/<name>`) that created a binding group.
pub const OWNER_ATTRIBUTE: &str = "waldur.io/owner";
/// Description of a parent group created here.
pub const PARENT_DESCRIPTION: &str = "Cluster access group";

/// The attributes of a group created here.
pub fn attributes(description: &str) -> BTreeMap<String, Vec<String>> {
    BTreeMap::from([
        ("description".to_string(), vec![description.to_string()]),
        (MANAGED_BY_ATTRIBUTE.to_string(), vec![MANAGED_BY.to_string()]),
    ])
}

/// Whether `group` was created by this operator (or the original one).
pub fn is_managed(group: &Group) -> bool {
    group
        .attributes
        .get(MANAGED_BY_ATTRIBUTE)
        .is_some_and(|values| values.iter().any(|v| v == MANAGED_BY))
}

/// The parent group, created at the top level when missing.
pub async fn ensure_parent(realm: &RealmClient, name: &str) -> Result<Ensured<Group>, KeycloakError> {
    realm
        .ensure_top_level_group(name, &attributes(PARENT_DESCRIPTION))
        .await
}

/// A binding group: a child of `parent`, or a top-level group when there is no parent; a new one records
/// `owner` (`<namespace>/<name>` of the object) as its creator.
pub async fn ensure_group(
    realm: &RealmClient,
    parent: Option<&str>,
    name: &str,
    description: &str,
    owner: &str,
) -> Result<Ensured<Group>, KeycloakError> {
    let mut attributes = attributes(description);
    attributes.insert(OWNER_ATTRIBUTE.to_string(), vec![owner.to_string()]);
    match parent {
        Some(parent) => realm.ensure_child_group(parent, name, &attributes).await,
        None => realm.ensure_top_level_group(name, &attributes).await,
    }
}

/// The attributes `group` should have when its description no longer follows the spec: `None` when it does, or
/// when the group is not one this object created (a group someone else made keeps their description).
pub fn described(group: &Group, description: &str, owner: &str) -> Option<BTreeMap<String, Vec<String>>> {
    let created_here = group
        .attributes
        .get(OWNER_ATTRIBUTE)
        .is_some_and(|values| values.iter().any(|v| v == owner));
    let current = group.attributes.get("description").and_then(|values| values.first());
    if !is_managed(group) || !created_here || current.is_some_and(|c| c == description) {
        return None;
    }
    let mut attributes = group.attributes.clone();
    attributes.insert("description".to_string(), vec![description.to_string()]);
    Some(attributes)
}

/// The reason of the Keycloak conditions while the operator has no Keycloak.
pub const KEYCLOAK_NOT_CONFIGURED: &str = "KeycloakNotConfigured";

/// The groups (comma-separated) and how many members the spec asks Keycloak for.
fn unmanaged(desired: &Desired) -> (String, usize) {
    let names: Vec<&str> = desired.groups.iter().map(|g| g.name.as_str()).collect();
    let members = desired.groups.iter().map(|g| g.members.len()).sum();
    (names.join(", "), members)
}

/// Finds a group that is no longer wanted: by its recorded id, else by name under the parent (or at the top).
async fn find_unwanted(
    realm: &RealmClient,
    recorded_id: Option<&str>,
    parent_id: Option<&str>,
    name: &str,
) -> Result<Option<Group>, KeycloakError> {
    if let Some(id) = recorded_id.filter(|id| !id.is_empty())
        && let Some(group) = realm.get_group(id).await?
        && group.name == name
    {
        return Ok(Some(group));
    }
    match parent_id {
        Some(parent) => match realm.find_child_group(parent, name).await {
            Err(e) if e.is_not_found() => Ok(None),
            other => other,
        },
        None => realm.find_top_level_group(name).await,
    }
}

/// What happened to a group that is no longer wanted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Removal {
    /// It did not exist (any more).
    Gone,
    /// It was ours and is deleted (its memberships with it).
    Deleted,
    /// It was not ours: only the members this operator managed were taken out.
    MembersRemoved,
}

/// Removes a group that is no longer wanted: deleted when this operator created it, otherwise emptied of the
/// members in `managed_ids` only.
pub async fn remove(
    realm: &RealmClient,
    recorded_id: Option<&str>,
    parent_id: Option<&str>,
    name: &str,
    managed_ids: &BTreeSet<String>,
    owner: &str,
) -> Result<Removal, MrpError> {
    let Some(group) = find_unwanted(realm, recorded_id, parent_id, name).await? else {
        return Ok(Removal::Gone);
    };
    remove_found(realm, &group, managed_ids, owner).await
}

/// Deletes `group` when this operator created it, otherwise takes out the members `managed_ids` and those the
/// group records as added by `owner`.
async fn remove_found(
    realm: &RealmClient,
    group: &Group,
    managed_ids: &BTreeSet<String>,
    owner: &str,
) -> Result<Removal, MrpError> {
    if is_managed(group) {
        realm.delete_group(&group.id).await?;
        return Ok(Removal::Deleted);
    }
    let mut managed = managed_ids.clone();
    managed.extend(super::members::recorded_members(group, owner));
    remove_managed(realm, &group.id, &managed).await?;
    Ok(Removal::MembersRemoved)
}

/// Removes a group that a binding group replaced under another parent (`parentGroupName` changed): the group
/// recorded with `id`, only if it still exists under that id and name — deleted when ours, otherwise emptied of
/// the members in `managed_ids`.
pub async fn remove_replaced(
    realm: &RealmClient,
    id: &str,
    name: &str,
    managed_ids: &BTreeSet<String>,
    owner: &str,
) -> Result<Removal, MrpError> {
    let Some(group) = realm.get_group(id).await?.filter(|g| g.name == name) else {
        return Ok(Removal::Gone);
    };
    remove_found(realm, &group, managed_ids, owner).await
}

/// What cleanup did with the parent group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParentRemoval {
    /// It did not exist.
    Gone,
    /// It was ours and empty: deleted.
    Deleted,
    /// It still has children (other projects' groups) or is not ours: kept.
    Kept,
}

/// Deletes the parent group if this operator created it and it has no children left.
pub async fn remove_parent_if_empty(
    realm: &RealmClient,
    recorded_id: Option<&str>,
    name: &str,
) -> Result<ParentRemoval, MrpError> {
    let group = match recorded_id.filter(|id| !id.is_empty()) {
        Some(id) => match realm.get_group(id).await? {
            Some(group) if group.name == name && group.parent_id.is_none() => Some(group),
            _ => realm.find_top_level_group(name).await?,
        },
        None => realm.find_top_level_group(name).await?,
    };
    let Some(group) = group else {
        return Ok(ParentRemoval::Gone);
    };
    if !is_managed(&group) {
        return Ok(ParentRemoval::Kept);
    }
    // A fresh count (`subGroupCount`, or `/children` when the server does not report it); never `subGroups`.
    if realm.count_child_groups(&group.id).await? > 0 {
        return Ok(ParentRemoval::Kept);
    }
    realm.delete_group(&group.id).await?;
    Ok(ParentRemoval::Deleted)
}

/// Removes the members `managed_ids` from a group (cleanup of a group this operator did not create); a user or
/// group already gone counts as removed.
pub async fn remove_managed(
    realm: &RealmClient,
    group_id: &str,
    managed_ids: &BTreeSet<String>,
) -> Result<(), MrpError> {
    for user in managed_ids {
        match realm.remove_group_member(group_id, user).await {
            Ok(()) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

impl Pass<'_> {
    /// Step 3: the parent group and the binding groups.
    pub async fn groups(&mut self) {
        let desired = &self.plan.desired;
        let done = &mut self.done.groups;
        if !desired.manages_access() {
            return;
        }
        let Some(realm) = self.plan.controller.keycloak.as_ref() else {
            if desired.groups.is_empty() {
                self.report.ok(
                    KEYCLOAK_GROUPS_READY,
                    "NoGroups",
                    "no role bindings ask for Keycloak groups",
                );
                self.report
                    .ok(MEMBERSHIP_SYNCED, "NoMembers", "no role bindings ask for members");
            } else {
                // Not a failure of the project: its Rancher side is complete, and the conditions say exactly
                // which Keycloak parts nobody manages.
                let (groups, members) = unmanaged(desired);
                let missing = "Keycloak is not configured in the operator (manager flag --rancher-keycloak-url)";
                self.report.record(ConditionUpdate::failed(
                    KEYCLOAK_GROUPS_READY,
                    KEYCLOAK_NOT_CONFIGURED,
                    format!(
                        "{missing}: Keycloak group(s) {groups} are not created; the Rancher bindings to them are in \
                         place"
                    ),
                ));
                self.report.record(ConditionUpdate::failed(
                    MEMBERSHIP_SYNCED,
                    KEYCLOAK_NOT_CONFIGURED,
                    format!("{missing}: {members} member(s) listed in the role bindings are not added"),
                ));
            }
            return;
        };
        done.usable = true;
        if desired.groups.is_empty() {
            self.report.ok(
                KEYCLOAK_GROUPS_READY,
                "NoGroups",
                "no role bindings ask for Keycloak groups",
            );
            self.report
                .ok(MEMBERSHIP_SYNCED, "NoMembers", "no role bindings ask for members");
            return;
        }
        if let Some(parent) = &desired.parent {
            match ensure_parent(realm, parent).await {
                Ok(ensured) => {
                    if ensured.created {
                        self.report
                            .note("GroupCreated", format!("created the Keycloak parent group {parent}"));
                    }
                    done.parent_id = Some(ensured.value.id);
                    done.parent_known = true;
                }
                Err(error) => {
                    self.report.fail(KEYCLOAK_GROUPS_READY, error.into());
                    self.report.wait(MEMBERSHIP_SYNCED, "waiting for the Keycloak groups");
                    return;
                }
            }
        } else {
            done.parent_known = true;
        }
        let mut created = BTreeSet::new();
        let mut group_error: Option<MrpError> = None;
        let owner = super::project::owner_key(self.plan.mrp);
        for plan in &desired.groups {
            match ensure_group(realm, done.parent_id.as_deref(), &plan.name, &plan.description, &owner).await {
                Ok(ensured) => {
                    if ensured.created {
                        created.insert(plan.name.clone());
                        self.report
                            .note("GroupCreated", format!("created the Keycloak group {}", plan.name));
                    } else if let Some(attributes) = described(&ensured.value, &plan.description, &owner) {
                        match realm.set_group_attributes(&ensured.value, &attributes).await {
                            Ok(()) => self.report.note(
                                "GroupUpdated",
                                format!("updated the description of the Keycloak group {}", plan.name),
                            ),
                            Err(error) => {
                                tracing::warn!(group = %plan.name, %error, "could not update a group's description");
                                group_error.get_or_insert(error.into());
                            }
                        }
                    }
                    done.ids.insert(plan.name.clone(), ensured.value.id);
                }
                Err(error) => {
                    tracing::warn!(group = %plan.name, %error, "could not ensure a Keycloak group");
                    group_error.get_or_insert(error.into());
                }
            }
        }
        match group_error {
            Some(error) => self.report.fail(KEYCLOAK_GROUPS_READY, error),
            None => self.report.ok(
                KEYCLOAK_GROUPS_READY,
                "GroupsReady",
                match &desired.parent {
                    Some(parent) => format!("{} Keycloak group(s) exist under {parent}", desired.groups.len()),
                    None => format!("{} Keycloak group(s) exist", desired.groups.len()),
                },
            ),
        }

        done.created = created;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_objects_groups_follow_the_description() {
        let mut attributes = attributes("old words");
        attributes.insert(OWNER_ATTRIBUTE.into(), vec!["team/mrp".into()]);
        let group = Group {
            id: "g".into(),
            name: "rp_x_project_member".into(),
            attributes,
            ..Group::default()
        };
        let updated = described(&group, "new words", "team/mrp").expect("an update");
        assert_eq!(updated["description"], vec!["new words".to_string()]);
        assert_eq!(updated[MANAGED_BY_ATTRIBUTE], vec![MANAGED_BY.to_string()]);
        assert_eq!(described(&group, "old words", "team/mrp"), None);
        assert_eq!(described(&group, "new words", "other/mrp"), None);
    }

    #[test]
    fn only_groups_with_the_marker_are_ours() {
        let mut group = Group {
            id: "g".into(),
            name: "c_1".into(),
            ..Group::default()
        };
        assert!(!is_managed(&group));
        group.attributes = attributes("x");
        assert!(is_managed(&group));
        group
            .attributes
            .insert(MANAGED_BY_ATTRIBUTE.into(), vec!["someone-else".into()]);
        assert!(!is_managed(&group));
    }
}
