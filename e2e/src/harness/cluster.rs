//! The control plane a test runs against: its own API emulator, the real control plane of the test run's
//! substrate ([`TestCluster::on_substrate`]), or a real cluster named by `E2E_KUBECONFIG`.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use super::kubectl::Kubectl;
use super::secret_hygiene;
use super::wait::{Deadline, wait_until};
use kube_emulator::{ApiServer, ServerConfig, ServerHandle};
use substrate::Substrate;

/// Environment variable naming a kubeconfig of a real cluster to test against instead of the emulator.
pub const REAL_CLUSTER_ENV: &str = "E2E_KUBECONFIG";

/// A control plane for one test, with a scratch directory for its kubeconfig, kubectl home and logs.
pub struct TestCluster {
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    emulator: Option<ServerHandle>,
    substrate: Option<Substrate>,
    client: Client,
    kubectl: Kubectl,
}

impl Drop for TestCluster {
    /// Checks secret hygiene over everything the test left in the emulator (see [`super::secret_hygiene`]),
    /// unless the test already failed.
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let Some(emulator) = &self.emulator else {
            return;
        };
        let objects = emulator.all_objects();
        let (secrets, others): (Vec<_>, Vec<_>) = objects
            .iter()
            .partition(|(gr, _)| gr.group.is_empty() && gr.resource == "secrets");
        let values = secret_hygiene::secret_values(secrets.iter().map(|(_, object)| object.as_ref()));
        if values.is_empty() {
            return;
        }
        let mut places = secret_hygiene::manager_logs(self.dir.path());
        places.extend(others.iter().map(|(gr, object)| {
            let name = format!(
                "{}/{}",
                object["metadata"]["namespace"].as_str().unwrap_or(""),
                object["metadata"]["name"].as_str().unwrap_or("")
            );
            (format!("{} {name}", gr.resource), object.to_string())
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
    /// Starts a fresh emulator, or connects to the cluster in `E2E_KUBECONFIG` when set.
    pub async fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("e2e-")
            .tempdir()
            .expect("create a scratch directory");
        let (kubeconfig, emulator) = match std::env::var_os(REAL_CLUSTER_ENV) {
            Some(path) => (PathBuf::from(path), None),
            None => {
                let server = ApiServer::start(ServerConfig::default())
                    .await
                    .expect("start the API emulator");
                let path = dir.path().join("kubeconfig");
                server.write_kubeconfig(&path).expect("write kubeconfig");
                (path, Some(server))
            }
        };
        let client = client_for(&kubeconfig).await;
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).expect("create kubectl home");
        let kubectl = Kubectl::new(&kubeconfig, &home);
        Self {
            dir,
            kubeconfig,
            emulator,
            substrate: None,
            client,
            kubectl,
        }
    }

    /// Attaches to the real control plane the test run started (`substrate run`), as its administrator, with
    /// kubectl at the control plane's version. Fails with instructions when the run has no substrate. The
    /// cluster is shared by the whole run: isolate by namespace and unique names.
    pub async fn on_substrate() -> Self {
        let substrate = Substrate::from_env().unwrap_or_else(|e| panic!("{e}"));
        let dir = tempfile::Builder::new()
            .prefix("e2e-")
            .tempdir()
            .expect("create a scratch directory");
        let kubeconfig = substrate.admin_kubeconfig.clone();
        let client = client_for(&kubeconfig).await;
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).expect("create kubectl home");
        let kubectl = Kubectl::new(&kubeconfig, &home).with_program(&substrate.kubectl);
        Self {
            dir,
            kubeconfig,
            emulator: None,
            substrate: Some(substrate),
            client,
            kubectl,
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

    /// How many write requests (create, update, patch, delete) the emulator has served so far; compare two
    /// readings to assert that a step wrote nothing.
    pub fn write_requests(&self) -> u64 {
        self.emulator()
            .hooks()
            .counters()
            .iter()
            .filter(|row| {
                matches!(
                    row.key.verb.as_str(),
                    "create" | "update" | "patch" | "delete" | "deletecollection"
                )
            })
            .map(|row| row.count)
            .sum()
    }

    /// Whether the test runs against the emulator.
    pub fn is_emulated(&self) -> bool {
        self.emulator.is_some()
    }

    /// Writes a copy of the test's kubeconfig that authenticates with `token` instead (a ServiceAccount's, a
    /// tenant's).
    pub fn write_kubeconfig_for_token(&self, path: &Path, token: &str) {
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
                self.write_kubeconfig_for_token(&path, &token);
            }
        }
        let home = self
            .dir
            .path()
            .join(format!("home-user-{user}").replace([':', '/'], "-"));
        std::fs::create_dir_all(&home).expect("create kubectl home");
        self.kubectl.for_kubeconfig(&path, &home)
    }

    /// Installs CRDs by server-side apply and waits until each is Established.
    pub async fn install_crds(&self, crds: &[CustomResourceDefinition]) {
        if let Err(error) = install_crds(&self.client, "e2e-harness", crds).await {
            panic!("{error}");
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
