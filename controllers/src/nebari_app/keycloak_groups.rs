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
//! - naming an existing group only to require it (`auth.groups` without members) changes nothing;
//! - a group created for an app of another namespace is neither required nor filled (`GroupNotAllowed`,
//!   without naming the other namespace): otherwise a tenant could create the group another tenant's gate
//!   will ask for, before it asks, and put itself in it.

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

/// The condition reason of every refusal to use a group.
pub const GROUP_NOT_ALLOWED: &str = "GroupNotAllowed";

/// Why an app may not use an existing group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupRefusal {
    /// It was created for apps of another namespace (required or filled, it would let that namespace decide who
    /// passes this app's gate).
    OtherNamespace,
    /// It is not the app's and the platform's `--keycloak-group-policy` does not name it for the namespace, so
    /// the app may require it but not add members to it.
    NotFillable,
}

impl GroupRefusal {
    /// The message for the app's condition (naming no other tenant).
    pub fn message(self, name: &str) -> String {
        match self {
            Self::OtherNamespace => format!(
                "Keycloak group {name} belongs to another namespace: an app may require or fill only groups of its \
                 own namespace and groups the platform provides; choose another name"
            ),
            Self::NotFillable => format!(
                "Keycloak group {name} already exists and is not this app's: members can only be added to groups \
                 the app created or that the platform allows (--keycloak-group-policy)"
            ),
        }
    }
}

/// Whether the app `names` may require the existing `group` and, when `filling`, add members to it.
pub fn access(group: &Group, names: &AppNames, patterns: &[GroupPattern], filling: bool) -> Result<(), GroupRefusal> {
    let ours = format!("{}/", names.namespace);
    let owners = group
        .attributes
        .get(OWNER_ATTRIBUTE)
        .filter(|owners| !owners.is_empty());
    if owners.is_some_and(|owners| !owners.iter().any(|owner| owner.starts_with(&ours))) {
        return Err(GroupRefusal::OtherNamespace);
    }
    let allowed = owned_by(group, names) || patterns.iter().any(|p| p.matches(&names.namespace, &group.name));
    if filling && !allowed {
        return Err(GroupRefusal::NotFillable);
    }
    Ok(())
}

/// Whether the group records the app `names` among its owners.
fn owned_by(group: &Group, names: &AppNames) -> bool {
    group
        .attributes
        .get(OWNER_ATTRIBUTE)
        .is_some_and(|owners| owners.iter().any(|o| *o == names.owner()))
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
        owned_by(group, self.names)
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
        let mut groups = Vec::new();
        // First every check, so a refusal changes no membership.
        for (name, members) in wanted {
            let group = self.realm.find_top_level_group(name).await?;
            if let Some(group) = &group
                && let Err(refusal) = access(group, self.names, patterns, !members.is_empty())
            {
                return Err(NebariAppError::Refused {
                    reason: GROUP_NOT_ALLOWED,
                    message: refusal.message(name),
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

    fn group(name: &str, owners: &[&str]) -> Group {
        let mut group = Group {
            id: "id".into(),
            name: name.into(),
            ..Group::default()
        };
        if !owners.is_empty() {
            let owners = owners.iter().map(|o| o.to_string()).collect();
            group.attributes.insert(OWNER_ATTRIBUTE.to_string(), owners);
        }
        group
    }

    #[test]
    fn a_group_of_another_namespace_is_neither_required_nor_filled_whatever_the_policy() {
        let names = AppNames::new("shop", "web");
        let theirs = group("shop-admins", &["evil/web"]);
        let everything_of_shop = [pattern("shop-*")];
        for filling in [false, true] {
            assert_eq!(
                access(&theirs, &names, &everything_of_shop, filling),
                Err(GroupRefusal::OtherNamespace)
            );
        }
        let neighbours = group("shop-admins", &["shop/other"]);
        assert_eq!(
            access(&neighbours, &names, &[], false),
            Ok(()),
            "required: same namespace"
        );
        assert_eq!(access(&neighbours, &names, &[], true), Err(GroupRefusal::NotFillable));
        let platform = group("admin", &[]);
        assert_eq!(access(&platform, &names, &[], false), Ok(()));
        assert_eq!(access(&platform, &names, &[], true), Err(GroupRefusal::NotFillable));
        assert_eq!(access(&platform, &names, &[pattern("admin")], true), Ok(()));
        assert_eq!(access(&group("shop-web", &["shop/web"]), &names, &[], true), Ok(()));
    }
}
