//! The real networking of a NebariApp on the shared control plane: Envoy Gateway (its Kubernetes provider, and its
//! host infrastructure, which runs one Envoy per Gateway as a child process on this machine) and cert-manager's
//! controllers, with their CRDs, a GatewayClass Envoy Gateway accepts and a CA ClusterIssuer cert-manager issues
//! from.
//!
//! Envoy Gateway listens on fixed ports (xDS 18000, health 8081, webhook 9443) and reads its xDS serving
//! certificate from `/certs`, so one runs per machine: on the shared control plane, started by `substrate run`.
//! The Envoys it starts bind each Gateway listener's port on all addresses (443 for the operator's listeners), so
//! tests that make it serve traffic take turns.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, DynamicObject, ObjectMeta, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::SubstrateError;
use super::cache::{Provisioned, versions};
use super::pki;
use super::process::Supervised;

/// Envoy Gateway's namespace (its default): its Secrets (the OIDC HMAC key) live here.
pub const ENVOY_GATEWAY_NAMESPACE: &str = "envoy-gateway-system";
/// The namespace ClusterIssuers' Secrets live in (cert-manager's cluster resource namespace).
pub const CERT_MANAGER_NAMESPACE: &str = "cert-manager";
/// The GatewayClass Envoy Gateway serves.
pub const GATEWAY_CLASS: &str = "envoy-gateway";
/// The CA ClusterIssuer cert-manager issues from.
pub const CLUSTER_ISSUER: &str = "e2e-gateway-ca";
/// Envoy Gateway's controller name (its default).
const CONTROLLER_NAME: &str = "gateway.envoyproxy.io/gatewayclass-controller";
/// Where Envoy Gateway reads its xDS server's certificate when its resources come from Kubernetes (fixed upstream).
const XDS_CERT_DIR: &str = "/certs";
/// Envoy Gateway's health endpoint (fixed upstream).
const ENVOY_GATEWAY_READYZ: &str = "http://127.0.0.1:8081/readyz";
const FIELD_MANAGER: &str = "e2e-substrate";

/// What tests need to use the real networking.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NetworkingEndpoint {
    /// The GatewayClass whose Gateways Envoy Gateway programs (and runs an Envoy for).
    pub gateway_class: String,
    /// The CA ClusterIssuer cert-manager issues from.
    pub cluster_issuer: String,
    /// That issuer's CA certificate (PEM file): what a client of the gateway's TLS listeners trusts.
    pub issuer_ca_cert: PathBuf,
    /// Envoy Gateway's log (the Envoys' output goes there too).
    pub envoy_gateway_log: PathBuf,
    /// cert-manager's log.
    pub cert_manager_log: PathBuf,
}

/// Envoy Gateway and cert-manager, running; dropping it stops both (Envoy Gateway stops its Envoys).
pub struct RealNetworking {
    envoy_gateway: Supervised,
    cert_manager: Supervised,
    endpoint: NetworkingEndpoint,
}

fn api(client: &kube::Client, group: &str, version: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    Api::all_with(client.clone(), &resource)
}

/// Server-side applies `object` as `name` through `api`, taking over any field another manager set.
async fn apply<K, B>(api: &Api<K>, name: &str, body: &B, what: &str) -> Result<(), SubstrateError>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    B: Serialize + std::fmt::Debug,
{
    api.patch(name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(body))
        .await
        .map(|_| ())
        .map_err(kube_error(what))
}

fn kube_error(what: &str) -> impl FnOnce(kube::Error) -> SubstrateError + '_ {
    move |error| SubstrateError::Io {
        what: what.to_string(),
        source: std::io::Error::other(error.to_string()),
    }
}

