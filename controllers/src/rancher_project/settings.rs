//! Manager settings of the ManagedRancherProject and RancherProjectInventory controllers: where Rancher and
//! Keycloak are, where their credentials live (Secrets read at use time, never flags), and the policies the
//! original operator hard-wired (resync interval, membership authority, when a failure counts as persistent).

use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use framework::http::HttpSettings;
use framework::metrics::Metrics;

use crate::keycloak::{KeycloakClient, KeycloakConfig, KeycloakError, RealmClient, SecretCredentials};
use crate::rancher::{RancherClient, RancherError, SecretToken};

/// How long a Rancher token read from its Secret is reused before it is read again.
const TOKEN_MAX_AGE: Duration = Duration::from_secs(30);

/// Settings of the ManagedRancherProject and RancherProjectInventory controllers.
#[derive(Debug, Clone, Args)]
pub struct RancherProjectSettings {
    /// Rancher server URL (e.g. `https://rancher.example.com`); without it every ManagedRancherProject reports
    /// `RancherNotConfigured`.
    #[arg(long = "rancher-url", env = "RANCHER_URL")]
    pub rancher_url: Option<String>,

    /// Secret holding the Rancher API token (`token-xxxxx:secret`, an admin or cluster-owner token).
    #[arg(
        long = "rancher-token-secret-name",
        env = "RANCHER_TOKEN_SECRET_NAME",
        default_value = "rancher-token"
    )]
    pub rancher_token_secret_name: String,

    /// Namespace of that Secret (default: the manager's own namespace, `POD_NAMESPACE`).
    #[arg(long = "rancher-token-secret-namespace", env = "RANCHER_TOKEN_SECRET_NAMESPACE")]
    pub rancher_token_secret_namespace: Option<String>,

    /// Key of the token in that Secret.
    #[arg(
        long = "rancher-token-secret-key",
        env = "RANCHER_TOKEN_SECRET_KEY",
        default_value = "token"
    )]
    pub rancher_token_secret_key: String,

    /// Seconds allowed for one Rancher request.
    #[arg(
        long = "rancher-timeout-seconds",
        env = "RANCHER_TIMEOUT_SECONDS",
        default_value_t = 30
    )]
    pub rancher_timeout_seconds: u64,

    /// Keycloak base URL for the projects' groups (include `/auth` for keycloakx); without it a project with
    /// `spec.keycloak.enabled` reports `KeycloakNotConfigured`.
    #[arg(long = "rancher-keycloak-url", env = "RANCHER_KEYCLOAK_URL")]
    pub rancher_keycloak_url: Option<String>,

    /// Realm holding the groups and users Rancher's Keycloak OIDC provider sees.
    #[arg(
        long = "rancher-keycloak-realm",
        env = "RANCHER_KEYCLOAK_REALM",
        default_value = "waldur"
    )]
    pub rancher_keycloak_realm: String,

    /// Realm the admin logs into (admin-cli password grant or client credentials).
    #[arg(
        long = "rancher-keycloak-admin-realm",
        env = "RANCHER_KEYCLOAK_ADMIN_REALM",
        default_value = "master"
    )]
    pub rancher_keycloak_admin_realm: String,

    /// Secret with the Keycloak admin credentials (`username`/`password`, `admin-username`/`admin-password`, or
    /// `client-id`/`client-secret`).
    #[arg(
        long = "rancher-keycloak-admin-secret-name",
        env = "RANCHER_KEYCLOAK_ADMIN_SECRET_NAME",
        default_value = "rancher-keycloak-admin"
    )]
    pub rancher_keycloak_admin_secret_name: String,

    /// Namespace of that Secret (default: the manager's own namespace, `POD_NAMESPACE`).
    #[arg(
        long = "rancher-keycloak-admin-secret-namespace",
        env = "RANCHER_KEYCLOAK_ADMIN_SECRET_NAMESPACE"
    )]
    pub rancher_keycloak_admin_secret_namespace: Option<String>,

    /// Seconds allowed for one Keycloak request.
    #[arg(
        long = "rancher-keycloak-timeout-seconds",
        env = "RANCHER_KEYCLOAK_TIMEOUT_SECONDS",
        default_value_t = 30
    )]
    pub rancher_keycloak_timeout_seconds: u64,

    /// Seconds between drift checks of a project (jittered by ±10 %): Rancher and Keycloak cannot be watched,
    /// so this is how long a group, binding or membership changed behind the operator's back may stay wrong.
    #[arg(
        long = "rancher-resync-interval-seconds",
        env = "RANCHER_RESYNC_INTERVAL_SECONDS",
        default_value_t = 300
    )]
    pub rancher_resync_interval_seconds: u64,

    /// Make membership authoritative: remove every group member the spec does not list, including users added
    /// by hand in Keycloak. By default only members the operator added are ever removed.
    #[arg(
        long = "rancher-authoritative-membership",
        env = "RANCHER_AUTHORITATIVE_MEMBERSHIP",
        default_value_t = false
    )]
    pub rancher_authoritative_membership: bool,

    /// Seconds a transient failure (Rancher or Keycloak unreachable, 5xx) may last before the phase becomes
    /// `Error`; refused requests (bad token, unknown role template) are `Error` at once.
    #[arg(
        long = "rancher-error-after-seconds",
        env = "RANCHER_ERROR_AFTER_SECONDS",
        default_value_t = 600
    )]
    pub rancher_error_after_seconds: u64,
}

