//! Per-object retry delays after failed reconciles.
//!
//! Follows controller-runtime's item rate limiter (5 ms doubling up to 1000 s, about 17 minutes) with jitter so
//! many objects failing together (an external API outage) do not retry in lockstep, with one difference: the
//! delay never exceeds how long the object has been failing. During an outage every watch event (a relist after a
//! cut watch, say) runs a reconcile that fails and counts, so the count outgrows the outage; without this bound a
//! 40-second outage left objects idle for three minutes after it ended (found by the chaos run). Long outages
//! still back off to the cap. The delay is a pure function of the attempt number and the failing time, which
//! lets the runner keep only a counter and a start time per object. (The `backon` crate that kube
//! uses is iterator-based and its jitter can push a delay above the cap, hence this small function.)

use std::time::Duration;

use rand::Rng;

/// Bounds of the exponential retry schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackoffPolicy {
    /// Delay before the first retry (before jitter).
    pub base: Duration,
    /// Largest delay ever returned.
    pub max: Duration,
}

impl Default for BackoffPolicy {
    fn default() -> Self {
        Self {
            base: Duration::from_millis(5),
            max: Duration::from_secs(1000),
        }
    }
}

impl BackoffPolicy {
    /// The un-jittered delay after `failures` consecutive failures (1 for the first failure).
    pub fn ceiling(&self, failures: u32) -> Duration {
        let exponent = failures.saturating_sub(1).min(40);
        let factor = 1u128 << exponent;
        let nanos = self.base.as_nanos().saturating_mul(factor);
        let capped = nanos.min(self.max.as_nanos());
        // `capped` is at most `max`, which came from a Duration, so it fits in u64 nanoseconds for any sane max.
        Duration::from_nanos(u64::try_from(capped).unwrap_or(u64::MAX))
    }

    /// A jittered delay in `[ceiling/2, ceiling]` after `failures` consecutive failures.
    pub fn delay(&self, failures: u32, rng: &mut impl Rng) -> Duration {
        Self::jitter(self.ceiling(failures), rng)
    }

    /// Like [`Self::delay`], for an object failing for `failing_for` since its first failure: the ceiling is at
    /// most that time (and at least `base`), so an object retries within about as long as its outage lasted.
    pub fn delay_within(&self, failures: u32, failing_for: Duration, rng: &mut impl Rng) -> Duration {
        Self::jitter(self.ceiling(failures).min(failing_for.max(self.base)), rng)
    }

    fn jitter(ceiling: Duration, rng: &mut impl Rng) -> Duration {
        let half = ceiling / 2;
        let spread = ceiling.saturating_sub(half).as_nanos() as u64;
        half + Duration::from_nanos(if spread == 0 { 0 } else { rng.random_range(0..=spread) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn ceiling_doubles_from_five_milliseconds() {
        let p = BackoffPolicy::default();
        assert_eq!(p.ceiling(1), Duration::from_millis(5));
        assert_eq!(p.ceiling(2), Duration::from_millis(10));
        assert_eq!(p.ceiling(5), Duration::from_millis(80));
    }

    #[test]
    fn ceiling_caps_at_about_seventeen_minutes() {
        let p = BackoffPolicy::default();
        assert_eq!(p.ceiling(30), Duration::from_secs(1000));
        assert_eq!(p.ceiling(u32::MAX), Duration::from_secs(1000));
        // 5 ms * 2^17 = 655 s is still below the cap; 2^18 is above it.
        assert_eq!(p.ceiling(18), Duration::from_millis(5 * (1 << 17)));
        assert_eq!(p.ceiling(19), Duration::from_secs(1000));
    }

    #[test]
    fn a_delay_never_exceeds_how_long_the_object_has_been_failing() {
        let p = BackoffPolicy::default();
        let mut rng = StdRng::seed_from_u64(3);
        // Forty failures within forty seconds (each watch event ran a failing reconcile): at most forty seconds.
        for _ in 0..100 {
            let delay = p.delay_within(40, Duration::from_secs(40), &mut rng);
            assert!(
                delay <= Duration::from_secs(40) && delay >= Duration::from_secs(20),
                "{delay:?}"
            );
        }
        // Few failures: the exponential schedule is the smaller bound.
        assert!(p.delay_within(3, Duration::from_secs(40), &mut rng) <= Duration::from_millis(20));
        // The first failure: at least the base delay, never zero.
        assert!(p.delay_within(1, Duration::ZERO, &mut rng) >= Duration::from_micros(2_500));
        // A long outage still reaches the cap.
        assert!(p.delay_within(60, Duration::from_secs(7_200), &mut rng) >= p.max / 2);
    }

    #[test]
    fn delays_jitter_within_half_to_full_ceiling() {
        let p = BackoffPolicy::default();
        let mut rng = StdRng::seed_from_u64(7);
        let samples: Vec<Duration> = (0..200).map(|_| p.delay(10, &mut rng)).collect();
        let ceiling = p.ceiling(10);
        assert!(samples.iter().all(|d| *d >= ceiling / 2 && *d <= ceiling));
        let distinct: std::collections::BTreeSet<_> = samples.iter().collect();
        assert!(
            distinct.len() > 50,
            "jitter must spread delays, got {} distinct values",
            distinct.len()
        );
    }

    #[test]
    fn delays_grow_and_never_exceed_the_cap() {
        let p = BackoffPolicy::default();
        let mut rng = StdRng::seed_from_u64(1);
        let mut previous_ceiling = Duration::ZERO;
        for failures in 1..40 {
            let d = p.delay(failures, &mut rng);
            assert!(d <= p.max);
            assert!(p.ceiling(failures) >= previous_ceiling);
            previous_ceiling = p.ceiling(failures);
        }
    }
}
