//! The sandbox: the whole operator running with no cluster, for people who want to try it.
//!
//! It starts a Kubernetes API ([`api`]: a real control plane, or the API emulator) and writes a kubeconfig, installs the operator's CRDs and the third-party ones it
//! writes, prepares the surroundings each controller expects (shared Gateways, Keycloak, Rancher, a real
//! Keystone, a real Keycloak with a realm for each controller that uses one, credentials Secrets), plays cert-manager and Envoy
//! Gateway, starts the real `manager` binary, and applies `manifests/samples`. Everything stops on Ctrl-C.
//!
//! The real Keycloak is the test run's (`E2E_SUBSTRATE`, set by `substrate run`) when there is one, else one the
//! sandbox starts from the copy `e2e/substrate/provision.sh` prepared.

pub mod api;
pub mod bench;
pub mod chaos;
pub mod keystone;
pub mod kinds;
pub mod manager;
pub mod surroundings;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use kube::Client;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use api::{ControlPlaneKind, SandboxApi};
use e2e::fixtures::envoy_gateway::EnvoyGateway;
use e2e::fixtures::{standins, third_party_crds};
use e2e::harness::cluster::client_for;
use e2e::keystone::fault_proxy::FaultProxy;
use kube_emulator::ServerConfig;
use manager::ManagerChild;
use substrate::{KeycloakEndpoint, KeycloakFlavour, Provisioned, RealKeycloak, SUBSTRATE_ENV, Substrate};

/// How to start the sandbox.
#[derive(Clone, Debug)]
pub struct SandboxOptions {
    /// Where to write the kubeconfig.
    pub kubeconfig: PathBuf,
    /// The Kubernetes API to run on.
    pub control_plane: ControlPlaneKind,
    /// Address of the API emulator (port 0 picks a free port).
    pub api_listen: SocketAddr,
    /// Directory for logs and state (Keystone's database, the manager log).
    pub work_dir: PathBuf,
    /// The repository root (for `manifests/samples`).
    pub repo_root: PathBuf,
    /// Put Keystone behind a [`FaultProxy`] (the manager reaches Keystone only through it), for the chaos run.
    pub keystone_fault_proxy: bool,
    /// Extra manager flags (after the sandbox's own, so they win).
    pub manager_args: Vec<String>,
    /// Apply `manifests/samples` once the manager runs (a benchmark leaves them out to count only its own).
    pub apply_samples: bool,
    /// Have the API emulator (only) log every request (arrival, time taken, answer) to `api-requests.log` in the work
    /// directory: evidence for a client-side report of a request without an answer.
    pub api_request_log: bool,
    /// The real Keycloak the NebariApp and ManagedRancherProject controllers use (each in a realm of its own).
    /// `None`: the test run's (`E2E_SUBSTRATE`) when set, else one the sandbox provisions and starts itself.
    pub keycloak: Option<KeycloakEndpoint>,
}

impl SandboxOptions {
    /// Options for a sandbox under `work_dir`, its kubeconfig there too, the API emulator on a free port.
    pub fn in_dir(work_dir: &Path, repo_root: &Path) -> Self {
        Self {
            kubeconfig: work_dir.join("kubeconfig"),
            control_plane: ControlPlaneKind::default(),
            api_listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            work_dir: work_dir.to_path_buf(),
            repo_root: repo_root.to_path_buf(),
            keystone_fault_proxy: false,
            manager_args: Vec::new(),
            apply_samples: true,
            api_request_log: false,
            keycloak: None,
        }
    }
}

/// Why the sandbox could not start.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// A component failed to start.
    #[error("{component}: {message}")]
    Start {
        /// Which component.
        component: &'static str,
        /// What went wrong.
        message: String,
    },
}

impl SandboxError {
    fn start(component: &'static str, message: impl ToString) -> Self {
        SandboxError::Start {
            component,
            message: message.to_string(),
        }
    }
}

