//! The control plane a test runs against: its own API emulator, the real control plane of the test run's
//! substrate ([`TestCluster::on_substrate`]), or a real cluster named by `E2E_KUBECONFIG`.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::Value;

use super::api_proxy::ApiProxy;
use super::fault_proxy::FaultProxy;
use super::kubectl::Kubectl;
use super::secret_hygiene;
use super::wait::{Deadline, wait_until};
use kube_emulator::{ApiServer, ServerConfig, ServerHandle};
use substrate::Substrate;

/// Environment variable naming a kubeconfig of a real cluster to test against instead of the emulator.
pub const REAL_CLUSTER_ENV: &str = "E2E_KUBECONFIG";

/// Environment variable choosing what [`TestCluster::start`] gives a test: `emulator` (the default) or `real`
/// (a private real control plane on the run's substrate, see [`substrate::Substrate::private_control_plane`]).
pub const CONTROL_PLANE_ENV: &str = "E2E_CONTROL_PLANE";

/// What a [`TestCluster`] runs against.
enum Target {
    /// An API emulator of the test's own.
    Emulator(ServerHandle),
    /// An outside cluster (`E2E_KUBECONFIG`).
    Outside,
    /// The run's shared real control plane.
    Shared(Substrate),
    /// A real control plane of the test's own, described as a substrate of its own.
    Private(Substrate, Box<substrate::ControlPlane>),
}

/// A scratch directory for one test (removed when its cluster is dropped).
fn scratch_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("e2e-")
        .tempdir()
        .expect("create a scratch directory")
}

/// How many requests of one kind a control plane served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestCount {
    /// The Kubernetes verb.
    pub verb: String,
    /// The API group (`""` for core).
    pub group: String,
    /// The resource.
    pub resource: String,
    /// The subresource (`""` for none).
    pub subresource: String,
    /// How many.
    pub count: u64,
}

impl RequestCount {
    /// Whether it is a write (create, update, patch, delete, deletecollection).
    pub fn is_write(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection"
        )
    }
}

/// The counts in `after` less those in `before` (kinds with no new requests left out).
pub fn counts_since(before: &[RequestCount], after: &[RequestCount]) -> Vec<RequestCount> {
    after
        .iter()
        .filter_map(|row| {
            let earlier = before
                .iter()
                .find(|b| {
                    b.verb == row.verb
                        && b.group == row.group
                        && b.resource == row.resource
                        && b.subresource == row.subresource
                })
                .map_or(0, |b| b.count);
            (row.count > earlier).then(|| RequestCount {
                count: row.count - earlier,
                ..row.clone()
            })
        })
        .collect()
}

/// A control plane for one test, with a scratch directory for its kubeconfig, kubectl home and logs.
pub struct TestCluster {
    /// The test's own real control plane, declared first so it stops before its directory is removed.
    private: Option<std::sync::Mutex<substrate::ControlPlane>>,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    emulator: Option<ServerHandle>,
    substrate: Option<Substrate>,
    /// What the test installed (the overlays whose RBAC it applied), for the decision log of a real control plane.
    labels: std::sync::Mutex<std::collections::BTreeSet<String>>,
    client: Client,
    kubectl: Kubectl,
    /// The fault proxy the manager reaches the API through, when the test asked for one.
    api_proxy: Option<ApiProxy>,
}

