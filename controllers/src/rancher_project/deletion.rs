//! Cleanup when a ManagedRancherProject is deleted, in the seed's order: Rancher role bindings, Keycloak groups
//! (or the members managed in groups this operator did not create), the parent group when it is ours and
//! empty, and the Rancher project — by its recorded id, falling back to a lookup by name when that id is stale
//! (the project was recreated outside the operator), deleting only a project this object owns.
//!
//! What other objects still use is left in place: cluster bindings and groups another project of the cluster
//! wants, and the parent group while any other object hangs groups under it (objects are listed afresh).
//! Every step runs even when an earlier one failed (revoking Keycloak access must not wait for Rancher); if
//! any failed, the finalizer stays, the status says why (phase `Deleting`, `Ready` False) and a Warning event
//! repeats it, and the runner retries with backoff. A 404 counts as done. The annotation
//! `waldur.io/skip-cleanup: "true"` releases the object without touching Rancher or Keycloak.

use std::collections::BTreeSet;
use std::sync::Arc;

use crds::rancher::{ManagedRancherProject, ManagedRancherProjectStatus, Phase, RoleBindingStatus};
use framework::ReconcileError;
use framework::conditions::{ConditionUpdate, READY};
use framework::events::Severity;
use framework::runner::Context;
use kube::{Resource, ResourceExt};

use super::RancherProjectController as Controller;
use super::bindings;
use super::cluster_scope;
use super::desired::{self, BindingKey};
use super::error::MrpError;
use super::groups::{self, ParentRemoval, Removal};
use super::members;
use super::project;
use super::status;
use crate::rancher::Project;
use crate::rancher::{BindingTarget, Deletion, RancherClient};

/// Reason of the Warning event saying why the finalizer stays.
pub const CLEANUP_BLOCKED: &str = "CleanupBlocked";

/// Annotation releasing an object without external cleanup (when Rancher or Keycloak is gone for good).
pub const SKIP_CLEANUP_ANNOTATION: &str = "waldur.io/skip-cleanup";

/// Everything a cleanup found to do and the failures it met.
struct Cleanup<'a> {
    mrp: &'a ManagedRancherProject,
    status: ManagedRancherProjectStatus,
    others: Vec<Arc<ManagedRancherProject>>,
    errors: Vec<MrpError>,
    done: Vec<String>,
}

