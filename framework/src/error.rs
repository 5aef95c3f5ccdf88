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
}
