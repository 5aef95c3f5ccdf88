//! One reconcile of a ManagedRancherProject, in the seed's order:
//!
//! 1. the Rancher project: the recorded id, else adopted (when safe) or created by name; name, description and
//!    annotations synced (a rename included);
//! 2. its quota and namespace default quota;
//! 3. the Keycloak parent group and one group per binding group name under it;
//! 4. the project (and cluster) role template bindings to `keycloakoidc_group://<group>`;
//! 5. the members of each group (identifiers resolved to Keycloak ids first; unknown users pending);
//! 6. bindings no longer in the spec: their Rancher bindings, their groups (or the members managed in them);
//! 7. the status (written only when it changed; a write refused as stale is redone on a fresh copy of the object
//!    rather than dropped, see the controller's `StatusPolicy`), events for what changed, and the next drift
//!    check.
//!
//! Keycloak steps do not wait for Rancher ones (access is granted by group membership; revoking it must not
//! depend on Rancher being up), and a failed step only stops the steps that need its result. Every failure is
//! shown on its condition; the pass then fails so the runner retries with backoff, otherwise it asks to run again
//! after the jittered resync interval (Rancher and Keycloak cannot be watched).
//!
//! A pass with nothing to do reads the project, its bindings, the parent and binding groups and their members,
//! and writes nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crds::rancher::{ManagedRancherProject, ManagedRancherProjectStatus, RoleBindingStatus};
use framework::ReconcileError;
use framework::conditions::ConditionUpdate;
use framework::events::Severity;
use framework::runner::{Context, Outcome};
use kube::Resource;

use super::RancherProjectController as Controller;
use super::bindings::{self, BindingKey, Desired, Scope};
use super::cluster_scope;
use super::error::MrpError;
use super::groups::{self, Removal};
use super::members::{self, Synced};
use super::project::{self, Adoption, Found};
use super::quotas::{self, Translation};
use super::status::{
    self, KEYCLOAK_GROUPS_READY, MEMBERSHIP_SYNCED, RANCHER_BINDINGS_READY, RANCHER_PROJECT_READY, RESOURCE_QUOTA_READY,
};
use crate::rancher::{BindingTarget, Project, RoleBinding};

/// Jitter of the drift resync (±10 %), so objects created together do not poll together forever.
const RESYNC_JITTER: f64 = 0.1;

/// What one pass found out and did, gathered for the status and the events.
struct Pass<'a> {
    controller: &'a Controller,
    mrp: &'a ManagedRancherProject,
    previous: &'a ManagedRancherProjectStatus,
    conditions: Vec<ConditionUpdate>,
    errors: Vec<MrpError>,
    events: Vec<(Severity, &'static str, String)>,
}

/// The Keycloak side after steps 3 and 5.
#[derive(Default)]
struct GroupsDone {
    /// The parent's id, when the step ran and succeeded.
    parent_id: Option<String>,
    /// Whether the parent step ran (the id above is then authoritative).
    parent_known: bool,
    /// Group ids by name.
    ids: BTreeMap<String, String>,
    /// Membership by group name (absent when the group's sync failed: the previous report is kept).
    members: BTreeMap<String, Synced>,
    /// The realm, when Keycloak is configured.
    usable: bool,
    /// Groups created by this pass (they have no members to list yet).
    created: BTreeSet<String>,
}

/// The Rancher binding side after step 4.
#[derive(Default)]
struct BindingsDone {
    project_ids: BTreeMap<BindingKey, String>,
    cluster_ids: BTreeMap<BindingKey, String>,
    project_listing: Option<Vec<RoleBinding>>,
    cluster_listing: Option<Vec<RoleBinding>>,
}

impl<'a> Pass<'a> {
    /// Records a condition unless the step already reported one (a failure is never overwritten).
    fn record(&mut self, update: ConditionUpdate) {
        if !self.conditions.iter().any(|c| c.type_ == update.type_) {
            self.conditions.push(update);
        }
    }

    fn ok(&mut self, type_: &str, reason: &str, message: impl Into<String>) {
        self.record(ConditionUpdate::ok(type_, reason, message));
    }

    fn wait(&mut self, type_: &str, message: &str) {
        self.record(ConditionUpdate::unknown(type_, "Waiting", message));
    }

