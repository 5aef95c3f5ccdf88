//! Step 6: what bindings no longer in the spec made is removed: their Rancher binding (unless another object of
//! the cluster still uses a shared cluster binding), their Keycloak group when no binding uses it any more, or,
//! for a group the operator did not create, the members it added. An entry whose removal is unfinished stays in
//! the status, so the next pass retries it.

use crds::rancher::RoleBindingStatus;

use super::bindings;
use super::cluster_scope;
use super::desired::{BindingKey, Scope};
use super::error::MrpError;
use super::found::Done;
use super::groups::{Removal, remove as remove_group};
use super::members;
use super::reconcile::{Pass, Plan, Report};
use super::status::{KEYCLOAK_GROUPS_READY, RANCHER_BINDINGS_READY};
use crate::rancher::{BindingTarget, RoleBinding};

impl Pass<'_> {
    /// Removes what bindings that left the spec made; records the entries whose removal is unfinished.
    pub async fn remove_unwanted(&mut self) {
        let Pass { plan, report, done } = self;
        let mut leftovers = (Vec::new(), Vec::new());
        for scope in [Scope::Project, Scope::Cluster] {
            let (wanted, previous, listing) = match scope {
                Scope::Project => (
                    &plan.desired.project,
                    &plan.previous.keycloak_role_bindings,
                    &done.bindings.project_listing,
                ),
                Scope::Cluster => (
                    &plan.desired.cluster,
                    &plan.previous.cluster_keycloak_role_bindings,
                    &done.bindings.cluster_listing,
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
                let finished = plan.remove_entry(done, report, scope, entry, listing.as_deref()).await;
                if !finished {
                    match scope {
                        Scope::Project => leftovers.0.push(entry.clone()),
                        Scope::Cluster => leftovers.1.push(entry.clone()),
                    }
                }
            }
        }
        (done.project_leftovers, done.cluster_leftovers) = leftovers;
    }
}

impl Plan<'_> {
    /// Removes one binding that left the spec (its Rancher binding from `listing`); true when nothing of it
    /// remains to be done.
    async fn remove_entry(
        &self,
        done: &Done,
        report: &mut Report,
        scope: Scope,
        entry: &RoleBindingStatus,
        listing: Option<&[RoleBinding]>,
    ) -> bool {
        let (desired, others, groups_done) = (&self.desired, &self.others, &done.groups);
        let project = done.project.as_ref();
        let cluster_id = self.mrp.spec.cluster_id.as_str();
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
                            report.fail(RANCHER_BINDINGS_READY, error);
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
                    let owner = super::project::owner_key(self.mrp);
                    match remove_group(
                        realm,
                        entry.keycloak_group_id.as_deref(),
                        parent.as_deref(),
                        &entry.group_name,
                        &managed,
                        &owner,
                    )
                    .await
                    {
                        Ok(Removal::Deleted) => what.push("its Keycloak group"),
                        Ok(Removal::MembersRemoved) => what.push("the members it managed in its Keycloak group"),
                        Ok(Removal::Gone) => {}
                        Err(error) => {
                            report.fail(KEYCLOAK_GROUPS_READY, error);
                            finished = false;
                        }
                    }
                }
                (None, _) => {
                    report.fail(
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
            report.note(
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
