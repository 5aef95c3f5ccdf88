//! The real components the end-to-end tests run on: a Kubernetes control plane (etcd, kube-apiserver,
//! kube-controller-manager), Keycloak, and the networking a NebariApp is served through (Envoy Gateway with
//! Envoy, cert-manager), provisioned by `e2e/substrate/provision.sh` into a cache outside the
//! checkout and started here as child processes of the test run.
//!
//! One process (`substrate run -- <command>`, the `substrate` binary) starts them once for a whole test run and
//! hands their coordinates to the command through [`SUBSTRATE_ENV`]; each test then attaches with
//! [`Substrate::from_env`] and isolates itself by namespace and unique names. Starting them per test would cost
//! 10–30 s each (measured in `docs/substrate.md`).

pub mod admission_checks;
pub mod audit;
mod cache;
mod control_plane;
mod keycloak;
pub mod networking;
mod pki;
mod process;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use cache::{Provisioned, versions};
pub use control_plane::{ControlPlane, client_for};
pub use keycloak::{KeycloakFlavour, RealKeycloak};
pub use networking::{NetworkingEndpoint, RealNetworking};
pub use pki::ClusterCa;

/// Environment variable naming the running substrate's description file (`substrate.json`).
pub const SUBSTRATE_ENV: &str = "E2E_SUBSTRATE";

/// Why the substrate could not be provisioned, started or attached to.
#[derive(Debug, thiserror::Error)]
pub enum SubstrateError {
    /// A provisioned binary is missing from the cache.
    #[error("{what} is not provisioned at {path}: run e2e/substrate/provision.sh (a first run takes about 5 minutes)")]
    NotProvisioned {
        /// What is missing.
        what: String,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// A file could not be read or written, or a process not started.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A certificate could not be made.
    #[error("cannot make a certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    /// A component did not become ready in time.
    #[error("{component} did not become ready within {seconds} s (last: {last}); its log: {log}")]
    NotReady {
        /// The component.
        component: String,
        /// The deadline.
        seconds: u64,
        /// The last thing observed.
        last: String,
        /// Its log file.
        log: PathBuf,
    },
    /// A component exited while it was expected to run.
    #[error("{component} exited ({status}); its log: {log}; it ended with:\n{tail}")]
    Exited {
        /// The component.
        component: String,
        /// Its exit status.
        status: String,
        /// Its log file.
        log: PathBuf,
        /// The last lines of its log, kept here because the log's directory is often a test's and is removed
        /// with it.
        tail: String,
    },
    /// The description file is missing or unreadable.
    #[error("the real substrate is not running for this test: {0}")]
    NotAttached(String),
}

impl SubstrateError {
    fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let what = what.into();
        move |source| SubstrateError::Io { what, source }
    }
}

/// Where one Keycloak of the substrate answers and who administers it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct KeycloakEndpoint {
    /// The base URL (`http://127.0.0.1:<port>`), also the fixed hostname tokens are issued for.
    pub url: String,
    /// The bootstrap administrator of the master realm.
    pub admin_username: String,
    /// Its password.
    pub admin_password: String,
}

/// What a running substrate tells the tests attaching to it: written by `substrate run`, read by
/// [`Substrate::from_env`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Substrate {
    /// A kubeconfig of a cluster administrator (`system:masters`).
    pub admin_kubeconfig: PathBuf,
    /// The apiserver's URL.
    pub apiserver_url: String,
    /// The etcd the control plane stores in; tests that need a cluster of their own start a private apiserver
    /// on it ([`Substrate::private_control_plane`]).
    pub etcd_url: String,
    /// The cluster CA (serving and client certificates), PEM file.
    pub ca_cert: PathBuf,
    /// Its private key, so tests can mint client certificates for the users they play.
    pub ca_key: PathBuf,
    /// The apiserver's audit log (JSON lines).
    pub audit_log: PathBuf,
    /// kubectl at the control plane's version.
    pub kubectl: PathBuf,
    /// Keycloak with the default features (standard token exchange, v2), when started.
    pub keycloak: Option<KeycloakEndpoint>,
    /// Keycloak with the v1 token-exchange and fine-grained-permissions preview features, when started.
    pub keycloak_v1: Option<KeycloakEndpoint>,
    /// Envoy Gateway (with Envoy) and cert-manager on this control plane, when started.
    #[serde(default)]
    pub networking: Option<NetworkingEndpoint>,
}

impl Substrate {
    /// The substrate the test run started, from [`SUBSTRATE_ENV`]; fails with instructions when there is none.
    pub fn from_env() -> Result<Self, SubstrateError> {
        let path = std::env::var_os(SUBSTRATE_ENV).ok_or_else(|| {
            SubstrateError::NotAttached(format!(
                "{SUBSTRATE_ENV} is not set. Run the tests through the substrate, e.g. \
                 `cargo run -p substrate -- run -- cargo nextest run -p e2e`, or all of them with \
                 `e2e/test.sh`"
            ))
        })?;
        Self::read(Path::new(&path))
    }

    /// Reads a description file.
    pub fn read(path: &Path) -> Result<Self, SubstrateError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| SubstrateError::NotAttached(format!("cannot read {}: {e}", path.display())))?;
        serde_json::from_str(&text)
            .map_err(|e| SubstrateError::NotAttached(format!("{} is not a substrate description: {e}", path.display())))
    }

    /// Writes the description file.
    pub fn write(&self, path: &Path) -> Result<(), SubstrateError> {
        let text = serde_json::to_string_pretty(self).map_err(|e| SubstrateError::Io {
            what: "serialize the substrate description".into(),
            source: std::io::Error::other(e),
        })?;
        std::fs::write(path, text).map_err(SubstrateError::io(format!("write {}", path.display())))
    }

    /// Starts a control plane only the caller sees (kube-apiserver and kube-controller-manager on the shared
    /// etcd, under a prefix of its own), with state and logs under `dir`.
    pub async fn private_control_plane(&self, dir: &Path) -> Result<ControlPlane, SubstrateError> {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let prefix = format!(
            "/private-{}-{}-{nanos:x}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        ControlPlane::start_private(&Provisioned::locate(), dir, &self.etcd_url, &prefix).await
    }

    /// The cluster CA, loaded to mint client certificates.
    pub fn ca(&self) -> Result<ClusterCa, SubstrateError> {
        ClusterCa::load(&self.ca_key)
    }

    /// Writes a kubeconfig at `path` that authenticates as `user` in `groups` with a client certificate of the
    /// cluster CA (a real identity: the apiserver's RBAC sees exactly this user and these groups).
    ///
    /// A client certificate carries one group; for more (a ServiceAccount's `system:serviceaccounts` and
    /// `system:serviceaccounts:<ns>`), the kubeconfig has an administrator impersonate the user and groups, which
    /// the apiserver authorizes and admits exactly as that user.
    pub fn write_user_kubeconfig(&self, path: &Path, user: &str, groups: &[&str]) -> Result<(), SubstrateError> {
        let ca = self.ca()?;
        let text = if groups.len() <= 1 {
            let client = ca.issue_client_cert(user, groups)?;
            pki::kubeconfig(&self.apiserver_url, &ca.cert_pem(), &client, None)
        } else {
            let admin = ca.issue_client_cert("e2e-impersonator", &["system:masters"])?;
            pki::kubeconfig(&self.apiserver_url, &ca.cert_pem(), &admin, Some((user, groups)))
        };
        std::fs::write(path, text).map_err(SubstrateError::io(format!("write {}", path.display())))
    }
}
