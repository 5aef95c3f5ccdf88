//! A [`FaultProxy`] in front of a test's Kubernetes API (the real kube-apiserver or the emulator): the manager
//! reaches the API only through it, so a test can fail, delay or cut the manager's requests and watches while the
//! API server itself stays what it is. The proxy terminates TLS with a certificate of its own and forwards each
//! request with the caller's credentials (a ServiceAccount's bearer token passes through, so the API server
//! authenticates and authorizes the manager itself); a caller without credentials is sent as the cluster's
//! administrator (the framework tests' in-process controllers).

use std::path::Path;

use base64::Engine;
use emulator_kit::tls::TestCa;
use serde_json::Value;

use super::fault_proxy::{Credential, ErrorShape, FaultProxy, Upstream, kube_route};

/// The proxy and the CA its serving certificate chains to.
pub struct ApiProxy {
    proxy: FaultProxy,
    ca_pem: String,
}

/// Reads a base64 field of a kubeconfig entry.
fn decoded(entry: &Value, field: &str) -> Option<String> {
    let text = entry.get(field)?.as_str()?;
    let bytes = base64::engine::general_purpose::STANDARD.decode(text).ok()?;
    String::from_utf8(bytes).ok()
}

/// The entry named by the current context's `kind` (`cluster` or `user`) in the section `section`.
fn current<'a>(kubeconfig: &'a Value, kind: &str, section: &str) -> Option<&'a Value> {
    let context = kubeconfig["current-context"].as_str()?;
    let name = kubeconfig["contexts"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == context)?["context"][kind]
        .as_str()?;
    kubeconfig[section]
        .as_array()?
        .iter()
        .find(|entry| entry["name"] == name)
        .map(|entry| &entry[kind])
}

impl ApiProxy {
    /// Starts a proxy in front of the API server of the administrator's `kubeconfig` (server, CA and the
    /// administrator's credentials are read from it).
    pub async fn start(kubeconfig: &Path) -> Self {
        let text = std::fs::read_to_string(kubeconfig)
            .unwrap_or_else(|e| panic!("read the kubeconfig {}: {e}", kubeconfig.display()));
        let config: Value = serde_saphyr::from_str(&text).expect("a kubeconfig is YAML");
        let cluster = current(&config, "cluster", "clusters").expect("the kubeconfig names its cluster");
        let user = current(&config, "user", "users").expect("the kubeconfig names its user");
        let anonymous_as = match (
            user["token"].as_str(),
            decoded(user, "client-certificate-data"),
            decoded(user, "client-key-data"),
        ) {
            (Some(token), _, _) => Credential::Bearer(token.to_string()),
            (None, Some(cert_pem), Some(key_pem)) => Credential::ClientCert { cert_pem, key_pem },
            _ => panic!("the administrator's kubeconfig has neither a token nor a client certificate"),
        };
        let upstream = Upstream {
            url: cluster["server"].as_str().expect("the cluster's server").to_string(),
            ca_pem: decoded(cluster, "certificate-authority-data"),
            anonymous_as: Some(anonymous_as),
            errors: ErrorShape::KubeStatus,
        };
        let ca = TestCa::new("e2e-api-fault-proxy").expect("a CA for the proxy");
        let cert = ca
            .issue_server_cert("api-fault-proxy", &[])
            .expect("the proxy's serving certificate");
        let proxy = FaultProxy::start_to(&upstream, kube_route, Some(&cert))
            .await
            .expect("start the API fault proxy");
        Self {
            proxy,
            ca_pem: ca.cert_pem(),
        }
    }

    /// The proxy, for faults, counts and watch cuts.
    pub fn faults(&self) -> &FaultProxy {
        &self.proxy
    }

    /// A kubeconfig for the proxy that authenticates with `token`, or (without one) is sent on as the
    /// administrator.
    pub fn kubeconfig(&self, token: Option<&str>) -> String {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let user = match token {
            Some(token) => serde_json::json!({"token": token}),
            None => serde_json::json!({}),
        };
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "proxy", "cluster": {"server": self.proxy.url(), "certificate-authority-data": b64(&self.ca_pem)}}],
            "users": [{"name": "user", "user": user}],
            "contexts": [{"name": "proxy", "context": {"cluster": "proxy", "user": "user"}}],
            "current-context": "proxy",
        })
        .to_string()
    }
}