impl RealNetworking {
    /// Installs the CRDs on the cluster of `kubeconfig`, starts cert-manager and Envoy Gateway with state and logs
    /// under `dir`, and waits until the ClusterIssuer is Ready and the GatewayClass Accepted (each component
    /// answered for real).
    pub async fn start(
        binaries: &Provisioned,
        kubeconfig: &Path,
        client: &kube::Client,
        dir: &Path,
    ) -> Result<Self, SubstrateError> {
        std::fs::create_dir_all(dir).map_err(SubstrateError::io(format!("create {}", dir.display())))?;
        apply_crds(
            binaries,
            kubeconfig,
            &[binaries.envoy_gateway_crds()?, binaries.cert_manager_crds()?],
        )?;
        for namespace in [ENVOY_GATEWAY_NAMESPACE, CERT_MANAGER_NAMESPACE] {
            let body = Namespace {
                metadata: ObjectMeta {
                    name: Some(namespace.into()),
                    ..Default::default()
                },
                ..Default::default()
            };
            apply(
                &Api::<Namespace>::all(client.clone()),
                namespace,
                &body,
                "create a namespace for Envoy Gateway or cert-manager",
            )
            .await?;
        }

        let cert_manager_log = dir.join("cert-manager.log");
        let mut command = Command::new(binaries.cert_manager_controller()?);
        command
            .arg(format!("--kubeconfig={}", kubeconfig.display()))
            .arg(format!("--cluster-resource-namespace={CERT_MANAGER_NAMESPACE}"));
        let mut cert_manager = Supervised::spawn("cert-manager", command, &cert_manager_log)?;
        let issuer_ca_cert = dir.join("issuer-ca.crt");
        create_cluster_issuer(client, &issuer_ca_cert).await?;

        let config_home = dir.join("envoy-gateway/config");
        prepare_envoy_gateway(binaries, client, &config_home).await?;
        let data_home = dir.join("envoy-gateway/data");
        place_envoy(binaries, &data_home)?;
        let config = dir.join("envoy-gateway/config.yaml");
        std::fs::write(&config, envoy_gateway_config(dir, &config_home, &data_home))
            .map_err(SubstrateError::io(format!("write {}", config.display())))?;
        let envoy_gateway_log = dir.join("envoy-gateway.log");
        let mut command = Command::new(binaries.envoy_gateway()?);
        command
            .arg("server")
            .arg(format!("--config-path={}", config.display()))
            .env("KUBECONFIG", kubeconfig)
            .env("ENVOY_GATEWAY_NAMESPACE", ENVOY_GATEWAY_NAMESPACE);
        let mut envoy_gateway = Supervised::spawn("Envoy Gateway", command, &envoy_gateway_log)?;
        envoy_gateway
            .wait_http_ok(
                ENVOY_GATEWAY_READYZ,
                Duration::from_secs(120),
                Duration::from_millis(250),
            )
            .await?;

        let gateway_classes = api(
            client,
            "gateway.networking.k8s.io",
            "v1",
            "GatewayClass",
            "gatewayclasses",
        );
        let class = json!({
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "GatewayClass",
            "metadata": {"name": GATEWAY_CLASS},
            "spec": {"controllerName": CONTROLLER_NAME},
        });
        apply(&gateway_classes, GATEWAY_CLASS, &class, "create the GatewayClass").await?;
        envoy_gateway
            .wait_ready(Duration::from_secs(60), Duration::from_millis(250), || {
                condition_true(&gateway_classes, GATEWAY_CLASS, "Accepted")
            })
            .await?;
        let issuers = api(client, "cert-manager.io", "v1", "ClusterIssuer", "clusterissuers");
        cert_manager
            .wait_ready(Duration::from_secs(60), Duration::from_millis(250), || {
                condition_true(&issuers, CLUSTER_ISSUER, "Ready")
            })
            .await?;

        Ok(RealNetworking {
            envoy_gateway,
            cert_manager,
            endpoint: NetworkingEndpoint {
                gateway_class: GATEWAY_CLASS.into(),
                cluster_issuer: CLUSTER_ISSUER.into(),
                issuer_ca_cert,
                envoy_gateway_log,
                cert_manager_log,
            },
        })
    }

    /// What tests need to use it.
    pub fn endpoint(&self) -> &NetworkingEndpoint {
        &self.endpoint
    }

    /// Fails when Envoy Gateway or cert-manager has exited.
    pub fn check_running(&mut self) -> Result<(), SubstrateError> {
        self.envoy_gateway.check_running()?;
        self.cert_manager.check_running()
    }
}

