//! What the NebariApp controller is configured with: the shared Gateways, the certificate issuer and Keycloak.

use super::auth_policy::KeycloakPolicy;
use super::health::HealthCheckSettings;
use super::hostname::HostnamePolicy;
use super::orphans::OrphanSettings;
use super::token_exchange::TokenExchangeSetting;
use crate::keycloak::KeycloakConnection;

/// Settings of the NebariApp controller.
#[derive(Debug, Clone)]
pub struct NebariAppSettings {
    /// Name of the shared public Gateway (`spec.gateway: public`).
    pub public_gateway: String,
    /// Name of the shared internal Gateway (`spec.gateway: internal`).
    pub internal_gateway: String,
    /// Namespace of both shared Gateways (Certificates and TLS Secrets live there too).
    pub gateway_namespace: String,
    /// The Gateways' shared HTTPS listener, used when an app has no listener of its own.
    pub https_section: String,
    /// The Gateways' shared HTTP listener, used when TLS is disabled.
    pub http_section: String,
    /// cert-manager ClusterIssuer for app certificates; empty means apps use the shared HTTPS listener.
    pub cluster_issuer: String,
    /// Whether Keycloak clients are provisioned (false disables the keycloak provider).
    pub keycloak_enabled: bool,
    /// Where Keycloak is and how to log in as its admin.
    pub keycloak: KeycloakConnection,
    /// In-cluster issuer base the gateway uses for discovery and token calls; defaults to the Keycloak URL.
    pub keycloak_issuer_url: Option<String>,
    /// Browser-facing Keycloak URL (authorize and logout endpoints, `issuer-url` in the OIDC Secret).
    pub keycloak_external_url: Option<String>,
    /// The hostnames each namespace's apps may serve (`--nebari-allowed-hostnames`; empty allows all).
    pub allowed_hostnames: HostnamePolicy,
    /// What an app may provision in Keycloak (mapper types, client scopes, adopting ownerless clients).
    pub keycloak_policy: KeycloakPolicy,
    /// Which token exchange to configure (`--keycloak-token-exchange`).
    pub keycloak_token_exchange: TokenExchangeSetting,
    /// Health checks of the apps on the landing page (`--nebari-health-checks`).
    pub health_checks: HealthCheckSettings,
    /// The sweep of Keycloak clients whose app is gone (`--keycloak-orphaned-clients`).
    pub orphans: OrphanSettings,
    /// How many listeners of their own one namespace's apps may hold on one shared Gateway
    /// (`--nebari-listeners-per-namespace`), so one tenant cannot take the listeners every tenant shares.
    pub listeners_per_namespace: usize,
}

impl NebariAppSettings {
    /// The Gateway name for `public` or `internal`.
    pub fn gateway_name(&self, kind: crds::nebari::GatewayKind) -> &str {
        match kind {
            crds::nebari::GatewayKind::Public => &self.public_gateway,
            crds::nebari::GatewayKind::Internal => &self.internal_gateway,
        }
    }

    /// The in-cluster issuer URL of the realm (gateway-facing).
    pub fn internal_issuer(&self) -> String {
        let base = self.keycloak_issuer_url.as_deref().unwrap_or(&self.keycloak.url);
        format!("{}/realms/{}", base.trim_end_matches('/'), self.keycloak.realm)
    }

    /// The browser-facing issuer URL of the realm, when an external URL is configured.
    pub fn external_issuer(&self) -> Option<String> {
        self.keycloak_external_url
            .as_deref()
            .map(|base| format!("{}/realms/{}", base.trim_end_matches('/'), self.keycloak.realm))
    }
}

#[cfg(test)]
impl NebariAppSettings {
    /// The settings of a default install (the manager's flag defaults), for unit tests.
    pub(crate) fn example() -> Self {
        NebariAppSettings {
            public_gateway: "nebari-gateway".into(),
            internal_gateway: "nebari-internal-gateway".into(),
            gateway_namespace: "envoy-gateway-system".into(),
            https_section: "https".into(),
            http_section: "http".into(),
            cluster_issuer: String::new(),
            keycloak_enabled: true,
            keycloak: KeycloakConnection {
                url: "http://keycloak.keycloak.svc:8080".into(),
                realm: "nebari".into(),
                admin_realm: "master".into(),
                admin_secret: framework::secrets::SecretRef::new("keycloak", "nebari-realm-admin-credentials"),
                request_timeout: std::time::Duration::from_secs(30),
                trust: framework::trust::TrustSettings::default(),
                static_credentials: None,
            },
            keycloak_issuer_url: None,
            keycloak_external_url: None,
            allowed_hostnames: HostnamePolicy::default(),
            keycloak_token_exchange: TokenExchangeSetting::Auto,
            health_checks: HealthCheckSettings::default(),
            orphans: OrphanSettings {
                policy: super::orphans::OrphanPolicy::Report,
                grace: std::time::Duration::from_secs(3600),
                interval: std::time::Duration::from_secs(300),
                watched: None,
            },
            keycloak_policy: KeycloakPolicy::default(),
            listeners_per_namespace: 16,
        }
    }
}
