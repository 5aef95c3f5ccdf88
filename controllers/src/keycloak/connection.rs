//! How to reach Keycloak and log in as its administrator: the connection settings every controller that
//! provisions in Keycloak shares (NebariApp's clients, ManagedRancherProject's groups), each with its own values.

use framework::trust::TrustSettings;
use std::sync::Arc;
use std::time::Duration;

use framework::http::HttpSettings;
use framework::metrics::Metrics;
use framework::secrets::SecretRef;

use super::{
    Credentials, CredentialsProvider, KeycloakClient, KeycloakConfig, KeycloakError, RealmClient, SecretCredentials,
    StaticCredentials,
};

/// Where Keycloak is, which realm to work in, and where the admin credentials are.
#[derive(Clone, Debug)]
pub struct KeycloakConnection {
    /// Base URL as the operator reaches it (with `/auth` for keycloakx).
    pub url: String,
    /// The realm the controller works in.
    pub realm: String,
    /// The realm the administrator logs into.
    pub admin_realm: String,
    /// The Secret with the admin credentials (read at use time).
    pub admin_secret: SecretRef,
    /// How long one request may take.
    pub request_timeout: Duration,
    /// What Keycloak's TLS certificate is verified against.
    pub trust: TrustSettings,
    /// Credentials given in the environment (a replaced operator's `KEYCLOAK_USERNAME`/`KEYCLOAK_PASSWORD`),
    /// used instead of `admin_secret`.
    pub static_credentials: Option<Credentials>,
}

impl KeycloakConnection {
    /// The admin client, logging in with the credentials of `admin_secret`.
    pub fn client(&self, kube: kube::Client, metrics: Option<Metrics>) -> Result<KeycloakClient, KeycloakError> {
        let mut config = KeycloakConfig::new(self.url.trim_end_matches('/'));
        config.token_realm = self.admin_realm.clone();
        config.http = HttpSettings {
            request_timeout: self.request_timeout.max(Duration::from_secs(1)),
            ..HttpSettings::default()
        };
        let provider: Arc<dyn CredentialsProvider> = match &self.static_credentials {
            Some(credentials) => Arc::new(StaticCredentials(credentials.clone())),
            None => Arc::new(SecretCredentials::new(
                kube.clone(),
                &self.admin_secret.namespace,
                &self.admin_secret.name,
            )),
        };
        KeycloakClient::with_trust(config, provider, metrics, Some(kube), self.trust.clone())
    }

    /// The admin client scoped to `realm`.
    pub fn realm_client(&self, kube: kube::Client, metrics: Option<Metrics>) -> Result<RealmClient, KeycloakError> {
        Ok(self.client(kube, metrics)?.realm(&self.realm))
    }
}