/// The kinds of the samples, for `kubectl get`.
const SAMPLE_KINDS: &str = "nebariapps,keystoneapplicationcredentials,managedrancherprojects,rancherprojectinventories";

/// Waits until every sample has a `Ready` condition (whatever its status), so "ready" is never announced over
/// objects with a blank status.
async fn wait_for_first_reconcile(kubectl: &e2e::harness::Kubectl) -> Result<(), SandboxError> {
    e2e::harness::try_wait_until(
        "every sample reconciled once",
        e2e::harness::Deadline::secs(180),
        || async {
            let listed = kubectl.run(&["get", SAMPLE_KINDS, "-A", "-o", "json"]).await;
            if !listed.success {
                return Err(listed.stderr);
            }
            let list: serde_json::Value = serde_json::from_str(&listed.stdout).map_err(|e| e.to_string())?;
            let items = list["items"].as_array().cloned().unwrap_or_default();
            let blank: Vec<String> = items
                .iter()
                .filter(|item| {
                    !item["status"]["conditions"]
                        .as_array()
                        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready"))
                })
                .map(|item| {
                    format!(
                        "{}/{}",
                        item["kind"].as_str().unwrap_or_default(),
                        item["metadata"]["name"].as_str().unwrap_or_default()
                    )
                })
                .collect();
            if items.is_empty() {
                Err("no samples listed yet".to_string())
            } else if blank.is_empty() {
                Ok(Some(()))
            } else {
                Err(format!("not reconciled yet: {}", blank.join(", ")))
            }
        },
    )
    .await
    .map_err(|e| SandboxError::start("samples", e))
}

/// A running sandbox.
pub struct Sandbox {
    api: SandboxApi,
    manager: ManagerChild,
    shutdown: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
    /// Reports on routes, policies and listeners as Envoy Gateway would (stops when dropped).
    envoy_gateway: EnvoyGateway,
    nebari: surroundings::nebari::NebariSandbox,
    keystone: keystone::KeystoneSandbox,
    keystone_proxy: Option<FaultProxy>,
    rancher: surroundings::rancher::ProjectSandbox,
    /// The Keycloak the sandbox started itself (none when it uses another's); dropped last, after the realm.
    keycloak_server: Option<RealKeycloak>,
    kubeconfig: PathBuf,
    manager_log: PathBuf,
    manager_user: String,
}

