//! The real `manager` binary, run as a child process against the test's cluster.
//!
//! Its log goes to a file in the test's scratch directory and is printed when a test fails while the
//! process is alive, so a hang or a wrong condition comes with the operator's own account of events.
//!
//! It runs as the shipped ServiceAccount (the RBAC of `manifests/default`, or of the overlay a test names),
//! and the test fails when the API server answered the manager with a Forbidden the test did not expect.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

use std::sync::Arc;

use super::cluster::TestCluster;
use super::install::OperatorIdentity;
use super::wait::{Deadline, wait_until};
use kube_emulator::{DecisionLog, ForbiddenResponse};

/// Numbers the managers a test process starts.
static NEXT_PROCESS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Who the manager authenticates as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Identity {
    /// The ServiceAccount and RBAC of a kustomize overlay under `manifests/` (`default` unless a test names
    /// another), installed with kubectl before the manager starts.
    Shipped {
        /// The overlay directory under `manifests/`.
        overlay: String,
    },
    /// The cluster admin of the test's kubeconfig (only for tests about a missing install, say why).
    ClusterAdmin,
}

impl Identity {
    /// The shipped identity of `manifests/<overlay>`.
    pub fn overlay(overlay: &str) -> Self {
        Identity::Shipped {
            overlay: overlay.to_string(),
        }
    }
}

impl Default for Identity {
    fn default() -> Self {
        Identity::Shipped {
            overlay: "default".into(),
        }
    }
}

/// How the manager is started.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Launcher {
    /// The `manager` binary cargo built.
    #[default]
    Binary,
    /// The shipped container image (an OCI archive written by `e2e/image.sh`), run with Debian's buildah
    /// (`buildah run --isolation chroot`, the host's network) as user 65532 with the kubeconfig mounted read-only.
    Image {
        /// The OCI archive.
        archive: PathBuf,
    },
}

/// Extra settings for one manager process.
#[derive(Clone, Debug, Default)]
pub struct ManagerOptions {
    /// How to start it.
    pub launcher: Launcher,
    /// Extra command-line arguments (after the harness's own).
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Who the manager runs as.
    pub identity: Identity,
    /// Forbidden answers the test provokes on purpose: any 403 whose message contains one of these is allowed.
    pub expected_forbidden: Vec<String>,
}

impl ManagerOptions {
    /// Runs only `controllers` (their `--controllers` names; the first names the RBAC overlay,
    /// `manifests/overlays/<first>`), or, with `watched`, as the namespaced install (`overlays/namespaced`)
    /// watching that namespace; `args` follow.
    pub fn controllers(controllers: &[&str], watched: Option<&str>, args: Vec<String>) -> Self {
        let mut all = vec![format!("--controllers={}", controllers.join(","))];
        let overlay = match watched {
            Some(namespace) => {
                all.push(format!("--watch-namespace={namespace}"));
                "overlays/namespaced".to_string()
            }
            None => format!("overlays/{}", controllers.first().copied().unwrap_or("default")),
        };
        all.extend(args);
        ManagerOptions {
            args: all,
            identity: Identity::overlay(&overlay),
            ..ManagerOptions::default()
        }
    }
}

/// Where the authorizer's answers to the manager are recorded.
enum Decisions {
    /// The API emulator's decision log.
    Emulator(Arc<DecisionLog>),
    /// The real apiserver's audit log.
    AuditLog(PathBuf),
}

/// A running `manager`.
pub struct ManagerProcess {
    child: Option<Child>,
    log_path: PathBuf,
    metrics_url: String,
    kubeconfig: PathBuf,
    options: ManagerOptions,
    log_dir: PathBuf,
    starts: u32,
    /// Which manager of this test process it is (names its log files).
    process: u32,
    /// The user the manager authenticates as, and where to check the answers it got.
    audit: Option<(String, Decisions)>,
    pod_namespace: Option<String>,
    /// The working container the image launcher runs the manager in (created on first start).
    container: Option<ImageContainer>,
}

/// A buildah working container made from the image archive, with its own storage under the test's directory.
struct ImageContainer {
    storage: PathBuf,
    name: String,
    config_dir: PathBuf,
}