impl RancherProjectSettings {
    /// The resync interval (at least one second).
    pub fn resync_interval(&self) -> Duration {
        Duration::from_secs(self.rancher_resync_interval_seconds.max(1))
    }

    /// How long a transient failure may last before it counts as persistent.
    pub fn error_after(&self) -> Duration {
        Duration::from_secs(self.rancher_error_after_seconds)
    }

    /// The Rancher client, or `None` when no URL is configured.
    pub fn rancher_client(
        &self,
        kube: kube::Client,
        metrics: Option<Metrics>,
    ) -> Result<Option<RancherClient>, RancherError> {
        let Some(url) = self.rancher_url.as_deref().map(str::trim).filter(|u| !u.is_empty()) else {
            return Ok(None);
        };
        let namespace = own_namespace(self.rancher_token_secret_namespace.as_deref());
        let tokens = SecretToken::new(
            kube,
            &namespace,
            &self.rancher_token_secret_name,
            &self.rancher_token_secret_key,
            TOKEN_MAX_AGE,
        );
        let http = HttpSettings {
            request_timeout: Duration::from_secs(self.rancher_timeout_seconds.max(1)),
            ..HttpSettings::default()
        };
        RancherClient::new(url, http, metrics, Arc::new(tokens)).map(Some)
    }

    /// The Keycloak realm client, or `None` when no URL is configured.
    pub fn keycloak_realm(
        &self,
        kube: kube::Client,
        metrics: Option<Metrics>,
    ) -> Result<Option<RealmClient>, KeycloakError> {
        let Some(url) = self
            .rancher_keycloak_url
            .as_deref()
            .map(str::trim)
            .filter(|u| !u.is_empty())
        else {
            return Ok(None);
        };
        let mut config = KeycloakConfig::new(url.trim_end_matches('/'));
        config.token_realm = self.rancher_keycloak_admin_realm.clone();
        config.http = HttpSettings {
            request_timeout: Duration::from_secs(self.rancher_keycloak_timeout_seconds.max(1)),
            ..HttpSettings::default()
        };
        let namespace = own_namespace(self.rancher_keycloak_admin_secret_namespace.as_deref());
        let provider = SecretCredentials::new(kube, &namespace, &self.rancher_keycloak_admin_secret_name);
        let client = KeycloakClient::new(config, Arc::new(provider), metrics)?;
        Ok(Some(client.realm(&self.rancher_keycloak_realm)))
    }
}

/// The configured namespace, else the manager's own (`POD_NAMESPACE`), else `default`.
fn own_namespace(configured: Option<&str>) -> String {
    configured
        .map(str::trim)
        .filter(|ns| !ns.is_empty())
        .map(str::to_string)
        .or_else(|| std::env::var("POD_NAMESPACE").ok().filter(|ns| !ns.is_empty()))
        .unwrap_or_else(|| "default".to_string())
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use crate::cli::Cli;

    #[test]
    fn the_flags_fit_the_manager_command_line() {
        // Catches flag or field names that collide with another controller's (clap checks on first parse).
        Cli::command().debug_assert();
        let cli = Cli::parse_from([
            "manager",
            "--rancher-url=https://rancher.example.com",
            "--rancher-keycloak-url=http://keycloak:8080",
            "--rancher-resync-interval-seconds=2",
            "--rancher-authoritative-membership",
        ]);
        let settings = &cli.managed_rancher_project;
        assert_eq!(settings.rancher_url.as_deref(), Some("https://rancher.example.com"));
        assert_eq!(settings.resync_interval(), std::time::Duration::from_secs(2));
        assert!(settings.rancher_authoritative_membership);
        assert_eq!(settings.rancher_keycloak_realm, "waldur");
        assert_eq!(settings.rancher_token_secret_key, "token");
    }
}
