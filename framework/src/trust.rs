//! Which certificates an external system's server may present: the public CA roots (the default), a CA bundle
//! from a Secret or ConfigMap (a private CA), optionally the system trust store too, or — loudly — nothing at
//! all (`insecure-skip-verify`, for the replaced operators' `RANCHER_VERIFY_SSL=false` users).
//!
//! A bundle is read through the Kubernetes API when a client is first needed and again at most every
//! [`RECHECK_AFTER`] or right after a certificate was refused, so a rotated or fixed CA takes effect without a
//! restart; the HTTP client is rebuilt only when the bundle's content changed.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;

/// How long a bundle read is trusted before it is read again.
pub const RECHECK_AFTER: Duration = Duration::from_secs(60);
/// The key a bundle is read from when none is given.
pub const DEFAULT_KEY: &str = "ca.crt";

/// The kind of object holding a CA bundle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BundleKind {
    /// A Secret (`data`).
    Secret,
    /// A ConfigMap (`data`).
    ConfigMap,
}

/// Where a CA bundle is: `secret:<namespace>/<name>[:<key>]` or `configmap:<namespace>/<name>[:<key>]`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BundleRef {
    /// Secret or ConfigMap.
    pub kind: BundleKind,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The key holding the PEM certificates.
    pub key: String,
}

/// A bundle reference that does not parse.
#[derive(Debug, thiserror::Error)]
#[error(
    "invalid CA bundle reference {0:?}: expected secret:<namespace>/<name>[:<key>] or configmap:<namespace>/<name>[:<key>]"
)]
pub struct InvalidBundleRef(String);

impl FromStr for BundleRef {
    type Err = InvalidBundleRef;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || InvalidBundleRef(text.to_string());
        let (kind, rest) = text.split_once(':').ok_or_else(invalid)?;
        let kind = match kind.to_ascii_lowercase().as_str() {
            "secret" => BundleKind::Secret,
            "configmap" => BundleKind::ConfigMap,
            _ => return Err(invalid()),
        };
        let (object, key) = match rest.split_once(':') {
            Some((object, key)) if !key.is_empty() => (object, key),
            Some(_) => return Err(invalid()),
            None => (rest, DEFAULT_KEY),
        };
        let (namespace, name) = object.split_once('/').ok_or_else(invalid)?;
        if namespace.is_empty() || name.is_empty() || name.contains('/') {
            return Err(invalid());
        }
        Ok(BundleRef {
            kind,
            namespace: namespace.to_string(),
            name: name.to_string(),
            key: key.to_string(),
        })
    }
}

impl fmt::Display for BundleRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            BundleKind::Secret => "Secret",
            BundleKind::ConfigMap => "ConfigMap",
        };
        write!(f, "{kind} {}/{} (key {})", self.namespace, self.name, self.key)
    }
}

/// How one system's server certificate is verified.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TrustSettings {
    /// A CA bundle to trust instead of the public CA roots.
    pub bundle: Option<BundleRef>,
    /// Trust the system trust store (the image's CA certificates) too.
    pub system_roots: bool,
    /// Accept any certificate. Only for systems with self-signed certificates nobody can distribute a CA for.
    pub insecure_skip_verify: bool,
}

impl TrustSettings {
    /// What is trusted, in words for conditions: "the CA bundle in Secret keycloak/ca (key ca.crt)".
    pub fn describe(&self) -> String {
        if self.insecure_skip_verify {
            return "nothing (insecure-skip-verify)".to_string();
        }
        let base = match &self.bundle {
            Some(bundle) => format!("the CA bundle in {bundle}"),
            None => "the public CA roots".to_string(),
        };
        if self.system_roots {
            format!("{base} and the system trust store")
        } else {
            base
        }
    }
}

