//! Where the Rancher API token comes from. The client asks a [`TokenProvider`] for it on every request, so a
//! token rotated in its Secret takes effect without a restart; the token never appears in flags or messages.

use std::fmt;
use std::time::Duration;

use framework::http::TokenCache;
use framework::secrets::KeyError;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use secrecy::SecretString;

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
    cached: TokenCache,
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
            cached: TokenCache::new(Duration::ZERO),
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
        let (namespace, name, key) = (&self.namespace, &self.name, &self.key);
        let text = framework::secrets::value(&secret, key).map_err(|problem| match problem {
            KeyError::Missing => unavailable(format!("secret {namespace}/{name} has no key {key}")),
            KeyError::NotText => unavailable(format!("key {key} of secret {namespace}/{name} is not text")),
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
        // One Secret, so one fingerprint; the token is kept `max_age`.
        Box::pin(
            self.cached
                .get_or_fetch("", || async { self.read().await.map(|token| (token, self.max_age)) }),
        )
    }

    fn invalidate(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.cached.invalidate())
    }
}
