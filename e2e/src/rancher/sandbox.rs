//! What the ManagedRancherProject and RancherProjectInventory samples (and the end-to-end tests) need around
//! them: a Rancher emulator with the samples' clusters, a Keycloak emulator with the realm and the users the
//! samples name, the two credential Secrets the manager reads at use time, the samples' namespace, and the
//! manager flags pointing at all of it.
//!
//! For the sandbox: `let mrp = e2e::rancher::sandbox_prepare(&client, ProjectSandboxOptions::default()).await?;`,
//! then start the manager with `mrp.manager_args()` added and apply `manifests/samples`; `mrp.stop()` at the end.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::Client;
use kube::api::{Api, ObjectMeta, Patch, PatchParams};

use super::{ClusterSeed, RancherConfig, RancherEmulator, RancherHandle};
use crate::keycloak::{EmulatorConfig, EmulatorHandle, KeycloakEmulator, UserSeed};

/// The clusters the samples name (the writer-shaped sample and the original 0.0.3 sample).
pub const SAMPLE_CLUSTERS: [&str; 2] = ["c-m-glwxdksp", "c-m-bmwbscft"];
/// The realm the samples' groups live in (the manager's default `--rancher-keycloak-realm`).
pub const SAMPLE_REALM: &str = "waldur";
/// The users the samples list as members (`carol` is deliberately missing, to show a pending member).
pub const SAMPLE_USERS: [&str; 2] = ["alice", "bob"];
/// The namespace the samples live in, and where the credential Secrets are put.
pub const SAMPLE_NAMESPACE: &str = "waldur-system";
/// The Rancher token Secret (the manager's default name).
pub const TOKEN_SECRET: &str = "rancher-token";
/// The Keycloak admin Secret (the manager's default name).
pub const KEYCLOAK_ADMIN_SECRET: &str = "rancher-keycloak-admin";

/// How to prepare.
#[derive(Clone, Debug)]
pub struct ProjectSandboxOptions {
    /// Rancher clusters to create (each with its Default and System projects).
    pub clusters: Vec<String>,
    /// The Keycloak realm of the groups.
    pub realm: String,
    /// Users that exist in that realm.
    pub users: Vec<String>,
    /// Namespace of the credential Secrets (created if missing).
    pub secret_namespace: String,
    /// Further namespaces to create (the samples' own).
    pub namespaces: Vec<String>,
}

impl Default for ProjectSandboxOptions {
    fn default() -> Self {
        Self {
            clusters: SAMPLE_CLUSTERS.iter().map(|c| c.to_string()).collect(),
            realm: SAMPLE_REALM.to_string(),
            users: SAMPLE_USERS.iter().map(|u| u.to_string()).collect(),
            secret_namespace: SAMPLE_NAMESPACE.to_string(),
            namespaces: vec![SAMPLE_NAMESPACE.to_string()],
        }
    }
}

/// The running emulators; they stop when this is stopped or dropped.
pub struct ProjectSandbox {
    /// The Rancher emulator.
    pub rancher: RancherHandle,
    /// The Keycloak emulator.
    pub keycloak: EmulatorHandle,
    /// Where the credential Secrets are.
    pub secret_namespace: String,
    /// The realm of the groups.
    pub realm: String,
}

impl ProjectSandbox {
    /// The manager flags that point the two controllers at the emulators and the Secrets.
    pub fn manager_args(&self) -> Vec<String> {
        vec![
            format!("--rancher-url={}", self.rancher.url()),
            format!("--rancher-token-secret-name={TOKEN_SECRET}"),
            format!("--rancher-token-secret-namespace={}", self.secret_namespace),
            format!("--rancher-keycloak-url={}", self.keycloak.url()),
            format!("--rancher-keycloak-realm={}", self.realm),
            format!("--rancher-keycloak-admin-secret-name={KEYCLOAK_ADMIN_SECRET}"),
            format!("--rancher-keycloak-admin-secret-namespace={}", self.secret_namespace),
        ]
    }

    /// Stops both emulators.
    pub async fn stop(self) {
        self.rancher.shutdown().await;
        self.keycloak.shutdown().await;
    }
}

async fn apply<T>(api: Api<T>, name: &str, body: &T) -> Result<(), String>
where
    T: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch(name, &PatchParams::apply("sandbox").force(), &Patch::Apply(body))
        .await
        .map(|_| ())
        .map_err(|e| format!("{name}: {e}"))
}

fn secret(name: &str, data: &[(&str, &str)]) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        string_data: Some(
            data.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        ),
        ..Default::default()
    }
}

/// Starts both emulators and writes the namespaces and credential Secrets into the cluster behind `client`.
pub async fn sandbox_prepare(client: &Client, options: ProjectSandboxOptions) -> Result<ProjectSandbox, String> {
    let rancher = RancherEmulator::start(RancherConfig {
        clusters: options.clusters.iter().map(|c| ClusterSeed::new(c)).collect(),
        ..RancherConfig::default()
    })
    .await
    .map_err(|e| format!("Rancher emulator: {e}"))?;
    let users = options
        .users
        .iter()
        .map(|u| UserSeed::new(&options.realm, u).email(&format!("{u}@example.com")))
        .collect();
    let keycloak = KeycloakEmulator::start(EmulatorConfig {
        users,
        ..EmulatorConfig::with_realm(&options.realm)
    })
    .await
    .map_err(|e| format!("Keycloak emulator: {e}"))?;

    let namespaces: Api<Namespace> = Api::all(client.clone());
    let mut wanted = options.namespaces.clone();
    wanted.push(options.secret_namespace.clone());
    wanted.sort();
    wanted.dedup();
    for name in &wanted {
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                ..Default::default()
            },
            ..Default::default()
        };
        apply(namespaces.clone(), name, &namespace).await?;
    }
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &options.secret_namespace);
    let token = rancher.admin_token();
    apply(
        secrets.clone(),
        TOKEN_SECRET,
        &secret(TOKEN_SECRET, &[("token", &token)]),
    )
    .await?;
    let (username, password) = keycloak.admin_credentials();
    apply(
        secrets,
        KEYCLOAK_ADMIN_SECRET,
        &secret(KEYCLOAK_ADMIN_SECRET, &[("username", username), ("password", password)]),
    )
    .await?;
    Ok(ProjectSandbox {
        rancher,
        keycloak,
        secret_namespace: options.secret_namespace,
        realm: options.realm,
    })
}