impl ImageContainer {
    fn buildah(&self) -> std::process::Command {
        let mut command = std::process::Command::new("buildah");
        command
            .arg("--root")
            .arg(self.storage.join("root"))
            .arg("--runroot")
            .arg(self.storage.join("run"))
            .arg("--storage-driver")
            .arg("vfs");
        command
    }

    fn create(archive: &Path, dir: &Path) -> Self {
        assert!(
            archive.exists(),
            "the manager image {} does not exist; build it with `e2e/image.sh` (needs buildah: apt-get install buildah)",
            archive.display()
        );
        let container = ImageContainer {
            storage: dir.join("buildah"),
            name: format!("manager-under-test-{}", std::process::id()),
            config_dir: dir.join("image-config"),
        };
        let made = container
            .buildah()
            .args(["from", "--quiet", "--name", &container.name])
            .arg(format!("oci-archive:{}", archive.display()))
            .output()
            .unwrap_or_else(|e| panic!("run buildah (apt-get install buildah): {e}"));
        assert!(
            made.status.success(),
            "buildah from {} failed: {}",
            archive.display(),
            String::from_utf8_lossy(&made.stderr)
        );
        container
    }

    /// The command that runs the image's entrypoint with `args`, the kubeconfig copied where user 65532 reads it.
    fn command(&self, kubeconfig: &Path, args: &[String], env: &[(String, String)]) -> Command {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(&self.config_dir).expect("create the image config directory");
        let copy = self.config_dir.join("kubeconfig");
        std::fs::copy(kubeconfig, &copy).expect("copy the kubeconfig for the container");
        for (path, mode) in [(&self.config_dir, 0o755), (&copy, 0o644)] {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("make it readable");
        }
        let mut command = Command::from(self.buildah());
        command
            .args(["run", "--isolation", "chroot", "--user", "65532:65532"])
            .arg("--volume")
            .arg(format!("{}:/config:ro", self.config_dir.display()))
            .args(["--env", "KUBECONFIG=/config/kubeconfig"]);
        for (key, value) in env.iter().filter(|(k, _)| k != "KUBECONFIG") {
            command.arg("--env").arg(format!("{key}={value}"));
        }
        command.arg(&self.name).arg("--").arg("/manager").args(args);
        command
    }
}

impl Drop for ImageContainer {
    fn drop(&mut self) {
        let _ = self.buildah().args(["rm", &self.name]).output();
    }
}

/// Path of the `manager` binary built by cargo (`target/<profile>/manager`, beside the test executable).
pub fn manager_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("E2E_MANAGER_BIN") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("test executable path");
    // target/debug/deps/<test> -> target/debug/manager
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test executable lives in target/<profile>/deps");
    let path = profile_dir.join("manager");
    assert!(
        path.exists(),
        "the manager binary is not built at {}; run `cargo build --bin manager` (cargo nextest run --workspace builds it)",
        path.display()
    );
    path
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local addr").port()
}

impl ManagerProcess {
    /// Starts the manager against `cluster` as the identity `options` name and waits until `/readyz` answers 200
    /// (caches synced).
    pub async fn start(cluster: &TestCluster, options: ManagerOptions) -> Self {
        let identity: Option<OperatorIdentity> = match &options.identity {
            Identity::Shipped { overlay } => Some(cluster.install_operator_identity(overlay).await),
            Identity::ClusterAdmin => None,
        };
        let kubeconfig = identity
            .as_ref()
            .map_or_else(|| cluster.kubeconfig().to_path_buf(), |i| i.kubeconfig.clone());
        let audit = match (&identity, cluster.is_emulated(), cluster.substrate()) {
            (Some(identity), true, _) => Some((
                identity.user.clone(),
                Decisions::Emulator(cluster.emulator().decision_log()),
            )),
            (Some(identity), false, Some(substrate)) => {
                Some((identity.user.clone(), Decisions::AuditLog(substrate.audit_log.clone())))
            }
            _ => None,
        };
        let mut process = Self {
            child: None,
            log_path: PathBuf::new(),
            metrics_url: String::new(),
            kubeconfig,
            options,
            log_dir: cluster.dir().to_path_buf(),
            starts: 0,
            process: NEXT_PROCESS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            audit,
            pod_namespace: identity.map(|i| i.namespace),
            container: None,
        };
        process.spawn().await;
        process
    }

