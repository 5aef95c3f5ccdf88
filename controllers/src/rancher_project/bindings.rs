//! Role bindings: what the spec asks for (bindings merged by group and role, one Keycloak group per name with
//! the union of its members) and the Rancher side of it — ProjectRoleTemplateBindings (and, for
//! `spec.cluster`, ClusterRoleTemplateBindings) granting the role to `keycloakoidc_group://<group>`.
//!
//! Rancher keys Keycloak group principals by group *name*, so a binding needs no Keycloak id. Bindings are read
//! once per target per reconcile (one list call) and created when missing. Duplicates the operator made (Rancher
//! ≤ 2.13 accepts them; two writers of a shared cluster binding can race) are cut back to one copy; when the
//! binding is removed, every copy goes.

use std::collections::{BTreeMap, BTreeSet};

use super::desired::BindingKey;
use super::error::MrpError;
use super::reconcile::Pass;
use super::status::RANCHER_BINDINGS_READY;
use crate::rancher::{BindingTarget, Deletion, RancherClient, RoleBinding};

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
/// A binding counts as ours when this operator marked it or when the object's status records its id
/// (`recorded`: how the original operator's bindings are taken over, unmarked and without a write).
pub async fn ensure(
    rancher: &RancherClient,
    target: &BindingTarget,
    wanted: &[BindingKey],
    recorded: &BTreeSet<String>,
) -> Result<Ensured, MrpError> {
    let listing = rancher.list_bindings(target).await?;
    let mut ensured = Ensured::default();
    for key in wanted {
        if let Some(existing) = matching(&listing, target, key).first() {
            let ours: Vec<&RoleBinding> = matching(&listing, target, key)
                .into_iter()
                .filter(|b| b.made_by_operator() || recorded.contains(&b.id))
                .collect();
            match ours.split_first() {
                Some((kept, copies)) => {
                    ensured.ids.insert(key.clone(), kept.id.clone());
                    remove_copies(rancher, target, key, copies).await;
                }
                // Someone else's binding grants the same: used, but not recorded, so never deleted by us.
                None => tracing::debug!(binding = %existing.id, "the binding exists and was not made by the operator"),
            }
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
            Ok(binding) if binding.made_by_operator() => {
                ensured.ids.insert(key.clone(), binding.id);
                ensured.created.push(key.clone());
            }
            // Another writer made it between our list and our create: theirs, not recorded.
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(group = %key.group, role = %key.role, %error, "could not create a role binding");
                ensured.error.get_or_insert(error.into());
            }
        }
    }
    ensured.listing = listing;
    Ok(ensured)
}

/// Deletes the further copies of a binding the operator made. Two writers — reconciles of objects sharing a
/// cluster binding, in one replica or in two shards — can both find it missing and both create it, and Rancher
/// ≤ 2.13 keeps both. Every writer keeps the same copy (the smallest id) and deletes the others it made, so the
/// copies converge to one. A failure is only logged: the next pass tries again.
async fn remove_copies(rancher: &RancherClient, target: &BindingTarget, key: &BindingKey, copies: &[&RoleBinding]) {
    for copy in copies.iter().filter(|b| b.made_by_operator()) {
        match rancher.delete_binding(target, &copy.id).await {
            Ok(_) => {
                tracing::info!(binding = %copy.id, group = %key.group, role = %key.role, "deleted a duplicate role binding")
            }
            Err(error) => tracing::warn!(binding = %copy.id, %error, "could not delete a duplicate role binding"),
        }
    }
}

/// Deletes the bindings of `key` on `target` found in `listing` that the operator made (or that the status
/// records: `recorded`, also when the listing does not show it); returns how many existed. A binding of the same
/// key someone else made is left alone.
pub async fn remove(
    rancher: &RancherClient,
    target: &BindingTarget,
    listing: &[RoleBinding],
    key: &BindingKey,
    recorded: Option<&str>,
) -> Result<usize, MrpError> {
    let mut ids: Vec<String> = matching(listing, target, key)
        .iter()
        .filter(|b| b.made_by_operator() || recorded == Some(b.id.as_str()))
        .map(|b| b.id.clone())
        .collect();
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
            self.report.fail(RANCHER_BINDINGS_READY, MrpError::rancher_missing());
            return;
        };
        let previous = &self.plan.previous;
        let recorded = |entries: &[crds::rancher::RoleBindingStatus]| -> BTreeSet<String> {
            entries
                .iter()
                .filter_map(|e| e.rancher_binding_id.clone())
                .filter(|id| !id.is_empty())
                .collect()
        };
        let recorded_project = recorded(&previous.keycloak_role_bindings);
        let recorded_cluster = recorded(&previous.cluster_keycloak_role_bindings);
        let mut error: Option<MrpError> = None;
        let mut waiting = false;
        if needs_project {
            match project {
                Some(project) => {
                    let target = BindingTarget::Project(project.id.clone());
                    match ensure(rancher, &target, &project_keys, &recorded_project).await {
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
            match ensure(rancher, &target, &cluster_keys, &recorded_cluster).await {
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