impl Cleanup<'_> {
    fn failed(&mut self, step: &str, error: MrpError) {
        tracing::warn!(step, reason = error.reason(), %error, "cleanup step failed");
        self.errors.push(error);
    }

    /// Project and cluster binding entries: the status's, plus the spec's (a binding made by a pass whose status
    /// write never happened).
    fn entries(&self) -> (Vec<RoleBindingStatus>, Vec<RoleBindingStatus>) {
        let desired = desired::desired(&self.mrp.spec);
        let with_spec = |recorded: &[RoleBindingStatus], keys: Option<&Vec<BindingKey>>| {
            let mut entries = recorded.to_vec();
            for key in keys.into_iter().flatten() {
                let known = entries
                    .iter()
                    .any(|e| e.group_name == key.group && e.rancher_role.as_deref().is_none_or(|r| r == key.role));
                if !known {
                    entries.push(RoleBindingStatus {
                        group_name: key.group.clone(),
                        rancher_role: Some(key.role.clone()),
                        ..RoleBindingStatus::default()
                    });
                }
            }
            entries
        };
        (
            with_spec(&self.status.keycloak_role_bindings, desired.project.as_ref()),
            with_spec(&self.status.cluster_keycloak_role_bindings, desired.cluster.as_ref()),
        )
    }

    async fn rancher_bindings(
        &mut self,
        rancher: &RancherClient,
        project_entries: &[RoleBindingStatus],
        cluster_entries: &[RoleBindingStatus],
    ) {
        let cluster_id = self.mrp.spec.cluster_id.clone();
        if let Some(project_id) = self.status.rancher_project_id.clone().filter(|id| !id.is_empty()) {
            let target = BindingTarget::Project(project_id);
            for entry in project_entries {
                if let Some(id) = entry.rancher_binding_id.as_deref().filter(|id| !id.is_empty()) {
                    match rancher.delete_binding(&target, id).await {
                        Ok(Deletion::Deleted) => self.done.push(format!("project binding {id}")),
                        Ok(Deletion::AlreadyGone) => {}
                        Err(error) => self.failed("delete project binding", error.into()),
                    }
                }
            }
        }
        let unshared: Vec<&RoleBindingStatus> = cluster_entries
            .iter()
            .filter(|e| {
                let role = e.rancher_role.as_deref().unwrap_or_default();
                !cluster_scope::uses_cluster_binding(&self.others, &cluster_id, &BindingKey::new(&e.group_name, role))
            })
            .collect();
        if unshared.is_empty() {
            return;
        }
        let target = BindingTarget::Cluster(cluster_id.clone());
        let listing = match rancher.list_bindings(&target).await {
            Ok(listing) => listing,
            Err(error) => {
                self.failed("list cluster bindings", error.into());
                return;
            }
        };
        for entry in unshared {
            let key = BindingKey::new(&entry.group_name, entry.rancher_role.as_deref().unwrap_or_default());
            let listed: &[_] = if entry.rancher_role.is_some() { &listing } else { &[] };
            match bindings::remove(rancher, &target, listed, &key, entry.rancher_binding_id.as_deref()).await {
                Ok(0) => {}
                Ok(n) => self
                    .done
                    .push(format!("{n} cluster binding(s) of group {}", entry.group_name)),
                Err(error) => self.failed("delete cluster binding", error),
            }
        }
    }

    async fn keycloak(&mut self, realm: &crate::keycloak::RealmClient, entries: &[RoleBindingStatus]) {
        let parent_name = desired::desired(&self.mrp.spec).parent;
        let parent_id = match (&self.status.keycloak_parent_group_id, &parent_name) {
            (Some(id), _) if !id.is_empty() => Some(id.clone()),
            (_, Some(name)) => match realm.find_top_level_group(name).await {
                Ok(found) => found.map(|g| g.id),
                Err(error) => {
                    self.failed("find parent group", error.into());
                    return;
                }
            },
            _ => None,
        };
        let mut seen = BTreeSet::new();
        for entry in entries {
            if !seen.insert(entry.group_name.clone()) || cluster_scope::uses_group(&self.others, &entry.group_name) {
                continue;
            }
            let recorded = entries
                .iter()
                .filter(|e| e.group_name == entry.group_name)
                .find_map(|e| e.keycloak_group_id.clone());
            let managed = members::managed_ids(entries.iter(), &entry.group_name);
            let owner = project::owner_key(self.mrp);
            match groups::remove(
                realm,
                recorded.as_deref(),
                parent_id.as_deref(),
                &entry.group_name,
                &managed,
                &owner,
            )
            .await
            {
                Ok(Removal::Deleted) => self.done.push(format!("Keycloak group {}", entry.group_name)),
                Ok(Removal::MembersRemoved) => self
                    .done
                    .push(format!("managed members of Keycloak group {}", entry.group_name)),
                Ok(Removal::Gone) => {}
                Err(error) => self.failed("remove group", error),
            }
            let replaced = entries
                .iter()
                .filter(|e| e.group_name == entry.group_name)
                .find_map(|e| e.replaced_keycloak_group_id.clone());
            if let Some(old) = replaced {
                match groups::remove_replaced(realm, &old, &entry.group_name, &managed, &owner).await {
                    Ok(Removal::Gone) => {}
                    Ok(_) => self.done.push(format!(
                        "Keycloak group {} replaced by a parent change",
                        entry.group_name
                    )),
                    Err(error) => self.failed("remove replaced group", error),
                }
            }
        }
        let Some(parent_name) = parent_name else { return };
        if cluster_scope::uses_parent(&self.others, &parent_name) {
            tracing::info!(parent = %parent_name, "the parent group is still used by other projects; kept");
            return;
        }
        if !self.errors.is_empty() {
            // A child that could not be removed still hangs under the parent; the retry deals with both.
            return;
        }
        match groups::remove_parent_if_empty(realm, parent_id.as_deref(), &parent_name).await {
            Ok(ParentRemoval::Deleted) => self.done.push(format!("Keycloak parent group {parent_name}")),
            Ok(ParentRemoval::Kept) => {
                tracing::info!(parent = %parent_name, "the parent group has other children or is not ours; kept")
            }
            Ok(ParentRemoval::Gone) => {}
            Err(error) => self.failed("remove parent group", error),
        }
    }

    async fn project(&mut self, rancher: &RancherClient) {
        let spec = &self.mrp.spec;
        let owner = project::owner_key(self.mrp);
        let stored = self.status.rancher_project_id.clone().filter(|id| !id.is_empty());
        if let Some(id) = &stored {
            match rancher.get_project(id).await {
                Ok(Some(project)) if !project.is_removing() => {
                    self.remove_project(rancher, &project).await;
                    return;
                }
                Ok(_) => {}
                Err(error) => {
                    self.failed("read project", error.into());
                    return;
                }
            }
        }
        // The recorded id is stale (or was never recorded): find the live project by name, and delete it only
        // if it is this object's.
        let candidates = match rancher.find_projects(&spec.cluster_id, &spec.project_name).await {
            Ok(candidates) => candidates,
            Err(error) => {
                self.failed("find project by name", error.into());
                return;
            }
        };
        let claimed = cluster_scope::claimed_projects(&self.others);
        for project in project::deletable(&candidates, &owner, &spec.cluster_id, stored.is_some())
            .into_iter()
            .filter(|p| !claimed.contains(&p.id))
        {
            if let Some(stale) = &stored {
                tracing::warn!(stale = %stale, current = %project.id, "stored project id was stale; removing the current project found by name");
            }
            self.remove_project(rancher, &project).await;
        }
    }

    /// Deletes the object's project, or releases it when it was adopted (see `project::release_only`).
    async fn remove_project(&mut self, rancher: &RancherClient, project: &Project) {
        if project.is_built_in() {
            return;
        }
        if project::release_only(project, self.mrp) {
            match rancher.update_project(project, &project::release(project)).await {
                Ok(_) => self
                    .done
                    .push(format!("released the adopted Rancher project {}", project.id)),
                Err(error) => self.failed("release project", error.into()),
            }
            return;
        }
        match rancher.delete_project(&project.id).await {
            Ok(Deletion::Deleted) => self.done.push(format!("Rancher project {}", project.id)),
            Ok(Deletion::AlreadyGone) => {}
            Err(error) => self.failed("delete project", error.into()),
        }
    }
}

