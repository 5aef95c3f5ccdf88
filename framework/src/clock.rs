//! Wall-clock time behind a trait, so time-driven behaviour (rotation schedules, resync intervals) can be
//! tested without waiting.

use std::sync::Mutex;

use jiff::{SignedDuration, Timestamp};

/// A source of the current time.
pub trait Clock: Send + Sync + 'static {
    /// The current instant.
    fn now(&self) -> Timestamp;
}

/// The real system clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that only moves when told to; for tests.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<Timestamp>,
}

impl ManualClock {
    /// A clock stopped at `start`.
    pub fn new(start: Timestamp) -> Self {
        Self { now: Mutex::new(start) }
    }

    /// Moves the clock forward (or backward, with a negative duration).
    pub fn advance(&self, by: SignedDuration) {
        if let Ok(mut now) = self.now.lock() {
            *now = now.saturating_add(by).unwrap_or(*now);
        }
    }

    /// Sets the clock to `to`.
    pub fn set(&self, to: Timestamp) {
        if let Ok(mut now) = self.now.lock() {
            *now = to;
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        self.now
            .lock()
            .map(|now| *now)
            .unwrap_or_else(|poisoned| *poisoned.into_inner())
    }
}

/// A clock shifted from the system clock by a fixed offset; lets a whole process (the `manager` under an
/// end-to-end test) live in the future without touching the host's time.
#[derive(Clone, Copy, Debug)]
pub struct OffsetClock {
    offset: SignedDuration,
}

impl OffsetClock {
    /// The system clock plus `offset`.
    pub fn new(offset: SignedDuration) -> Self {
        Self { offset }
    }
}

impl Clock for OffsetClock {
    fn now(&self) -> Timestamp {
        let now = Timestamp::now();
        now.saturating_add(self.offset).unwrap_or(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let start = Timestamp::from_second(1_000).expect("time");
        let clock = ManualClock::new(start);
        assert_eq!(clock.now(), start);
        clock.advance(SignedDuration::from_hours(24));
        assert_eq!(clock.now(), start + SignedDuration::from_hours(24));
    }

    #[test]
    fn offset_clock_runs_ahead_of_the_system_clock() {
        let clock = OffsetClock::new(SignedDuration::from_hours(48));
        let diff = clock.now().duration_since(Timestamp::now());
        assert!(diff > SignedDuration::from_hours(47));
    }
}