/// Why a trusted client could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The bundle's object or key could not be read.
    #[error("cannot read the CA bundle in {bundle}: {reason}")]
    Unreadable {
        /// Where the bundle should be.
        bundle: String,
        /// Why it could not be read.
        reason: String,
    },
    /// The bundle holds no usable certificate.
    #[error("the CA bundle in {bundle} holds no valid PEM certificate")]
    Invalid {
        /// Where the bundle is.
        bundle: String,
    },
    /// reqwest refused the configuration.
    #[error("cannot build an HTTP client: {0}")]
    Build(String),
}

/// The PEM content of a bundle, read through the Kubernetes API.
async fn read_bundle(client: &kube::Client, bundle: &BundleRef) -> Result<Vec<u8>, TrustError> {
    let unreadable = |reason: String| TrustError::Unreadable {
        bundle: bundle.to_string(),
        reason,
    };
    let found = match bundle.kind {
        BundleKind::Secret => {
            let api: Api<Secret> = Api::namespaced(client.clone(), &bundle.namespace);
            let secret = api
                .get_opt(&bundle.name)
                .await
                .map_err(|e| unreadable(api_reason(&e)))?;
            let secret = secret.ok_or_else(|| unreadable("it does not exist".into()))?;
            secret
                .data
                .and_then(|data| data.get(&bundle.key).map(|v| v.0.clone()))
                .or_else(|| {
                    secret
                        .string_data
                        .and_then(|data| data.get(&bundle.key).map(|v| v.clone().into_bytes()))
                })
        }
        BundleKind::ConfigMap => {
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), &bundle.namespace);
            let map = api
                .get_opt(&bundle.name)
                .await
                .map_err(|e| unreadable(api_reason(&e)))?;
            let map = map.ok_or_else(|| unreadable("it does not exist".into()))?;
            map.data
                .and_then(|data| data.get(&bundle.key).map(|v| v.clone().into_bytes()))
        }
    };
    found.ok_or_else(|| unreadable(format!("it has no key {}", bundle.key)))
}

fn api_reason(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(response) => format!("HTTP {} {}", response.code, response.reason),
        _ => "the Kubernetes API is unreachable".to_string(),
    }
}

/// Builds a client trusting exactly what `settings` say, with `pem` as the bundle's content.
pub fn build_client(
    base: reqwest::ClientBuilder,
    settings: &TrustSettings,
    pem: Option<&[u8]>,
) -> Result<reqwest::Client, TrustError> {
    let mut builder = base
        .tls_built_in_webpki_certs(settings.bundle.is_none())
        .tls_built_in_native_certs(settings.system_roots);
    if let (Some(pem), Some(bundle)) = (pem, &settings.bundle) {
        let certificates = reqwest::Certificate::from_pem_bundle(pem).map_err(|_| TrustError::Invalid {
            bundle: bundle.to_string(),
        })?;
        if certificates.is_empty() {
            return Err(TrustError::Invalid {
                bundle: bundle.to_string(),
            });
        }
        for certificate in certificates {
            builder = builder.add_root_certificate(certificate);
        }
    }
    if settings.insecure_skip_verify {
        builder = builder.danger_accept_invalid_certs(true);
    }
    builder.build().map_err(|e| TrustError::Build(e.to_string()))
}

/// One resolved client: what it was built from and when that was last checked.
struct Resolved {
    fingerprint: String,
    client: reqwest::Client,
    checked_at: Instant,
}

/// The clients of one external system, one per trust configuration it meets (one, except for Keystone, whose
/// endpoints each name their own bundle), kept current with their bundles.
pub struct TrustedClients {
    kube: Option<kube::Client>,
    base: ClientBase,
    resolved: Mutex<BTreeMap<TrustSettings, Resolved>>,
}

/// Makes the builder every client starts from (timeouts, user agent, redirect policy).
pub type ClientBase = Box<dyn Fn() -> reqwest::ClientBuilder + Send + Sync>;

