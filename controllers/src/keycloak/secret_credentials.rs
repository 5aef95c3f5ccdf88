//! Keycloak admin credentials read from a Kubernetes Secret, shared by every controller that talks to Keycloak
//! (NebariApp, ManagedRancherProject): rotating the Secret takes effect without a restart (within
//! [`REREAD_AFTER`]), and the values never leave this module except inside [`Credentials`] (whose `Debug` hides
//! them).

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Secret;
use kube::Client as KubeClient;
use kube::api::Api;
use secrecy::SecretString;

use super::credentials::{Credentials, CredentialsProvider};
use super::error::KeycloakError;

/// How long credentials read from the Secret are used before it is read again. Every Keycloak request needs
/// them; reading the Secret for each was most of the API reads of a NebariApp with auth (8 per app). A rotated
/// Secret is therefore used within this long.
pub const REREAD_AFTER: Duration = Duration::from_secs(10);

/// Reads the Keycloak admin credentials from a Secret when they are needed, at most every [`REREAD_AFTER`]. Keys `username`/`password`
/// (or `admin-username`/`admin-password`) give a password login through admin-cli; `client-id`/`client-secret`
/// a client-credentials login (preferred when both are present).
pub struct SecretCredentials {
    client: KubeClient,
    namespace: String,
    name: String,
    /// The credentials last read, and when.
    last: Mutex<Option<(Instant, Credentials)>>,
}

impl std::fmt::Debug for SecretCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretCredentials")
            .field("namespace", &self.namespace)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl SecretCredentials {
    /// Credentials from the Secret `namespace/name`.
    pub fn new(client: KubeClient, namespace: &str, name: &str) -> Self {
        Self {
            client,
            namespace: namespace.to_string(),
            name: name.to_string(),
            last: Mutex::new(None),
        }
    }

    /// The credentials read less than [`REREAD_AFTER`] ago, else read afresh (a failed read is not kept).
    async fn current(&self) -> Result<Credentials, KeycloakError> {
        let recent = self
            .last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .filter(|(read_at, _)| read_at.elapsed() < REREAD_AFTER)
            .map(|(_, credentials)| credentials.clone());
        if let Some(credentials) = recent {
            return Ok(credentials);
        }
        let credentials = self.read().await?;
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some((Instant::now(), credentials.clone()));
        Ok(credentials)
    }

    async fn read(&self) -> Result<Credentials, KeycloakError> {
        let unavailable = |reason: String| KeycloakError::CredentialsUnavailable { reason };
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespace);
        let secret = secrets
            .get_opt(&self.name)
            .await
            .map_err(|e| {
                unavailable(format!(
                    "reading Secret {}/{}: {}",
                    self.namespace,
                    self.name,
                    framework::sanitize::sanitize(&e.to_string())
                ))
            })?
            .ok_or_else(|| unavailable(format!("Secret {}/{} does not exist", self.namespace, self.name)))?;
        let value = |key: &str| {
            framework::secrets::text(&secret, key)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        if let (Some(id), Some(secret)) = (value("client-id"), value("client-secret")) {
            return Ok(Credentials::client_credentials(id, SecretString::from(secret)));
        }
        let username = value("username").or_else(|| value("admin-username"));
        let password = value("password").or_else(|| value("admin-password"));
        match (username, password) {
            (Some(username), Some(password)) => Ok(Credentials::admin_password(username, SecretString::from(password))),
            _ => Err(unavailable(format!(
                "Secret {}/{} lacks username/password (or admin-username/admin-password, or client-id/client-secret)",
                self.namespace, self.name
            ))),
        }
    }
}

impl CredentialsProvider for SecretCredentials {
    fn credentials(&self) -> BoxFuture<'_, Result<Credentials, KeycloakError>> {
        Box::pin(self.current())
    }
}
