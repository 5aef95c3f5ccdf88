//! Shared plumbing for the conformance tests: a control plane per test with its own kubeconfig and HOME (so
//! kubectl's discovery cache never leaks between tests), runners for kubectl and the Python client, raw HTTP
//! helpers and condition waits with deadlines.
//!
//! The control plane is the in-process emulator, or, with `E2E_CONTROL_PLANE=real` (inside `substrate run`), a
//! private real kube-apiserver 1.36: the same assertions then hold the emulator to the real thing. Tests that
//! need the emulator's hooks (minted tokens, counters, compaction, cut watches) start it explicitly with
//! [`Env::start_emulated`]; tests whose expectation the real apiserver does not share say why where they start.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use emulator_kit::wait::{Deadline, wait_until};
use kube_emulator::{ApiServer, ServerConfig, ServerHandle};
use serde_json::{Value, json};

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// What a test runs against.
enum Target {
    /// The in-process emulator.
    Emulator(ServerHandle),
    /// A private real control plane on the run's substrate.
    Real(Box<substrate::ControlPlane>),
}

/// One control plane and a private directory for a test.
pub struct Env {
    target: Target,
    pub dir: PathBuf,
    pub kubeconfig: PathBuf,
    pub http: reqwest::Client,
}

fn test_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "api-conformance-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("test dir");
    dir
}

impl Env {
    /// The control plane the run asks for: the emulator, or a private real one with `E2E_CONTROL_PLANE=real`.
    pub async fn start() -> Env {
        if std::env::var("E2E_CONTROL_PLANE").is_ok_and(|v| v == "real") {
            Self::start_real().await
        } else {
            Self::start_with(ServerConfig::default()).await
        }
    }

    /// The emulator whatever the run asks for (the test uses its hooks).
    pub async fn start_emulated() -> Env {
        Self::start_with(ServerConfig::default()).await
    }

    /// Starts an emulator with a custom configuration.
    pub async fn start_with(config: ServerConfig) -> Env {
        let server = ApiServer::start(config).await.expect("emulator starts");
        let dir = test_dir();
        let kubeconfig = dir.join("kubeconfig");
        server.write_kubeconfig(&kubeconfig).expect("kubeconfig written");
        Env {
            dir,
            kubeconfig,
            http: server.http_client(kube_emulator::ADMIN_TOKEN),
            target: Target::Emulator(server),
        }
    }

