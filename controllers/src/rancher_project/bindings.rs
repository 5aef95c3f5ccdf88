//! Role bindings: what the spec asks for (bindings merged by group and role, one Keycloak group per name with
//! the union of its members) and the Rancher side of it — ProjectRoleTemplateBindings (and, for
//! `spec.cluster`, ClusterRoleTemplateBindings) granting the role to `keycloakoidc_group://<group>`.
//!
//! Rancher keys Keycloak group principals by group *name*, so a binding needs no Keycloak id. Bindings are read
//! once per target per reconcile (one list call) and created when missing. Duplicates (Rancher ≤ 2.13 accepts
//! them) are tolerated while the binding is wanted; when it is removed, every copy goes.

use std::collections::BTreeMap;

use crds::rancher::{ManagedRancherProjectSpec, RoleBinding as SpecBinding};

use super::error::MrpError;
use super::members::DesiredMember;
use super::project::rancher_missing;
use super::reconcile::Pass;
use super::status::RANCHER_BINDINGS_READY;
use crate::rancher::{BindingTarget, Deletion, RancherClient, RoleBinding, Subject};

/// One binding: a group and the role template it is bound with.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BindingKey {
    /// The Keycloak group name.
    pub group: String,
    /// The Rancher role template id.
    pub role: String,
}

impl BindingKey {
    /// A key.
    pub fn new(group: &str, role: &str) -> Self {
        Self {
            group: group.to_string(),
            role: role.to_string(),
        }
    }

    /// The Rancher principal of the group.
    pub fn subject(&self) -> Subject {
        Subject::keycloak_group(&self.group)
    }
}

/// Whether a group serves project or cluster bindings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Bound to the project (PRTBs).
    Project,
    /// Bound to the whole cluster (CRTBs); may be shared by every project of the cluster.
    Cluster,
}

/// A Keycloak group the spec needs, with the union of its members over the bindings naming it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupPlan {
    /// The group name.
    pub name: String,
    /// The description given to a new group.
    pub description: String,
    /// Project or cluster.
    pub scope: Scope,
    /// Who should be a member.
    pub members: Vec<DesiredMember>,
}

/// Everything the spec asks for on the access side.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Desired {
    /// Project bindings, in spec order, deduplicated; `None` when `spec.keycloak.enabled` is false (left alone).
    pub project: Option<Vec<BindingKey>>,
    /// Cluster bindings; `None` when `spec.cluster` is absent or disabled (left alone).
    pub cluster: Option<Vec<BindingKey>>,
    /// The groups, in order of first use.
    pub groups: Vec<GroupPlan>,
    /// The parent group the groups live under, if any.
    pub parent: Option<String>,
}

impl Desired {
    /// Whether the object manages any Keycloak or binding state at all.
    pub fn manages_access(&self) -> bool {
        self.project.is_some() || self.cluster.is_some()
    }

    /// The group called `name`, if wanted.
    pub fn group(&self, name: &str) -> Option<&GroupPlan> {
        self.groups.iter().find(|g| g.name == name)
    }
}

fn add_group(groups: &mut Vec<GroupPlan>, binding: &SpecBinding, scope: Scope) {
    let members = binding.members.iter().map(DesiredMember::from_spec);
    match groups.iter_mut().find(|g| g.name == binding.group_name) {
        Some(group) => {
            for member in members {
                if !group.members.contains(&member) {
                    group.members.push(member);
                }
            }
        }
        None => {
            let mut unique: Vec<DesiredMember> = Vec::new();
            for member in members {
                if !unique.contains(&member) {
                    unique.push(member);
                }
            }
            let description = binding
                .description
                .clone()
                .filter(|d| !d.trim().is_empty())
                .unwrap_or_else(|| match scope {
                    Scope::Project => "Rancher project access group".to_string(),
                    Scope::Cluster => "Rancher cluster access group".to_string(),
                });
            groups.push(GroupPlan {
                name: binding.group_name.clone(),
                description,
                scope,
                members: unique,
            });
        }
    }
}