    /// Records a failure on `type_` (replacing a success reported earlier in the pass, keeping an earlier
    /// failure) and remembers the error.
    fn fail(&mut self, type_: &str, error: MrpError) {
        let failed = ConditionUpdate::failed(type_, error.reason(), error.safe_message());
        match self.conditions.iter_mut().find(|c| c.type_ == type_) {
            Some(existing) if existing.status == framework::conditions::Status::False => {}
            Some(existing) => *existing = failed,
            None => self.conditions.push(failed),
        }
        tracing::warn!(condition = type_, reason = error.reason(), %error, "reconcile step failed");
        self.errors.push(error);
    }

    fn note(&mut self, reason: &'static str, message: String) {
        tracing::info!(reason, "{message}");
        self.events.push((Severity::Normal, reason, message));
    }

    fn rancher_missing() -> MrpError {
        MrpError::NotConfigured {
            system: "Rancher",
            flag: "--rancher-url",
        }
    }

    /// Steps 1 and 2: the project and its quotas.
    async fn project(&mut self, claimed: &BTreeSet<String>, translation: &Translation) -> Option<Project> {
        let Some(rancher) = self.controller.rancher.as_ref() else {
            self.fail(RANCHER_PROJECT_READY, Self::rancher_missing());
            self.wait(RESOURCE_QUOTA_READY, "waiting for the Rancher project");
            return None;
        };
        let spec = &self.mrp.spec;
        let resolved = match project::resolve(
            rancher,
            self.mrp,
            self.previous.rancher_project_id.as_deref(),
            claimed,
            translation.quotas.clone(),
        )
        .await
        {
            Ok(resolved) => resolved,
            Err(error) => {
                self.fail(RANCHER_PROJECT_READY, error);
                self.wait(RESOURCE_QUOTA_READY, "waiting for the Rancher project");
                return None;
            }
        };
        let id = resolved.project.id.clone();
        match resolved.how {
            Some(Found::Created) => self.note(
                "ProjectCreated",
                format!(
                    "created Rancher project {id} ({:?}) in cluster {}",
                    spec.project_name, spec.cluster_id
                ),
            ),
            Some(Found::Adopted(Adoption::Owned)) => {
                // Made by this object before its id reached the status (a crash, or a failed status write): found
                // again by its owner annotation rather than duplicated.
                tracing::info!(project = %id, "found this object's Rancher project by its owner annotation");
            }
            Some(Found::Adopted(how)) => {
                let why = match how {
                    Adoption::FromOriginalOperator => "the original rancher-keycloak-operator created it",
                    _ => "spec.adoptExistingProject allows it",
                };
                self.note(
                    "ProjectAdopted",
                    format!(
                        "took over the existing Rancher project {id} ({:?}): {why}",
                        spec.project_name
                    ),
                );
            }
            None => {}
        }
        let mut project = resolved.project;
        match project::sync_metadata(rancher, self.mrp, project.clone()).await {
            Ok((updated, wrote)) => {
                project = updated;
                if wrote {
                    self.note(
                        "ProjectUpdated",
                        format!("updated the name, description or annotations of Rancher project {id}"),
                    );
                }
                self.ok(
                    RANCHER_PROJECT_READY,
                    "ProjectReady",
                    format!(
                        "Rancher project {id} ({:?}) exists in cluster {}",
                        spec.project_name, spec.cluster_id
                    ),
                );
            }
            Err(error) => self.fail(RANCHER_PROJECT_READY, error),
        }
        match quotas::apply(rancher, project.clone(), translation).await {
            Ok((updated, wrote)) => {
                project = updated;
                if wrote {
                    self.note(
                        "QuotaUpdated",
                        format!("Rancher project {id}: {}", quotas::describe(translation)),
                    );
                }
                let reason = if translation.unsupported.is_empty() {
                    "QuotaApplied"
                } else {
                    "QuotaPartiallyApplied"
                };
                self.ok(RESOURCE_QUOTA_READY, reason, quotas::describe(translation));
            }
            Err(error) => self.fail(RESOURCE_QUOTA_READY, error),
        }
        Some(project)
    }

