//! The realm groups a NebariApp names (`auth.groups`, `keycloakConfig.groups`). The operator changes groups with
//! the realm admin's credentials, so without limits any tenant could add anyone to `admin`. The rules:
//!
//! - a group that does not exist is created and records the app as its owner (`nebari.dev/owner`);
//! - members are added only to the app's own groups, or to groups the platform's `--keycloak-group-policy`
//!   names for the app's namespace; naming members for any other existing group is refused (`GroupNotAllowed`)
//!   before any membership changes;
//! - only memberships the operator added are recorded (on the group, under `nebari.dev/added-members:<ns>/<app>`)
//!   and only those are ever reverted: when the member leaves the spec, the group leaves the spec, or the app is
//!   deleted. A group the app owns is deleted once it has no members left;
//! - naming an existing group only to require it (`auth.groups` without members) changes nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::str::FromStr;

use crds::nebari::AuthConfig;

use super::error::NebariAppError;
use super::keycloak_sync::OWNER_ATTRIBUTE;
use super::naming::AppNames;
use crate::keycloak::{Group, RealmClient, UserRef};

/// The placeholder a group pattern uses for the app's namespace.
const NAMESPACE_PLACEHOLDER: &str = "{namespace}";

/// A group-name pattern of `--keycloak-group-policy`: `*` matches any text, `{namespace}` the app's namespace
/// (`{namespace}-*`, `team-admins`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupPattern(String);

/// Why a group pattern given at start-up is not one.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("group pattern {0:?}: {1}")]
pub struct GroupPatternError(String, &'static str);

impl FromStr for GroupPattern {
    type Err = GroupPatternError;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        let pattern = raw.trim();
        // Only wildcards (`*`, `**`) would match every group, the realm's `admin` included.
        if pattern.chars().all(|c| c == '*') {
            return Err(GroupPatternError(
                raw.into(),
                "must name something more than every group",
            ));
        }
        if pattern.replace(NAMESPACE_PLACEHOLDER, "").contains(['{', '}']) {
            return Err(GroupPatternError(raw.into(), "the only placeholder is {namespace}"));
        }
        if pattern.contains('/') {
            return Err(GroupPatternError(raw.into(), "names top-level groups: no '/'"));
        }
        Ok(Self(pattern.to_string()))
    }
}

impl GroupPattern {
    /// Whether an app in `namespace` may fill the group `name`.
    pub fn matches(&self, namespace: &str, name: &str) -> bool {
        let expanded = self.0.replace(NAMESPACE_PLACEHOLDER, namespace);
        let literal: Vec<String> = expanded.split('*').map(regex::escape).collect();
        regex::Regex::new(&format!("^{}$", literal.join(".*"))).is_ok_and(|pattern| pattern.is_match(name))
    }
}

/// The attribute recording the members this app added to a group.
fn added_by(names: &AppNames) -> String {
    format!("nebari.dev/added-members:{}", names.owner())
}

/// The groups the app names, each with the members it lists.
pub fn wanted(auth: &AuthConfig) -> BTreeMap<String, BTreeSet<String>> {
    let mut groups: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for name in auth.groups.iter().flatten() {
        groups.entry(name.clone()).or_default();
    }
    for group in auth.keycloak_config.iter().flat_map(|k| k.groups.iter().flatten()) {
        groups
            .entry(group.name.clone())
            .or_default()
            .extend(group.members.iter().flatten().cloned());
    }
    groups
}

/// What syncing the groups produced.
#[derive(Debug, Default)]
pub struct GroupsSynced {
    /// The groups to remember in the status (to revert later): those the app owns or added members to.
    pub managed: Vec<String>,
    /// Users that do not exist (reported, not fatal).
    pub warnings: Vec<String>,
}

/// One app's view of the realm's groups.
pub struct AppGroups<'a> {
    realm: &'a RealmClient,
    names: &'a AppNames,
}

impl<'a> AppGroups<'a> {
    /// Groups as seen by the app named by `names`.
    pub fn new(realm: &'a RealmClient, names: &'a AppNames) -> Self {
        Self { realm, names }
    }

    fn owns(&self, group: &Group) -> bool {
        group
            .attributes
            .get(OWNER_ATTRIBUTE)
            .is_some_and(|owners| owners.iter().any(|o| *o == self.names.owner()))
    }

