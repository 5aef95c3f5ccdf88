//! The Kubernetes API a sandbox runs on: an API emulator of its own (nothing to build: the quick start) or a real
//! control plane (etcd, kube-apiserver and kube-controller-manager as `e2e/substrate/provision.sh` builds them).
//! Either way the manager reaches it only through a fault proxy ([`e2e::harness::api_proxy`]): the chaos run's
//! API faults and watch cuts and the benchmark's request counts are made there, the same on both.

use std::path::Path;
use std::sync::{Arc, Mutex};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

use e2e::harness::Kubectl;
use e2e::harness::api_proxy::ApiProxy;
use e2e::harness::fault_proxy::{Fault, FaultProxy, kube_watch_expired_event};
use kube_emulator::{ApiServer, GroupResource, ServerConfig, ServerHandle};
use substrate::{ControlPlane, Provisioned, SUBSTRATE_ENV, Substrate};

use crate::SandboxError;

/// Which Kubernetes API the sandbox starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ControlPlaneKind {
    /// The API emulator: ready in about a second, nothing to provision.
    Emulator,
    /// A real kube-apiserver and kube-controller-manager (provisioned on first use).
    #[default]
    Real,
}

impl ControlPlaneKind {
    /// Its name on the command line.
    pub fn flag(self) -> &'static str {
        match self {
            ControlPlaneKind::Emulator => "emulator",
            ControlPlaneKind::Real => "real",
        }
    }

    /// kubectl for a sandbox's `kubeconfig`: the provisioned one (the control plane's version) on the real
    /// control plane, the one on `PATH` on the emulator.
    pub fn kubectl(self, kubeconfig: &Path, home: &Path) -> Result<Kubectl, SandboxError> {
        let kubectl = Kubectl::new(kubeconfig, home);
        match self {
            ControlPlaneKind::Emulator => Ok(kubectl),
            ControlPlaneKind::Real => Provisioned::locate()
                .kubectl()
                .map(|program| kubectl.with_program(&program))
                .map_err(|e| SandboxError::start("kubectl", e)),
        }
    }

    /// What the test run asks for, as `TestCluster::start` reads it (`E2E_CONTROL_PLANE=real`, else the emulator).
    pub fn of_test_run() -> Self {
        match std::env::var(e2e::harness::cluster::CONTROL_PLANE_ENV).as_deref() {
            Ok("real") => ControlPlaneKind::Real,
            _ => ControlPlaneKind::Emulator,
        }
    }
}

/// A request kind the manager sent, and how often.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestRow {
    /// The Kubernetes verb (`get`, `list`, `watch`, `create`, …).
    pub verb: String,
    /// The resource's plural (`secrets`, `nebariapps`).
    pub resource: String,
    /// The subresource (`""` for none).
    pub subresource: String,
    /// How many.
    pub count: u64,
}

enum Backend {
    Emulator(ServerHandle),
    Real {
        /// Locked only to restart its controller manager.
        plane: Box<Mutex<ControlPlane>>,
    },
}

/// The running API and the proxy in front of it.
pub struct SandboxApi {
    // The proxy stops before the server behind it.
    proxy: ApiProxy,
    backend: Backend,
    /// kubectl as the administrator.
    kubectl: Kubectl,
}

impl SandboxApi {
    /// Starts the API `kind` names with its state under `work_dir`, and the proxy in front of it. The real
    /// control plane is a private one on the test run's etcd under `substrate run`, else one of the sandbox's
    /// own (provisioned first when the cache lacks it).
    pub async fn start(
        kind: ControlPlaneKind,
        config: ServerConfig,
        kubeconfig: &Path,
        work_dir: &Path,
    ) -> Result<Self, SandboxError> {
        let backend = match kind {
            ControlPlaneKind::Emulator => {
                let server = ApiServer::start(config)
                    .await
                    .map_err(|e| SandboxError::start("API emulator", e))?;
                server
                    .write_kubeconfig(kubeconfig)
                    .map_err(|e| SandboxError::start("kubeconfig", e))?;
                Backend::Emulator(server)
            }
            ControlPlaneKind::Real => {
                let dir = work_dir.join("control-plane");
                let plane = match std::env::var_os(SUBSTRATE_ENV) {
                    Some(_) => {
                        let substrate = Substrate::from_env().map_err(|e| SandboxError::start("control plane", e))?;
                        substrate.private_control_plane(&dir).await
                    }
                    None => {
                        crate::provision(&[]).await?;
                        ControlPlane::start(&Provisioned::locate(), &dir).await
                    }
                }
                .map_err(|e| SandboxError::start("control plane", e))?;
                std::fs::copy(plane.admin_kubeconfig(), kubeconfig)
                    .map_err(|e| SandboxError::start("kubeconfig", e))?;
                Backend::Real {
                    plane: Box::new(Mutex::new(plane)),
                }
            }
        };
        let proxy = ApiProxy::start(kubeconfig).await;
        let kubectl = kind.kubectl(kubeconfig, &work_dir.join("kubectl-home"))?;
        Ok(Self {
            proxy,
            backend,
            kubectl,
        })
    }

    /// The API server's own URL (the administrator's; the manager uses the proxy's).
    pub fn url(&self) -> String {
        match &self.backend {
            Backend::Emulator(server) => server.url().to_string(),
            Backend::Real { plane, .. } => lock(plane).url().to_string(),
        }
    }

    /// Whether it is the real control plane.
    pub fn is_real(&self) -> bool {
        matches!(self.backend, Backend::Real { .. })
    }

