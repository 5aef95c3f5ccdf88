//! The emulator's clock: real time plus an offset that tests can advance.
//!
//! Token expiry is enforced against this clock, so a test can make every issued token stale by advancing it
//! instead of waiting for the lifetime to pass.

use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Real time shifted by an adjustable offset.
#[derive(Debug, Default)]
pub struct Clock {
    offset: Mutex<Duration>,
}

impl Clock {
    fn offset(&self) -> Duration {
        // The offset is a plain value; a panicking holder cannot leave it half-written.
        *self.offset.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The current instant as the emulator sees it.
    pub fn now(&self) -> Instant {
        Instant::now() + self.offset()
    }

    /// Milliseconds since the Unix epoch as the emulator sees them (Keycloak's `createdTimestamp`).
    pub fn epoch_millis(&self) -> u64 {
        let since = (SystemTime::now() + self.offset())
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
    }

    /// Seconds since the Unix epoch as the emulator sees them (token `iat`/`exp`).
    pub fn epoch_seconds(&self) -> u64 {
        self.epoch_millis() / 1000
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        let mut offset = self.offset.lock().unwrap_or_else(|p| p.into_inner());
        *offset += by;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advancing_moves_now_and_epoch_forward() {
        let clock = Clock::default();
        let before = clock.now();
        let before_epoch = clock.epoch_seconds();
        clock.advance(Duration::from_secs(3600));
        assert!(clock.now() >= before + Duration::from_secs(3600));
        assert!(clock.epoch_seconds() >= before_epoch + 3600);
    }
}
