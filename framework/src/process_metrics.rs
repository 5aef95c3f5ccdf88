//! The `process_*` metrics, with CPU time to the microsecond. The prometheus crate's collector counts
//! `process_cpu_seconds_total` in whole seconds (an integer counter), so a quiet operator reads 0 for a long
//! while and `rate()` over it is useless; this wraps that collector and reports the CPU time from `getrusage`.

use nix::sys::resource::{UsageWho, getrusage};
use nix::sys::time::TimeValLike;
use prometheus::core::{Collector, Desc};
use prometheus::process_collector::ProcessCollector;
use prometheus::proto::{Counter, MetricFamily};

/// The metric whose value is replaced.
const CPU_SECONDS: &str = "process_cpu_seconds_total";

/// The process collector of this process, with fractional CPU seconds.
pub struct ProcessMetrics {
    inner: ProcessCollector,
}

impl ProcessMetrics {
    /// The collector for the running process.
    pub fn for_self() -> Self {
        Self {
            inner: ProcessCollector::for_self(),
        }
    }
}

/// User plus system CPU time of this process, in seconds; `None` when the kernel does not answer.
fn cpu_seconds() -> Option<f64> {
    let usage = getrusage(UsageWho::RUSAGE_SELF).ok()?;
    let micros = usage.user_time().num_microseconds() + usage.system_time().num_microseconds();
    // Microseconds of CPU time fit an f64 exactly for far longer than any process runs.
    #[allow(clippy::cast_precision_loss)]
    Some(micros as f64 / 1e6)
}

impl Collector for ProcessMetrics {
    fn desc(&self) -> Vec<&Desc> {
        self.inner.desc()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let mut families = self.inner.collect();
        if let Some(seconds) = cpu_seconds() {
            for family in families.iter_mut().filter(|f| f.name() == CPU_SECONDS) {
                for metric in family.mut_metric() {
                    let mut counter = Counter::default();
                    counter.set_value(seconds);
                    metric.set_counter(counter);
                }
            }
        }
        families
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_seconds_count_fractions_and_grow() {
        let before = cpu_seconds().expect("getrusage");
        let mut x: u64 = 1;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
        }
        assert_ne!(x, 0);
        let after = cpu_seconds().expect("getrusage");
        assert!(after > before, "{before} -> {after}");
        let families = ProcessMetrics::for_self().collect();
        let cpu = families
            .iter()
            .find(|f| f.name() == CPU_SECONDS)
            .expect("the CPU family");
        let value = cpu.get_metric()[0].get_counter().get_value();
        assert!(value >= after && value.fract() != 0.0, "{value}");
    }
}