impl Drop for TestCluster {
    /// Writes a private real control plane's authorization decisions for `rbac-coverage`, and checks secret
    /// hygiene over everything the test left in the cluster (see [`super::secret_hygiene`]), unless the test
    /// already failed.
    fn drop(&mut self) {
        self.write_decision_log();
        if std::thread::panicking() {
            return;
        }
        let objects: Vec<(String, Value)> = match (&self.emulator, &self.private) {
            (Some(emulator), _) => emulator
                .all_objects()
                .into_iter()
                .map(|(gr, object)| (qualified(&gr.group, &gr.resource), object.as_ref().clone()))
                .collect(),
            // An outside cluster or the shared control plane hold other tests' objects too.
            (None, Some(_)) => every_object(&self.kubeconfig),
            (None, None) => return,
        };
        let (secrets, others): (Vec<_>, Vec<_>) = objects.iter().partition(|(resource, _)| resource == "secrets");
        let values = secret_hygiene::secret_values(secrets.iter().map(|(_, object)| object));
        if values.is_empty() {
            return;
        }
        let mut places = secret_hygiene::manager_logs(self.dir.path());
        places.extend(others.iter().map(|(resource, object)| {
            let name = format!(
                "{}/{}",
                object["metadata"]["namespace"].as_str().unwrap_or(""),
                object["metadata"]["name"].as_str().unwrap_or("")
            );
            (format!("{resource} {name}"), object.to_string())
        }));
        let leaks = secret_hygiene::leaks(&values, &places);
        assert!(
            leaks.is_empty(),
            "secret values stored in Secrets leaked:\n  {}",
            leaks.join("\n  ")
        );
    }
}

impl TestCluster {
    /// Starts the control plane [`CONTROL_PLANE_ENV`] asks for (a fresh emulator unless it says `real`), or
    /// connects to the cluster in `E2E_KUBECONFIG` when set.
    pub async fn start() -> Self {
        let dir = scratch_dir();
        match std::env::var_os(REAL_CLUSTER_ENV) {
            Some(path) => Self::assemble(dir, PathBuf::from(path), Target::Outside).await,
            None if std::env::var(CONTROL_PLANE_ENV).is_ok_and(|v| v == "real") => Self::private_real(dir).await,
            None => Self::emulated(dir).await,
        }
    }

    /// [`TestCluster::start`] with a [`FaultProxy`] in front of the API ([`TestCluster::api_faults`]): the
    /// ServiceAccount kubeconfigs the cluster writes (the manager's) and [`TestCluster::proxied_client`] reach the
    /// API through it; the test's own [`TestCluster::client`] and kubectl do not.
    pub async fn start_behind_fault_proxy() -> Self {
        let mut cluster = Self::start().await;
        cluster.api_proxy = Some(ApiProxy::start(&cluster.kubeconfig).await);
        cluster
    }

    /// The proxy in front of the API; fails clearly unless the test started with
    /// [`TestCluster::start_behind_fault_proxy`].
    pub fn api_faults(&self) -> &FaultProxy {
        self.api_proxy.as_ref().map(ApiProxy::faults).unwrap_or_else(|| {
            panic!("this test needs the API fault proxy: start it with TestCluster::start_behind_fault_proxy()")
        })
    }

    /// A kube client that reaches the API through the fault proxy as the administrator (for controllers the
    /// test runs in-process).
    pub async fn proxied_client(&self) -> Client {
        let proxy = self.api_proxy.as_ref().unwrap_or_else(|| {
            panic!("this test needs the API fault proxy: start it with TestCluster::start_behind_fault_proxy()")
        });
        let path = self.dir.path().join("kubeconfig-proxied-admin");
        std::fs::write(&path, proxy.kubeconfig(None)).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        client_for(&path).await
    }

    async fn emulated(dir: tempfile::TempDir) -> Self {
        let server = ApiServer::start(ServerConfig::default())
            .await
            .expect("start the API emulator");
        let kubeconfig = dir.path().join("kubeconfig");
        server.write_kubeconfig(&kubeconfig).expect("write kubeconfig");
        Self::assemble(dir, kubeconfig, Target::Emulator(server)).await
    }