impl Sandbox {
    /// Starts every component and applies the samples.
    pub async fn start(options: SandboxOptions) -> Result<Self, SandboxError> {
        std::fs::create_dir_all(&options.work_dir).map_err(|e| SandboxError::start("work directory", e))?;
        let emulator = ServerConfig {
            listen: options.api_listen,
            request_log: options
                .api_request_log
                .then(|| options.work_dir.join("api-requests.log")),
            ..ServerConfig::default()
        };
        let api = SandboxApi::start(options.control_plane, emulator, &options.kubeconfig, &options.work_dir).await?;
        let client = client_for(&options.kubeconfig).await;
        let shutdown = CancellationToken::new();

        install_crds(&client, &api).await?;
        // Keystone and a Keycloak of the sandbox's own are both slow to start: side by side.
        let (keystone, keycloak) = tokio::join!(keystone::prepare(&client, &options.work_dir), real_keycloak(&options));
        let (keystone, (endpoint, keycloak_server, shared)) = (keystone?, keycloak?);
        // On a Keycloak others use too (several sandboxes of one test run), realm names of their own.
        let realm = |name: &str| {
            if shared {
                e2e::harness::keycloak::unique_realm(name)
            } else {
                name.to_string()
            }
        };
        let nebari = surroundings::nebari::prepare(&client, endpoint.clone(), &realm(surroundings::nebari::REALM))
            .await
            .map_err(|e| SandboxError::start("NebariApp surroundings", e))?;
        let keystone_proxy = match options.keystone_fault_proxy {
            false => None,
            true => Some(keystone.put_behind_fault_proxy(&client).await?),
        };
        let defaults = surroundings::rancher::ProjectSandboxOptions::default();
        let rancher = surroundings::rancher::sandbox_prepare(
            &client,
            surroundings::rancher::ProjectSandboxOptions {
                keycloak: Some(endpoint),
                realm: realm(&defaults.realm),
                ..defaults
            },
        )
        .await
        .map_err(|e| SandboxError::start("Rancher and Keycloak for ManagedRancherProject", e))?;
        let tasks = vec![tokio::spawn(standins::run_cert_manager(
            client.clone(),
            shutdown.clone(),
        ))];
        let envoy_gateway = EnvoyGateway::start(client.clone());

        // The manager runs as the shipped ServiceAccount, under the RBAC of manifests/default, as in a cluster.
        let kubectl = api.kubectl().clone();
        let (identity, token) = e2e::harness::install::install_identity(&kubectl, "default")
            .await
            .map_err(|e| SandboxError::start("the operator's ServiceAccount and RBAC", e))?;
        let manager_kubeconfig = options.work_dir.join("manager-kubeconfig");
        api.write_manager_kubeconfig(&manager_kubeconfig, &token)?;

        let manager_log = options.work_dir.join("manager.log");
        let mut args = Vec::new();
        args.extend(nebari.manager_args());
        args.extend(rancher.manager_args());
        args.extend(options.manager_args.iter().cloned());
        let manager = ManagerChild::start(&manager_kubeconfig, &identity.namespace, &manager_log, &args)
            .await
            .map_err(|e| SandboxError::start("manager", e))?;
        if options.apply_samples {
            let samples = options.repo_root.join("manifests/samples");
            let samples = samples.to_string_lossy();
            let applied = kubectl.run(&["apply", "-k", &samples]).await;
            if !applied.success {
                return Err(SandboxError::start("samples", applied.stderr));
            }
            wait_for_first_reconcile(&kubectl).await?;
        }
        Ok(Self {
            api,
            manager,
            shutdown,
            tasks,
            envoy_gateway,
            nebari,
            keystone,
            keystone_proxy,
            rancher,
            keycloak_server,
            kubeconfig: options.kubeconfig,
            manager_log,
            manager_user: identity.user,
        })
    }

    /// The kubeconfig to point kubectl at.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The manager's log file.
    pub fn manager_log(&self) -> &Path {
        &self.manager_log
    }

    /// The URL NebariApp's Keycloak is reached at (the fault proxy in front of the real server).
    pub fn keycloak_url(&self) -> &str {
        self.nebari.keycloak_url()
    }

    /// Keystone's URL.
    pub fn keystone_url(&self) -> &str {
        self.keystone.url()
    }

    /// The API server's URL.
    pub fn url(&self) -> String {
        self.api.url()
    }

    /// The API and the fault proxy in front of it (faults, watch cuts, the manager's request counts).
    pub fn api(&self) -> &SandboxApi {
        &self.api
    }

    /// The user the manager authenticates as (its ServiceAccount).
    pub fn manager_user(&self) -> &str {
        &self.manager_user
    }

    /// Where the manager serves its metrics.
    pub fn manager_metrics_url(&self) -> &str {
        self.manager.metrics_url()
    }

    /// Kills the manager with SIGKILL and starts it again (same flags, same log), as a crash and a restart by
    /// the kubelet would.
    pub async fn crash_and_restart_manager(&mut self) -> Result<(), SandboxError> {
        self.manager
            .crash_and_restart()
            .await
            .map_err(|e| SandboxError::start("manager restart", e))
    }

    /// The manager's process id (for its CPU and memory in `/proc`).
    pub fn manager_pid(&self) -> Option<u32> {
        self.manager.pid()
    }

    /// How many manager processes were started (one more than the crashes).
    pub fn manager_starts(&self) -> u32 {
        self.manager.starts()
    }

    /// The NebariApp controller's Keycloak realm (and the fault proxy in front of the server).
    pub fn nebari_keycloak(&self) -> &e2e::harness::keycloak::TestRealm {
        self.nebari.keycloak()
    }

