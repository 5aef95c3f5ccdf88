//! Reading the manager's Prometheus exposition in tests: sums of samples, reconciles so far, and waiting for
//! the controller to settle.

use std::cell::Cell;
use std::time::Duration;

use super::manager::ManagerProcess;
use super::wait::{Deadline, wait_until};

/// The sum of the samples of `name` whose labels include every pair of `labels`.
pub fn sum(exposition: &str, name: &str, labels: &[(&str, &str)]) -> u64 {
    exposition
        .lines()
        .filter(|line| line.starts_with(&format!("{name}{{")) || line.starts_with(&format!("{name} ")))
        .filter(|line| labels.iter().all(|(k, v)| line.contains(&format!("{k}=\"{v}\""))))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|value| value as u64)
        .sum()
}

/// Reconciles of `controller` finished so far, whatever their result.
pub fn reconciles(exposition: &str, controller: &str) -> u64 {
    sum(
        exposition,
        "controller_runtime_reconcile_total",
        &[("controller", controller)],
    )
}

impl ManagerProcess {
    /// Reconciles of `controller` finished so far.
    pub async fn reconciles(&self, controller: &str) -> u64 {
        reconciles(&self.metrics().await, controller)
    }

    /// Waits until `controller` has finished at least `n` more reconciles than `since`; returns the count.
    pub async fn wait_reconciles(&self, controller: &str, since: u64, n: u64) -> u64 {
        wait_until(&format!("{n} more reconciles"), Deadline::secs(30), || async move {
            let now = self.reconciles(controller).await;
            if now >= since + n {
                Ok(Some(now))
            } else {
                Err(format!("{now} so far"))
            }
        })
        .await
    }

    /// Waits until `controller` is idle: no worker busy and the reconcile count unchanged for five polls in a row
    /// (half a second); returns the reconcile count.
    pub async fn wait_idle(&self, controller: &str) -> u64 {
        let last = Cell::new((u64::MAX, u64::MAX));
        let calm = Cell::new(0u32);
        let deadline = Deadline {
            timeout: Duration::from_secs(30),
            poll: Duration::from_millis(100),
        };
        wait_until("the controller to be idle", deadline, || {
            let (last, calm) = (&last, &calm);
            async move {
                let metrics = self.metrics().await;
                let label = [("controller", controller)];
                let counts = (
                    sum(&metrics, "controller_runtime_reconcile_total", &label),
                    sum(&metrics, "controller_runtime_active_workers", &label),
                );
                calm.set(if counts == last.get() && counts.1 == 0 {
                    calm.get() + 1
                } else {
                    0
                });
                last.set(counts);
                if calm.get() >= 5 {
                    Ok(Some(counts.0))
                } else {
                    Err(format!("reconciles {}, busy workers {}", counts.0, counts.1))
                }
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_summed_over_matching_labels_only() {
        let exposition = "\
# HELP controller_runtime_reconcile_total Total reconciles.
controller_runtime_reconcile_total{controller=\"a\",result=\"success\"} 3
controller_runtime_reconcile_total{controller=\"a\",result=\"error\"} 2
controller_runtime_reconcile_total{controller=\"b\",result=\"success\"} 7
controller_runtime_reconcile_total_other{controller=\"a\"} 100
";
        assert_eq!(reconciles(exposition, "a"), 5);
        assert_eq!(
            sum(
                exposition,
                "controller_runtime_reconcile_total",
                &[("result", "success")]
            ),
            10
        );
        assert_eq!(sum(exposition, "missing", &[]), 0);
    }
}
