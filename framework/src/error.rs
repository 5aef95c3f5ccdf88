//! The contract between a controller's errors and the framework.
//!
//! Every reconcile error names a category (does it go away by itself, or does someone have to act?) and a
//! PascalCase reason, so the framework can count it, back off, and surface it in conditions and Warning events
//! without knowing the controller.

/// What kind of failure a reconcile error is; drives metrics and how it is presented.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCategory {
    /// A passing failure (network, 5xx, conflict): retried with backoff.
    Transient,
    /// Something the object depends on is missing or not ready; resolves when it appears (usually via a watch).
    Dependency,
    /// The object or the operator configuration is wrong; retrying will not help until someone changes it.
    Invalid,
    /// A bug or an unexpected state of our own (including a caught panic).
    Internal,
}

impl ErrorCategory {
    /// Terminal errors need a human; they are counted in `controller_runtime_terminal_reconcile_errors_total`.
    pub fn is_terminal(self) -> bool {
        matches!(self, ErrorCategory::Invalid)
    }

    /// A stable label value for metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCategory::Transient => "transient",
            ErrorCategory::Dependency => "dependency",
            ErrorCategory::Invalid => "invalid",
            ErrorCategory::Internal => "internal",
        }
    }
}

/// Implemented by each controller's error type.
pub trait ReconcileError: std::error::Error + Send + Sync + 'static {
    /// The category of the failure.
    fn category(&self) -> ErrorCategory;

    /// A PascalCase reason for conditions and Warning events (e.g. `KeystoneUnavailable`).
    fn reason(&self) -> &'static str;

    /// The longest the object may wait for its next attempt, when the error-backoff (which grows with how long
    /// the object has been failing) would be too slow: a held login fails without a request, and should notice
    /// fixed credentials soon. `None`: the backoff decides.
    fn retry_within(&self) -> Option<std::time::Duration> {
        None
    }
}

/// A Kubernetes API error as one readable line for conditions, events and logs: the API server's own message
/// and reason (`… is forbidden: … (Forbidden)`), never kube-rs's dump of the whole response.
pub fn describe_kube_error(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => {
            let reason = if status.reason.is_empty() {
                format!("HTTP {}", status.code)
            } else {
                status.reason.clone()
            };
            if status.message.is_empty() {
                reason
            } else {
                format!("{} ({reason})", status.message)
            }
        }
        other => other.to_string(),
    }
}

/// Displays a Kubernetes API error with [`describe_kube_error`] (for `thiserror` messages).
pub struct KubeErrorDisplay<'a>(pub &'a kube::Error);

impl std::fmt::Display for KubeErrorDisplay<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&describe_kube_error(self.0))
    }
}

/// A failed Kubernetes request, with what the controller was doing: the one shape every controller's error
/// wraps Kubernetes failures in (reason `KubernetesAPIError`).
#[derive(Debug, thiserror::Error)]
#[error("{action}: {}", KubeErrorDisplay(source))]
pub struct KubeError {
    /// What was being done, e.g. "creating Secret ac-barbican-7b23d-secret".
    pub action: String,
    /// The API error.
    #[source]
    pub source: Box<kube::Error>,
}

impl KubeError {
    /// `source`, which happened while doing `action`.
    pub fn new(action: impl Into<String>, source: kube::Error) -> Self {
        Self {
            action: action.into(),
            source: Box::new(source),
        }
    }

    /// The HTTP status the API server answered, if it answered.
    pub fn code(&self) -> Option<u16> {
        match self.source.as_ref() {
            kube::Error::Api(status) => Some(status.code),
            _ => None,
        }
    }
}

/// Wraps a Kubernetes error with what was being done: `.map_err(kube_error("reading the namespace"))?`.
pub fn kube_error(action: impl Into<String>) -> impl FnOnce(kube::Error) -> KubeError {
    let action = action.into();
    move |source| KubeError::new(action, source)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_errors_read_as_the_servers_message_and_reason() {
        let status = kube::core::Status::failure("secrets \"x\" is forbidden: nope", "Forbidden").with_code(403);
        let error = kube::Error::Api(Box::new(status));
        assert_eq!(
            describe_kube_error(&error),
            "secrets \"x\" is forbidden: nope (Forbidden)"
        );
    }

    #[test]
    fn a_wrapped_error_says_what_was_being_done() {
        let status = kube::core::Status::failure("the object has been modified", "Conflict").with_code(409);
        let error = kube_error("writing the status")(kube::Error::Api(Box::new(status)));
        assert_eq!(
            error.to_string(),
            "writing the status: the object has been modified (Conflict)"
        );
        assert_eq!(error.code(), Some(409));
    }
}