/// Undoes everything the object made; the runner removes the finalizer when this succeeds.
pub async fn cleanup(controller: &Controller, mrp: Arc<ManagedRancherProject>, ctx: &Context) -> Result<(), MrpError> {
    let object = mrp.object_ref(&());
    if mrp.annotations().get(SKIP_CLEANUP_ANNOTATION).map(String::as_str) == Some("true") {
        tracing::warn!("{SKIP_CLEANUP_ANNOTATION} is set: releasing without cleaning up Rancher and Keycloak");
        return Ok(());
    }
    if let Err(refusal) = controller.settings.policy.check_cluster(&mrp.spec.cluster_id) {
        let Some(made) = recorded_access(mrp.status.as_ref()) else {
            // Never acted on, so there is nothing of its own to clean up; acting now (the stale-id fallback
            // deletes by name) would be the very access the policy refuses.
            tracing::warn!(%refusal, "the operator's policy refuses this object: released without touching Rancher or Keycloak");
            return Ok(());
        };
        // It acted before the policy was narrowed: releasing it now would leave that access in place for good,
        // unseen. Deletion waits for someone to decide.
        let error = MrpError::NotAllowed(format!(
            "{refusal}; this object made {made} there before, which cleanup would remove: allow the cluster again \
             for the cleanup to run"
        ));
        return blocked(controller, ctx, &mrp, error).await;
    }
    // Afresh and cluster-wide, whatever the manager watches (see `cluster_scope`).
    let listed = controller.peers.list_afresh(&ctx.client, &ctx.namespaces).await?;
    let mut cleanup = Cleanup {
        mrp: &mrp,
        status: mrp.status.clone().unwrap_or_default(),
        others: cluster_scope::others(&listed, &mrp),
        errors: Vec::new(),
        done: Vec::new(),
    };
    let (project_entries, cluster_entries) = cleanup.entries();
    let has_access = !project_entries.is_empty() || !cluster_entries.is_empty();

    match controller.rancher.as_ref() {
        Some(rancher) => {
            cleanup
                .rancher_bindings(rancher, &project_entries, &cluster_entries)
                .await
        }
        None => cleanup.failed(
            "rancher",
            MrpError::NotConfigured {
                system: "Rancher",
                flag: "--rancher-url",
            },
        ),
    }
    if has_access {
        match controller.keycloak.as_ref() {
            Some(realm) => {
                let all_entries: Vec<RoleBindingStatus> =
                    project_entries.iter().chain(&cluster_entries).cloned().collect();
                cleanup.keycloak(realm, &all_entries).await;
            }
            None => cleanup.failed(
                "keycloak",
                MrpError::NotConfigured {
                    system: "Keycloak",
                    flag: "--rancher-keycloak-url",
                },
            ),
        }
    }
    if let Some(rancher) = controller.rancher.as_ref() {
        cleanup.project(rancher).await;
    }

    if !cleanup.done.is_empty() {
        ctx.events
            .publish(
                &object,
                Severity::Normal,
                "CleanedUp",
                "Delete",
                &format!("deleted {}", cleanup.done.join(", ")),
            )
            .await;
    }
    let Some(error) = cleanup.errors.into_iter().next() else {
        tracing::info!(removed = cleanup.done.len(), "cleanup finished");
        return Ok(());
    };
    blocked(controller, ctx, &mrp, error).await
}