impl TrustedClients {
    /// Clients built from `base` (timeouts, user agent, redirect policy), reading bundles through `kube`.
    pub fn new(kube: Option<kube::Client>, base: ClientBase) -> Self {
        Self {
            kube,
            base,
            resolved: Mutex::new(BTreeMap::new()),
        }
    }

    /// The client for `settings`, its bundle re-read when the last read is older than [`RECHECK_AFTER`].
    pub async fn client(&self, settings: &TrustSettings) -> Result<reqwest::Client, TrustError> {
        let mut resolved = self.resolved.lock().await;
        if let Some(entry) = resolved.get(settings)
            && entry.checked_at.elapsed() < RECHECK_AFTER
        {
            return Ok(entry.client.clone());
        }
        let pem = match (&settings.bundle, &self.kube) {
            (Some(bundle), Some(kube)) => Some(read_bundle(kube, bundle).await?),
            (Some(bundle), None) => {
                return Err(TrustError::Unreadable {
                    bundle: bundle.to_string(),
                    reason: "no Kubernetes client to read it with".into(),
                });
            }
            (None, _) => None,
        };
        let fingerprint = hex::encode(Sha256::digest(pem.as_deref().unwrap_or_default()));
        if let Some(entry) = resolved.get_mut(settings)
            && entry.fingerprint == fingerprint
        {
            entry.checked_at = Instant::now();
            return Ok(entry.client.clone());
        }
        if settings.insecure_skip_verify {
            tracing::warn!(
                "TLS certificate verification is OFF for an external system (insecure-skip-verify): anyone on the \
                 network path can impersonate it and read the operator's credentials"
            );
        }
        let client = build_client((self.base)(), settings, pem.as_deref())?;
        if settings.bundle.is_some() {
            tracing::info!(trust = %settings.describe(), "loaded a CA bundle");
        }
        resolved.insert(
            settings.clone(),
            Resolved {
                fingerprint,
                client: client.clone(),
                checked_at: Instant::now(),
            },
        );
        Ok(client)
    }

    /// Forgets what was read for `settings`, so the next request reads the bundle again (after a refusal).
    pub async fn recheck(&self, settings: &TrustSettings) {
        if let Some(entry) = self.resolved.lock().await.get_mut(settings) {
            entry.checked_at = Instant::now() - RECHECK_AFTER;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundle_references_parse_with_a_default_key() {
        let secret: BundleRef = "secret:keycloak/corporate-ca".parse().expect("parses");
        assert_eq!(
            (
                secret.kind,
                secret.namespace.as_str(),
                secret.name.as_str(),
                secret.key.as_str()
            ),
            (BundleKind::Secret, "keycloak", "corporate-ca", "ca.crt")
        );
        let map: BundleRef = "configmap:cattle-system/rancher-ca:tls-ca-bundle.pem"
            .parse()
            .expect("parses");
        assert_eq!(
            (map.kind, map.key.as_str()),
            (BundleKind::ConfigMap, "tls-ca-bundle.pem")
        );
        for bad in [
            "keycloak/ca",
            "vault:a/b",
            "secret:a",
            "secret:/b",
            "secret:a/b:",
            "secret:a/b/c",
        ] {
            assert!(bad.parse::<BundleRef>().is_err(), "{bad}");
        }
        assert_eq!(
            TrustSettings {
                bundle: Some(map),
                system_roots: true,
                insecure_skip_verify: false
            }
            .describe(),
            "the CA bundle in ConfigMap cattle-system/rancher-ca (key tls-ca-bundle.pem) and the system trust store"
        );
    }

    #[test]
    fn a_bundle_without_certificates_is_refused() {
        let settings = TrustSettings {
            bundle: Some("secret:a/b".parse().expect("parses")),
            ..TrustSettings::default()
        };
        let error =
            build_client(reqwest::Client::builder(), &settings, Some(b"not a certificate")).expect_err("refused");
        assert!(error.to_string().contains("holds no valid PEM certificate"), "{error}");
    }
}
