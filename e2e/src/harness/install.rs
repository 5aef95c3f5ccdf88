//! The operator's shipped identity, installed as a cluster admin installs it: the ServiceAccount and RBAC of a
//! kustomize overlay (`manifests/default` unless a test names another), rendered with `kubectl kustomize` and
//! applied with `kubectl apply` (strict field validation, warnings refused), then a token minted for the
//! ServiceAccount with `kubectl create token`. Managers under test authenticate with that token, so the shipped
//! RBAC is exactly what they run under.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use serde_json::Value;

use super::cluster::TestCluster;
use super::kubectl::Kubectl;

/// The namespace the default install puts the manager in.
pub const OPERATOR_NAMESPACE: &str = "platform-operator-system";
/// The manager's ServiceAccount in the default install.
pub const OPERATOR_SERVICE_ACCOUNT: &str = "platform-operator-controller-manager";

/// The kinds of an install that make up the manager's identity (what a test cluster needs to run it).
const IDENTITY_KINDS: &[&str] = &[
    "Namespace",
    "ServiceAccount",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
];

/// The repository root (the parent of the `e2e` crate).
pub fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(".."))
}

/// The documents of `kubectl kustomize manifests/<overlay>`, rendered once per test process.
pub fn rendered(overlay: &str) -> Vec<Value> {
    static CACHE: OnceLock<Mutex<BTreeMap<String, Vec<Value>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Mutex::default);
    if let Some(docs) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(overlay) {
        return docs.clone();
    }
    let dir = repository_root().join("manifests").join(overlay);
    let output = std::process::Command::new("kubectl")
        .arg("kustomize")
        .arg(&dir)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "run `kubectl kustomize {}` (is kubectl 1.32 installed?): {e}",
                dir.display()
            )
        });
    assert!(
        output.status.success(),
        "kubectl kustomize {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
        .unwrap_or_else(|e| panic!("kubectl kustomize {} printed invalid YAML: {e}", dir.display()));
    cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(overlay.to_string(), docs.clone());
    docs
}

/// The identity documents of an overlay (namespace, ServiceAccount, roles and bindings) as YAML for
/// `kubectl apply -f -`.
pub fn identity_yaml(overlay: &str) -> String {
    rendered(overlay)
        .into_iter()
        .filter(|doc| {
            doc.get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| IDENTITY_KINDS.contains(&k))
        })
        .map(|doc| serde_saphyr::to_string(&doc).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n---\n")
}

/// The manager's identity in one test cluster.
#[derive(Clone, Debug)]
pub struct OperatorIdentity {
    /// A kubeconfig that authenticates as the ServiceAccount.
    pub kubeconfig: PathBuf,
    /// The user name the API server sees (`system:serviceaccount:<ns>:<name>`).
    pub user: String,
    /// The ServiceAccount's namespace (where the manager's Lease lives).
    pub namespace: String,
}

/// The ServiceAccount an overlay runs the manager as: `(namespace, name)`.
pub fn service_account_of(overlay: &str) -> (String, String) {
    rendered(overlay)
        .into_iter()
        .find(|doc| doc.get("kind").and_then(Value::as_str) == Some("ServiceAccount"))
        .map(|sa| {
            (
                sa.pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or(OPERATOR_NAMESPACE)
                    .to_string(),
                sa.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or(OPERATOR_SERVICE_ACCOUNT)
                    .to_string(),
            )
        })
        .unwrap_or_else(|| (OPERATOR_NAMESPACE.into(), OPERATOR_SERVICE_ACCOUNT.into()))
}

/// Applies an overlay's identity with `kubectl` as a cluster admin would (strict validation; any warning is an
/// error) and mints a token for its ServiceAccount (`kubectl create token`, 24 h). Namespaces the overlay
/// creates that exist already are kept.
pub async fn install_identity(kubectl: &Kubectl, overlay: &str) -> Result<(OperatorIdentity, String), String> {
    let yaml = identity_yaml(overlay);
    let applied = kubectl.run_with_stdin(&["apply", "-f", "-"], Some(&yaml)).await;
    if !applied.success || applied.stderr.contains("Warning") {
        return Err(format!(
            "kubectl apply of the RBAC of manifests/{overlay} failed or warned:\n{}\n{}",
            applied.stdout, applied.stderr
        ));
    }
    let (namespace, name) = service_account_of(overlay);
    let minted = kubectl
        .run(&["create", "token", &name, "-n", &namespace, "--duration=24h"])
        .await;
    if !minted.success {
        return Err(format!(
            "kubectl create token {name} -n {namespace} failed: {}",
            minted.stderr
        ));
    }
    let identity = OperatorIdentity {
        kubeconfig: PathBuf::new(),
        user: format!("system:serviceaccount:{namespace}:{name}"),
        namespace,
    };
    Ok((identity, minted.stdout.trim().to_string()))
}

impl TestCluster {
    /// Installs an overlay's identity with kubectl as a cluster admin would (no warnings allowed) and returns a
    /// kubeconfig for its ServiceAccount. Namespaces the overlay creates that already exist are kept.
    pub async fn install_operator_identity(&self, overlay: &str) -> OperatorIdentity {
        if self.is_emulated() || self.is_private_real() {
            self.label(&format!("overlay:{overlay}"));
        }
        let (mut identity, token) = install_identity(self.kubectl(), overlay)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let kubeconfig = self.dir().join(format!("kubeconfig-{overlay}").replace('/', "-"));
        self.write_kubeconfig_for_token(&kubeconfig, &token);
        identity.kubeconfig = kubeconfig;
        identity
    }
}
