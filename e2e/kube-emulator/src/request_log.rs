//! An optional line-per-request log: when each request arrived, how long the emulator took to produce its
//! answer, who sent it and what it got. It exists to tell, when a client reports a request that was never
//! answered, whether the emulator saw it at all and how long it held it.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// Appends one line per request to a file: `arrival-ms duration-ms status user method uri`.
pub struct RequestLog {
    out: Mutex<BufWriter<File>>,
}

impl RequestLog {
    /// Creates (truncates) the log file.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        Ok(RequestLog {
            out: Mutex::new(BufWriter::new(File::create(path)?)),
        })
    }

    /// Records one answered request. Write errors are ignored: the log is diagnostics, never a reason to fail
    /// a request.
    pub fn record(&self, arrival: SystemTime, took: Duration, status: u16, user: &str, method: &str, uri: &str) {
        let arrival_ms = arrival
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|since| since.as_millis())
            .unwrap_or_default();
        let user = if user.is_empty() { "-" } else { user };
        let Ok(mut out) = self.out.lock() else { return };
        let _ = writeln!(out, "{arrival_ms} {} {status} {user} {method} {uri}", took.as_millis());
        let _ = out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_request_is_one_line_with_its_timing_and_answer() {
        let dir = std::env::temp_dir().join(format!("request-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("requests.log");
        let log = RequestLog::create(&path).expect("create");
        let arrival = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        log.record(
            arrival,
            Duration::from_millis(1500),
            200,
            "manager",
            "GET",
            "/api/v1/namespaces",
        );
        log.record(arrival, Duration::ZERO, 401, "", "GET", "/api");
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(
            text,
            "1700000000123 1500 200 manager GET /api/v1/namespaces\n1700000000123 0 401 - GET /api\n"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
