//! What the NebariApp samples need around them: a Keycloak (the emulator) with its admin Secret, the shared
//! Gateways, the opted-in namespace and the Services the samples route to.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Namespace, Secret, Service, ServicePort, ServiceSpec};
use kube::Client;
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use serde_json::json;

use super::SandboxError;
use crate::fixtures::standins;
use crate::keycloak::{EmulatorConfig, EmulatorHandle, KeycloakEmulator, UserSeed};

/// The namespace of the shared Gateways (the operator's default).
pub const GATEWAY_NAMESPACE: &str = "envoy-gateway-system";
/// The ClusterIssuer the sandbox's cert-manager stand-in "uses".
pub const CLUSTER_ISSUER: &str = "sandbox-issuer";
/// The label that opts a namespace into NebariApp management.
pub const OPT_IN_LABEL: &str = "nebari.dev/managed";
/// The realm NebariApp clients live in (the operator's default).
pub const REALM: &str = "nebari";
/// Namespace and name of the Secret holding Keycloak admin credentials (the operator's defaults).
pub const ADMIN_SECRET: (&str, &str) = ("keycloak", "nebari-realm-admin-credentials");
/// Users the sandbox's Keycloak knows (the samples add some of them to groups).
pub const USERS: [&str; 3] = ["nebari-admin", "alice", "bob"];

/// Prepared NebariApp surroundings: the Keycloak emulator stays up while this lives.
pub struct NebariSandbox {
    keycloak: EmulatorHandle,
}

async fn apply<T>(api: Api<T>, name: &str, body: &T) -> Result<(), SandboxError>
where
    T: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch(name, &PatchParams::apply("sandbox").force(), &Patch::Apply(body))
        .await
        .map(|_| ())
        .map_err(|e| SandboxError::start("NebariApp surroundings", format!("{name}: {e}")))
}

fn namespace(name: &str, labels: &[(&str, &str)]) -> Namespace {
    Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn service(name: &str, namespace: &str, port: i32) -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            selector: Some(BTreeMap::from([("app".to_string(), name.to_string())])),
            ports: Some(vec![ServicePort {
                name: Some("http".into()),
                port,
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

async fn start_keycloak(client: &Client) -> Result<EmulatorHandle, SandboxError> {
    let users = USERS
        .iter()
        .map(|name| UserSeed {
            realm: REALM.to_string(),
            username: name.to_string(),
            password: Some(format!("{name}-password")),
            email: Some(format!("{name}@example.com")),
            ..Default::default()
        })
        .collect();
    let config = EmulatorConfig {
        realms: vec![REALM.to_string()],
        users,
        ..EmulatorConfig::default()
    };
    let keycloak = KeycloakEmulator::start(config)
        .await
        .map_err(|e| SandboxError::start("Keycloak emulator", e))?;
    let (admin_user, admin_password) = keycloak.admin_credentials();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    apply(namespaces, ADMIN_SECRET.0, &namespace(ADMIN_SECRET.0, &[])).await?;
    let admin = Secret {
        metadata: ObjectMeta {
            name: Some(ADMIN_SECRET.1.into()),
            ..Default::default()
        },
        string_data: Some(BTreeMap::from([
            ("username".to_string(), admin_user.to_string()),
            ("password".to_string(), admin_password.to_string()),
        ])),
        ..Default::default()
    };
    apply(Api::namespaced(client.clone(), ADMIN_SECRET.0), ADMIN_SECRET.1, &admin).await?;
    Ok(keycloak)
}

/// Starts Keycloak, creates the gateway namespace and both shared Gateways, opts `default` in, and creates the
/// Services the NebariApp samples name.
pub async fn prepare(client: &Client) -> Result<NebariSandbox, SandboxError> {
    let keycloak = start_keycloak(client).await?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    apply(
        namespaces.clone(),
        GATEWAY_NAMESPACE,
        &namespace(GATEWAY_NAMESPACE, &[]),
    )
    .await?;
    apply(namespaces.clone(), "services", &namespace("services", &[])).await?;
    apply(namespaces, "default", &namespace("default", &[(OPT_IN_LABEL, "true")])).await?;

    let gateways = standins::gateways(client, GATEWAY_NAMESPACE);
    for name in ["nebari-gateway", "nebari-internal-gateway"] {
        let gateway = json!({
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "Gateway",
            "metadata": {"name": name, "namespace": GATEWAY_NAMESPACE},
            "spec": {
                "gatewayClassName": "envoy-gateway",
                "listeners": [
                    {"name": "http", "port": 80, "protocol": "HTTP", "allowedRoutes": {"namespaces": {"from": "All"}}},
                    {"name": "https", "port": 443, "protocol": "HTTPS",
                     "tls": {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": "nebari-gateway-tls"}]},
                     "allowedRoutes": {"namespaces": {"from": "All"}}},
                ],
            },
        });
        gateways
            .patch(name, &PatchParams::apply("sandbox").force(), &Patch::Apply(&gateway))
            .await
            .map_err(|e| SandboxError::start("Gateways", format!("{name}: {e}")))?;
        standins::program_gateway(client, GATEWAY_NAMESPACE, name)
            .await
            .map_err(|e| SandboxError::start("Gateways", format!("{name} status: {e}")))?;
    }

    for (name, ns, port) in [
        ("sample-app-service", "default", 8080),
        ("shared-backend-service", "services", 8080),
        ("app-service", "default", 8080),
    ] {
        apply(Api::namespaced(client.clone(), ns), name, &service(name, ns, port)).await?;
    }
    Ok(NebariSandbox { keycloak })
}

impl NebariSandbox {
    /// Manager flags for the NebariApp controller in the sandbox.
    pub fn manager_args(&self) -> Vec<String> {
        vec![
            format!("--nebari-cluster-issuer={CLUSTER_ISSUER}"),
            format!("--keycloak-url={}", self.keycloak.url()),
            format!("--keycloak-realm={REALM}"),
            format!("--keycloak-external-url={}", self.keycloak.url()),
        ]
    }

    /// The Keycloak emulator's URL.
    pub fn keycloak_url(&self) -> &str {
        self.keycloak.url()
    }

    /// Stops the Keycloak emulator.
    pub async fn stop(self) {
        self.keycloak.shutdown().await;
    }
}