    /// kubectl as the administrator, at the control plane's version on the real one.
    pub fn kubectl(&self) -> &Kubectl {
        &self.kubectl
    }

    /// The CRDs to install for `crds`: on the real control plane Gateway API's own replace the fixture's.
    pub fn crds_for(&self, crds: Vec<CustomResourceDefinition>) -> Vec<CustomResourceDefinition> {
        match self.backend {
            Backend::Emulator(_) => crds,
            Backend::Real { .. } => e2e::harness::cluster::with_upstream_gateway_api(&crds),
        }
    }

    /// After installing CRDs: the real controller manager's garbage collector learns new kinds at a restart
    /// (else only at its next discovery resync).
    pub fn crds_installed(&self) -> Result<(), SandboxError> {
        match &self.backend {
            Backend::Emulator(_) => Ok(()),
            Backend::Real { plane, .. } => lock(plane)
                .restart_controller_manager()
                .map_err(|e| SandboxError::start("kube-controller-manager", e)),
        }
    }

    /// Writes the manager's kubeconfig: through the proxy, authenticating with `token`.
    pub fn write_manager_kubeconfig(&self, path: &Path, token: &str) -> Result<(), SandboxError> {
        std::fs::write(path, self.proxy.kubeconfig(Some(token))).map_err(|e| SandboxError::start("kubeconfig", e))
    }

    /// The proxy between the manager and the API.
    pub fn faults(&self) -> &FaultProxy {
        self.proxy.faults()
    }

    /// Ends every watch the manager has open and answers each one's resumption `410 Expired`, as after an etcd
    /// compaction (the real apiserver's watch cache would serve resumptions this recent from memory).
    pub fn expire_watches(&self) {
        let open = self.faults().open_streams("watch *");
        if let Ok(times @ 1..) = u32::try_from(open) {
            self.faults().add_fault(
                Fault::route("watch *")
                    .respond(200, kube_watch_expired_event())
                    .times(times),
            );
        }
        self.faults().cut_streams("watch *");
    }

    /// Every stored object, by resource.
    pub fn all_objects(&self) -> Vec<(GroupResource, Arc<Value>)> {
        match &self.backend {
            Backend::Emulator(server) => server.all_objects(),
            Backend::Real { .. } => e2e::harness::cluster::every_object(self.kubectl.kubeconfig())
                .into_iter()
                .map(|(qualified, object)| {
                    let (resource, group) = qualified.split_once('.').unwrap_or((qualified.as_str(), ""));
                    let name = GroupResource {
                        group: group.to_string(),
                        resource: resource.to_string(),
                    };
                    (name, Arc::new(object))
                })
                .collect(),
        }
    }

    /// The requests the API server refused `user` so far (`METHOD path: message`).
    pub fn refusals_of(&self, user: &str) -> Vec<String> {
        match &self.backend {
            Backend::Emulator(server) => server
                .forbidden_responses()
                .into_iter()
                .filter(|f| f.user == user)
                .map(|f| format!("{} {}: {}", f.method, f.path, f.message))
                .collect(),
            Backend::Real { plane, .. } => {
                let audit_log = lock(plane).audit_log().to_path_buf();
                substrate::audit::forbidden_for(&audit_log, user)
                    .into_iter()
                    .map(|r| format!("{} {}: {}", r.verb, r.path, r.message))
                    .collect()
            }
        }
    }

    /// Every request `user` made that reached the authorizer, as `(verb, resource, namespace)`.
    pub fn requests_of(&self, user: &str) -> Vec<(String, String, String)> {
        match &self.backend {
            Backend::Emulator(server) => server
                .decisions()
                .into_iter()
                .filter(|d| d.user == user)
                .map(|d| (d.verb, d.resource, d.namespace))
                .collect(),
            Backend::Real { plane, .. } => {
                let audit_log = lock(plane).audit_log().to_path_buf();
                substrate::audit::decisions(&audit_log)
                    .into_iter()
                    .filter(|d| d.user == user)
                    .map(|d| (d.verb, d.resource, d.namespace))
                    .collect()
            }
        }
    }

    /// The manager's requests since the proxy's counters were last reset, by verb and resource.
    pub fn manager_requests(&self) -> Vec<RequestRow> {
        self.faults()
            .counters()
            .into_iter()
            .filter_map(|(key, count)| {
                // `METHOD verb resource[/subresource][ metadata]`; other paths (discovery) are left out.
                let mut words = key.split(' ').skip(1);
                let (verb, target) = (words.next()?, words.next()?);
                if verb.starts_with('/') {
                    return None;
                }
                let (resource, subresource) = target.split_once('/').unwrap_or((target, ""));
                // The plural alone, as the benchmark's tables name requests.
                let resource = resource.split_once('.').map_or(resource, |(plural, _)| plural);
                Some(RequestRow {
                    verb: verb.to_string(),
                    resource: resource.to_string(),
                    subresource: subresource.to_string(),
                    count,
                })
            })
            .collect()
    }

    /// Stops the API server (the proxy with it).
    pub async fn stop(self) {
        match self.backend {
            Backend::Emulator(server) => server.shutdown().await,
            // Dropping the control plane stops its processes.
            Backend::Real { plane, .. } => drop(plane),
        }
    }
}

fn lock(plane: &Mutex<ControlPlane>) -> std::sync::MutexGuard<'_, ControlPlane> {
    // A panic while holding the lock leaves a control plane that still runs.
    plane.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
