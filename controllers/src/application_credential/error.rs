//! Everything that can stop a KeystoneApplicationCredential reconcile, with the condition it shows and whether a
//! watch or a retry brings it back.

use framework::error::KubeError;
use framework::{ErrorCategory, ReconcileError};

use crate::keystone::KeystoneError;

/// Which condition an error is reported on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Affects {
    /// `KeystoneAPIReady`: where Keystone is.
    KeystoneApi,
    /// `KeystoneApplicationCredentialReady`: the credential itself.
    Credential,
}

/// A failed or blocked reconcile. Messages are safe for anyone who can read the object.
#[derive(Debug, thiserror::Error)]
pub enum AcError {
    /// No KeystoneAPI object in the namespace.
    #[error("no KeystoneAPI found in namespace {namespace}; waiting for one")]
    KeystoneApiNotFound {
        /// The namespace searched.
        namespace: String,
    },
    /// The KeystoneAPI exists but keystone-operator does not report it Ready.
    #[error("KeystoneAPI {name} is not ready yet{}", detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default())]
    KeystoneApiNotReady {
        /// The KeystoneAPI's name.
        name: String,
        /// Its own Ready message, sanitized.
        detail: Option<String>,
    },
    /// The KeystoneAPI is Ready but publishes no endpoint.
    #[error("KeystoneAPI {name} publishes no internal or public endpoint in status.apiEndpoints")]
    KeystoneApiNoEndpoint {
        /// The KeystoneAPI's name.
        name: String,
    },
    /// The KeystoneAPI kind is not installed and the manager has no `--keystone-url`.
    #[error("the KeystoneAPI kind is not installed and no Keystone URL is configured (manager flag --keystone-url)")]
    EndpointNotConfigured,
    /// The endpoint to use is not a valid URL.
    #[error("{0}")]
    InvalidEndpoint(#[source] KeystoneError),
    /// The spec is inconsistent (objects stored before the CRD's validation existed).
    #[error("invalid spec: {0}")]
    InvalidSpec(String),
    /// The password Secret does not exist.
    #[error("waiting for Secret {secret} holding the password of the service user")]
    PasswordSecretNotFound {
        /// The Secret's name.
        secret: String,
    },
    /// The password Secret lacks the selected key.
    #[error("Secret {secret} has no key {key} (spec.passwordSelector)")]
    PasswordKeyMissing {
        /// The Secret's name.
        secret: String,
        /// The missing key.
        key: String,
    },
    /// A Keystone request failed.
    #[error("{source}")]
    Keystone {
        /// What Keystone said, sanitized.
        #[source]
        source: KeystoneError,
    },
    /// The credential name of an interrupted creation belongs to a credential whose secret is not ours.
    #[error("application credential name {name} is taken by another credential; a new name will be chosen")]
    CredentialNameTaken {
        /// The taken Keystone credential name.
        name: String,
    },
    /// A Secret with the credential's name already exists and holds another credential.
    #[error("Secret {name} already exists for another application credential; a new credential will be created")]
    SecretNameCollision {
        /// The Secret's name.
        name: String,
    },
    /// A Kubernetes request failed.
    #[error(transparent)]
    Kube(#[from] KubeError),
}

impl AcError {
    /// The condition this error is shown on.
    pub fn affects(&self) -> Affects {
        match self {
            AcError::KeystoneApiNotFound { .. }
            | AcError::KeystoneApiNotReady { .. }
            | AcError::KeystoneApiNoEndpoint { .. }
            | AcError::EndpointNotConfigured
            | AcError::InvalidEndpoint(_) => Affects::KeystoneApi,
            _ => Affects::Credential,
        }
    }

    /// Whether the reconcile should wait for a watched object to change instead of retrying with backoff: the
    /// cause is a Kubernetes object (or the spec), and changing it triggers a reconcile.
    pub fn waits_for_change(&self) -> bool {
        matches!(
            self,
            AcError::KeystoneApiNotFound { .. }
                | AcError::KeystoneApiNotReady { .. }
                | AcError::KeystoneApiNoEndpoint { .. }
                | AcError::EndpointNotConfigured
                | AcError::InvalidEndpoint(_)
                | AcError::InvalidSpec(_)
                | AcError::PasswordSecretNotFound { .. }
                | AcError::PasswordKeyMissing { .. }
        )
    }
}

impl From<KeystoneError> for AcError {
    fn from(source: KeystoneError) -> Self {
        AcError::Keystone { source }
    }
}

impl ReconcileError for AcError {
    fn category(&self) -> ErrorCategory {
        match self {
            AcError::KeystoneApiNotFound { .. }
            | AcError::KeystoneApiNotReady { .. }
            | AcError::KeystoneApiNoEndpoint { .. }
            | AcError::PasswordSecretNotFound { .. }
            | AcError::PasswordKeyMissing { .. } => ErrorCategory::Dependency,
            AcError::EndpointNotConfigured | AcError::InvalidEndpoint(_) | AcError::InvalidSpec(_) => {
                ErrorCategory::Invalid
            }
            AcError::Keystone { source } => source.category(),
            AcError::CredentialNameTaken { .. } | AcError::SecretNameCollision { .. } => ErrorCategory::Transient,
            AcError::Kube(_) => ErrorCategory::Transient,
        }
    }

    fn reason(&self) -> &'static str {
        match self {
            AcError::KeystoneApiNotFound { .. } => "KeystoneAPINotFound",
            AcError::KeystoneApiNotReady { .. } => "KeystoneAPINotReady",
            AcError::KeystoneApiNoEndpoint { .. } => "KeystoneAPIEndpointMissing",
            AcError::EndpointNotConfigured => "KeystoneEndpointNotConfigured",
            AcError::InvalidEndpoint(_) => "KeystoneEndpointInvalid",
            AcError::InvalidSpec(_) => "InvalidSpec",
            AcError::PasswordSecretNotFound { .. } => "PasswordSecretNotFound",
            AcError::PasswordKeyMissing { .. } => "PasswordKeyMissing",
            AcError::Keystone { source } => match source {
                KeystoneError::AuthenticationFailed { .. } | KeystoneError::AuthenticationHeld { .. } => {
                    "KeystoneAuthenticationFailed"
                }
                KeystoneError::Http(error) if error.is_trust() => crate::keycloak::TLS_VERIFICATION_FAILED,
                error if error.is_unavailable() => "KeystoneUnavailable",
                _ => "KeystoneRequestFailed",
            },
            AcError::CredentialNameTaken { .. } => "CredentialNameTaken",
            AcError::SecretNameCollision { .. } => "SecretNameCollision",
            AcError::Kube(_) => "KubernetesAPIError",
        }
    }

    fn retry_within(&self) -> Option<std::time::Duration> {
        match self {
            AcError::Keystone { source } => source.retry_within(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use framework::http::HttpError;

    #[test]
    fn kubernetes_side_causes_wait_for_watches_and_keystone_outages_retry() {
        assert!(
            AcError::PasswordSecretNotFound {
                secret: "osp-secret".into()
            }
            .waits_for_change()
        );
        assert!(
            AcError::KeystoneApiNotFound {
                namespace: "openstack".into()
            }
            .waits_for_change()
        );
        let outage = AcError::from(KeystoneError::Http(HttpError::Timeout {
            api: "keystone",
            operation: "login",
        }));
        assert!(!outage.waits_for_change());
        assert_eq!(outage.reason(), "KeystoneUnavailable");
        assert_eq!(outage.category(), ErrorCategory::Transient);
    }

    #[test]
    fn wrong_password_has_its_own_reason_and_names_no_secret() {
        let error = AcError::from(KeystoneError::AuthenticationFailed {
            user: "barbican".into(),
            domain: "Default".into(),
            project: "service".into(),
        });
        assert_eq!(error.reason(), "KeystoneAuthenticationFailed");
        assert_eq!(error.affects(), Affects::Credential);
        assert!(error.to_string().contains("barbican"));
    }

    #[test]
    fn keystone_api_problems_are_shown_on_keystone_api_ready() {
        let error = AcError::KeystoneApiNotReady {
            name: "keystone".into(),
            detail: Some("deploying".into()),
        };
        assert_eq!(error.affects(), Affects::KeystoneApi);
        assert_eq!(error.to_string(), "KeystoneAPI keystone is not ready yet: deploying");
    }
}
