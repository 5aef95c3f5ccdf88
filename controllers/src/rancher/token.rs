//! Where the Rancher API token comes from. The client asks a [`TokenProvider`] for it on every request, so a
//! token rotated in its Secret takes effect without a restart; the token never appears in flags or messages.

use std::fmt;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use secrecy::SecretString;
use tokio::sync::Mutex;

use super::error::RancherError;

/// The Secret key the token is read from unless configured otherwise.
pub const DEFAULT_TOKEN_KEY: &str = "token";

/// Supplies the current API token (`token-xxxxx:secret`).
pub trait TokenProvider: Send + Sync {
    /// The token to use now; fails with [`RancherError::TokenUnavailable`] when it cannot be read.
    fn token(&self) -> BoxFuture<'_, Result<SecretString, RancherError>>;

    /// Forgets any cached token (called after Rancher refused it with 401).
    fn invalidate(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// A provider that always returns the same token (tests, static configuration).
#[derive(Clone)]
pub struct StaticToken(pub SecretString);

impl fmt::Debug for StaticToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StaticToken(..)")
    }
}

impl TokenProvider for StaticToken {
    fn token(&self) -> BoxFuture<'_, Result<SecretString, RancherError>> {
        Box::pin(async move { Ok(self.0.clone()) })
    }
}

/// Reads the token from a key of a Kubernetes Secret, keeping it for a short while so a reconcile's requests
/// share one read; a 401 from Rancher drops it at once.
pub struct SecretToken {
    secrets: Api<Secret>,
    namespace: String,
    name: String,
    key: String,
    max_age: Duration,
    cached: Mutex<Option<(SecretString, Instant)>>,
}

impl fmt::Debug for SecretToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretToken")
            .field("namespace", &self.namespace)
            .field("name", &self.name)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl SecretToken {
    /// Reads key `key` of Secret `namespace/name`, re-reading at most every `max_age`.
    pub fn new(client: kube::Client, namespace: &str, name: &str, key: &str, max_age: Duration) -> Self {
        Self {
            secrets: Api::namespaced(client, namespace),
            namespace: namespace.to_string(),
            name: name.to_string(),
            key: key.to_string(),
            max_age,
            cached: Mutex::new(None),
        }
    }

    async fn read(&self) -> Result<SecretString, RancherError> {
        let unavailable = |reason: String| RancherError::TokenUnavailable { reason };
        let secret = match self.secrets.get_opt(&self.name).await {
            Ok(Some(secret)) => secret,
            Ok(None) => {
                return Err(unavailable(format!(
                    "secret {}/{} not found",
                    self.namespace, self.name
                )));
            }
            Err(error) => {
                return Err(unavailable(format!(
                    "cannot read secret {}/{}: {}",
                    self.namespace,
                    self.name,
                    framework::sanitize::sanitize(&error.to_string())
                )));
            }
        };
        let bytes = secret
            .data
            .as_ref()
            .and_then(|data| data.get(&self.key))
            .map(|value| value.0.clone())
            .or_else(|| {
                secret
                    .string_data
                    .as_ref()
                    .and_then(|data| data.get(&self.key))
                    .map(|v| v.clone().into_bytes())
            })
            .ok_or_else(|| {
                unavailable(format!(
                    "secret {}/{} has no key {}",
                    self.namespace, self.name, self.key
                ))
            })?;
        let text = String::from_utf8(bytes).map_err(|_| {
            unavailable(format!(
                "key {} of secret {}/{} is not text",
                self.key, self.namespace, self.name
            ))
        })?;
        let token = text.trim();
        if token.is_empty() {
            return Err(unavailable(format!(
                "key {} of secret {}/{} is empty",
                self.key, self.namespace, self.name
            )));
        }
        Ok(SecretString::from(token.to_string()))
    }
}

impl TokenProvider for SecretToken {
    fn token(&self) -> BoxFuture<'_, Result<SecretString, RancherError>> {
        Box::pin(async move {
            let mut cached = self.cached.lock().await;
            if let Some((token, read_at)) = cached.as_ref()
                && read_at.elapsed() < self.max_age
            {
                return Ok(token.clone());
            }
            let token = self.read().await?;
            *cached = Some((token.clone(), Instant::now()));
            Ok(token)
        })
    }

    fn invalidate(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            *self.cached.lock().await = None;
        })
    }
}
