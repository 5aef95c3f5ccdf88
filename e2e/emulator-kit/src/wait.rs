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
pub async fn wait_until<T, F, Fut>(what: &str, deadline: Deadline, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>, String>>,
{
    try_wait_until(what, deadline, check)
        .await
        .unwrap_or_else(|timed_out| panic!("{timed_out}"))
}

/// [`wait_until`] for callers that report a timeout instead of failing on it (a catalog of cases, a benchmark):
/// the error says what was awaited, for how long, and the last observation.
pub async fn try_wait_until<T, F, Fut>(what: &str, deadline: Deadline, mut check: F) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>, String>>,
{
    let started = Instant::now();
    let mut last = String::from("(nothing observed yet)");
    loop {
        match check().await {
            Ok(Some(value)) => return Ok(value),
            Ok(None) => {}
            Err(observation) => last = observation,
        }
        if started.elapsed() >= deadline.timeout {
            return Err(format!(
                "timed out after {:?} waiting for {what}; last observation: {last}",
                deadline.timeout
            ));
        }
        // The poll interval of a deadline-bounded wait, not a synchronisation sleep.
        tokio::time::sleep(deadline.poll).await;
    }
}
