//! The project quota: `spec.resourceQuotas` translated to Rancher's norman keys and applied to both the
//! project's `resourceQuota` and its `namespaceDefaultResourceQuota` (Rancher requires both, with the same keys;
//! namespaces created without a quota of their own get the default). A key removed from the spec is removed
//! from both; an empty or absent map removes the quota.
//!
//! Waldur keys: `cpu` in millicores (`4000` → `4000m`), `memory` and `storage` as quantities (a bare number is
//! MiB, as Waldur counts them), `gpu` (not expressible in a Rancher project quota: reported, not applied). Any
//! other key is a Kubernetes ResourceQuota name (`limits.cpu`, `pods`, …) and is passed through when norman
//! knows it.

use super::desired::{Translation, describe};
use super::error::MrpError;
use super::reconcile::Pass;
use super::status::RESOURCE_QUOTA_READY;
use crate::rancher::{Project, ProjectQuotas, ProjectUpdate, RancherClient};

/// The project's current quotas, with an empty quota counted as none.
pub fn current(project: &Project) -> Option<ProjectQuotas> {
    project
        .quotas()
        .filter(|q| !q.project.is_empty() || !q.namespace_default.is_empty())
}

/// Makes the project's quotas what the spec says; returns the project as Rancher now shows it and whether it
/// wrote.
pub async fn apply(
    rancher: &RancherClient,
    project: Project,
    desired: &Translation,
) -> Result<(Project, bool), MrpError> {
    if current(&project) == desired.quotas {
        return Ok((project, false));
    }
    let update = ProjectUpdate {
        quotas: Some(desired.quotas.clone()),
        ..ProjectUpdate::default()
    };
    let updated = rancher.update_project(&project, &update).await?;
    Ok((updated, true))
}

impl Pass<'_> {
    /// Step 2: the project's quota and namespace default quota, once the project exists.
    pub async fn quota(&mut self) {
        let (Some(rancher), Some(project)) = (self.plan.controller.rancher.as_ref(), self.done.project.take()) else {
            return;
        };
        let translation = &self.plan.translation;
        let id = project.id.clone();
        let project = match apply(rancher, project.clone(), translation).await {
            Ok((updated, wrote)) => {
                if wrote {
                    self.report.note(
                        "QuotaUpdated",
                        format!("Rancher project {id}: {}", describe(translation)),
                    );
                }
                let reason = if translation.unsupported.is_empty() {
                    "QuotaApplied"
                } else {
                    "QuotaPartiallyApplied"
                };
                self.report.ok(RESOURCE_QUOTA_READY, reason, describe(translation));
                updated
            }
            Err(error) => {
                self.report.fail(RESOURCE_QUOTA_READY, error);
                project
            }
        };
        self.done.project = Some(project);
    }
}