    /// Declares Forbidden answers the test provoked on purpose (any whose message contains `substring`), so the
    /// harness does not fail the test for them.
    pub fn expect_forbidden(&mut self, substring: &str) {
        self.options.expected_forbidden.push(substring.to_string());
    }

    /// The Forbidden answers the manager got so far that the test did not declare as expected.
    pub fn unexpected_forbidden(&self) -> Vec<ForbiddenResponse> {
        let Some((user, decisions)) = &self.audit else {
            return Vec::new();
        };
        let refused = match decisions {
            Decisions::Emulator(log) => log.forbidden_responses(),
            Decisions::AuditLog(path) => substrate::audit::forbidden_for(path, user)
                .into_iter()
                .map(|r| ForbiddenResponse {
                    user: r.user,
                    method: r.verb,
                    path: r.path,
                    message: r.message,
                })
                .collect(),
        };
        refused
            .into_iter()
            .filter(|f| &f.user == user)
            .filter(|f| !self.options.expected_forbidden.iter().any(|e| f.message.contains(e)))
            .collect()
    }

    async fn spawn(&mut self) {
        self.starts += 1;
        let metrics_port = free_port();
        let health_port = free_port();
        // Several managers may share a cluster (failover, shards): each process writes logs of its own.
        self.log_path = self
            .log_dir
            .join(format!("manager-{}-{}.log", self.process, self.starts));
        let log = std::fs::File::create(&self.log_path).expect("create manager log");
        let err_log = log.try_clone().expect("clone log handle");
        // Text logs for people reading a failed test, unless the test asks for another format.
        let format =
            (!self.options.args.iter().any(|a| a.starts_with("--log-format"))).then(|| "--log-format=text".to_string());
        let args: Vec<String> = [
            format!("--metrics-bind-address=127.0.0.1:{metrics_port}"),
            format!("--health-probe-bind-address=127.0.0.1:{health_port}"),
        ]
        .into_iter()
        .chain(format)
        .chain(self.options.args.iter().cloned())
        .collect();
        let mut env: Vec<(String, String)> = vec![
            ("KUBECONFIG".into(), self.kubeconfig.to_string_lossy().into_owned()),
            (
                "LOG_LEVEL".into(),
                std::env::var("E2E_MANAGER_LOG_LEVEL").unwrap_or_else(|_| "info,controllers=debug".into()),
            ),
        ];
        env.extend(
            self.pod_namespace
                .iter()
                .map(|ns| ("POD_NAMESPACE".to_string(), ns.clone())),
        );
        env.extend(self.options.env.iter().cloned());
        let mut command = match &self.options.launcher {
            Launcher::Binary => {
                let mut command = Command::new(manager_binary());
                command
                    .args(&args)
                    .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
                command
            }
            Launcher::Image { archive } => {
                let container = self
                    .container
                    .get_or_insert_with(|| ImageContainer::create(archive, &self.log_dir));
                container.command(&self.kubeconfig, &args, &env)
            }
        };
        // Its own process group, so stopping it reaches everything it started (buildah's child, for the image).
        command
            .process_group(0)
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(err_log))
            .kill_on_drop(true);
        let child = command.spawn().unwrap_or_else(|e| panic!("start manager: {e}"));
        self.child = Some(child);
        self.metrics_url = format!("http://127.0.0.1:{metrics_port}/metrics");
        let ready_url = format!("http://127.0.0.1:{health_port}/readyz");
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .expect("http client");
        let log_path = self.log_path.clone();
        wait_until("manager /readyz", Deadline::secs(60), || {
            let http = http.clone();
            let url = ready_url.clone();
            let log_path = log_path.clone();
            async move {
                match http.get(&url).send().await {
                    Ok(r) if r.status().is_success() => Ok(Some(())),
                    Ok(r) => Err(format!("readyz answered {}", r.status())),
                    Err(_) => Err(format!("not listening yet; log so far:\n{}", tail(&log_path, 20))),
                }
            }
        })
        .await;
    }

    /// The manager's log so far (of the current process).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// The `host:port` serving `/metrics` (for a Prometheus scrape target).
    pub fn metrics_target(&self) -> String {
        self.metrics_url
            .trim_start_matches("http://")
            .trim_end_matches("/metrics")
            .to_string()
    }

    /// The Prometheus exposition from `/metrics`.
    pub async fn metrics(&self) -> String {
        reqwest::get(&self.metrics_url)
            .await
            .expect("GET /metrics")
            .text()
            .await
            .expect("metrics body")
    }

    /// Kills the process with SIGKILL (no cleanup, like a node crash) and waits for it to die.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal_group(&child, nix::sys::signal::Signal::SIGKILL);
            let _ = child.kill().await;
        }
    }

    /// Stops the process with SIGTERM and waits until it exits; returns whether it exited cleanly.
    pub async fn stop(&mut self) -> bool {
        let Some(mut child) = self.child.take() else {
            return true;
        };
        signal_group(&child, nix::sys::signal::Signal::SIGTERM);
        match tokio::time::timeout(Duration::from_secs(30), child.wait()).await {
            Ok(Ok(status)) => status.success(),
            _ => {
                let _ = child.kill().await;
                false
            }
        }
    }

    /// Starts the manager again (after [`Self::kill`] or [`Self::stop`]) with the same options.
    pub async fn restart(&mut self) {
        self.kill().await;
        self.spawn().await;
    }
}