    /// Step 3: the parent group and the binding groups.
    async fn groups(&mut self, desired: &Desired) -> GroupsDone {
        let mut done = GroupsDone::default();
        if !desired.manages_access() {
            return done;
        }
        let Some(realm) = self.controller.keycloak.as_ref() else {
            if desired.groups.is_empty() {
                self.ok(
                    KEYCLOAK_GROUPS_READY,
                    "NoGroups",
                    "no role bindings ask for Keycloak groups",
                );
                self.ok(MEMBERSHIP_SYNCED, "NoMembers", "no role bindings ask for members");
            } else {
                self.fail(
                    KEYCLOAK_GROUPS_READY,
                    MrpError::NotConfigured {
                        system: "Keycloak",
                        flag: "--rancher-keycloak-url",
                    },
                );
                self.wait(MEMBERSHIP_SYNCED, "waiting for the Keycloak groups");
            }
            return done;
        };
        done.usable = true;
        if desired.groups.is_empty() {
            self.ok(
                KEYCLOAK_GROUPS_READY,
                "NoGroups",
                "no role bindings ask for Keycloak groups",
            );
            self.ok(MEMBERSHIP_SYNCED, "NoMembers", "no role bindings ask for members");
            return done;
        }
        if let Some(parent) = &desired.parent {
            match groups::ensure_parent(realm, parent).await {
                Ok(ensured) => {
                    if ensured.created {
                        self.note("GroupCreated", format!("created the Keycloak parent group {parent}"));
                    }
                    done.parent_id = Some(ensured.value.id);
                    done.parent_known = true;
                }
                Err(error) => {
                    self.fail(KEYCLOAK_GROUPS_READY, error.into());
                    self.wait(MEMBERSHIP_SYNCED, "waiting for the Keycloak groups");
                    return done;
                }
            }
        } else {
            done.parent_known = true;
        }
        let mut created = BTreeSet::new();
        let mut group_error: Option<MrpError> = None;
        for plan in &desired.groups {
            match groups::ensure_group(realm, done.parent_id.as_deref(), &plan.name, &plan.description).await {
                Ok(ensured) => {
                    if ensured.created {
                        created.insert(plan.name.clone());
                        self.note("GroupCreated", format!("created the Keycloak group {}", plan.name));
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
            Some(error) => self.fail(KEYCLOAK_GROUPS_READY, error),
            None => self.ok(
                KEYCLOAK_GROUPS_READY,
                "GroupsReady",
                match &desired.parent {
                    Some(parent) => format!("{} Keycloak group(s) exist under {parent}", desired.groups.len()),
                    None => format!("{} Keycloak group(s) exist", desired.groups.len()),
                },
            ),
        }

        done.created = created;
        done
    }

    /// Step 5: the members of each group that exists.
    async fn members(&mut self, desired: &Desired, done: &mut GroupsDone) {
        let Some(realm) = self.controller.keycloak.as_ref() else {
            return;
        };
        if !desired.manages_access() || desired.groups.is_empty() || !done.parent_known {
            return;
        }
        let created = done.created.clone();
        let previous_entries: Vec<&RoleBindingStatus> = self
            .previous
            .keycloak_role_bindings
            .iter()
            .chain(&self.previous.cluster_keycloak_role_bindings)
            .collect();
        let mut member_error: Option<MrpError> = None;
        let mut pending = 0usize;
        let mut synced_count = 0usize;
        for plan in &desired.groups {
            let Some(group_id) = done.ids.get(&plan.name).cloned() else {
                continue;
            };
            let managed = members::managed_ids(previous_entries.iter().copied(), &plan.name);
            // A group recorded under another id that still exists was left behind by a parent change: it carries
            // the same name, so the same Rancher principal, and must not keep its members.
            let recorded = previous_entries
                .iter()
                .filter(|e| e.group_name == plan.name)
                .find_map(|e| e.keycloak_group_id.clone())
                .filter(|old| *old != group_id);
            if let Some(old) = recorded {
                match groups::remove_replaced(realm, &old, &plan.name, &managed).await {
                    Ok(Removal::Gone) => {}
                    Ok(_) => self.note(
                        "GroupReplaced",
                        format!(
                            "removed the previous Keycloak group {} (id {old}) after a parent change",
                            plan.name
                        ),
                    ),
                    Err(error) => self.fail(KEYCLOAK_GROUPS_READY, error),
                }
            }
            // A group made just now has no members: no need to list them.
            let current = created.contains(&plan.name).then(Vec::new);
            let (synced, error) = members::sync(
                realm,
                &group_id,
                current,
                &plan.members,
                &managed,
                self.controller.settings.authoritative_membership,
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
                self.note(
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
            Some(error) => self.fail(MEMBERSHIP_SYNCED, error),
            None if done.ids.len() < desired.groups.len() => {
                self.wait(MEMBERSHIP_SYNCED, "waiting for the Keycloak groups")
            }
            None if pending > 0 => self.ok(
                MEMBERSHIP_SYNCED,
                "MembersPending",
                format!(
                    "{synced_count} member(s) in sync; {pending} member(s) wait for their user to exist in Keycloak \
                     (see pendingMembers) and are added on a later check"
                ),
            ),
            None => self.ok(
                MEMBERSHIP_SYNCED,
                "MembersSynced",
                format!("{synced_count} member(s) in sync"),
            ),
        }
    }

    /// Step 4: the Rancher bindings.
    async fn bindings(&mut self, desired: &Desired, project: Option<&Project>) -> BindingsDone {
        let mut done = BindingsDone::default();
        if !desired.manages_access() {
            return done;
        }
        let project_keys = desired.project.clone().unwrap_or_default();
        let cluster_keys = desired.cluster.clone().unwrap_or_default();
        let gc_project = desired.project.is_some() && !self.previous.keycloak_role_bindings.is_empty();
        let gc_cluster = desired.cluster.is_some() && !self.previous.cluster_keycloak_role_bindings.is_empty();
        let needs_project = !project_keys.is_empty() || gc_project;
        let needs_cluster = !cluster_keys.is_empty() || gc_cluster;
        if !needs_project && !needs_cluster {
            self.ok(RANCHER_BINDINGS_READY, "NoBindings", "no role bindings are requested");
            return done;
        }
        let Some(rancher) = self.controller.rancher.as_ref() else {
            self.fail(RANCHER_BINDINGS_READY, Self::rancher_missing());
            return done;
        };
        let mut error: Option<MrpError> = None;
        let mut waiting = false;
        if needs_project {
            match project {
                Some(project) => {
                    let target = BindingTarget::Project(project.id.clone());
                    match bindings::ensure(rancher, &target, &project_keys).await {
                        Ok(ensured) => {
                            for key in &ensured.created {
                                self.note(
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
            let cluster_id = &self.mrp.spec.cluster_id;
            let target = BindingTarget::Cluster(cluster_id.clone());
            match bindings::ensure(rancher, &target, &cluster_keys).await {
                Ok(ensured) => {
                    for key in &ensured.created {
                        self.note(
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
            Some(error) => self.fail(RANCHER_BINDINGS_READY, error),
            None if waiting => self.wait(RANCHER_BINDINGS_READY, "waiting for the Rancher project"),
            None => self.ok(
                RANCHER_BINDINGS_READY,
                "BindingsReady",
                format!(
                    "{} project and {} cluster role binding(s) exist",
                    project_keys.len(),
                    cluster_keys.len()
                ),
            ),
        }
        done
    }

    /// Step 6: removes what bindings no longer in the spec made; returns the entries whose removal is not
    /// finished (kept in the status so the next pass retries), project ones first.
    async fn remove_unwanted(
        &mut self,
        desired: &Desired,
        project: Option<&Project>,
        groups_done: &GroupsDone,
        bindings_done: &BindingsDone,
        others: &[Arc<ManagedRancherProject>],
    ) -> (Vec<RoleBindingStatus>, Vec<RoleBindingStatus>) {
        let mut leftovers = (Vec::new(), Vec::new());
        let cluster_id = self.mrp.spec.cluster_id.clone();
        for scope in [Scope::Project, Scope::Cluster] {
            let (wanted, previous, listing) = match scope {
                Scope::Project => (
                    &desired.project,
                    &self.previous.keycloak_role_bindings,
                    &bindings_done.project_listing,
                ),
                Scope::Cluster => (
                    &desired.cluster,
                    &self.previous.cluster_keycloak_role_bindings,
                    &bindings_done.cluster_listing,
                ),
            };
            let Some(wanted) = wanted else { continue };
            for entry in previous {
                let still_wanted = match &entry.rancher_role {
                    Some(role) => wanted.contains(&BindingKey::new(&entry.group_name, role)),
                    // Written by the 0.0.3 operator, which did not record the role: kept while its group is bound.
                    None => wanted.iter().any(|k| k.group == entry.group_name),
                };
                if still_wanted {
                    continue;
                }
                let finished = self
                    .remove_entry(
                        scope,
                        entry,
                        desired,
                        project,
                        groups_done,
                        listing.as_deref(),
                        others,
                        &cluster_id,
                    )
                    .await;
                if !finished {
                    match scope {
                        Scope::Project => leftovers.0.push(entry.clone()),
                        Scope::Cluster => leftovers.1.push(entry.clone()),
                    }
                }
            }
        }
        leftovers
    }

    /// Removes one binding that left the spec; true when nothing of it remains to be done.
    #[allow(clippy::too_many_arguments)]
    async fn remove_entry(
        &mut self,
        scope: Scope,
        entry: &RoleBindingStatus,
        desired: &Desired,
        project: Option<&Project>,
        groups_done: &GroupsDone,
        listing: Option<&[RoleBinding]>,
        others: &[Arc<ManagedRancherProject>],
        cluster_id: &str,
    ) -> bool {
        let mut finished = true;
        let mut what = Vec::new();
        // The Rancher binding.
        let shared = match (scope, &entry.rancher_role) {
            (Scope::Cluster, Some(role)) => {
                cluster_scope::uses_cluster_binding(others, cluster_id, &BindingKey::new(&entry.group_name, role))
            }
            _ => false,
        };
        if !shared {
            let target = match scope {
                Scope::Project => project.map(|p| BindingTarget::Project(p.id.clone())),
                Scope::Cluster => Some(BindingTarget::Cluster(cluster_id.to_string())),
            };
            match (self.controller.rancher.as_ref(), target, listing) {
                (Some(rancher), Some(target), Some(listing)) => {
                    let key = BindingKey::new(&entry.group_name, entry.rancher_role.as_deref().unwrap_or_default());
                    let recorded = entry.rancher_binding_id.as_deref();
                    let result = if entry.rancher_role.is_some() {
                        bindings::remove(rancher, &target, listing, &key, recorded).await
                    } else {
                        bindings::remove(rancher, &target, &[], &key, recorded).await
                    };
                    match result {
                        Ok(0) => {}
                        Ok(_) => what.push("its Rancher binding"),
                        Err(error) => {
                            self.fail(RANCHER_BINDINGS_READY, error);
                            finished = false;
                        }
                    }
                }
                _ => finished = false,
            }
        }
        // The group, when no binding (of this object, or a shared one of another) uses it any more.
        if desired.group(&entry.group_name).is_none() && !cluster_scope::uses_group(others, &entry.group_name) {
            match (self.controller.keycloak.as_ref(), groups_done.usable) {
                (Some(realm), true) => {
                    let parent = if groups_done.parent_known {
                        groups_done.parent_id.clone()
                    } else {
                        self.previous.keycloak_parent_group_id.clone()
                    };
                    let managed = members::managed_ids([entry], &entry.group_name);
                    match groups::remove(
                        realm,
                        entry.keycloak_group_id.as_deref(),
                        parent.as_deref(),
                        &entry.group_name,
                        &managed,
                    )
                    .await
                    {
                        Ok(Removal::Deleted) => what.push("its Keycloak group"),
                        Ok(Removal::MembersRemoved) => what.push("the members it managed in its Keycloak group"),
                        Ok(Removal::Gone) => {}
                        Err(error) => {
                            self.fail(KEYCLOAK_GROUPS_READY, error);
                            finished = false;
                        }
                    }
                }
                (None, _) => {
                    self.fail(
                        KEYCLOAK_GROUPS_READY,
                        MrpError::NotConfigured {
                            system: "Keycloak",
                            flag: "--rancher-keycloak-url",
                        },
                    );
                    finished = false;
                }
                (Some(_), false) => finished = false,
            }
        }
        if finished && !what.is_empty() {
            self.note(
                "BindingRemoved",
                format!(
                    "removed the binding of Keycloak group {} ({}): {}",
                    entry.group_name,
                    entry.rancher_role.as_deref().unwrap_or("role not recorded"),
                    what.join(" and ")
                ),
            );
        }
        finished
    }
}

/// The status entry of one wanted binding: this pass's findings, else what the previous status said.
fn entry(
    key: &BindingKey,
    previous: &[RoleBindingStatus],
    group_ids: &BTreeMap<String, String>,
    binding_ids: &BTreeMap<BindingKey, String>,
    members: &BTreeMap<String, Synced>,
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
    let (member_count, synced_members, pending_members) = match members.get(&key.group) {
        Some(synced) => (synced.member_count, synced.synced.clone(), synced.pending.clone()),
        None => (before.member_count, before.synced_members, before.pending_members),
    };
    RoleBindingStatus {
        group_name: key.group.clone(),
        rancher_role: Some(key.role.clone()),
        keycloak_group_id: group_ids.get(&key.group).cloned().or(before.keycloak_group_id),
        rancher_binding_id: binding_ids.get(key).cloned().or(before.rancher_binding_id),
        member_count,
        synced_members,
        pending_members,
    }
}

/// Reconciles one ManagedRancherProject.
pub async fn reconcile(
    controller: &Controller,
    mrp: Arc<ManagedRancherProject>,
    ctx: &Context,
) -> Result<Outcome, MrpError> {
    let now = status::to_seconds(controller.clock.now());
    let previous = mrp.status.clone().unwrap_or_default();
    // Before any external write: a pass that cannot see the other objects must not decide about shared ones.
    let all = controller.peers.all(&ctx.client, &ctx.namespaces).await?;
    let others = cluster_scope::others(&all, &mrp);
    let mut desired = bindings::desired(&mrp.spec);
    for group in desired.groups.iter_mut().filter(|g| g.scope == Scope::Cluster) {
        for member in cluster_scope::cluster_members(&others, &mrp.spec.cluster_id, &group.name) {
            if !group.members.contains(&member) {
                group.members.push(member);
            }
        }
    }
    let translation = quotas::translate(mrp.spec.resource_quotas.as_ref());
    let mut pass = Pass {
        controller,
        mrp: &mrp,
        previous: &previous,
        conditions: Vec::new(),
        errors: Vec::new(),
        events: Vec::new(),
    };

    let project = if mrp.spec.project_name.trim().is_empty() || mrp.spec.cluster_id.trim().is_empty() {
        pass.fail(
            RANCHER_PROJECT_READY,
            MrpError::InvalidSpec("projectName and clusterId must not be empty".into()),
        );
        pass.wait(RESOURCE_QUOTA_READY, "waiting for the Rancher project");
        None
    } else {
        let claimed = cluster_scope::claimed_projects(&others);
        pass.project(&claimed, &translation).await
    };
    let mut groups_done = pass.groups(&desired).await;
    let bindings_done = pass.bindings(&desired, project.as_ref()).await;
    pass.members(&desired, &mut groups_done).await;
    let (project_leftovers, cluster_leftovers) = pass
        .remove_unwanted(&desired, project.as_ref(), &groups_done, &bindings_done, &others)
        .await;

    // Step 7: the status.
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
                    &groups_done.ids,
                    &bindings_done.project_ids,
                    &groups_done.members,
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
                    &groups_done.ids,
                    &bindings_done.cluster_ids,
                    &groups_done.members,
                )
            })
            .chain(cluster_leftovers)
            .collect(),
    };
    let applicable = status::applicable(desired.manages_access());
    let conditions = std::mem::take(&mut pass.conditions);
    let mut update = status::begin(&mrp, now);
    update.status = next;
    status::set_conditions(&mut update, conditions, &applicable);
    let persistent = pass.errors.iter().any(MrpError::is_persistent);
    update.status.phase = Some(status::phase(
        &update.status,
        persistent,
        now,
        controller.settings.error_after,
    ));
    status::stamp(&previous, &mut update.status, now);

    let object = mrp.object_ref(&());
    for (severity, reason, note) in &pass.events {
        ctx.events.publish(&object, *severity, reason, "Reconcile", note).await;
    }
    framework::status::publish(controller, ctx, mrp.as_ref(), update)
        .await
        .map_err(MrpError::kube("writing the status"))?;
    match pass.errors.into_iter().next() {
        Some(error) => Err(error),
        None => Ok(Outcome::RequeueAfter(framework::http::jittered(
            controller.settings.resync_interval,
            RESYNC_JITTER,
        ))),
    }
}
