//! The bookkeeping every orphan sweep shares: external objects whose Kubernetes object is gone are reported the
//! first time a sweep sees them, counted in a gauge, and may be deleted only once they have stayed orphaned for a
//! grace period (an object recreated meanwhile, or a cache that lagged, must not cost its external twin).
//!
//! The grace period counts from when this process first saw the orphan; a restart starts it again, which errs on
//! the side of keeping.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use prometheus::{IntGauge, Opts};

use crate::metrics::Metrics;

/// What one sweep learnt about an orphan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sighting {
    /// Seen for the first time (report it).
    pub first: bool,
    /// Orphaned for at least the grace period (may be deleted).
    pub due: bool,
}

/// Since when each orphan has been seen, and the gauge of how many remain.
pub struct OrphanLedger {
    first_seen: Mutex<HashMap<String, Instant>>,
    gauge: Option<IntGauge>,
}

impl OrphanLedger {
    /// A ledger publishing its count as the gauge `name` in `metrics` (none without metrics).
    pub fn new(name: &str, help: &str, metrics: Option<&Metrics>) -> Result<Self, prometheus::Error> {
        let gauge = metrics
            .map(|metrics| IntGauge::with_opts(Opts::new(name, help)).and_then(|gauge| metrics.register(gauge)))
            .transpose()?;
        Ok(Self {
            first_seen: Mutex::default(),
            gauge,
        })
    }

    /// Starts a sweep at `now`.
    pub fn sweep(&self, now: Instant) -> Sweep<'_> {
        let first_seen = self.first_seen.lock().unwrap_or_else(PoisonError::into_inner).clone();
        Sweep {
            ledger: self,
            now,
            first_seen,
            orphaned: BTreeSet::new(),
        }
    }
}

/// One pass over the external objects; [`Sweep::finish`] records it.
pub struct Sweep<'a> {
    ledger: &'a OrphanLedger,
    now: Instant,
    first_seen: HashMap<String, Instant>,
    orphaned: BTreeSet<String>,
}

impl Sweep<'_> {
    /// Records `id` as orphaned in this sweep.
    pub fn observe(&mut self, id: &str, grace: Duration) -> Sighting {
        self.orphaned.insert(id.to_string());
        let mut first = false;
        let seen = *self.first_seen.entry(id.to_string()).or_insert_with(|| {
            first = true;
            self.now
        });
        Sighting {
            first,
            due: self.now.duration_since(seen) >= grace,
        }
    }

    /// `id` was deleted: no longer an orphan.
    pub fn deleted(&mut self, id: &str) {
        self.orphaned.remove(id);
    }

    /// Forgets the orphans this sweep did not see (adopted, recreated or deleted by someone) and publishes how
    /// many remain; returns that number.
    pub fn finish(mut self) -> usize {
        let orphaned = &self.orphaned;
        self.first_seen.retain(|id, _| orphaned.contains(id));
        *self.ledger.first_seen.lock().unwrap_or_else(PoisonError::into_inner) = self.first_seen;
        let remaining = self.orphaned.len();
        if let Some(gauge) = &self.ledger.gauge {
            gauge.set(i64::try_from(remaining).unwrap_or(i64::MAX));
        }
        remaining
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_orphan_is_first_reported_then_due_after_the_grace_period_and_forgotten_when_gone() {
        let ledger = OrphanLedger::new("x", "x", None).expect("ledger");
        let start = Instant::now();
        let grace = Duration::from_secs(60);

        let mut sweep = ledger.sweep(start);
        assert_eq!(
            sweep.observe("a", grace),
            Sighting {
                first: true,
                due: false
            }
        );
        assert_eq!(sweep.observe("b", Duration::ZERO), Sighting { first: true, due: true });
        sweep.deleted("b");
        assert_eq!(sweep.finish(), 1);

        let mut sweep = ledger.sweep(start + Duration::from_secs(61));
        assert_eq!(
            sweep.observe("a", grace),
            Sighting {
                first: false,
                due: true
            }
        );
        assert_eq!(sweep.finish(), 1);

        // Not seen in a sweep: forgotten, so its grace period starts again when it comes back.
        assert_eq!(ledger.sweep(start + Duration::from_secs(62)).finish(), 0);
        let mut sweep = ledger.sweep(start + Duration::from_secs(63));
        assert_eq!(
            sweep.observe("a", grace),
            Sighting {
                first: true,
                due: false
            }
        );
    }
}
