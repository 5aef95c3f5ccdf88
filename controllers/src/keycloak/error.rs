//! Errors of the Keycloak client: one type with a category controllers can act on (retry, wait, report) and
//! messages safe to put into conditions and events (no URLs with credentials, tokens, secrets or bodies).

use framework::http::HttpError;
use framework::{ErrorCategory, ReconcileError};
use reqwest::StatusCode;

/// The condition reason of a failure to trust a server's TLS certificate (shared by every controller).
pub const TLS_VERIFICATION_FAILED: &str = "TLSVerificationFailed";

/// What kind of failure a Keycloak call ended in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The realm, client, group, user or other object does not exist.
    NotFound,
    /// A concurrent or conflicting change (duplicate name).
    Conflict,
    /// The credentials are missing, unreadable or refused.
    Unauthorized,
    /// The credentials lack a role the call needs.
    Forbidden,
    /// A server feature the call needs is switched off (fine-grained admin permissions v1).
    FeatureDisabled,
    /// Keycloak is down, slow or failing (timeouts, connection errors, 5xx, 429).
    Unavailable,
    /// The request is wrong for Keycloak, or Keycloak answered something the client cannot use.
    Invalid,
    /// Keycloak's TLS certificate is not trusted, or the CA bundle configured for it cannot be used.
    Untrusted,
}

/// A failed Keycloak call.
#[derive(Debug, thiserror::Error)]
pub enum KeycloakError {
    /// Keycloak or the network failed the request (the message is sanitized by the HTTP layer).
    #[error(transparent)]
    Http(#[from] HttpError),
    /// The token endpoint refused the credentials.
    #[error("keycloak login to realm {realm} was refused: {reason}")]
    LoginRejected {
        /// The realm logged into.
        realm: String,
        /// Keycloak's OAuth error, e.g. `invalid_grant: Invalid user credentials`.
        reason: String,
    },
    /// A login with these credentials was refused moments ago, so it is not tried again yet (Keycloak's
    /// brute-force detection would lock the account); new credentials in the Secret are tried at once.
    #[error(
        "{refusal}; the same credentials are not tried again for {retry_in_seconds}s (repeated failed logins \
         lock the account): fix the credentials Secret and the next attempt logs in at once"
    )]
    LoginHeld {
        /// What the refused login said ([`KeycloakError::LoginRejected`]'s message).
        refusal: String,
        /// Seconds until the same credentials are tried again.
        retry_in_seconds: u64,
    },
    /// The credentials could not be obtained (the Secret holding them is missing or incomplete).
    #[error("keycloak credentials unavailable: {reason}")]
    CredentialsUnavailable {
        /// Which credential is missing; never its value.
        reason: String,
    },
    /// A server feature the call needs is switched off.
    #[error("keycloak {operation}: the Keycloak server has {feature} disabled")]
    FeatureDisabled {
        /// What we were doing.
        operation: &'static str,
        /// Which feature.
        feature: &'static str,
    },
    /// Refused before sending, because Keycloak would fail or misbehave on it.
    #[error("keycloak {operation}: {reason}")]
    InvalidInput {
        /// What we were doing.
        operation: &'static str,
        /// Why.
        reason: String,
    },
    /// Something the call relies on is not in Keycloak (e.g. the `realm-management` client).
    #[error("keycloak {operation}: {what} not found")]
    Missing {
        /// What we were doing.
        operation: &'static str,
        /// What is missing.
        what: String,
    },
    /// Keycloak answered without something the client needs (e.g. the id of a created object).
    #[error("keycloak {operation}: unexpected response ({detail})")]
    UnexpectedResponse {
        /// What we were doing.
        operation: &'static str,
        /// What was wrong.
        detail: String,
    },
}

impl KeycloakError {
    /// The category of the failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            KeycloakError::Http(error) => http_kind(error),
            KeycloakError::LoginRejected { .. }
            | KeycloakError::LoginHeld { .. }
            | KeycloakError::CredentialsUnavailable { .. } => ErrorKind::Unauthorized,
            KeycloakError::FeatureDisabled { .. } => ErrorKind::FeatureDisabled,
            KeycloakError::InvalidInput { .. } | KeycloakError::UnexpectedResponse { .. } => ErrorKind::Invalid,
            KeycloakError::Missing { .. } => ErrorKind::NotFound,
        }
    }

    /// Whether the object the call addressed does not exist (cleanup treats this as done).
    pub fn is_not_found(&self) -> bool {
        self.kind() == ErrorKind::NotFound
    }

    /// Whether trying again later may succeed without anyone changing anything (outage, overload, a race).
    pub fn is_transient(&self) -> bool {
        matches!(self.kind(), ErrorKind::Unavailable | ErrorKind::Conflict)
    }

    /// Whether the call conflicted with existing state (a duplicate name).
    pub fn is_conflict(&self) -> bool {
        self.kind() == ErrorKind::Conflict
    }

    /// The HTTP status Keycloak answered with, when it answered.
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            KeycloakError::Http(error) => error.status(),
            _ => None,
        }
    }
}

fn http_kind(error: &HttpError) -> ErrorKind {
    match error {
        HttpError::Timeout { .. } | HttpError::Unreachable { .. } => ErrorKind::Unavailable,
        HttpError::Decode { .. } | HttpError::Setup { .. } => ErrorKind::Invalid,
        HttpError::Untrusted { .. } | HttpError::Trust { .. } => ErrorKind::Untrusted,
        HttpError::Status { status, .. } => match *status {
            StatusCode::NOT_FOUND => ErrorKind::NotFound,
            StatusCode::CONFLICT => ErrorKind::Conflict,
            StatusCode::UNAUTHORIZED => ErrorKind::Unauthorized,
            StatusCode::FORBIDDEN => ErrorKind::Forbidden,
            StatusCode::NOT_IMPLEMENTED => ErrorKind::FeatureDisabled,
            StatusCode::TOO_MANY_REQUESTS | StatusCode::REQUEST_TIMEOUT => ErrorKind::Unavailable,
            s if s.is_server_error() => ErrorKind::Unavailable,
            _ => ErrorKind::Invalid,
        },
    }
}