/// What the status records this object made in Rancher (`None` when nothing), for the refusal message.
fn recorded_access(status: Option<&ManagedRancherProjectStatus>) -> Option<String> {
    let status = status?;
    // Entries a refused pass lists from the spec carry no ids: only a recorded group, binding or member counts.
    let made = |entry: &&RoleBindingStatus| {
        entry.keycloak_group_id.is_some() || entry.rancher_binding_id.is_some() || !entry.synced_members.is_empty()
    };
    let bindings = status
        .keycloak_role_bindings
        .iter()
        .chain(&status.cluster_keycloak_role_bindings)
        .filter(made)
        .count();
    let project = status.rancher_project_id.as_deref().filter(|id| !id.is_empty());
    match (project, bindings) {
        (None, 0) => None,
        (Some(id), 0) => Some(format!("Rancher project {id}")),
        (None, n) => Some(format!("{n} role binding(s)")),
        (Some(id), n) => Some(format!("Rancher project {id} and {n} role binding(s)")),
    }
}

/// Keeps the finalizer with `error` in an event and the Ready condition (phase `Deleting`).
async fn blocked(
    controller: &Controller,
    ctx: &Context,
    mrp: &ManagedRancherProject,
    error: MrpError,
) -> Result<(), MrpError> {
    let object = mrp.object_ref(&());
    let message = format!(
        "cleanup is blocked: {}; the finalizer stays until cleanup succeeds (annotate {SKIP_CLEANUP_ANNOTATION}=true \
         to release the object without cleanup)",
        error.safe_message()
    );
    ctx.events
        .publish(
            &object,
            Severity::Warning,
            CLEANUP_BLOCKED,
            "Delete",
            &format!("{}: {message}", error.reason()),
        )
        .await;
    let now = status::to_seconds(controller.clock.now());
    let mut update = status::begin(mrp, now);
    update.finish_with(ConditionUpdate::failed(READY, error.reason(), message));
    update.status.phase = Some(Phase::Deleting);
    let previous = update.base().clone();
    status::stamp(&previous, &mut update.status, now);
    if let Err(write_error) = framework::status::publish(controller, ctx, mrp, update).await {
        tracing::debug!(%write_error, "could not record the blocked cleanup in the status");
    }
    Err(error)
}
