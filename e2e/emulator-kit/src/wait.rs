//! Waiting for a condition with a deadline, instead of sleeping and hoping.

use std::future::Future;
use std::time::{Duration, Instant};

/// How long to wait and how often to look.
#[derive(Clone, Copy, Debug)]
pub struct Deadline {
    /// Give up after this long.
    pub timeout: Duration,
    /// Look again after this long.
    pub poll: Duration,
}

impl Deadline {
    /// Wait up to `secs` seconds, checking every 50 ms.
    pub fn secs(secs: u64) -> Self {
        Self {
            timeout: Duration::from_secs(secs),
            poll: Duration::from_millis(50),
        }
    }
}

/// Polls `check` until it yields `Some`, or fails after the deadline with `what` and the last observation.
///
/// `check` returns `Ok(Some(v))` when satisfied, `Ok(None)` to keep waiting, or `Err(observation)` to keep
/// waiting while remembering what it saw (printed if the deadline passes).
pub async fn wait_until<T, F, Fut>(what: &str, deadline: Deadline, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>, String>>,
{
    let started = Instant::now();
    let mut last = String::from("(nothing observed yet)");
    loop {
        match check().await {
            Ok(Some(value)) => return value,
            Ok(None) => {}
            Err(observation) => last = observation,
        }
        if started.elapsed() >= deadline.timeout {
            panic!(
                "timed out after {:?} waiting for {what}; last observation: {last}",
                deadline.timeout
            );
        }
        // The poll interval of a deadline-bounded wait, not a synchronisation sleep.
        tokio::time::sleep(deadline.poll).await;
    }
}