    /// A real control plane of the test's own on the run's substrate: nothing another test does is visible in
    /// it, so tests written for a cluster of their own (fixed namespaces, cluster-wide managers) run unchanged.
    async fn private_real(dir: tempfile::TempDir) -> Self {
        let shared = Substrate::from_env().unwrap_or_else(|e| panic!("{CONTROL_PLANE_ENV}=real: {e}"));
        let plane = shared
            .private_control_plane(&dir.path().join("control-plane"))
            .await
            .unwrap_or_else(|e| panic!("start a private control plane: {e}"));
        let substrate = Substrate {
            admin_kubeconfig: plane.admin_kubeconfig().to_path_buf(),
            apiserver_url: plane.url().to_string(),
            etcd_url: plane.etcd_url().to_string(),
            ca_cert: plane.ca_cert().to_path_buf(),
            ca_key: plane.ca_key().to_path_buf(),
            audit_log: plane.audit_log().to_path_buf(),
            // Envoy Gateway and cert-manager watch the shared control plane only.
            networking: None,
            ..shared
        };
        let kubeconfig = substrate.admin_kubeconfig.clone();
        Self::assemble(dir, kubeconfig, Target::Private(substrate, Box::new(plane))).await
    }

    /// Attaches to the real control plane the test run started (`substrate run`), as its administrator, with
    /// kubectl at the control plane's version. Fails with instructions when the run has no substrate. The
    /// cluster is shared by the whole run: isolate by namespace and unique names.
    pub async fn on_substrate() -> Self {
        let substrate = Substrate::from_env().unwrap_or_else(|e| panic!("{e}"));
        let kubeconfig = substrate.admin_kubeconfig.clone();
        Self::assemble(scratch_dir(), kubeconfig, Target::Shared(substrate)).await
    }

