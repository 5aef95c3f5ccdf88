//! A real Kubernetes control plane on loopback: etcd, then kube-apiserver (secure serving from the substrate's
//! CA, RBAC, ServiceAccount tokens, client-certificate users, the admission plugins a cluster runs plus
//! `OwnerReferencesPermissionEnforcement`, an audit log), then kube-controller-manager with the controllers this
//! operator relies on (garbage collection, namespace deletion, ServiceAccounts and their tokens, the root CA
//! ConfigMap, ClusterRole aggregation). No scheduler or kubelet: no Pod ever runs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::SubstrateError;
use super::admission_checks::{self, AdmissionCheckRecorder};
use super::cache::Provisioned;
use super::pki::{self, ClusterCa};
use super::process::{Supervised, free_port, lost_port_race};

/// How many ports a control plane's apiserver is started on before its start fails (see [`lost_port_race`]).
const PORT_ATTEMPTS: u32 = 3;

/// The controllers kube-controller-manager runs (its canonical names).
const CONTROLLERS: &[&str] = &[
    "garbage-collector-controller",
    "namespace-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",
    "clusterrole-aggregation-controller",
    "validatingadmissionpolicy-status-controller",
];

/// What the audit log records: every request's metadata (who, what, the authorizer's decision and the binding
/// that allowed it), except the control plane's own chatter.
const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  users: [\"system:apiserver\", \"system:kube-controller-manager\"]
- level: None
  nonResourceURLs: [\"/healthz*\", \"/readyz*\", \"/livez*\", \"/version\"]
- level: Metadata
";

/// A running control plane; dropping it stops the three processes.
pub struct ControlPlane {
    // Stopped in reverse order of start (fields drop in declaration order).
    controller_manager: Supervised,
    controller_manager_program: PathBuf,
    controller_manager_args: Vec<String>,
    controller_manager_log: PathBuf,
    apiserver: Supervised,
    /// None when the control plane stores in another's etcd (a private control plane of one test).
    etcd: Option<Supervised>,
    /// Serves the apiserver's webhook authorizer; stops after the apiserver.
    _admission_checks: AdmissionCheckRecorder,
    etcd_url: String,
    url: String,
    admin_kubeconfig: PathBuf,
    ca_cert: PathBuf,
    ca_key: PathBuf,
    audit_log: PathBuf,
    startup: Duration,
}

fn write(path: &Path, text: &str) -> Result<(), SubstrateError> {
    std::fs::write(path, text).map_err(SubstrateError::io(format!("write {}", path.display())))
}

impl ControlPlane {
    /// Starts etcd, kube-apiserver and kube-controller-manager with their state and logs under `dir`, and waits
    /// until the apiserver is ready and the controller manager has created the `default` ServiceAccount.
    pub async fn start(binaries: &Provisioned, dir: &Path) -> Result<Self, SubstrateError> {
        Self::start_with(binaries, dir, None).await
    }

    /// Starts a control plane of its own (apiserver and controller manager, a CA of its own) that stores under
    /// `prefix` in the etcd at `etcd_url`: a cluster no other test sees, for the price of an apiserver start.
    pub async fn start_private(
        binaries: &Provisioned,
        dir: &Path,
        etcd_url: &str,
        prefix: &str,
    ) -> Result<Self, SubstrateError> {
        Self::start_with(binaries, dir, Some((etcd_url, prefix))).await
    }

    async fn start_with(
        binaries: &Provisioned,
        dir: &Path,
        shared_etcd: Option<(&str, &str)>,
    ) -> Result<Self, SubstrateError> {
        let started = Instant::now();
        std::fs::create_dir_all(dir).map_err(SubstrateError::io(format!("create {}", dir.display())))?;
        let pki_dir = dir.join("pki");
        std::fs::create_dir_all(&pki_dir).map_err(SubstrateError::io("create the pki directory"))?;

        let ca = ClusterCa::generate()?;
        let ca_cert = pki_dir.join("ca.crt");
        let ca_key = pki_dir.join("ca.key");
        write(&ca_cert, &ca.cert_pem())?;
        write(&ca_key, &ca.key_pem())?;
        let serving = ca.issue_serving_cert()?;
        write(&pki_dir.join("apiserver.crt"), &serving.cert_pem)?;
        write(&pki_dir.join("apiserver.key"), &serving.key_pem)?;
        // The ServiceAccount token signing key (ECDSA P-256), shared by the apiserver and the token controller.
        let sa_key = rcgen::KeyPair::generate()?;
        write(&pki_dir.join("sa.key"), &sa_key.serialize_pem())?;
        write(&pki_dir.join("sa.pub"), &sa_key.public_key_pem())?;

        let (etcd, etcd_url, prefix) = match shared_etcd {
            Some((url, prefix)) => (None, url.to_string(), prefix.to_string()),
            None => {
                let (etcd, url) = start_etcd(binaries, dir)?;
                (Some(etcd), url, "/registry".to_string())
            }
        };

        let audit_log = dir.join("audit.log");
        write(&dir.join("audit-policy.yaml"), AUDIT_POLICY)?;
        let (admission_checks, authorization) =
            AdmissionCheckRecorder::start(&ca, dir, &admission_checks::log_beside(&audit_log)).await?;
        let admin = ca.issue_client_cert("e2e-admin", &["system:masters"])?;
        let admin_kubeconfig = dir.join("admin.kubeconfig");
        write(
            &pki_dir.join("admin.pem"),
            &format!("{}{}", admin.cert_pem, admin.key_pem),
        )?;
        // The port is free when chosen but may be taken before the apiserver binds it (another test's component
        // starting at the same moment): then the apiserver exits at once, and a new port is tried.
        let mut attempt = 1;
        let (apiserver, url, client) = loop {
            let port = free_port()?;
            let url = format!("https://127.0.0.1:{port}");
            let mut apiserver_cmd = Command::new(binaries.kube_apiserver()?);
            apiserver_cmd
                .arg(format!("--etcd-servers={etcd_url}"))
                .arg(format!("--etcd-prefix={prefix}"))
                .arg("--bind-address=127.0.0.1")
                .arg("--advertise-address=127.0.0.1")
                .arg(format!("--secure-port={port}"))
                .arg(format!("--cert-dir={}", pki_dir.display()))
                .arg(format!("--tls-cert-file={}", pki_dir.join("apiserver.crt").display()))
                .arg(format!(
                    "--tls-private-key-file={}",
                    pki_dir.join("apiserver.key").display()
                ))
                .arg(format!("--client-ca-file={}", ca_cert.display()))
                .arg("--service-account-issuer=https://kubernetes.default.svc.cluster.local")
                .arg(format!(
                    "--service-account-key-file={}",
                    pki_dir.join("sa.pub").display()
                ))
                .arg(format!(
                    "--service-account-signing-key-file={}",
                    pki_dir.join("sa.key").display()
                ))
                .arg("--service-cluster-ip-range=10.0.0.0/24")
                // RBAC, behind a webhook that records the finalizer checks admission makes (see admission_checks).
                .arg(format!("--authorization-config={}", authorization.config.display()))
                // On by default in a cluster: NamespaceLifecycle, ServiceAccount, ValidatingAdmissionPolicy, …; a
                // cluster that cares about owner references turns this one on too (the operator must pass it).
                .arg("--enable-admission-plugins=OwnerReferencesPermissionEnforcement")
                // No node answers for the `kubernetes` Service's endpoints on loopback; do not keep trying.
                .arg("--endpoint-reconciler-type=none")
                .arg("--allow-privileged=true")
                .arg(format!(
                    "--audit-policy-file={}",
                    dir.join("audit-policy.yaml").display()
                ))
                .arg(format!("--audit-log-path={}", audit_log.display()))
                .arg("--audit-log-format=json")
                .arg("--profiling=false");
            // Observed here: kube-apiserver logs its shutdown at SIGTERM but has not exited 15 s later, so a stop
            // always waited out the whole grace (5 s per test). Its state is in etcd; a short grace, then SIGKILL.
            let mut apiserver = Supervised::spawn("kube-apiserver", apiserver_cmd, &dir.join("kube-apiserver.log"))?
                .with_stop_grace(Duration::from_millis(300));
            write(&admin_kubeconfig, &pki::kubeconfig(&url, &ca.cert_pem(), &admin, None))?;
            let client = client_for(&admin_kubeconfig).await?;
            match wait_ready(&mut apiserver, &client, Duration::from_secs(120)).await {
                Ok(()) => break (apiserver, url, client),
                Err(error) if attempt < PORT_ATTEMPTS && lost_port_race(&error) => {
                    eprintln!("[substrate] kube-apiserver lost port {port} to another process; trying another");
                    attempt += 1;
                }
                Err(error) => return Err(error),
            }
        };

        let kcm_cert = ca.issue_client_cert("system:kube-controller-manager", &["system:masters"])?;
        let kcm_kubeconfig = dir.join("kube-controller-manager.kubeconfig");
        write(&kcm_kubeconfig, &pki::kubeconfig(&url, &ca.cert_pem(), &kcm_cert, None))?;
        let controller_manager_args = vec![
            format!("--kubeconfig={}", kcm_kubeconfig.display()),
            format!("--controllers={}", CONTROLLERS.join(",")),
            "--leader-elect=false".to_string(),
            "--secure-port=0".to_string(),
            format!(
                "--service-account-private-key-file={}",
                pki_dir.join("sa.key").display()
            ),
            format!("--root-ca-file={}", ca_cert.display()),
            "--profiling=false".to_string(),
        ];
        let controller_manager_program = binaries.kube_controller_manager()?;
        let controller_manager_log = dir.join("kube-controller-manager.log");
        let mut controller_manager = spawn_controller_manager(
            &controller_manager_program,
            &controller_manager_args,
            &controller_manager_log,
        )?;
        wait_default_service_account(&mut controller_manager, &client, Duration::from_secs(90)).await?;

        Ok(ControlPlane {
            controller_manager,
            controller_manager_program,
            controller_manager_args,
            controller_manager_log,
            apiserver,
            etcd,
            _admission_checks: admission_checks,
            etcd_url,
            url,
            admin_kubeconfig,
            ca_cert,
            ca_key,
            audit_log,
            startup: started.elapsed(),
        })
    }

    /// The etcd it stores in (private control planes of tests share it).
    pub fn etcd_url(&self) -> &str {
        &self.etcd_url
    }

    /// The apiserver's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A cluster administrator's kubeconfig.
    pub fn admin_kubeconfig(&self) -> &Path {
        &self.admin_kubeconfig
    }

    /// The administrator's client certificate and key, one PEM file (for an HTTP client of its own).
    pub fn admin_identity(&self) -> PathBuf {
        self.ca_cert.with_file_name("admin.pem")
    }

    /// The CA certificate file.
    pub fn ca_cert(&self) -> &Path {
        &self.ca_cert
    }

    /// The CA key file.
    pub fn ca_key(&self) -> &Path {
        &self.ca_key
    }

    /// The audit log.
    pub fn audit_log(&self) -> &Path {
        &self.audit_log
    }

    /// How long the start took, up to the controller manager's first ServiceAccount.
    pub fn startup(&self) -> Duration {
        self.startup
    }

    /// Restarts kube-controller-manager. Its garbage collector learns of kinds added by CRDs only at its next
    /// discovery resync (every 30 s); a restart after installing CRDs makes it collect their dependents at once,
    /// as on a cluster whose CRDs were installed long before.
    pub fn restart_controller_manager(&mut self) -> Result<(), SubstrateError> {
        self.controller_manager.stop(Duration::from_secs(5));
        self.controller_manager = spawn_controller_manager(
            &self.controller_manager_program,
            &self.controller_manager_args,
            &self.controller_manager_log,
        )?;
        Ok(())
    }

    /// Fails when one of the three processes has exited.
    pub fn check_running(&mut self) -> Result<(), SubstrateError> {
        if let Some(etcd) = &mut self.etcd {
            etcd.check_running()?;
        }
        self.apiserver.check_running()?;
        self.controller_manager.check_running()
    }
}

/// Starts kube-controller-manager.
fn spawn_controller_manager(program: &Path, args: &[String], log: &Path) -> Result<Supervised, SubstrateError> {
    let mut command = Command::new(program);
    command.args(args);
    Supervised::spawn("kube-controller-manager", command, log)
}

/// Starts etcd with its data under `dir`; returns it and its client URL.
fn start_etcd(binaries: &Provisioned, dir: &Path) -> Result<(Supervised, String), SubstrateError> {
    let etcd_port = free_port()?;
    let peer_port = free_port()?;
    let mut command = Command::new(binaries.etcd()?);
    command
        .arg(format!("--data-dir={}", dir.join("etcd").display()))
        .arg(format!("--listen-client-urls=http://127.0.0.1:{etcd_port}"))
        .arg(format!("--advertise-client-urls=http://127.0.0.1:{etcd_port}"))
        .arg(format!("--listen-peer-urls=http://127.0.0.1:{peer_port}"))
        .arg(format!("--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}"))
        .arg(format!("--initial-cluster=default=http://127.0.0.1:{peer_port}"))
        // A throwaway store: durability across power loss buys nothing here and costs fsyncs.
        .arg("--unsafe-no-fsync=true")
        // Every private control plane of a run leaves its few megabytes behind; the default 2 GiB is too tight.
        .arg("--quota-backend-bytes=8589934592")
        .arg("--log-level=warn");
    let etcd = Supervised::spawn("etcd", command, &dir.join("etcd.log"))?;
    Ok((etcd, format!("http://127.0.0.1:{etcd_port}")))
}

/// Waits until `/readyz` answers `ok`.
async fn wait_ready(apiserver: &mut Supervised, client: &kube::Client, limit: Duration) -> Result<(), SubstrateError> {
    wait_for_answer(apiserver, client, "/readyz", |text| text.trim() == "ok", limit).await
}

/// Waits until the ServiceAccount controller has made `default/default` (the controller manager is working).
async fn wait_default_service_account(
    controller_manager: &mut Supervised,
    client: &kube::Client,
    limit: Duration,
) -> Result<(), SubstrateError> {
    let path = "/api/v1/namespaces/default/serviceaccounts/default";
    wait_for_answer(controller_manager, client, path, |_| true, limit).await
}

/// Polls `GET path` until it succeeds with a body `accept` takes, failing when `process` exits or `limit` passes.
async fn wait_for_answer(
    process: &mut Supervised,
    client: &kube::Client,
    path: &str,
    accept: impl Fn(&str) -> bool,
    limit: Duration,
) -> Result<(), SubstrateError> {
    let accept = &accept;
    process
        .wait_ready(limit, Duration::from_millis(250), || async move {
            let request = hyper::Request::get(path).body(Vec::new()).map_err(|e| e.to_string())?;
            match client.request_text(request).await {
                Ok(text) if accept(&text) => Ok(()),
                Ok(text) => Err(text),
                Err(error) => Err(error.to_string()),
            }
        })
        .await
}

/// A kube client for a kubeconfig file.
pub async fn client_for(kubeconfig: &Path) -> Result<kube::Client, SubstrateError> {
    let invalid = |e: &dyn std::fmt::Display| SubstrateError::Io {
        what: format!("load {}", kubeconfig.display()),
        source: std::io::Error::other(e.to_string()),
    };
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).map_err(|e| invalid(&e))?;
    let config = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .map_err(|e| invalid(&e))?;
    kube::Client::try_from(config).map_err(|e| invalid(&e))
}
