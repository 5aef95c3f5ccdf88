//! Where `e2e/substrate/provision.sh` put the real components, and the versions it was asked for.

use std::path::{Path, PathBuf};

use super::SubstrateError;

/// `versions.env` beside this crate, the one place the versions are pinned (compiled in, so a test reports the
/// version it expected).
const VERSIONS_ENV: &str = include_str!("../versions.env");

/// The value of `key` in `versions.env`.
pub fn versions(key: &str) -> Option<&'static str> {
    VERSIONS_ENV.lines().find_map(|line| {
        let (name, value) = line.split_once('=')?;
        (name.trim() == key).then_some(value.trim())
    })
}

/// The provisioned binaries, in the cache `provision.sh` fills.
#[derive(Clone, Debug)]
pub struct Provisioned {
    dir: PathBuf,
}

impl Provisioned {
    /// The cache as `provision.sh` computes it: `$PLATFORM_OPERATOR_CACHE`, else
    /// `$XDG_CACHE_HOME/platform-operator`, else `~/.cache/platform-operator`, then `substrate/`.
    pub fn locate() -> Self {
        let root = std::env::var_os("PLATFORM_OPERATOR_CACHE")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("platform-operator")))
            .or_else(|| std::env::var_os("HOME").map(|d| PathBuf::from(d).join(".cache/platform-operator")))
            .unwrap_or_else(|| PathBuf::from("/tmp/platform-operator"));
        Provisioned {
            dir: root.join("substrate"),
        }
    }

    /// The cache directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn existing(&self, what: &str, relative: &str) -> Result<PathBuf, SubstrateError> {
        let path = self.dir.join(relative);
        if path.exists() {
            Ok(path)
        } else {
            Err(SubstrateError::NotProvisioned {
                what: what.to_string(),
                path,
            })
        }
    }

    /// etcd.
    pub fn etcd(&self) -> Result<PathBuf, SubstrateError> {
        self.existing("etcd", "kubernetes/bin/etcd")
    }

    /// kube-apiserver.
    pub fn kube_apiserver(&self) -> Result<PathBuf, SubstrateError> {
        self.existing("kube-apiserver", "kubernetes/bin/kube-apiserver")
    }

    /// kube-controller-manager.
    pub fn kube_controller_manager(&self) -> Result<PathBuf, SubstrateError> {
        self.existing("kube-controller-manager", "kubernetes/bin/kube-controller-manager")
    }

    /// kubectl.
    pub fn kubectl(&self) -> Result<PathBuf, SubstrateError> {
        self.existing("kubectl", "kubectl/kubectl")
    }

    /// The YAML files of Gateway API's own CRDs (standard channel), one CRD each.
    pub fn gateway_api_crds(&self) -> Result<Vec<PathBuf>, SubstrateError> {
        let dir = self.existing("Gateway API's CRDs", "gateway-api/.done")?;
        let dir = dir.parent().map(Path::to_path_buf).unwrap_or_default();
        let entries = std::fs::read_dir(&dir).map_err(SubstrateError::io(format!("list {}", dir.display())))?;
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
        files.sort();
        Ok(files)
    }

    /// Envoy Gateway's controller (`envoy-gateway`).
    pub fn envoy_gateway(&self) -> Result<PathBuf, SubstrateError> {
        self.existing("Envoy Gateway", "networking/bin/envoy-gateway")
    }

    /// The project's main around cert-manager's controllers (`cert-manager-controller`).
    pub fn cert_manager_controller(&self) -> Result<PathBuf, SubstrateError> {
        self.existing("cert-manager's controllers", "networking/bin/cert-manager-controller")
    }

    /// Envoy, the data plane.
    pub fn envoy(&self) -> Result<PathBuf, SubstrateError> {
        self.existing("Envoy", "envoy/envoy")
    }

    /// The CRDs Envoy Gateway's chart installs (Gateway API's experimental channel and its own), one directory.
    pub fn envoy_gateway_crds(&self) -> Result<PathBuf, SubstrateError> {
        self.existing("Envoy Gateway's CRDs", "networking/crds/envoy-gateway")
    }

    /// cert-manager's CRDs, one directory.
    pub fn cert_manager_crds(&self) -> Result<PathBuf, SubstrateError> {
        self.existing("cert-manager's CRDs", "networking/crds/cert-manager")
    }

    /// The prepared Keycloak copy of one feature set (`default` or `v1`).
    pub fn keycloak_home(&self, flavour: &str) -> Result<PathBuf, SubstrateError> {
        self.existing(
            &format!("Keycloak ({flavour})"),
            &format!("keycloak/{flavour}/bin/kc.sh"),
        )?;
        Ok(self.dir.join("keycloak").join(flavour))
    }

    /// The JDK provisioning chose for Keycloak.
    pub fn java_home(&self) -> Result<PathBuf, SubstrateError> {
        let file = self.existing("the JDK choice", "java-home")?;
        let text = std::fs::read_to_string(&file).map_err(SubstrateError::io(format!("read {}", file.display())))?;
        Ok(PathBuf::from(text.trim()))
    }
}
