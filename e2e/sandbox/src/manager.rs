//! The `manager` binary as the sandbox runs it: built by cargo if needed, logging to a file.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

/// A running manager process, and how to start it again.
pub struct ManagerChild {
    child: Child,
    metrics_url: String,
    launch: Launch,
    starts: u32,
}

/// What the manager is started with (kept to restart it the same way).
struct Launch {
    binary: PathBuf,
    kubeconfig: PathBuf,
    pod_namespace: String,
    log: PathBuf,
    args: Vec<String>,
}

/// The manager binary: beside this executable, built first with the `cargo` that runs us (when there is one)
/// so the sandbox never runs a stale manager.
async fn manager_binary() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = exe.parent().ok_or("no executable directory")?;
    // Beside the `sandbox` binary, or one level up when a test links the sandbox (tests live in `deps/`).
    let path = [dir.join("manager"), dir.join("../manager")]
        .into_iter()
        .find(|p| p.exists())
        .unwrap_or_else(|| dir.join("manager"));
    if let Some(cargo) = std::env::var_os("CARGO") {
        // The profile we were built with (`target/release/...`): a release benchmark measures a release manager.
        let release = dir.components().any(|c| c.as_os_str() == "release");
        let mut build = Command::new(cargo);
        build.args(["build", "--quiet", "-p", "controllers", "--bin", "manager"]);
        if release {
            build.arg("--release");
        }
        let status = build
            .status()
            .await
            .map_err(|e| format!("cannot run cargo to build the manager: {e}"))?;
        if !status.success() {
            return Err("building the manager failed".into());
        }
    }
    if !path.exists() {
        return Err(format!(
            "{} not found; build it with `cargo build --bin manager`",
            path.display()
        ));
    }
    Ok(path)
}

fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

/// Ties the child to this process: when the sandbox dies, however it dies (even SIGKILL, which runs no cleanup),
/// the kernel sends the manager SIGTERM, so it never keeps running against a dead API. The signal follows the
/// thread that spawned the child; the sandbox spawns from a runtime worker thread, which lives as long as the
/// process.
fn terminate_with_parent(command: &mut Command) {
    let parent = nix::unistd::getpid();
    // SAFETY: the closure runs in the forked child before exec and makes only async-signal-safe system calls
    // (prctl, getppid); it allocates nothing and takes no lock.
    unsafe {
        command.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM).map_err(std::io::Error::from)?;
            // The parent may have died before the prctl: then nothing would ever signal us.
            if nix::unistd::getppid() != parent {
                return Err(std::io::Error::other("the sandbox exited while starting the manager"));
            }
            Ok(())
        });
    }
}

impl ManagerChild {
    /// Starts the manager against `kubeconfig` (in `pod_namespace`, where its Lease would live) with extra
    /// `args` and waits for `/readyz`. The log starts empty.
    pub async fn start(kubeconfig: &Path, pod_namespace: &str, log: &Path, args: &[String]) -> Result<Self, String> {
        let launch = Launch {
            binary: manager_binary().await?,
            kubeconfig: kubeconfig.to_path_buf(),
            pod_namespace: pod_namespace.to_string(),
            log: log.to_path_buf(),
            args: args.to_vec(),
        };
        std::fs::File::create(log).map_err(|e| e.to_string())?;
        let (child, metrics_url) = launch.spawn().await?;
        Ok(Self {
            child,
            metrics_url,
            launch,
            starts: 1,
        })
    }

    /// Kills the manager with SIGKILL (no cleanup, no lease release: a crash) and starts it again the same way,
    /// appending to the same log; returns once the new process is ready.
    pub async fn crash_and_restart(&mut self) -> Result<(), String> {
        let _ = self.child.kill().await;
        let (child, metrics_url) = self.launch.spawn().await?;
        self.child = child;
        self.metrics_url = metrics_url;
        self.starts += 1;
        Ok(())
    }

    /// The running process's id.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// How many times a manager process was started.
    pub fn starts(&self) -> u32 {
        self.starts
    }

    /// Where the manager serves its metrics.
    pub fn metrics_url(&self) -> &str {
        &self.metrics_url
    }

    /// Stops the manager with SIGTERM and waits for it to exit.
    pub async fn stop(&mut self) {
        if let Some(pid) = self.child.id().and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
        }
        if tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

impl Launch {
    /// Starts a manager process, its output appended to the log, and waits for `/readyz`. A process that exits
    /// before it is ready (say, the API failed it at start-up) is started again after a second, as the kubelet
    /// would restart it, until two minutes have passed.
    async fn spawn(&self) -> Result<(Child, String), String> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .map_err(|e| e.to_string())?;
        loop {
            let (metrics, health) = (free_port()?, free_port()?);
            let mut child = self.command(metrics, health)?;
            let url = format!("http://127.0.0.1:{health}/readyz");
            loop {
                if child.try_wait().map_err(|e| e.to_string())?.is_some() {
                    break;
                }
                if http.get(&url).send().await.is_ok_and(|r| r.status().is_success()) {
                    println!(
                        "manager: metrics on http://127.0.0.1:{metrics}/metrics, log in {}",
                        self.log.display()
                    );
                    return Ok((child, format!("http://127.0.0.1:{metrics}/metrics")));
                }
                if tokio::time::Instant::now() > deadline {
                    let _ = child.kill().await;
                    return Err(format!(
                        "the manager did not become ready within two minutes; see {}",
                        self.log.display()
                    ));
                }
                // Poll interval of a wait with a deadline.
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            if tokio::time::Instant::now() > deadline {
                return Err(format!(
                    "the manager kept exiting before it was ready; see {}",
                    self.log.display()
                ));
            }
            // The kubelet's pause before a restart.
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// Spawns one manager process with the given metrics and health ports.
    fn command(&self, metrics: u16, health: u16) -> Result<Child, String> {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| e.to_string())?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let mut command = Command::new(&self.binary);
        command
            .arg(format!("--metrics-bind-address=127.0.0.1:{metrics}"))
            .arg(format!("--health-probe-bind-address=127.0.0.1:{health}"))
            .arg("--log-format=text")
            .args(&self.args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("POD_NAMESPACE", &self.pod_namespace)
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .kill_on_drop(true);
        terminate_with_parent(&mut command);
        command.spawn().map_err(|e| format!("cannot start the manager: {e}"))
    }
}
