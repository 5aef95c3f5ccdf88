//! A record of the authorization checks kube-apiserver makes inside admission, which its audit log does not
//! show: `OwnerReferencesPermissionEnforcement` asks the authorizer whether the writer may `update
//! <owner>/finalizers` before it lets an owner reference block the owner's deletion. The control plane puts a
//! webhook authorizer ahead of RBAC for those checks only (`subresource == finalizers`); it writes each review it
//! receives to a JSON-lines file and always answers "no opinion", so RBAC alone decides. `rbac-coverage` reads the
//! file beside the audit log's decisions.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::SubstrateError;
use super::pki::ClusterCa;

/// The webhook's name in the authorization configuration.
const AUTHORIZER_NAME: &str = "admission-checks.e2e.platform-operator";

/// One check the webhook saw.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdmissionCheck {
    /// The user the check is about.
    pub user: String,
    /// The verb checked.
    pub verb: String,
    /// The API group (`""` for core).
    pub group: String,
    /// `resource/subresource`.
    pub resource: String,
    /// The namespace (`""` for cluster scope).
    pub namespace: String,
    /// The object's name.
    pub name: String,
}

/// The part of a `SubjectAccessReview` read here.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Review {
    spec: ReviewSpec,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ReviewSpec {
    user: String,
    resource_attributes: Option<Attributes>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Attributes {
    verb: String,
    group: String,
    resource: String,
    subresource: String,
    namespace: String,
    name: String,
}

/// The running webhook; dropping it stops serving (the apiserver then has no opinion from it, as configured).
pub struct AdmissionCheckRecorder {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for AdmissionCheckRecorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The files that configure the apiserver's authorizers: the webhook (for finalizer checks), then RBAC.
pub struct AuthorizationFiles {
    /// The `AuthorizationConfiguration` for `--authorization-config`.
    pub config: PathBuf,
}

impl AdmissionCheckRecorder {
    /// Serves the webhook on loopback with a certificate of `ca`, appending checks to `log`, and writes the
    /// authorization configuration that names it into `dir`.
    pub async fn start(ca: &ClusterCa, dir: &Path, log: &Path) -> Result<(Self, AuthorizationFiles), SubstrateError> {
        let serving = ca.issue_serving_cert()?;
        let tls_error = |e: &dyn std::fmt::Display| SubstrateError::Io {
            what: "serve the admission-check webhook".into(),
            source: std::io::Error::other(e.to_string()),
        };
        let cert = CertificateDer::from_pem_slice(serving.cert_pem.as_bytes()).map_err(|e| tls_error(&e))?;
        let key = PrivateKeyDer::from_pem_slice(serving.key_pem.as_bytes()).map_err(|e| tls_error(&e))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .and_then(|builder| builder.with_no_client_auth().with_single_cert(vec![cert], key))
            .map_err(|e| tls_error(&e))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .map_err(SubstrateError::io("bind the admission-check webhook"))?;
        let addr = listener
            .local_addr()
            .map_err(SubstrateError::io("the admission-check webhook's address"))?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(SubstrateError::io(format!("open {}", log.display())))?;
        let file = Arc::new(Mutex::new(file));
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (acceptor, file) = (acceptor.clone(), file.clone());
                tokio::spawn(async move {
                    let Ok(stream) = acceptor.accept(stream).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                        let file = file.clone();
                        async move { Ok::<_, std::convert::Infallible>(review(request, &file).await) }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        let webhook_kubeconfig = dir.join("admission-checks.kubeconfig");
        write(&webhook_kubeconfig, &webhook_kubeconfig_text(addr, &ca.cert_pem()))?;
        let config = dir.join("authorization-config.yaml");
        write(&config, &authorization_config(&webhook_kubeconfig))?;
        Ok((Self { task }, AuthorizationFiles { config }))
    }
}

fn write(path: &Path, text: &str) -> Result<(), SubstrateError> {
    std::fs::write(path, text).map_err(SubstrateError::io(format!("write {}", path.display())))
}

/// Records one review and answers "no opinion" (neither allowed nor denied).
async fn review(request: Request<Incoming>, file: &Mutex<std::fs::File>) -> Response<String> {
    use http_body_util::BodyExt;
    if let Ok(body) = request.into_body().collect().await {
        let review: Review = serde_json::from_slice(&body.to_bytes()).unwrap_or_default();
        if let Some(a) = review.spec.resource_attributes {
            let check = AdmissionCheck {
                user: review.spec.user,
                verb: a.verb,
                group: a.group,
                resource: if a.subresource.is_empty() {
                    a.resource
                } else {
                    format!("{}/{}", a.resource, a.subresource)
                },
                namespace: a.namespace,
                name: a.name,
            };
            if let Ok(line) = serde_json::to_string(&check) {
                // A poisoned lock still holds a usable file.
                let mut file = file.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                let _ = writeln!(file, "{line}");
            }
        }
    }
    let answer = serde_json::json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "status": {"allowed": false},
    });
    let mut response = Response::new(answer.to_string());
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

/// The kubeconfig the apiserver reaches the webhook with (JSON, which it reads as YAML).
fn webhook_kubeconfig_text(addr: SocketAddr, ca_pem: &str) -> String {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "webhook", "cluster": {"server": format!("https://{addr}/review"), "certificate-authority-data": ca}}],
        "users": [{"name": "apiserver", "user": {}}],
        "contexts": [{"name": "webhook", "context": {"cluster": "webhook", "user": "apiserver"}}],
        "current-context": "webhook",
    })
    .to_string()
}

/// The webhook for finalizer checks only (everything else goes straight to RBAC), then RBAC.
fn authorization_config(webhook_kubeconfig: &Path) -> String {
    format!(
        "apiVersion: apiserver.config.k8s.io/v1
kind: AuthorizationConfiguration
authorizers:
- type: Webhook
  name: {AUTHORIZER_NAME}
  webhook:
    timeout: 3s
    authorizedTTL: 1s
    unauthorizedTTL: 1s
    subjectAccessReviewVersion: v1
    matchConditionSubjectAccessReviewVersion: v1
    failurePolicy: NoOpinion
    connectionInfo:
      type: KubeConfigFile
      kubeConfigFile: {}
    matchConditions:
    - expression: has(request.resourceAttributes) && has(request.resourceAttributes.subresource) && request.resourceAttributes.subresource == 'finalizers'
- type: RBAC
  name: rbac
",
        webhook_kubeconfig.display()
    )
}

/// Where a control plane records its admission checks: beside its audit log.
pub fn log_beside(audit_log: &Path) -> PathBuf {
    audit_log.with_file_name("admission-checks.jsonl")
}

/// Every check recorded in `log` (none when there is no file yet).
pub fn checks(log: &Path) -> Vec<AdmissionCheck> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}