    /// The cluster for `kubeconfig`: its client, and kubectl (the substrate's own version on a real control
    /// plane) with a HOME of its own in `dir`.
    async fn assemble(dir: tempfile::TempDir, kubeconfig: PathBuf, target: Target) -> Self {
        let client = client_for(&kubeconfig).await;
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).expect("create kubectl home");
        let kubectl = Kubectl::new(&kubeconfig, &home);
        let (emulator, substrate, private) = match target {
            Target::Emulator(server) => (Some(server), None, None),
            Target::Outside => (None, None, None),
            Target::Shared(substrate) => (None, Some(substrate), None),
            Target::Private(substrate, plane) => (None, Some(substrate), Some(std::sync::Mutex::new(*plane))),
        };
        let kubectl = match &substrate {
            Some(substrate) => kubectl.with_program(&substrate.kubectl),
            None => kubectl,
        };
        Self {
            private,
            dir,
            kubeconfig,
            emulator,
            substrate,
            labels: Default::default(),
            client,
            kubectl,
            api_proxy: None,
        }
    }

    /// The substrate this cluster belongs to (None on the emulator or an outside cluster).
    pub fn substrate(&self) -> Option<&Substrate> {
        self.substrate.as_ref()
    }

    /// The kubeconfig path to hand to processes.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The test's scratch directory (removed when the cluster is dropped).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A kube client for the test's own reads and writes.
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// kubectl against this cluster.
    pub fn kubectl(&self) -> &Kubectl {
        &self.kubectl
    }

    /// The emulator, for request counters and fault injection; fails clearly on a real cluster.
    pub fn emulator(&self) -> &ServerHandle {
        self.emulator.as_ref().unwrap_or_else(|| {
            panic!("this test needs the API emulator's hooks (counters/faults); unset {REAL_CLUSTER_ENV} to run it")
        })
    }

    /// How many write requests (create, update, patch, delete) the control plane has served so far (the
    /// emulator's counters, or the real apiserver's audit log); compare two readings to assert that a step wrote
    /// nothing.
    pub fn write_requests(&self) -> u64 {
        self.request_counts()
            .iter()
            .filter(|row| row.is_write())
            .map(|row| row.count)
            .sum()
    }

    /// Every request the control plane has served so far, counted per verb, group, resource and subresource
    /// (the emulator's counters, or the real apiserver's audit log); compare two readings for what a step did.
    pub fn request_counts(&self) -> Vec<RequestCount> {
        match &self.substrate {
            Some(substrate) => substrate::audit::counts(&substrate.audit_log)
                .into_iter()
                .map(|((verb, group, resource, subresource), count)| RequestCount {
                    verb,
                    group,
                    resource,
                    subresource,
                    count,
                })
                .collect(),
            None => self
                .emulator()
                .hooks()
                .counters()
                .into_iter()
                .map(|row| RequestCount {
                    verb: row.key.verb,
                    group: row.key.group,
                    resource: row.key.resource,
                    subresource: row.key.subresource,
                    count: row.count,
                })
                .collect(),
        }
    }

    /// How many requests of `verb` on `group`/`resource` (and `subresource`, `""` for none) the control plane
    /// has served so far, from the emulator's counters or the real apiserver's audit log.
    pub fn count_requests(&self, verb: &str, group: &str, resource: &str, subresource: &str) -> u64 {
        self.request_counts()
            .iter()
            .filter(|r| r.verb == verb && r.group == group && r.resource == resource && r.subresource == subresource)
            .map(|r| r.count)
            .sum()
    }

    /// Notes what the test installed (an overlay's RBAC) in the decision log `rbac-coverage` reads.
    pub fn label(&self, label: &str) {
        match &self.emulator {
            Some(emulator) => emulator.decision_log().label(label),
            None => {
                self.labels
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(label.to_string());
            }
        }
    }

    /// The real counterpart of the emulator's decision log: the audit log's decisions and the finalizer checks
    /// admission made (recorded by the control plane's webhook authorizer), in the emulator's file format, in
    /// `E2E_AUTHZ_LOG_DIR` (a private control plane only: the shared one's are other tests' too).
    ///
    /// An admission check counts as allowed: had RBAC refused it, the write it guards would have been answered
    /// 403, which fails the test (see [`substrate::audit::forbidden_for`]).
    fn write_decision_log(&self) {
        let (Some(substrate), Some(_)) = (&self.substrate, &self.private) else {
            return;
        };
        let Some(dir) = std::env::var_os(kube_emulator::DECISION_LOG_DIR_ENV) else {
            return;
        };
        let mut rows: std::collections::BTreeMap<substrate::audit::Decision, u64> = Default::default();
        for decision in substrate::audit::decisions(&substrate.audit_log) {
            *rows.entry(decision).or_default() += 1;
        }
        let checks = ::substrate::admission_checks::log_beside(&substrate.audit_log);
        for check in ::substrate::admission_checks::checks(&checks) {
            let decision = ::substrate::audit::Decision {
                user: check.user,
                verb: check.verb,
                group: check.group,
                resource: check.resource,
                namespace: check.namespace,
                path: String::new(),
                name: check.name,
                allowed: true,
                reason: "checked inside admission".into(),
            };
            *rows.entry(decision).or_default() += 1;
        }
        let file = kube_emulator::DecisionLogFile {
            labels: self
                .labels
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .cloned()
                .collect(),
            rows: rows
                .into_iter()
                .map(|(d, count)| kube_emulator::DecisionRow {
                    user: d.user,
                    verb: d.verb,
                    group: d.group,
                    resource: d.resource,
                    namespace: d.namespace,
                    path: d.path,
                    name: d.name,
                    allowed: d.allowed,
                    binding: d.reason,
                    rule: String::new(),
                    count,
                })
                .collect(),
        };
        let dir = PathBuf::from(dir);
        let path = dir.join(format!(
            "decisions-{}-real-{}.json",
            std::process::id(),
            substrate.apiserver_url.rsplit(':').next().unwrap_or("0")
        ));
        let written = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(&path, serde_json::to_vec(&file).unwrap_or_default()));
        if let Err(error) = written {
            eprintln!("cannot write the decision log {}: {error}", path.display());
        }
    }

    /// Whether the test has a real control plane of its own (see [`CONTROL_PLANE_ENV`]).
    pub fn is_private_real(&self) -> bool {
        self.private.is_some()
    }

    /// Whether the test runs against the emulator.
    pub fn is_emulated(&self) -> bool {
        self.emulator.is_some()
    }

    /// Writes a copy of the test's kubeconfig that authenticates with `token` instead (a ServiceAccount's, a
    /// tenant's), through the API fault proxy when the test has one.
    pub fn write_kubeconfig_for_token(&self, path: &Path, token: &str) {
        match &self.api_proxy {
            Some(proxy) => std::fs::write(path, proxy.kubeconfig(Some(token)))
                .unwrap_or_else(|e| panic!("write {}: {e}", path.display())),
            None => self.write_direct_kubeconfig_for_token(path, token),
        }
    }

    /// [`TestCluster::write_kubeconfig_for_token`] straight to the API server (a tenant's: faults are for the
    /// manager).
    fn write_direct_kubeconfig_for_token(&self, path: &Path, token: &str) {
        let mut kubeconfig = Kubeconfig::read_from(&self.kubeconfig).expect("read kubeconfig");
        let current = kubeconfig.current_context.clone().unwrap_or_default();
        let user = kubeconfig
            .contexts
            .iter()
            .find(|c| c.name == current)
            .and_then(|c| c.context.as_ref())
            .and_then(|c| c.user.clone())
            .unwrap_or_default();
        for named in &mut kubeconfig.auth_infos {
            if named.name == user {
                named.auth_info = Some(kube::config::AuthInfo {
                    token: Some(token.to_string().into()),
                    ..kube::config::AuthInfo::default()
                });
            }
        }
        let text = serde_saphyr::to_string(&kubeconfig).expect("serialize kubeconfig");
        std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    /// Returns a kubectl acting as a user the test plays (a tenant): on the emulator with a token it mints, on
    /// the substrate with a client certificate of the cluster CA (at most one group there). Not available on an
    /// outside cluster, whose users come from its own identity provider.
    pub fn kubectl_as(&self, user: &str, groups: &[&str]) -> Kubectl {
        let path = self
            .dir
            .path()
            .join(format!("kubeconfig-user-{user}").replace([':', '/'], "-"));
        match &self.substrate {
            Some(substrate) => substrate
                .write_user_kubeconfig(&path, user, groups)
                .unwrap_or_else(|e| panic!("a kubeconfig for {user}: {e}")),
            None => {
                let token = self.emulator().mint_token(user, groups);
                self.write_direct_kubeconfig_for_token(&path, &token);
            }
        }
        let home = self
            .dir
            .path()
            .join(format!("home-user-{user}").replace([':', '/'], "-"));
        std::fs::create_dir_all(&home).expect("create kubectl home");
        self.kubectl.for_kubeconfig(&path, &home)
    }

    /// Installs CRDs by server-side apply and waits until each is Established. On the real control plane,
    /// Gateway API's own CRDs (as provisioned) stand in for the fixture's Gateway API kinds, as on a cluster.
    pub async fn install_crds(&self, crds: &[CustomResourceDefinition]) {
        let crds = match self.substrate {
            Some(_) => with_upstream_gateway_api(crds),
            None => crds.to_vec(),
        };
        if let Err(error) = install_crds(&self.client, "e2e-harness", &crds).await {
            panic!("{error}");
        }
        if let Some(plane) = &self.private {
            plane
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .restart_controller_manager()
                .unwrap_or_else(|e| panic!("restart the controller manager after installing CRDs: {e}"));
        }
    }

    /// Creates a namespace with a unique name starting with `prefix` and returns its name.
    pub async fn create_namespace(&self, prefix: &str) -> String {
        let name = format!("{prefix}-{}", unique_suffix());
        self.create_namespace_named(&name, &[]).await;
        name
    }

    /// Creates a namespace with an exact name and labels.
    pub async fn create_namespace_named(&self, name: &str, labels: &[(&str, &str)]) {
        let api: Api<Namespace> = Api::all(self.client.clone());
        let mut ns = Namespace::default();
        ns.metadata.name = Some(name.to_string());
        if !labels.is_empty() {
            ns.metadata.labels = Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        }
        api.create(&PostParams::default(), &ns)
            .await
            .unwrap_or_else(|e| panic!("create namespace {name}: {e}"));
    }
}