    fn recorded(&self, group: &Group) -> BTreeSet<String> {
        group
            .attributes
            .get(&added_by(self.names))
            .map(|ids| ids.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Makes the realm's groups what `wanted` says for this app; `previous` are the groups the status
    /// remembers (those no longer wanted are reverted).
    pub async fn sync(
        &self,
        wanted: &BTreeMap<String, BTreeSet<String>>,
        previous: &[String],
        patterns: &[GroupPattern],
    ) -> Result<GroupsSynced, NebariAppError> {
        let namespace = &self.names.namespace;
        let mut groups = Vec::new();
        // First every check, so a refusal changes no membership.
        for (name, members) in wanted {
            let group = self.realm.find_top_level_group(name).await?;
            if let Some(group) = &group
                && !members.is_empty()
                && !self.owns(group)
                && !patterns.iter().any(|p| p.matches(namespace, name))
            {
                return Err(NebariAppError::Refused {
                    reason: "GroupNotAllowed",
                    message: format!(
                        "Keycloak group {name} already exists and is not this app's: members can only be added to \
                         groups the app created or that the platform allows (--keycloak-group-policy)"
                    ),
                });
            }
            groups.push((name, members, group));
        }
        let mut synced = GroupsSynced::default();
        for (name, members, group) in groups {
            let group = match group {
                Some(group) => group,
                None => {
                    let owner = BTreeMap::from([(OWNER_ATTRIBUTE.to_string(), vec![self.names.owner()])]);
                    self.realm.ensure_top_level_group(name, &owner).await?.value
                }
            };
            let filled = self.fill(&group, members, &mut synced.warnings).await?;
            if self.owns(&group) || filled {
                synced.managed.push(name.clone());
            }
        }
        for name in previous.iter().filter(|name| !wanted.contains_key(*name)) {
            self.revert(name).await?;
        }
        Ok(synced)
    }

    /// Adds the listed members missing from `group` and removes those this app added that are no longer listed;
    /// returns whether the app now records members in it.
    async fn fill(
        &self,
        group: &Group,
        members: &BTreeSet<String>,
        warnings: &mut Vec<String>,
    ) -> Result<bool, NebariAppError> {
        let recorded = self.recorded(group);
        if members.is_empty() && recorded.is_empty() {
            return Ok(false);
        }
        let references: Vec<UserRef> = members.iter().map(|m| UserRef::UsernameOrEmail(m.clone())).collect();
        let resolution = self.realm.resolve_users(&references).await?;
        for unknown in &resolution.unknown {
            warnings.push(format!(
                "user {} does not exist in Keycloak; not added to group {}",
                unknown.identifier(),
                group.name
            ));
        }
        let wanted: BTreeSet<String> = resolution.found.into_iter().map(|(_, user)| user.id).collect();
        let current: BTreeSet<String> = self
            .realm
            .group_members(&group.id)
            .await?
            .into_iter()
            .map(|user| user.id)
            .collect();
        let mut record: BTreeSet<String> = recorded.intersection(&wanted).cloned().collect();
        for user in wanted.difference(&current) {
            self.realm.add_group_member(&group.id, user).await?;
            record.insert(user.clone());
        }
        for user in recorded.difference(&wanted) {
            self.realm.remove_group_member(&group.id, user).await?;
        }
        if record != recorded {
            self.write_record(group, &record).await?;
        }
        Ok(!record.is_empty())
    }

    /// Records `record` as the members this app added to `group` (dropping the attribute when empty).
    async fn write_record(&self, group: &Group, record: &BTreeSet<String>) -> Result<(), NebariAppError> {
        let mut attributes = group.attributes.clone();
        if record.is_empty() {
            attributes.remove(&added_by(self.names));
        } else {
            attributes.insert(added_by(self.names), record.iter().cloned().collect());
        }
        self.realm.set_group_attributes(group, &attributes).await?;
        Ok(())
    }

    /// Takes out of the group `name` the members this app added, and deletes the group when the app owns it and
    /// nobody is left in it. A group that is gone needs nothing.
    pub async fn revert(&self, name: &str) -> Result<(), NebariAppError> {
        let Some(group) = self.realm.find_top_level_group(name).await? else {
            return Ok(());
        };
        let recorded = self.recorded(&group);
        for user in &recorded {
            self.realm.remove_group_member(&group.id, user).await?;
        }
        if self.owns(&group) && self.realm.group_members(&group.id).await?.is_empty() {
            self.realm.delete_group(&group.id).await?;
            return Ok(());
        }
        if !recorded.is_empty() {
            self.write_record(&group, &BTreeSet::new()).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(raw: &str) -> GroupPattern {
        raw.parse().expect("pattern")
    }

    #[test]
    fn patterns_match_whole_names_with_the_namespace_filled_in() {
        assert!(pattern("{namespace}-*").matches("team", "team-admins"));
        assert!(!pattern("{namespace}-*").matches("team", "other-admins"));
        assert!(!pattern("{namespace}-*").matches("team", "xteam-admins"));
        assert!(pattern("admins").matches("team", "admins"));
        assert!(!pattern("admins").matches("team", "admins2"));
        assert!(pattern("*-viewers").matches("team", "data-viewers"));
        assert!(pattern("a*b*c").matches("team", "axxbyyc"));
        assert!(!pattern("a*b*c").matches("team", "axxcyyb"));
        for bad in ["", "*", "**", " *** ", "{ns}-*", "a/b"] {
            assert!(bad.parse::<GroupPattern>().is_err(), "{bad:?}");
        }
    }
}
