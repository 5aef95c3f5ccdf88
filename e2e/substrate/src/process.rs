//! A component of the substrate as a child process: its output in a log file, its own process group, and
//! stopped (the whole group) when the handle is dropped or when the process that started it dies.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::SubstrateError;

/// A running component.
pub struct Supervised {
    name: String,
    child: Child,
    log: PathBuf,
    /// How long a stop waits after SIGTERM before SIGKILL.
    stop_grace: Duration,
}

impl Supervised {
    /// Starts `command` as `name`, its stdout and stderr appended to `log`.
    pub fn spawn(name: &str, mut command: Command, log: &Path) -> Result<Self, SubstrateError> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(SubstrateError::io(format!("open {}", log.display())))?;
        let err = file
            .try_clone()
            .map_err(SubstrateError::io(format!("open {}", log.display())))?;
        command.stdin(Stdio::null()).stdout(file).stderr(err).process_group(0);
        // SAFETY: the closure runs between fork and exec and only makes the prctl system call, which is
        // async-signal-safe. It makes the kernel kill the component if the test run dies without dropping us.
        unsafe {
            command.pre_exec(|| nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from));
        }
        let child = command.spawn().map_err(SubstrateError::io(format!(
            "start {name} ({:?})",
            command.get_program()
        )))?;
        Ok(Supervised {
            name: name.to_string(),
            child,
            log: log.to_path_buf(),
            stop_grace: Duration::from_secs(5),
        })
    }

    /// Sets how long a stop waits after SIGTERM before SIGKILL (5 s unless set).
    pub fn with_stop_grace(mut self, grace: Duration) -> Self {
        self.stop_grace = grace;
        self
    }

    /// Fails when the component has exited.
    pub fn check_running(&mut self) -> Result<(), SubstrateError> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(SubstrateError::Exited {
                component: self.name.clone(),
                status: status.to_string(),
                log: self.log.clone(),
                tail: log_tail(&self.log, 20),
            }),
            Err(error) => Err(SubstrateError::Io {
                what: format!("check on {}", self.name),
                source: error,
            }),
        }
    }

    /// Polls `check` every `interval` until it succeeds; fails when the component exits or `limit` passes, with
    /// the last thing `check` saw (its `Err`).
    pub async fn wait_ready<F, Fut>(
        &mut self,
        limit: Duration,
        interval: Duration,
        mut check: F,
    ) -> Result<(), SubstrateError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<(), String>>,
    {
        let deadline = Instant::now() + limit;
        loop {
            self.check_running()?;
            let last = match check().await {
                Ok(()) => return Ok(()),
                Err(last) => last,
            };
            if Instant::now() > deadline {
                return Err(SubstrateError::NotReady {
                    component: self.name.clone(),
                    seconds: limit.as_secs(),
                    last,
                    log: self.log.clone(),
                });
            }
            tokio::time::sleep(interval).await;
        }
    }

    /// Polls `url` every `interval` until it answers a success status; fails when the component exits or `limit`
    /// passes (a component's health or readiness endpoint).
    pub async fn wait_http_ok(&mut self, url: &str, limit: Duration, interval: Duration) -> Result<(), SubstrateError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| SubstrateError::Io {
                what: "build an HTTP client".into(),
                source: std::io::Error::other(e),
            })?;
        self.wait_ready(limit, interval, || {
            let http = &http;
            async move {
                match http.get(url).send().await {
                    Ok(response) if response.status().is_success() => Ok(()),
                    Ok(response) => Err(format!("{} from {url}", response.status())),
                    Err(error) => Err(error.to_string()),
                }
            }
        })
        .await
    }

    /// Stops the process group: SIGTERM, then SIGKILL after `grace`.
    pub fn stop(&mut self, grace: Duration) {
        if !matches!(self.child.try_wait(), Ok(None)) {
            return;
        }
        let group = Pid::from_raw(self.child.id() as i32);
        let _ = killpg(group, Signal::SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if !matches!(self.child.try_wait(), Ok(None)) {
                let _ = killpg(group, Signal::SIGKILL);
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = killpg(group, Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        self.stop(self.stop_grace);
    }
}

/// The last `lines` lines of the log at `path` (a note when it cannot be read).
pub fn log_tail(path: &Path, lines: usize) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(error) => format!("(the log could not be read: {error})"),
    }
}

/// Whether a component that exited at start lost the race for the port it was given (another process bound it
/// between [`free_port`] and the component's own bind).
pub fn lost_port_race(error: &SubstrateError) -> bool {
    matches!(error, SubstrateError::Exited { tail, .. } if tail.contains("address already in use"))
}

/// A free loopback port (bound and released; the component binds it right after).
pub fn free_port() -> Result<u16, SubstrateError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(SubstrateError::io("find a free port"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(SubstrateError::io("find a free port"))
}
