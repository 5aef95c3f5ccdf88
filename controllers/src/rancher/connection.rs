//! How to reach Rancher: its URL and where the API token is (a Secret read at use time, never a flag).

use framework::trust::TrustSettings;
use std::sync::Arc;
use std::time::Duration;

use framework::http::HttpSettings;
use framework::metrics::Metrics;
use framework::secrets::SecretRef;

use secrecy::SecretString;

use super::token::{StaticToken, TokenProvider};
use super::{RancherClient, RancherError, SecretToken};

/// How long a token read from its Secret is reused before it is read again.
const TOKEN_MAX_AGE: Duration = Duration::from_secs(30);

/// Where Rancher is and where its API token is.
#[derive(Clone, Debug)]
pub struct RancherConnection {
    /// Rancher server URL.
    pub url: String,
    /// The Secret holding the API token (`token-xxxxx:secret`).
    pub token_secret: SecretRef,
    /// The token's key in that Secret.
    pub token_key: String,
    /// How long one request may take.
    pub request_timeout: Duration,
    /// What Rancher's TLS certificate is verified against.
    pub trust: TrustSettings,
    /// A token given in the environment (rancher-keycloak-operator's `RANCHER_BEARER_TOKEN`), used instead of
    /// `token_secret`.
    pub static_token: Option<SecretString>,
}

impl RancherConnection {
    /// The Rancher client.
    pub fn client(&self, kube: kube::Client, metrics: Option<Metrics>) -> Result<RancherClient, RancherError> {
        let tokens: Arc<dyn TokenProvider> = match &self.static_token {
            Some(token) => Arc::new(StaticToken(token.clone())),
            None => Arc::new(SecretToken::new(
                kube.clone(),
                &self.token_secret.namespace,
                &self.token_secret.name,
                &self.token_key,
                TOKEN_MAX_AGE,
            )),
        };
        let http = HttpSettings {
            request_timeout: self.request_timeout.max(Duration::from_secs(1)),
            ..HttpSettings::default()
        };
        RancherClient::with_trust(&self.url, http, metrics, tokens, Some(kube), self.trust.clone())
    }
}