fn keys(bindings: &[SpecBinding]) -> Vec<BindingKey> {
    let mut keys: Vec<BindingKey> = Vec::new();
    for binding in bindings {
        let key = BindingKey::new(&binding.group_name, &binding.rancher_role);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys
}

/// What the spec asks for (pure). Entries with the same group and role are merged; a group named by several
/// entries gets the union of their members, as in the original operator.
pub fn desired(spec: &ManagedRancherProjectSpec) -> Desired {
    let keycloak = spec.keycloak.clone().unwrap_or_default();
    let cluster = spec
        .cluster
        .as_ref()
        .and_then(|c| c.keycloak.as_ref())
        .filter(|k| k.enabled);
    let mut groups = Vec::new();
    let project = keycloak.enabled.then(|| {
        for binding in &keycloak.role_bindings {
            add_group(&mut groups, binding, Scope::Project);
        }
        keys(&keycloak.role_bindings)
    });
    let cluster = cluster.map(|cluster| {
        for binding in &cluster.role_bindings {
            add_group(&mut groups, binding, Scope::Cluster);
        }
        keys(&cluster.role_bindings)
    });
    Desired {
        project,
        cluster,
        groups,
        parent: keycloak
            .parent_group_name
            .filter(|p| !p.trim().is_empty() && keycloak.enabled),
    }
}

/// The bindings a target has for `key`, oldest id first.
pub fn matching<'a>(listing: &'a [RoleBinding], target: &BindingTarget, key: &BindingKey) -> Vec<&'a RoleBinding> {
    let subject = key.subject();
    let mut found: Vec<&RoleBinding> = listing
        .iter()
        .filter(|b| b.is_for(target, &key.role, &subject))
        .collect();
    found.sort_by(|a, b| a.id.cmp(&b.id));
    found
}

/// The result of ensuring a target's bindings.
#[derive(Debug, Default)]
pub struct Ensured {
    /// The binding id of every wanted key that exists now.
    pub ids: BTreeMap<BindingKey, String>,
    /// Keys created by this pass.
    pub created: Vec<BindingKey>,
    /// The first failure, if any (the other keys were still tried).
    pub error: Option<MrpError>,
    /// The target's bindings as listed at the start (for removing unwanted ones).
    pub listing: Vec<RoleBinding>,
}

/// Creates the missing bindings of `wanted` on `target`; fails only when the target's bindings cannot be listed.
pub async fn ensure(
    rancher: &RancherClient,
    target: &BindingTarget,
    wanted: &[BindingKey],
) -> Result<Ensured, MrpError> {
    let listing = rancher.list_bindings(target).await?;
    let mut ensured = Ensured::default();
    for key in wanted {
        if let Some(existing) = matching(&listing, target, key).first() {
            ensured.ids.insert(key.clone(), existing.id.clone());
            continue;
        }
        let subject = key.subject();
        let created = match rancher.create_binding(target, &key.role, &subject).await {
            Ok(created) => Ok(created),
            // Another writer made it (Rancher ≥ 2.14 refuses duplicates), or the answer was lost: look it up
            // instead of sending the create again.
            Err(error) if error.is_conflict() || error.is_transient() => {
                match rancher.find_bindings(target, &key.role, &subject).await {
                    Ok(found) => found.into_iter().next().ok_or(error),
                    Err(_) => Err(error),
                }
            }
            Err(error) => Err(error),
        };
        match created {
            Ok(binding) => {
                ensured.ids.insert(key.clone(), binding.id);
                ensured.created.push(key.clone());
            }
            Err(error) => {
                tracing::warn!(group = %key.group, role = %key.role, %error, "could not create a role binding");
                ensured.error.get_or_insert(error.into());
            }
        }
    }
    ensured.listing = listing;
    Ok(ensured)
}

/// Deletes every binding of `key` on `target` found in `listing`, plus `recorded` (the id the status holds)
/// when the listing does not show it; returns how many existed.
pub async fn remove(
    rancher: &RancherClient,
    target: &BindingTarget,
    listing: &[RoleBinding],
    key: &BindingKey,
    recorded: Option<&str>,
) -> Result<usize, MrpError> {
    let mut ids: Vec<String> = matching(listing, target, key).iter().map(|b| b.id.clone()).collect();
    if let Some(recorded) = recorded.filter(|r| !r.is_empty())
        && !ids.iter().any(|id| id == recorded)
        && listing.iter().all(|b| b.id != recorded)
    {
        ids.push(recorded.to_string());
    }
    let mut existed = 0;
    for id in ids {
        if rancher.delete_binding(target, &id).await? == Deletion::Deleted {
            existed += 1;
        }
    }
    Ok(existed)
}