    /// The Rancher emulator and the ManagedRancherProject controller's Keycloak realm.
    pub fn rancher(&self) -> &surroundings::rancher::ProjectSandbox {
        &self.rancher
    }

    /// The real Keystone.
    pub fn keystone_server(&self) -> &e2e::keystone::server::KeystoneServer {
        self.keystone.server()
    }

    /// The fault proxy in front of Keystone, when asked for.
    pub fn keystone_proxy(&self) -> Option<&FaultProxy> {
        self.keystone_proxy.as_ref()
    }

    /// The requests the API server refused the manager so far (`METHOD path: message`): the shipped RBAC is
    /// incomplete if there are any.
    pub fn manager_refusals(&self) -> Vec<String> {
        self.api.refusals_of(&self.manager_user)
    }

    /// Stops the manager (SIGTERM), the stand-ins and the emulators.
    pub async fn stop(mut self) {
        self.manager.stop().await;
        self.shutdown.cancel();
        self.envoy_gateway.stop();
        for task in self.tasks.drain(..) {
            let _ = task.await;
        }
        self.nebari.stop().await;
        self.keystone.stop();
        self.rancher.stop().await;
        drop(self.keycloak_server.take());
        self.api.stop().await;
    }
}

/// The real Keycloak for the NebariApp and ManagedRancherProject surroundings: the one the options name, else the test run's
/// (`E2E_SUBSTRATE`), else one started here from the provisioned copy (then also its server, which stops when
/// dropped). The flag says whether others may use the same Keycloak.
async fn real_keycloak(
    options: &SandboxOptions,
) -> Result<(KeycloakEndpoint, Option<RealKeycloak>, bool), SandboxError> {
    if let Some(endpoint) = &options.keycloak {
        return Ok((endpoint.clone(), None, true));
    }
    if std::env::var_os(SUBSTRATE_ENV).is_some() {
        let substrate = Substrate::from_env().map_err(|e| SandboxError::start("Keycloak", e))?;
        let endpoint = substrate.keycloak.ok_or_else(|| {
            SandboxError::start(
                "Keycloak",
                format!("the test run's substrate ({SUBSTRATE_ENV}) runs without Keycloak: run it with `--keycloak default` or `both`"),
            )
        })?;
        return Ok((endpoint, None, true));
    }
    provision(&["--keycloak-only"]).await?;
    let server = RealKeycloak::start(
        &Provisioned::locate(),
        KeycloakFlavour::Default,
        &options.work_dir.join("keycloak"),
    )
    .await
    .map_err(|e| SandboxError::start("Keycloak (for ManagedRancherProject)", e))?;
    Ok((server.endpoint().clone(), Some(server), false))
}

/// Runs `e2e/substrate/provision.sh` with `args` (`--keycloak-only`: about 30 s the first time; everything: a
/// few minutes the first time, for the Go build of the control plane), with the script's progress on the
/// terminal. What the cache already holds is kept, so later runs take a second.
pub(crate) async fn provision(args: &[&str]) -> Result<(), SandboxError> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../substrate/provision.sh");
    let status = tokio::process::Command::new("bash")
        .arg(script)
        .args(args)
        .stdout(std::process::Stdio::null())
        .status()
        .await
        .map_err(|e| SandboxError::start("provisioning", format!("cannot run {script}: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(SandboxError::start(
            "provisioning",
            format!(
                "{script} {} failed ({status}); its messages above say why",
                args.join(" ")
            ),
        ))
    }
}

async fn install_crds(client: &Client, api: &SandboxApi) -> Result<(), SandboxError> {
    let mut all = crds::all();
    all.extend(third_party_crds::for_nebari());
    e2e::harness::cluster::install_crds(client, "sandbox", &api.crds_for(all))
        .await
        .map_err(|e| SandboxError::start("CRDs", e))?;
    api.crds_installed()
}
