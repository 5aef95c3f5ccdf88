//! What one reconcile changed, for its one-line summary in the log. Writes record themselves here while a
//! reconcile runs (children applied or deleted, the status, finalizers, external systems' writes); the runner
//! logs the list at info when it is not empty, and nothing at info when the reconcile changed nothing.
//!
//! The list is task-local to the reconcile's future, so concurrent reconciles never mix; a write outside a
//! reconcile (start-up, cleanup of the runner itself) records nothing.

use std::cell::RefCell;
use std::future::Future;

tokio::task_local! {
    static CHANGES: RefCell<Vec<String>>;
}

/// Records one change of the running reconcile, e.g. `applied HTTPRoute team/web-route`.
pub fn record(change: impl Into<String>) {
    let change = change.into();
    let _ = CHANGES.try_with(|changes| changes.borrow_mut().push(change));
}

/// Runs `work`, collecting what it records; returns its output and the changes in order.
pub async fn collect<T>(work: impl Future<Output = T>) -> (T, Vec<String>) {
    CHANGES
        .scope(RefCell::new(Vec::new()), async {
            let output = work.await;
            let changes = CHANGES.with(|changes| changes.take());
            (output, changes)
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn changes_are_collected_per_reconcile_and_ignored_outside_one() {
        record("outside");
        let ((), first) = collect(async {
            record("applied A");
            tokio::task::yield_now().await;
            record("status");
        })
        .await;
        assert_eq!(first, vec!["applied A".to_string(), "status".to_string()]);
        let ((), quiet) = collect(async {}).await;
        assert!(quiet.is_empty());
    }
}
