//! The project quota: `spec.resourceQuotas` translated to Rancher's norman keys and applied to both the
//! project's `resourceQuota` and its `namespaceDefaultResourceQuota` (Rancher requires both, with the same keys;
//! namespaces created without a quota of their own get the default). A key removed from the spec is removed
//! from both; an empty or absent map removes the quota.
//!
//! Waldur keys: `cpu` in millicores (`4000` → `4000m`), `memory` and `storage` as quantities (a bare number is
//! MiB, as Waldur counts them), `gpu` (not expressible in a Rancher project quota: reported, not applied). Any
//! other key is a Kubernetes ResourceQuota name (`limits.cpu`, `pods`, …) and is passed through when norman
//! knows it.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::error::MrpError;
use super::reconcile::Pass;
use super::status::RESOURCE_QUOTA_READY;
use crate::rancher::wire::norman_quota_key;
use crate::rancher::{Project, ProjectQuotas, ProjectUpdate, RancherClient};

/// The outcome of translating the spec's quotas.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Translation {
    /// What the project should have; `None` means no quota.
    pub quotas: Option<ProjectQuotas>,
    /// Keys that cannot be expressed in a Rancher project quota.
    pub unsupported: Vec<String>,
}

fn text(value: &IntOrString) -> String {
    match value {
        IntOrString::Int(n) => n.to_string(),
        IntOrString::String(s) => s.trim().to_string(),
    }
}

/// `n` (digits only) with `unit` appended; any other quantity as written.
fn with_default_unit(value: &IntOrString, unit: &str) -> String {
    let value = text(value);
    if !value.is_empty() && value.chars().all(|c| c.is_ascii_digit()) {
        format!("{value}{unit}")
    } else {
        value
    }
}

/// Translates `spec.resourceQuotas` (pure).
pub fn translate(spec: Option<&BTreeMap<String, IntOrString>>) -> Translation {
    let mut limits = BTreeMap::new();
    let mut unsupported = Vec::new();
    for (key, value) in spec.into_iter().flatten() {
        let (resource, quantity) = match key.as_str() {
            "cpu" => ("limits.cpu", with_default_unit(value, "m")),
            "memory" => ("limits.memory", with_default_unit(value, "Mi")),
            "storage" => ("requests.storage", with_default_unit(value, "Mi")),
            "gpu" => ("requests.nvidia.com/gpu", text(value)),
            other => (other, text(value)),
        };
        match norman_quota_key(resource) {
            Some(norman) if !quantity.is_empty() => {
                limits.insert(norman.to_string(), quantity);
            }
            _ => unsupported.push(key.clone()),
        }
    }
    Translation {
        quotas: (!limits.is_empty()).then(|| ProjectQuotas {
            project: limits.clone(),
            namespace_default: limits,
        }),
        unsupported,
    }
}

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

/// The `ResourceQuotaReady` message of an applied quota (deterministic, so an unchanged quota writes nothing).
pub fn describe(desired: &Translation) -> String {
    let applied = match &desired.quotas {
        None => "no quota is set on the Rancher project".to_string(),
        Some(q) => format!(
            "project quota and namespace default quota set: {}",
            q.project
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    if desired.unsupported.is_empty() {
        applied
    } else {
        format!(
            "{applied}; not applied because Rancher project quotas cannot express them: {}",
            desired.unsupported.join(", ")
        )
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(pairs: &[(&str, IntOrString)]) -> BTreeMap<String, IntOrString> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    fn limits(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn waldur_keys_translate_with_their_units() {
        let t = translate(Some(&spec(&[
            ("cpu", IntOrString::Int(4000)),
            ("memory", IntOrString::String("8192Mi".into())),
            ("storage", IntOrString::Int(10240)),
        ])));
        let expected = limits(&[
            ("limitsCpu", "4000m"),
            ("limitsMemory", "8192Mi"),
            ("requestsStorage", "10240Mi"),
        ]);
        assert_eq!(
            t.quotas,
            Some(ProjectQuotas {
                project: expected.clone(),
                namespace_default: expected
            })
        );
        assert!(t.unsupported.is_empty());
    }

    #[test]
    fn raw_resource_quota_keys_pass_through_and_gpu_is_reported() {
        let t = translate(Some(&spec(&[
            ("limits.cpu", IntOrString::String("2000m".into())),
            ("pods", IntOrString::Int(20)),
            ("gpu", IntOrString::Int(2)),
            ("example.com/widgets", IntOrString::Int(1)),
        ])));
        assert_eq!(
            t.quotas.map(|q| q.project),
            Some(limits(&[("limitsCpu", "2000m"), ("pods", "20")]))
        );
        assert_eq!(
            t.unsupported,
            vec!["example.com/widgets".to_string(), "gpu".to_string()]
        );
    }

    #[test]
    fn no_keys_means_no_quota() {
        assert_eq!(translate(None), Translation::default());
        assert_eq!(translate(Some(&BTreeMap::new())).quotas, None);
    }
}