impl Pass<'_> {
    /// Step 4: the Rancher bindings.
    pub async fn bindings(&mut self) {
        let desired = &self.plan.desired;
        let project = self.done.project.as_ref();
        let done = &mut self.done.bindings;
        if !desired.manages_access() {
            return;
        }
        let project_keys = desired.project.clone().unwrap_or_default();
        let cluster_keys = desired.cluster.clone().unwrap_or_default();
        let gc_project = desired.project.is_some() && !self.plan.previous.keycloak_role_bindings.is_empty();
        let gc_cluster = desired.cluster.is_some() && !self.plan.previous.cluster_keycloak_role_bindings.is_empty();
        let needs_project = !project_keys.is_empty() || gc_project;
        let needs_cluster = !cluster_keys.is_empty() || gc_cluster;
        if !needs_project && !needs_cluster {
            self.report
                .ok(RANCHER_BINDINGS_READY, "NoBindings", "no role bindings are requested");
            return;
        }
        let Some(rancher) = self.plan.controller.rancher.as_ref() else {
            self.report.fail(RANCHER_BINDINGS_READY, rancher_missing());
            return;
        };
        let mut error: Option<MrpError> = None;
        let mut waiting = false;
        if needs_project {
            match project {
                Some(project) => {
                    let target = BindingTarget::Project(project.id.clone());
                    match ensure(rancher, &target, &project_keys).await {
                        Ok(ensured) => {
                            for key in &ensured.created {
                                self.report.note(
                                    "BindingCreated",
                                    format!(
                                        "bound Keycloak group {} to project {} as {}",
                                        key.group, project.id, key.role
                                    ),
                                );
                            }
                            done.project_ids = ensured.ids;
                            done.project_listing = Some(ensured.listing);
                            if let Some(e) = ensured.error {
                                error.get_or_insert(e);
                            }
                        }
                        Err(e) => {
                            error.get_or_insert(e);
                        }
                    }
                }
                None => waiting = !project_keys.is_empty(),
            }
        }
        if needs_cluster {
            let cluster_id = &self.plan.mrp.spec.cluster_id;
            let target = BindingTarget::Cluster(cluster_id.clone());
            match ensure(rancher, &target, &cluster_keys).await {
                Ok(ensured) => {
                    for key in &ensured.created {
                        self.report.note(
                            "BindingCreated",
                            format!(
                                "bound Keycloak group {} to cluster {cluster_id} as {}",
                                key.group, key.role
                            ),
                        );
                    }
                    done.cluster_ids = ensured.ids;
                    done.cluster_listing = Some(ensured.listing);
                    if let Some(e) = ensured.error {
                        error.get_or_insert(e);
                    }
                }
                Err(e) => {
                    error.get_or_insert(e);
                }
            }
        }
        match error {
            Some(error) => self.report.fail(RANCHER_BINDINGS_READY, error),
            None if waiting => self
                .report
                .wait(RANCHER_BINDINGS_READY, "waiting for the Rancher project"),
            None => self.report.ok(
                RANCHER_BINDINGS_READY,
                "BindingsReady",
                format!(
                    "{} project and {} cluster role binding(s) exist",
                    project_keys.len(),
                    cluster_keys.len()
                ),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(value: serde_json::Value) -> ManagedRancherProjectSpec {
        serde_json::from_value(value).expect("valid spec")
    }

    #[test]
    fn bindings_merge_by_group_and_role_and_groups_union_their_members() {
        let desired = desired(&spec(serde_json::json!({
            "projectName": "p", "clusterId": "c",
            "keycloak": {"parentGroupName": "c_c", "roleBindings": [
                {"groupName": "g1", "rancherRole": "project-member", "members": [{"userIdentifier": "alice", "lookupByID": false}]},
                {"groupName": "g1", "rancherRole": "project-member", "members": [{"userIdentifier": "Bob", "lookupByID": false}]},
                {"groupName": "g1", "rancherRole": "read-only", "members": [{"userIdentifier": "ALICE", "lookupByID": false}]},
                {"groupName": "g2", "rancherRole": "project-owner"},
            ]},
            "cluster": {"keycloak": {"roleBindings": [
                {"groupName": "cl", "rancherRole": "cluster-owner", "members": [{"userIdentifier": "u-1"}]},
            ]}},
        })));
        assert_eq!(
            desired.project,
            Some(vec![
                BindingKey::new("g1", "project-member"),
                BindingKey::new("g1", "read-only"),
                BindingKey::new("g2", "project-owner")
            ])
        );
        assert_eq!(desired.cluster, Some(vec![BindingKey::new("cl", "cluster-owner")]));
        let g1 = desired.group("g1").expect("g1");
        assert_eq!(g1.members.len(), 2, "alice (any case) and bob: {:?}", g1.members);
        assert_eq!(desired.group("cl").map(|g| g.scope), Some(Scope::Cluster));
        assert_eq!(desired.parent.as_deref(), Some("c_c"));
    }

    #[test]
    fn disabled_or_absent_blocks_are_left_alone() {
        let desired = desired(&spec(serde_json::json!({
            "projectName": "p", "clusterId": "c",
            "keycloak": {"enabled": false, "roleBindings": [{"groupName": "g", "rancherRole": "r"}]},
        })));
        assert_eq!(desired.project, None);
        assert_eq!(desired.cluster, None);
        assert!(desired.groups.is_empty());
        assert!(!desired.manages_access());
        let empty_cluster = super::desired(&spec(serde_json::json!({
            "projectName": "p", "clusterId": "c", "cluster": {"keycloak": {"roleBindings": []}},
        })));
        assert_eq!(
            empty_cluster.cluster,
            Some(vec![]),
            "an empty list removes what was made"
        );
        assert_eq!(
            empty_cluster.project,
            Some(vec![]),
            "an absent keycloak block is enabled and empty"
        );
    }
}
