//! The project quota: `spec.resourceQuotas` translated to Rancher's norman keys and applied to both the
//! project's `resourceQuota` and its `namespaceDefaultResourceQuota` (Rancher requires both, with the same keys;
//! namespaces created without a quota of their own get the default). A key removed from the spec is removed
//! from both; an empty or absent map removes the quota.
//!
//! Waldur keys: `cpu` in millicores (`4000` → `4000m`), `memory` and `storage` as quantities (a bare number is
//! MiB, as Waldur counts them), `gpu` as the extended resource `requests.nvidia.com/gpu`. Any other key is a
//! Kubernetes ResourceQuota name (`limits.cpu`, `pods`, …) passed through when norman knows it, or an extended
//! resource (`requests.<domain>/<name>`) sent in the quota's `extended` map, which Rancher stores from v2.14 on
//! (older versions drop it: the condition then names the keys Rancher did not keep).
//!
//! A value that is not a quantity (or is negative) never lifts a limit: the CRD refuses it at admission, and one
//! stored before that rule (or written around it) keeps the value last applied for its key, with the condition
//! naming it.
//!
//! Each namespace's default is a share of the project quota (`--rancher-namespace-default-quota-percent`), so a
//! project with several namespaces does not exhaust its quota with the first one.

use kube_quantity::ParsedQuantity;

use super::desired::{Translation, describe};
use super::error::MrpError;
use super::reconcile::Pass;
use super::status::RESOURCE_QUOTA_READY;
use crate::rancher::{Project, ProjectQuotas, ProjectUpdate, RancherClient};

/// Norman keys whose quantities may be fractional (cores and bytes); every other quota counts whole objects or
/// whole devices.
const DIVISIBLE_KEYS: [&str; 5] = [
    "limitsCpu",
    "limitsMemory",
    "requestsCpu",
    "requestsMemory",
    "requestsStorage",
];

/// Whether `text` is a Kubernetes quantity.
pub fn is_quantity(text: &str) -> bool {
    ParsedQuantity::try_from(text).is_ok()
}

/// `percent` of the quota `quantity` for key `key`, as a namespace default: cores and bytes keep three decimals
/// at their unit (`4000m` at 50 % is `2000m`, `3Gi` is `1.5Gi`); whole units are rounded up, so a namespace gets
/// at least one of anything the project has (`1` GPU at 50 % stays `1`). 100 % or more is the quantity itself.
pub fn share(key: &str, quantity: &str, percent: u8) -> String {
    let Ok(parsed) = ParsedQuantity::try_from(quantity) else {
        return quantity.to_string();
    };
    if percent >= 100 {
        return quantity.to_string();
    }
    let scaled = parsed * percent / 100u8;
    if DIVISIBLE_KEYS.contains(&key) {
        return scaled.to_string_with_precision(3);
    }
    // Whole objects and devices fit an f64 exactly far beyond any quota.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let whole = scaled.to_bytes_f64().map(|units| units.ceil().max(0.0) as u64);
    whole.map_or_else(|| quantity.to_string(), |units| units.to_string())
}

/// The quota keys the spec asks for that Rancher did not keep (an extended resource on Rancher before v2.14).
pub fn dropped(wanted: &Translation, kept: Option<&ProjectQuotas>) -> Vec<String> {
    let Some(wanted) = &wanted.quotas else {
        return Vec::new();
    };
    wanted
        .project
        .keys()
        .filter(|key| !kept.is_some_and(|kept| kept.project.contains_key(*key)))
        .cloned()
        .collect()
}

/// The project's current quotas, with an empty quota counted as none.
pub fn current(project: &Project) -> Option<ProjectQuotas> {
    project
        .quotas()
        .filter(|q| !q.project.is_empty() || !q.namespace_default.is_empty())
}

/// The quotas to write: the spec's valid keys, and for every key whose value is invalid the value `current`
/// holds for it (project quota and namespace default alike), so a typo keeps the last applied limit.
pub fn effective(desired: &Translation, current: Option<&ProjectQuotas>) -> Option<ProjectQuotas> {
    let mut quotas = desired.quotas.clone().unwrap_or_default();
    for key in &desired.held {
        let Some(current) = current else { break };
        if let Some(value) = current.project.get(key) {
            quotas.project.insert(key.clone(), value.clone());
        }
        if let Some(value) = current.namespace_default.get(key) {
            quotas.namespace_default.insert(key.clone(), value.clone());
        }
    }
    (!quotas.project.is_empty() || !quotas.namespace_default.is_empty()).then_some(quotas)
}

