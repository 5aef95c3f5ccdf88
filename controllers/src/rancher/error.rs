//! Errors of the Rancher client: one type with a category controllers can act on (retry, wait, report) and
//! messages safe for conditions and events (no URLs with credentials, no tokens, no response bodies).

use framework::http::HttpError;
use framework::{ErrorCategory, ReconcileError};
use reqwest::StatusCode;

/// What kind of failure a Rancher call ended in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The project, binding, namespace or cluster does not exist.
    NotFound,
    /// The object exists already or a duplicate was refused (409).
    Conflict,
    /// The token is missing, unreadable, refused (401) or lacks permission (403).
    Unauthorized,
    /// Rancher refused the request as wrong (400 webhook denials, 422 validation), or answered something the
    /// client cannot use.
    Invalid,
    /// Rancher is down, slow or failing (timeouts, connection errors, 5xx, 429).
    Unavailable,
    /// Rancher's TLS certificate is not trusted, or the CA bundle configured for it cannot be used.
    Untrusted,
}

/// A failed Rancher call.
#[derive(Debug, thiserror::Error)]
pub enum RancherError {
    /// Rancher or the network failed the request (the message is sanitized by the HTTP layer).
    #[error(transparent)]
    Http(#[from] HttpError),
    /// The API token could not be obtained (its Secret is missing or incomplete).
    #[error("rancher token unavailable: {reason}")]
    TokenUnavailable {
        /// What is missing; never the token.
        reason: String,
    },
    /// The configured Rancher URL is not usable.
    #[error("invalid Rancher URL: {detail}")]
    InvalidUrl {
        /// Why.
        detail: String,
    },
    /// Rancher answered without something the client needs (e.g. the id of a created object).
    #[error("rancher {operation}: unexpected response ({detail})")]
    UnexpectedResponse {
        /// What we were doing.
        operation: &'static str,
        /// What was wrong.
        detail: String,
    },
}

impl RancherError {
    /// The category of the failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            RancherError::Http(error) => http_kind(error),
            RancherError::TokenUnavailable { .. } => ErrorKind::Unauthorized,
            RancherError::InvalidUrl { .. } | RancherError::UnexpectedResponse { .. } => ErrorKind::Invalid,
        }
    }

    /// Whether the addressed object does not exist (cleanup treats this as done).
    pub fn is_not_found(&self) -> bool {
        self.kind() == ErrorKind::NotFound
    }

    /// Whether the call conflicted with existing state.
    pub fn is_conflict(&self) -> bool {
        self.kind() == ErrorKind::Conflict
    }

    /// Whether retrying later may succeed.
    pub fn is_transient(&self) -> bool {
        self.kind() == ErrorKind::Unavailable
    }

    /// The HTTP status Rancher answered with, when it answered.
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            RancherError::Http(error) => error.status(),
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
            // 403 is not taken as "not found" (as terraform does): a token that lost its rights must not make the
            // controller believe the project vanished and create another.
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => ErrorKind::Unauthorized,
            StatusCode::TOO_MANY_REQUESTS | StatusCode::REQUEST_TIMEOUT => ErrorKind::Unavailable,
            s if s.is_server_error() => ErrorKind::Unavailable,
            _ => ErrorKind::Invalid,
        },
    }
}

impl ReconcileError for RancherError {
    fn category(&self) -> ErrorCategory {
        match (self, self.kind()) {
            (RancherError::TokenUnavailable { .. }, _) => ErrorCategory::Dependency,
            (_, ErrorKind::NotFound) => ErrorCategory::Dependency,
            (_, ErrorKind::Conflict | ErrorKind::Unavailable) => ErrorCategory::Transient,
            (_, ErrorKind::Unauthorized | ErrorKind::Invalid | ErrorKind::Untrusted) => ErrorCategory::Invalid,
        }
    }

    fn reason(&self) -> &'static str {
        match (self, self.kind()) {
            (RancherError::TokenUnavailable { .. }, _) => "RancherTokenUnavailable",
            (_, ErrorKind::NotFound) => "RancherNotFound",
            (_, ErrorKind::Conflict) => "RancherConflict",
            (_, ErrorKind::Unauthorized) => "RancherUnauthorized",
            (_, ErrorKind::Invalid) => "RancherRejected",
            (_, ErrorKind::Unavailable) => "RancherUnavailable",
            (_, ErrorKind::Untrusted) => crate::keycloak::TLS_VERIFICATION_FAILED,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, summary: Option<&str>) -> RancherError {
        RancherError::Http(HttpError::Status {
            api: "rancher",
            operation: "create project",
            status: StatusCode::from_u16(code).expect("valid status"),
            summary: summary.map(str::to_string),
        })
    }

    #[test]
    fn statuses_map_to_the_five_kinds() {
        assert_eq!(status(404, None).kind(), ErrorKind::NotFound);
        assert_eq!(status(409, None).kind(), ErrorKind::Conflict);
        assert_eq!(status(401, None).kind(), ErrorKind::Unauthorized);
        assert_eq!(status(403, None).kind(), ErrorKind::Unauthorized);
        assert_eq!(status(400, None).kind(), ErrorKind::Invalid);
        assert_eq!(status(422, None).kind(), ErrorKind::Invalid);
        assert_eq!(status(500, None).kind(), ErrorKind::Unavailable);
        assert_eq!(status(503, None).kind(), ErrorKind::Unavailable);
        assert_eq!(status(429, None).kind(), ErrorKind::Unavailable);
        let unreachable = RancherError::Http(HttpError::Unreachable {
            api: "rancher",
            operation: "x",
            detail: "connection failed".into(),
        });
        assert_eq!(unreachable.kind(), ErrorKind::Unavailable);
    }

    #[test]
    fn categories_and_reasons_follow_the_kind() {
        assert_eq!(status(503, None).category(), ErrorCategory::Transient);
        assert_eq!(status(404, None).category(), ErrorCategory::Dependency);
        assert_eq!(status(400, None).category(), ErrorCategory::Invalid);
        assert_eq!(status(400, None).reason(), "RancherRejected");
        let missing = RancherError::TokenUnavailable {
            reason: "secret cattle/rancher-token not found".into(),
        };
        assert_eq!(missing.category(), ErrorCategory::Dependency);
        assert_eq!(missing.reason(), "RancherTokenUnavailable");
    }

    #[test]
    fn messages_carry_the_summary_but_nothing_else() {
        let error = status(
            400,
            Some("BadRequest: admission webhook denied the request: cluster not found"),
        );
        assert_eq!(
            error.to_string(),
            "rancher create project: HTTP 400 Bad Request: BadRequest: admission webhook denied the request: cluster not found"
        );
    }
}