impl ReconcileError for KeycloakError {
    fn category(&self) -> ErrorCategory {
        match (self, self.kind()) {
            (KeycloakError::CredentialsUnavailable { .. }, _) => ErrorCategory::Dependency,
            (_, ErrorKind::NotFound) => ErrorCategory::Dependency,
            (_, ErrorKind::Conflict | ErrorKind::Unavailable) => ErrorCategory::Transient,
            (
                _,
                ErrorKind::Unauthorized
                | ErrorKind::Forbidden
                | ErrorKind::FeatureDisabled
                | ErrorKind::Invalid
                | ErrorKind::Untrusted,
            ) => ErrorCategory::Invalid,
        }
    }

    fn reason(&self) -> &'static str {
        match (self, self.kind()) {
            (KeycloakError::CredentialsUnavailable { .. }, _) => "KeycloakCredentialsUnavailable",
            (_, ErrorKind::NotFound) => "KeycloakNotFound",
            (_, ErrorKind::Conflict) => "KeycloakConflict",
            (_, ErrorKind::Unauthorized) => "KeycloakUnauthorized",
            (_, ErrorKind::Forbidden) => "KeycloakForbidden",
            (_, ErrorKind::FeatureDisabled) => "KeycloakFeatureDisabled",
            (_, ErrorKind::Unavailable) => "KeycloakUnavailable",
            (_, ErrorKind::Invalid) => "KeycloakInvalidRequest",
            (_, ErrorKind::Untrusted) => TLS_VERIFICATION_FAILED,
        }
    }

    fn retry_within(&self) -> Option<std::time::Duration> {
        // Failing without a request, a refused login notices a fixed Secret within this long.
        matches!(
            self,
            KeycloakError::LoginRejected { .. } | KeycloakError::LoginHeld { .. }
        )
        .then_some(REFUSED_LOGIN_RECHECK)
    }
}

/// How often an object whose Keycloak login was refused checks again (the login itself is held for
/// [`framework::http::REFUSED_LOGIN_HOLD`] per credentials; a changed Secret is tried at the next check).
pub const REFUSED_LOGIN_RECHECK: std::time::Duration = std::time::Duration::from_secs(30);

impl framework::http::LoginRefusal for KeycloakError {
    fn refusal(&self) -> Option<String> {
        matches!(self, KeycloakError::LoginRejected { .. }).then(|| self.to_string())
    }

    fn held(refusal: String, retry_in: std::time::Duration) -> Self {
        KeycloakError::LoginHeld {
            refusal,
            retry_in_seconds: retry_in.as_secs().max(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16) -> KeycloakError {
        KeycloakError::Http(HttpError::Status {
            api: "keycloak",
            operation: "get group",
            status: StatusCode::from_u16(code).expect("valid status"),
            summary: None,
        })
    }

    #[test]
    fn statuses_map_to_kinds() {
        assert_eq!(status(404).kind(), ErrorKind::NotFound);
        assert_eq!(status(409).kind(), ErrorKind::Conflict);
        assert_eq!(status(401).kind(), ErrorKind::Unauthorized);
        assert_eq!(status(403).kind(), ErrorKind::Forbidden);
        assert_eq!(status(501).kind(), ErrorKind::FeatureDisabled);
        assert_eq!(status(500).kind(), ErrorKind::Unavailable);
        assert_eq!(status(503).kind(), ErrorKind::Unavailable);
        assert_eq!(status(429).kind(), ErrorKind::Unavailable);
        assert_eq!(status(400).kind(), ErrorKind::Invalid);
        let timeout = KeycloakError::Http(HttpError::Timeout {
            api: "keycloak",
            operation: "x",
        });
        assert_eq!(timeout.kind(), ErrorKind::Unavailable);
    }

    #[test]
    fn categories_and_reasons_follow_the_kind() {
        assert_eq!(status(503).category(), ErrorCategory::Transient);
        assert!(status(503).is_transient() && status(409).is_transient());
        assert!(!status(403).is_transient() && !status(404).is_transient());
        assert_eq!(status(503).reason(), "KeycloakUnavailable");
        assert_eq!(status(404).category(), ErrorCategory::Dependency);
        assert_eq!(status(403).category(), ErrorCategory::Invalid);
        let missing = KeycloakError::CredentialsUnavailable {
            reason: "secret keycloak/admin not found".into(),
        };
        assert_eq!(missing.category(), ErrorCategory::Dependency);
        assert_eq!(missing.reason(), "KeycloakCredentialsUnavailable");
        assert_eq!(missing.kind(), ErrorKind::Unauthorized);
    }

    #[test]
    fn messages_name_the_operation_and_never_a_body() {
        let error = KeycloakError::InvalidInput {
            operation: "create group",
            reason: "group name is longer than 255 characters".into(),
        };
        assert_eq!(
            error.to_string(),
            "keycloak create group: group name is longer than 255 characters"
        );
        let disabled = KeycloakError::FeatureDisabled {
            operation: "enable client permissions",
            feature: "fine-grained admin permissions (v1)",
        };
        assert!(disabled.to_string().contains("disabled"));
    }
}
