//! The `manager` binary as the sandbox runs it: built by cargo if needed, logging to a file.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

use e2e::harness::{Deadline, wait_until};

/// A running manager process.
pub struct ManagerChild {
    child: Child,
    metrics_url: String,
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
        let status = Command::new(cargo)
            .args(["build", "--quiet", "-p", "controllers", "--bin", "manager"])
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
    /// `args` and waits for `/readyz`.
    pub async fn start(kubeconfig: &Path, pod_namespace: &str, log: &Path, args: &[String]) -> Result<Self, String> {
        let binary = manager_binary().await?;
        let (metrics, health) = (free_port()?, free_port()?);
        let out = std::fs::File::create(log).map_err(|e| e.to_string())?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let mut command = Command::new(binary);
        command
            .arg(format!("--metrics-bind-address=127.0.0.1:{metrics}"))
            .arg(format!("--health-probe-bind-address=127.0.0.1:{health}"))
            .arg("--log-format=text")
            .args(args)
            .env("KUBECONFIG", kubeconfig)
            .env("POD_NAMESPACE", pod_namespace)
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .kill_on_drop(true);
        terminate_with_parent(&mut command);
        let child = command.spawn().map_err(|e| format!("cannot start the manager: {e}"))?;
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .map_err(|e| e.to_string())?;
        let url = format!("http://127.0.0.1:{health}/readyz");
        wait_until("the manager to become ready", Deadline::secs(120), || {
            let http = http.clone();
            let url = url.clone();
            async move {
                match http.get(&url).send().await {
                    Ok(r) if r.status().is_success() => Ok(Some(())),
                    Ok(r) => Err(format!("/readyz answered {}", r.status())),
                    Err(_) => Err("not listening yet".into()),
                }
            }
        })
        .await;
        println!(
            "manager: metrics on http://127.0.0.1:{metrics}/metrics, log in {}",
            log.display()
        );
        Ok(Self {
            child,
            metrics_url: format!("http://127.0.0.1:{metrics}/metrics"),
        })
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