    /// A private real kube-apiserver and kube-controller-manager on the run's substrate.
    async fn start_real() -> Env {
        let substrate = substrate::Substrate::from_env().unwrap_or_else(|e| panic!("E2E_CONTROL_PLANE=real: {e}"));
        let dir = test_dir();
        let plane = substrate
            .private_control_plane(&dir.join("control-plane"))
            .await
            .unwrap_or_else(|e| panic!("start a private control plane: {e}"));
        let kubeconfig = dir.join("kubeconfig");
        std::fs::copy(plane.admin_kubeconfig(), &kubeconfig).expect("kubeconfig copied");
        let ca = std::fs::read(plane.ca_cert()).expect("CA certificate");
        let identity = std::fs::read(plane.admin_identity()).expect("admin identity");
        let http = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&ca).expect("CA PEM"))
            .identity(reqwest::Identity::from_pem(&identity).expect("identity PEM"))
            .build()
            .expect("HTTP client");
        Env {
            dir,
            kubeconfig,
            http,
            target: Target::Real(Box::new(plane)),
        }
    }

    /// The emulator, for its hooks; a test that calls this must start with [`Env::start_emulated`].
    pub fn emulator(&self) -> &ServerHandle {
        match &self.target {
            Target::Emulator(server) => server,
            Target::Real(_) => panic!("this test uses the emulator's hooks: start it with Env::start_emulated()"),
        }
    }

    /// The base URL of the control plane.
    pub fn base_url(&self) -> String {
        match &self.target {
            Target::Emulator(server) => server.url().to_string(),
            Target::Real(plane) => plane.url().to_string(),
        }
    }

    /// A kube-rs client built from the written kubeconfig, as an operator would build it.
    pub async fn client(&self) -> kube::Client {
        let kubeconfig = kube::config::Kubeconfig::read_from(&self.kubeconfig).expect("kubeconfig parses");
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
            .await
            .expect("kube config");
        kube::Client::try_from(config).expect("kube client")
    }

    /// Runs kubectl with this test's HOME and kubeconfig; `stdin` is piped in when given.
    pub async fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> Output {
        self.kubectl_with(&self.kubeconfig, args, stdin).await
    }

    /// A kubeconfig that authenticates with `token` (written once per token).
    pub fn kubeconfig_for(&self, token: &str) -> PathBuf {
        let digest = token
            .bytes()
            .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
        let path = self.dir.join(format!("kubeconfig-{digest:x}"));
        self.emulator()
            .write_kubeconfig_with_token(&path, token)
            .expect("kubeconfig written");
        path
    }

    /// Runs kubectl as whoever `token` authenticates.
    pub async fn kubectl_as(&self, token: &str, args: &[&str], stdin: Option<&str>) -> Output {
        let kubeconfig = self.kubeconfig_for(token);
        self.kubectl_with(&kubeconfig, args, stdin).await
    }

    /// Runs kubectl with a given kubeconfig (and this test's HOME).
    pub async fn kubectl_with(&self, kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Output {
        use tokio::io::AsyncWriteExt;
        let mut cmd = tokio::process::Command::new(kubectl_path());
        cmd.args(args)
            .env("HOME", &self.dir)
            .env("KUBECONFIG", kubeconfig)
            .env("KUBECACHEDIR", self.dir.join("kube-cache"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .expect("kubectl runs (install kubectl v1.32 at /usr/bin/kubectl)");
        if let Some(mut pipe) = child.stdin.take() {
            if let Some(text) = stdin {
                pipe.write_all(text.as_bytes()).await.expect("stdin written");
            }
            drop(pipe);
        }
        tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .expect("kubectl finished within 60s")
            .expect("kubectl output")
    }

    /// kubectl that must succeed; returns stdout.
    pub async fn kubectl_ok(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.kubectl(args, stdin).await;
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}\nstdout: {}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// An absolute URL on the emulator.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base_url(), path)
    }

    /// Sends a request and returns (status, JSON body or Null, headers).
    pub async fn request(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value, reqwest::header::HeaderMap) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut req = self.http.request(method, self.url(path));
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        if let Some(body) = body {
            req = req.body(serde_json::to_vec(&body).expect("json"));
        }
        let resp = req.send().await.expect("request sent");
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let bytes = resp.bytes().await.expect("body");
        let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, value, headers)
    }

    /// Creates the test CRD (`gizmos.conformance.example.com`) and waits until it is served.
    pub async fn install_gizmo_crd(&self) {
        let (status, body, _) = self
            .request(
                "POST",
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                Some("application/json"),
                Some(gizmo_crd()),
            )
            .await;
        assert_eq!(status, 201, "CRD created: {body}");
        wait_for("gizmos served", || async {
            self.request(
                "GET",
                "/apis/conformance.example.com/v1/namespaces/default/gizmos",
                None,
                None,
            )
            .await
            .0 == 200
        })
        .await;
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The kubectl binary: env `KUBECTL`, else on the real control plane its own version's, else `/usr/bin/kubectl`.
pub fn kubectl_path() -> PathBuf {
    if let Some(path) = std::env::var_os("KUBECTL") {
        return PathBuf::from(path);
    }
    if std::env::var("E2E_CONTROL_PLANE").is_ok_and(|v| v == "real")
        && let Ok(path) = substrate::Provisioned::locate().kubectl()
    {
        return path;
    }
    PathBuf::from("/usr/bin/kubectl")
}

/// Waits until `check` holds, polling every 50 ms, failing after 20 s.
pub async fn wait_for<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    wait_until(what, Deadline::secs(20), || {
        let satisfied = check();
        async move { Ok(satisfied.await.then_some(())) }
    })
    .await
}

/// The Python interpreter with the `kubernetes` client: env `E2E_PYTHON`, else the project venv.
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("E2E_PYTHON") {
        return PathBuf::from(p);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("workspace root")
        .to_path_buf();
    let venv = root.join("target/tools/python-venv/bin/python");
    assert!(
        venv.exists(),
        "the Python kubernetes client is missing: run `bash e2e/kube-emulator/tests/python/setup-venv.sh` (creates {}) or set E2E_PYTHON",
        venv.display()
    );
    venv
}

/// The directory of the Python scripts.
pub fn python_scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python")
}

/// The conformance CRD: namespaced `Gizmo`, status subresource, printer columns, a validated schema.
pub fn gizmo_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.conformance.example.com"},
        "spec": {
            "group": "conformance.example.com",
            "scope": "Namespaced",
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList", "shortNames": ["gz"], "categories": ["all"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                ],
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {
                            "size": {"type": "integer", "minimum": 0, "maximum": 10},
                            "color": {"type": "string"},
                            "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}
                        }},
                        "status": {"type": "object", "properties": {
                            "observedGeneration": {"type": "integer"},
                            "conditions": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
                                "items": {"type": "object", "required": ["type", "status"], "properties": {
                                    "type": {"type": "string"}, "status": {"type": "string"}, "reason": {"type": "string"},
                                    "message": {"type": "string"}, "lastTransitionTime": {"type": "string"}, "observedGeneration": {"type": "integer"}}}}
                        }}
                    }
                }}
            }]
        }
    })
}

/// A Gizmo body.
pub fn gizmo(name: &str, size: i64) -> Value {
    json!({"apiVersion": "conformance.example.com/v1", "kind": "Gizmo", "metadata": {"name": name, "namespace": "default"}, "spec": {"size": size}})
}

/// Objects a real cluster keeps in every namespace that the tests did not make: the `kube-root-ca.crt`
/// ConfigMap kube-controller-manager publishes (the emulator has no such controller).
pub fn is_cluster_furniture(name: &str) -> bool {
    name == "kube-root-ca.crt"
}
