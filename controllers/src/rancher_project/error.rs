//! Everything that can stop a step of a ManagedRancherProject reconcile or cleanup. Messages are safe for anyone
//! who can read the object (the Waldur plugin copies failing condition messages into user-visible errors): no
//! URLs with credentials, tokens or response bodies — the Rancher and Keycloak clients already sanitize theirs.

use framework::error::KubeError;
use framework::{ErrorCategory, ReconcileError};

use crate::keycloak::KeycloakError;
use crate::rancher::RancherError;

/// A failed or blocked step.
#[derive(Debug, thiserror::Error)]
pub enum MrpError {
    /// The manager was started without the URL of a system this object needs.
    #[error("{system} is not configured in the operator (manager flag {flag})")]
    NotConfigured {
        /// `Rancher` or `Keycloak`.
        system: &'static str,
        /// The flag that configures it.
        flag: &'static str,
    },
    /// A Rancher call failed.
    #[error(transparent)]
    Rancher(#[from] RancherError),
    /// A Keycloak call failed.
    #[error(transparent)]
    Keycloak(#[from] KeycloakError),
    /// A Rancher project with the wanted name exists and may not be taken over.
    #[error("{0}")]
    ProjectNameTaken(String),
    /// The spec cannot be acted on (objects stored before the CRD's validation existed).
    #[error("invalid spec: {0}")]
    InvalidSpec(String),
    /// Quota values that are not quantities, or are negative (the valid ones are still applied).
    #[error("{0}")]
    InvalidQuota(String),
    /// A group the object names is bound by another object, which claimed it first.
    #[error("{0}")]
    GroupClaimed(String),
    /// The operator's policy (`--rancher-allowed-clusters` and friends) refuses what the object asks for.
    #[error("{0}")]
    NotAllowed(String),
    /// A Kubernetes request failed.
    #[error(transparent)]
    Kube(#[from] KubeError),
}

impl MrpError {
    /// The error of a pass that needs Rancher while the manager has no Rancher URL.
    pub fn rancher_missing() -> MrpError {
        MrpError::NotConfigured {
            system: "Rancher",
            flag: "--rancher-url",
        }
    }

    /// Whether the failure lasts until someone changes the object, the configuration or the external system
    /// (a refused token, an unknown role template): the phase becomes `Error` at once. Outages are not
    /// persistent until they have lasted long enough (see the `--rancher-error-after-seconds` flag).
    pub fn is_persistent(&self) -> bool {
        self.category() == ErrorCategory::Invalid
    }

    /// The message for conditions and events (sanitized once more, whatever produced it).
    pub fn safe_message(&self) -> String {
        framework::sanitize::sanitize(&self.to_string())
    }
}

impl ReconcileError for MrpError {
    fn category(&self) -> ErrorCategory {
        match self {
            MrpError::NotConfigured { .. }
            | MrpError::ProjectNameTaken(_)
            | MrpError::InvalidSpec(_)
            | MrpError::InvalidQuota(_)
            | MrpError::NotAllowed(_)
            | MrpError::GroupClaimed(_) => ErrorCategory::Invalid,
            MrpError::Rancher(error) => error.category(),
            MrpError::Keycloak(error) => error.category(),
            MrpError::Kube(_) => ErrorCategory::Transient,
        }
    }

    fn reason(&self) -> &'static str {
        match self {
            MrpError::NotConfigured { system: "Keycloak", .. } => "KeycloakNotConfigured",
            MrpError::NotConfigured { .. } => "RancherNotConfigured",
            MrpError::Rancher(error) => error.reason(),
            MrpError::Keycloak(error) => error.reason(),
            MrpError::ProjectNameTaken(_) => "ProjectNameTaken",
            MrpError::InvalidSpec(_) => "InvalidSpec",
            MrpError::InvalidQuota(_) => "InvalidQuota",
            MrpError::NotAllowed(_) => "NotAllowedByPolicy",
            MrpError::GroupClaimed(_) => "GroupClaimedByAnotherProject",
            MrpError::Kube(_) => "KubernetesAPIError",
        }
    }

    fn retry_within(&self) -> Option<std::time::Duration> {
        match self {
            MrpError::Keycloak(error) => error.retry_within(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use framework::http::HttpError;
    use reqwest::StatusCode;

    #[test]
    fn outages_are_transient_and_refusals_persistent() {
        let outage = MrpError::from(RancherError::Http(HttpError::Unreachable {
            api: "rancher",
            operation: "get project",
            detail: "connection refused".into(),
        }));
        assert!(!outage.is_persistent());
        assert_eq!(outage.reason(), "RancherUnavailable");
        let refused = MrpError::from(RancherError::Http(HttpError::Status {
            api: "rancher",
            operation: "create project role binding",
            status: StatusCode::BAD_REQUEST,
            summary: Some("BadRequest: the referenced role template was not found".into()),
        }));
        assert!(refused.is_persistent());
        assert_eq!(refused.reason(), "RancherRejected");
        let unconfigured = MrpError::NotConfigured {
            system: "Keycloak",
            flag: "--rancher-keycloak-url",
        };
        assert_eq!(unconfigured.reason(), "KeycloakNotConfigured");
        assert!(unconfigured.to_string().contains("--rancher-keycloak-url"));
    }
}