/// Installs CRDs by server-side apply as `field_manager` and waits (20 s at most) until each is Established.
pub async fn install_crds(
    client: &Client,
    field_manager: &str,
    crds: &[CustomResourceDefinition],
) -> Result<(), String> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        api.patch(&name, &PatchParams::apply(field_manager).force(), &Patch::Apply(crd))
            .await
            .map_err(|e| format!("install CRD {name}: {e}"))?;
    }
    for crd in crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let api = api.clone();
        wait_until(&format!("CRD {name} Established"), Deadline::secs(20), || {
            let api = api.clone();
            let name = name.clone();
            async move {
                let crd = api.get(&name).await.map_err(|e| e.to_string())?;
                let established = crd
                    .status
                    .and_then(|s| s.conditions)
                    .unwrap_or_default()
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True");
                Ok(established.then_some(()))
            }
        })
        .await;
    }
    Ok(())
}

/// `resource.group`, or `resource` for the core group.
fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

/// Every object of every listable kind in the cluster of `kubeconfig`, as `(resource.group, object)`. Runs on a
/// thread of its own (callers are in `Drop`, inside the test's runtime).
pub fn every_object(kubeconfig: &Path) -> Vec<(String, Value)> {
    let kubeconfig = kubeconfig.to_path_buf();
    let read = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime to read the cluster");
        runtime.block_on(async move {
            let client = client_for(&kubeconfig).await;
            let discovery = kube::discovery::Discovery::new(client.clone())
                .run()
                .await
                .expect("discover the cluster's kinds");
            let mut objects = Vec::new();
            for group in discovery.groups() {
                for (resource, capabilities) in group.recommended_resources() {
                    if !capabilities.supports_operation(kube::discovery::verbs::LIST) {
                        continue;
                    }
                    let api: Api<kube::core::DynamicObject> = Api::all_with(client.clone(), &resource);
                    let Ok(list) = api.list(&Default::default()).await else {
                        continue;
                    };
                    let name = qualified(&resource.group, &resource.plural);
                    for item in list.items {
                        if let Ok(value) = serde_json::to_value(&item) {
                            objects.push((name.clone(), value));
                        }
                    }
                }
            }
            objects
        })
    });
    read.join().unwrap_or_default()
}