/// Makes the project's quotas what the spec says (see [`effective`]); returns the project as Rancher now shows it
/// and whether it wrote.
pub async fn apply(
    rancher: &RancherClient,
    project: Project,
    desired: &Translation,
) -> Result<(Project, bool), MrpError> {
    let current = current(&project);
    let wanted = effective(desired, current.as_ref());
    if current == wanted {
        return Ok((project, false));
    }
    let update = ProjectUpdate {
        quotas: Some(wanted),
        ..ProjectUpdate::default()
    };
    let updated = rancher.update_project(&project, &update).await?;
    Ok((updated, true))
}

/// `; the last applied …=… is kept` for the held keys Rancher still has, for the condition.
fn kept(translation: &Translation, current: Option<&ProjectQuotas>) -> String {
    let kept: Vec<String> = translation
        .held
        .iter()
        .filter_map(|key| {
            current
                .and_then(|c| c.project.get(key))
                .map(|value| format!("{key}={value}"))
        })
        .collect();
    if kept.is_empty() {
        String::new()
    } else {
        format!("; the last applied {} is kept", kept.join(", "))
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
                let dropped = dropped(translation, current(&updated).as_ref());
                let reason = if translation.unsupported.is_empty() && dropped.is_empty() {
                    "QuotaApplied"
                } else {
                    "QuotaPartiallyApplied"
                };
                let mut message = describe(translation);
                if !dropped.is_empty() {
                    message.push_str(&format!(
                        "; Rancher did not keep {} (extended resource quotas need Rancher v2.14 or later)",
                        dropped.join(", ")
                    ));
                }
                if translation.invalid.is_empty() {
                    self.report.ok(RESOURCE_QUOTA_READY, reason, message);
                } else {
                    let invalid = translation.invalid.join("; ");
                    let kept = kept(translation, current(&updated).as_ref());
                    self.report.fail(
                        RESOURCE_QUOTA_READY,
                        MrpError::InvalidQuota(format!("{invalid} (not applied{kept}); {message}")),
                    );
                }
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

    fn quotas(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn an_invalid_value_keeps_the_last_applied_limit_of_its_key() {
        use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
        let spec = [
            ("cpu".to_string(), IntOrString::String("lots".into())),
            ("memory".to_string(), IntOrString::Int(1024)),
        ]
        .into_iter()
        .collect();
        let translation = super::super::desired::translate(Some(&spec), 50);
        let applied = ProjectQuotas {
            project: quotas(&[("limitsCpu", "4000m"), ("limitsMemory", "512Mi")]),
            namespace_default: quotas(&[("limitsCpu", "2000m"), ("limitsMemory", "256Mi")]),
        };
        assert_eq!(
            effective(&translation, Some(&applied)),
            Some(ProjectQuotas {
                project: quotas(&[("limitsCpu", "4000m"), ("limitsMemory", "1024Mi")]),
                namespace_default: quotas(&[("limitsCpu", "2000m"), ("limitsMemory", "512Mi")]),
            }),
            "the CPU limit stays, the valid memory change is applied"
        );
        assert_eq!(
            kept(&translation, Some(&applied)),
            "; the last applied limitsCpu=4000m is kept"
        );
        assert_eq!(
            effective(&translation, None),
            Some(ProjectQuotas {
                project: quotas(&[("limitsMemory", "1024Mi")]),
                namespace_default: quotas(&[("limitsMemory", "512Mi")]),
            }),
            "with nothing applied before, only the valid keys"
        );
        let only_invalid = [("cpu".to_string(), IntOrString::String("-1".into()))]
            .into_iter()
            .collect();
        let translation = super::super::desired::translate(Some(&only_invalid), 50);
        assert_eq!(
            effective(&translation, Some(&applied)),
            Some(ProjectQuotas {
                project: quotas(&[("limitsCpu", "4000m")]),
                namespace_default: quotas(&[("limitsCpu", "2000m")]),
            }),
            "a negative value keeps the limit too; removed keys go"
        );
    }

    #[test]
    fn a_namespace_default_is_a_share_with_whole_units_rounded_up() {
        assert_eq!(share("limitsCpu", "4000m", 50), "2000m");
        assert_eq!(share("limitsMemory", "3Gi", 50), "1.5Gi");
        assert_eq!(share("requestsStorage", "10240Mi", 25), "2560Mi");
        assert_eq!(share("limitsCpu", "1", 33), "0.33");
        assert_eq!(share("pods", "25", 50), "13");
        assert_eq!(share("requests.nvidia.com/gpu", "1", 50), "1");
        assert_eq!(share("requests.nvidia.com/gpu", "8", 25), "2");
        assert_eq!(share("limitsCpu", "4000m", 100), "4000m");
        assert_eq!(share("pods", "not a quantity", 50), "not a quantity");
    }
}