/// Applies every YAML file in `dirs` server-side (Envoy Gateway's CRDs are too large for client-side apply's
/// annotation) and waits until every CRD is Established.
fn apply_crds(binaries: &Provisioned, kubeconfig: &Path, dirs: &[PathBuf]) -> Result<(), SubstrateError> {
    let kubectl = binaries.kubectl()?;
    let run = |args: &[&str]| -> Result<(), SubstrateError> {
        let output = Command::new(&kubectl)
            .arg(format!("--kubeconfig={}", kubeconfig.display()))
            .args(args)
            .output()
            .map_err(SubstrateError::io("run kubectl"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(SubstrateError::Io {
                what: format!("kubectl {}", args.join(" ")),
                source: std::io::Error::other(String::from_utf8_lossy(&output.stderr).into_owned()),
            })
        }
    };
    for dir in dirs {
        let dir = dir.display().to_string();
        run(&[
            "apply",
            "--server-side",
            "--force-conflicts",
            &format!("--field-manager={FIELD_MANAGER}"),
            "-f",
            &dir,
        ])?;
    }
    run(&["wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"])
}

/// Makes a CA, stores it as the Secret a CA ClusterIssuer reads, and creates that issuer; writes the CA
/// certificate to `ca_file`.
async fn create_cluster_issuer(client: &kube::Client, ca_file: &Path) -> Result<(), SubstrateError> {
    let ca = pki::new_ca("platform-operator-e2e-gateway-ca")?;
    std::fs::write(ca_file, &ca.cert_pem).map_err(SubstrateError::io(format!("write {}", ca_file.display())))?;
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(CLUSTER_ISSUER.into()),
            namespace: Some(CERT_MANAGER_NAMESPACE.into()),
            ..Default::default()
        },
        type_: Some("kubernetes.io/tls".into()),
        data: Some(
            [
                ("tls.crt".to_string(), ByteString(ca.cert_pem.clone().into_bytes())),
                ("tls.key".to_string(), ByteString(ca.key_pem.into_bytes())),
            ]
            .into(),
        ),
        ..Default::default()
    };
    apply(
        &Api::<Secret>::namespaced(client.clone(), CERT_MANAGER_NAMESPACE),
        CLUSTER_ISSUER,
        &secret,
        "store the issuer's CA",
    )
    .await?;
    let issuer = json!({
        "apiVersion": "cert-manager.io/v1",
        "kind": "ClusterIssuer",
        "metadata": {"name": CLUSTER_ISSUER},
        "spec": {"ca": {"secretName": CLUSTER_ISSUER}},
    });
    apply(
        &api(client, "cert-manager.io", "v1", "ClusterIssuer", "clusterissuers"),
        CLUSTER_ISSUER,
        &issuer,
        "create the CA ClusterIssuer",
    )
    .await?;
    Ok(())
}