/// Sends `signal` to the child's process group (the manager, or buildah and the manager it runs).
fn signal_group(child: &Child, signal: nix::sys::signal::Signal) {
    if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), signal);
    }
}

fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

impl Drop for ManagerProcess {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let refused = self.unexpected_forbidden();
            if !refused.is_empty() {
                if let Some(child) = self.child.as_mut() {
                    signal_group(child, nix::sys::signal::Signal::SIGKILL);
                }
                let lines: Vec<String> = refused
                    .iter()
                    .map(|f| format!("  {} {}: {}", f.method, f.path, f.message))
                    .collect();
                panic!(
                    "the manager was answered Forbidden {} time(s) under the shipped RBAC:\n{}",
                    refused.len(),
                    lines.join("\n")
                );
            }
        }
        if std::thread::panicking() {
            eprintln!(
                "----- manager log ({}) -----\n{}\n----- end of manager log -----",
                self.log_path.display(),
                tail(&self.log_path, 200)
            );
        }
        if let Some(child) = self.child.as_mut() {
            signal_group(child, nix::sys::signal::Signal::SIGKILL);
            let _ = child.start_kill();
        }
    }
}

/// Runs the manager binary once with `args` (a subcommand such as `handback`) as the administrator of the cluster
/// behind `kubeconfig`; fails the test unless it succeeds, and returns what it printed. Asynchronous, because the
/// API emulator serves from the test's own runtime.
pub async fn run_manager_command(kubeconfig: &std::path::Path, args: &[&str]) -> String {
    let (code, printed, errors) = run_manager_command_status(kubeconfig, args).await;
    assert_eq!(code, Some(0), "manager {args:?}: {errors}");
    printed
}

/// Runs the manager binary once with `args` as the administrator of the cluster behind `kubeconfig`, whatever
/// its exit status; returns the status code and what it printed (stdout, then stderr).
pub async fn run_manager_command_status(kubeconfig: &std::path::Path, args: &[&str]) -> (Option<i32>, String, String) {
    let output = tokio::process::Command::new(manager_binary())
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .output()
        .await
        .expect("run the manager binary");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).to_string(),
        String::from_utf8_lossy(&output.stderr).to_string(),
    )
}

/// Runs the shipped image's `/manager` once with `args` and no cluster (as user 65532, buildah's chroot isolation),
/// for checks of the shipped binary itself; `dir` holds the container's storage. Returns whatever it did: the
/// caller asserts the exit status.
pub fn run_image_once(archive: &Path, dir: &Path, args: &[&str]) -> std::process::Output {
    let container = ImageContainer::create(archive, dir);
    container
        .buildah()
        .args(["run", "--isolation", "chroot", "--user", "65532:65532"])
        .arg(&container.name)
        .arg("--")
        .arg("/manager")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run buildah (apt-get install buildah): {e}"))
}
