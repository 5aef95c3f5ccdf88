//! Everything that can stop or degrade a NebariApp reconcile. Messages are safe for anyone who can read the
//! object (no credentials, tokens or response bodies).

use framework::children::ChildError;
use framework::error::KubeError;
use framework::{ErrorCategory, ReconcileError};

use crate::keycloak::{ErrorKind, KeycloakError};

/// A failed NebariApp reconcile step.
#[derive(Debug, thiserror::Error)]
pub enum NebariAppError {
    /// Reading or writing a Kubernetes object failed.
    #[error("{0}")]
    Kubernetes(Box<ChildError>),
    /// A Kubernetes request outside the child set failed.
    #[error(transparent)]
    Api(#[from] KubeError),
    /// A Keycloak request failed.
    #[error("{0}")]
    Keycloak(#[from] KeycloakError),
    /// The Keycloak admin credentials Secret is missing or incomplete.
    #[error("Keycloak admin credentials unavailable: {0}")]
    AdminCredentials(String),
    /// The configuration cannot work (e.g. generic-oidc without a client Secret).
    #[error("{0}")]
    Invalid(String),
    /// The platform's policy refuses what the app asks for (a mapper type, a client scope, someone else's
    /// Keycloak client or group); `reason` is the condition reason.
    #[error("{message}")]
    Refused {
        /// The condition reason, e.g. `ProtocolMapperNotAllowed`.
        reason: &'static str,
        /// What was refused, safe to show to the tenant.
        message: String,
    },
}

impl From<ChildError> for NebariAppError {
    fn from(error: ChildError) -> Self {
        NebariAppError::Kubernetes(Box::new(error))
    }
}

impl NebariAppError {
    /// The AuthReady reason for this error.
    pub fn condition_reason(&self) -> &'static str {
        match self {
            NebariAppError::Keycloak(e) => match e.kind() {
                ErrorKind::FeatureDisabled => "TokenExchangeUnavailable",
                ErrorKind::Unavailable => "KeycloakUnavailable",
                ErrorKind::Unauthorized | ErrorKind::Forbidden => "KeycloakUnauthorized",
                ErrorKind::NotFound | ErrorKind::Conflict | ErrorKind::Invalid => "ProvisioningFailed",
                ErrorKind::Untrusted => crate::keycloak::TLS_VERIFICATION_FAILED,
            },
            NebariAppError::AdminCredentials(_) => "KeycloakCredentialsUnavailable",
            NebariAppError::Invalid(_) => "InvalidConfiguration",
            NebariAppError::Refused { reason, .. } => reason,
            NebariAppError::Kubernetes(_) | NebariAppError::Api(_) => "KubernetesAPIError",
        }
    }
}

impl ReconcileError for NebariAppError {
    fn category(&self) -> ErrorCategory {
        match self {
            NebariAppError::Kubernetes(_) | NebariAppError::Api(_) => ErrorCategory::Transient,
            NebariAppError::Keycloak(e) if e.is_transient() => ErrorCategory::Transient,
            NebariAppError::Keycloak(_) => ErrorCategory::Dependency,
            NebariAppError::AdminCredentials(_) => ErrorCategory::Dependency,
            NebariAppError::Invalid(_) | NebariAppError::Refused { .. } => ErrorCategory::Invalid,
        }
    }

    fn reason(&self) -> &'static str {
        match self {
            NebariAppError::Kubernetes(_) | NebariAppError::Api(_) => "KubernetesAPIError",
            NebariAppError::Keycloak(_) => "KeycloakError",
            NebariAppError::AdminCredentials(_) => "KeycloakCredentialsUnavailable",
            NebariAppError::Invalid(_) => "InvalidConfiguration",
            NebariAppError::Refused { reason, .. } => reason,
        }
    }

    fn retry_within(&self) -> Option<std::time::Duration> {
        match self {
            NebariAppError::Keycloak(error) => error.retry_within(),
            _ => None,
        }
    }
}