/// Generates Envoy Gateway's certificates under `config_home` (the xDS server's, Envoy's client certificate, the
/// rate limiter's, the OIDC HMAC key), puts the server's where Envoy Gateway reads it, and stores all of them as
/// the Secrets Envoy Gateway reads in its namespace.
async fn prepare_envoy_gateway(
    binaries: &Provisioned,
    client: &kube::Client,
    config_home: &Path,
) -> Result<(), SubstrateError> {
    let output = Command::new(binaries.envoy_gateway()?)
        .args(["certgen", "--local", "--config-home"])
        .arg(config_home)
        .output()
        .map_err(SubstrateError::io("run envoy-gateway certgen"))?;
    if !output.status.success() {
        return Err(SubstrateError::Io {
            what: "envoy-gateway certgen --local".into(),
            source: std::io::Error::other(String::from_utf8_lossy(&output.stderr).into_owned()),
        });
    }
    let certs = config_home.join("certs");
    let xds = Path::new(XDS_CERT_DIR);
    std::fs::create_dir_all(xds).map_err(|source| SubstrateError::Io {
        what: format!(
            "create {XDS_CERT_DIR} (Envoy Gateway reads its xDS certificate there, a path fixed upstream; run the \
             tests as root or create it writable for this user)"
        ),
        source,
    })?;
    for file in ["ca.crt", "tls.crt", "tls.key"] {
        std::fs::copy(certs.join("envoy-gateway").join(file), xds.join(file))
            .map_err(SubstrateError::io(format!("copy {file} to {XDS_CERT_DIR}")))?;
    }
    // The same certificates as the Secrets `certgen` writes in a cluster: the translator reads Envoy's, and the
    // OIDC filters the HMAC key.
    let secrets = Api::<Secret>::namespaced(client.clone(), ENVOY_GATEWAY_NAMESPACE);
    for component in ["envoy-gateway", "envoy", "envoy-rate-limit", "envoy-oidc-hmac"] {
        let (type_, files): (&str, &[&str]) = match component {
            "envoy-oidc-hmac" => ("Opaque", &["hmac-secret"]),
            _ => ("kubernetes.io/tls", &["ca.crt", "tls.crt", "tls.key"]),
        };
        let mut data = std::collections::BTreeMap::new();
        for file in files {
            let path = certs.join(component).join(file);
            let bytes = std::fs::read(&path).map_err(SubstrateError::io(format!("read {}", path.display())))?;
            data.insert(file.to_string(), ByteString(bytes));
        }
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(component.into()),
                namespace: Some(ENVOY_GATEWAY_NAMESPACE.into()),
                ..Default::default()
            },
            type_: Some(type_.into()),
            data: Some(data),
            ..Default::default()
        };
        apply(
            &secrets,
            component,
            &secret,
            "store Envoy Gateway's certificates as Secrets",
        )
        .await?;
    }
    Ok(())
}

/// Puts the provisioned Envoy where Envoy Gateway's host infrastructure looks for the version it was built for,
/// so it never tries to download one.
fn place_envoy(binaries: &Provisioned, data_home: &Path) -> Result<(), SubstrateError> {
    let version = versions("ENVOY_PYPI")
        .and_then(|pin| pin.split_once("==").map(|(_, v)| v.to_string()))
        .unwrap_or_default();
    let bin = data_home.join("envoy-versions").join(version).join("bin");
    std::fs::create_dir_all(&bin).map_err(SubstrateError::io(format!("create {}", bin.display())))?;
    let target = bin.join("envoy");
    let _ = std::fs::remove_file(&target);
    std::os::unix::fs::symlink(binaries.envoy()?, &target)
        .map_err(SubstrateError::io(format!("link Envoy at {}", target.display())))
}

/// Envoy Gateway's configuration: Gateway API resources from Kubernetes, Envoys run on this machine.
fn envoy_gateway_config(dir: &Path, config_home: &Path, data_home: &Path) -> String {
    let state = dir.join("envoy-gateway/state");
    let runtime = dir.join("envoy-gateway/run");
    format!(
        "apiVersion: gateway.envoyproxy.io/v1alpha1
kind: EnvoyGateway
gateway:
  controllerName: {CONTROLLER_NAME}
logging:
  level:
    default: info
provider:
  type: Custom
  custom:
    resource:
      type: Kubernetes
      kubernetes:
        leaderElection:
          disable: true
    infrastructure:
      type: Host
      host:
        configHome: {}
        dataHome: {}
        stateHome: {}
        runtimeDir: {}
",
        config_home.display(),
        data_home.display(),
        state.display(),
        runtime.display()
    )
}

/// `Ok` once the cluster-scoped object `name` has condition `condition` True; else what it has.
async fn condition_true(api: &Api<DynamicObject>, name: &str, condition: &str) -> Result<(), String> {
    let object = api.get(name).await.map_err(|e| e.to_string())?;
    let conditions = object.data["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    match conditions.iter().find(|c| c["type"] == condition) {
        Some(c) if c["status"] == "True" => Ok(()),
        Some(c) => Err(format!("{name}: {condition}={} ({})", c["status"], c["message"])),
        None => Err(format!("{name}: no {condition} condition yet")),
    }
}
