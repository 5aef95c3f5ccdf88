//! What an orphan sweep does with the external objects it finds whose Kubernetes object is gone: report them
//! (the default wherever deleting could cut off something the operator cannot see), or also delete them once
//! they stayed orphaned for a grace period.

/// Report or delete orphans.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OrphanPolicy {
    /// Report them (log, metric).
    #[default]
    Report,
    /// Report them and delete those orphaned for the grace period.
    Delete,
}