/// `crds` with each Gateway API kind replaced by the upstream CRD of the version the substrate provisioned.
pub fn with_upstream_gateway_api(crds: &[CustomResourceDefinition]) -> Vec<CustomResourceDefinition> {
    let files = substrate::Provisioned::locate()
        .gateway_api_crds()
        .unwrap_or_else(|e| panic!("{e}"));
    let upstream: Vec<CustomResourceDefinition> = files
        .iter()
        .filter_map(|file| {
            let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
            // The channel also carries a ValidatingAdmissionPolicy; only the CRDs are wanted here.
            serde_saphyr::from_str::<CustomResourceDefinition>(&text).ok()
        })
        .collect();
    crds.iter()
        .map(|crd| {
            upstream
                .iter()
                .find(|u| u.metadata.name == crd.metadata.name)
                .cloned()
                .unwrap_or_else(|| crd.clone())
        })
        .collect()
}

/// A kube client for a kubeconfig file.
pub async fn client_for(kubeconfig: &Path) -> Client {
    let kc = Kubeconfig::read_from(kubeconfig).expect("read kubeconfig");
    let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("load kubeconfig");
    Client::try_from(config).expect("build kube client")
}

/// Five hex digits that differ between calls made at different times: makes names unique within a test.
pub fn unique_suffix() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{:05x}", nanos % 0xfffff)
}
