//! NebariApp manager settings: the shared Gateways, the certificate issuer and Keycloak, with
//! nebari-operator's defaults (its environment variable names keep working).

use clap::Args;

/// Settings of the NebariApp controller.
#[derive(Debug, Clone, Args)]
pub struct NebariAppSettings {
    /// Name of the shared public Gateway (`spec.gateway: public`).
    #[arg(
        long = "nebari-public-gateway",
        env = "NEBARI_PUBLIC_GATEWAY",
        default_value = "nebari-gateway"
    )]
    pub public_gateway: String,

    /// Name of the shared internal Gateway (`spec.gateway: internal`).
    #[arg(
        long = "nebari-internal-gateway",
        env = "NEBARI_INTERNAL_GATEWAY",
        default_value = "nebari-internal-gateway"
    )]
    pub internal_gateway: String,

    /// Namespace of both shared Gateways (Certificates and TLS Secrets live there too).
    #[arg(
        long = "nebari-gateway-namespace",
        env = "NEBARI_GATEWAY_NAMESPACE",
        default_value = "envoy-gateway-system"
    )]
    pub gateway_namespace: String,

    /// The Gateways' shared HTTPS listener, used when an app has no listener of its own.
    #[arg(long = "nebari-https-section", env = "NEBARI_HTTPS_SECTION", default_value = "https")]
    pub https_section: String,

    /// The Gateways' shared HTTP listener, used when TLS is disabled.
    #[arg(long = "nebari-http-section", env = "NEBARI_HTTP_SECTION", default_value = "http")]
    pub http_section: String,

    /// cert-manager ClusterIssuer for app certificates; empty means apps use the shared HTTPS listener.
    #[arg(long = "nebari-cluster-issuer", env = "TLS_CLUSTER_ISSUER_NAME", default_value = "")]
    pub cluster_issuer: String,

    /// Provision Keycloak clients (false disables the keycloak provider, as KEYCLOAK_ENABLED=false did).
    #[arg(long = "keycloak-enabled", env = "KEYCLOAK_ENABLED", default_value_t = true, action = clap::ArgAction::Set)]
    pub keycloak_enabled: bool,

    /// Keycloak base URL as the operator reaches it (include `/auth` for keycloakx).
    #[arg(
        long = "keycloak-url",
        env = "KEYCLOAK_URL",
        default_value = "http://keycloak-keycloakx-http.keycloak.svc.cluster.local:8080"
    )]
    pub keycloak_url: String,

    /// Realm holding the apps' clients.
    #[arg(long = "keycloak-realm", env = "KEYCLOAK_REALM", default_value = "nebari")]
    pub keycloak_realm: String,

    /// Realm the admin user logs into (admin-cli password grant).
    #[arg(
        long = "keycloak-admin-realm",
        env = "KEYCLOAK_ADMIN_REALM",
        default_value = "master"
    )]
    pub keycloak_admin_realm: String,

    /// Secret with the Keycloak admin credentials (keys `username`/`password`, or `admin-username`/`admin-password`).
    #[arg(
        long = "keycloak-admin-secret-name",
        env = "KEYCLOAK_ADMIN_SECRET_NAME",
        default_value = "nebari-realm-admin-credentials"
    )]
    pub keycloak_admin_secret_name: String,

    /// Namespace of the admin credentials Secret.
    #[arg(
        long = "keycloak-admin-secret-namespace",
        env = "KEYCLOAK_ADMIN_SECRET_NAMESPACE",
        default_value = "keycloak"
    )]
    pub keycloak_admin_secret_namespace: String,

    /// In-cluster issuer base the gateway uses for discovery and token calls; defaults to the Keycloak URL.
    #[arg(long = "keycloak-issuer-url", env = "KEYCLOAK_ISSUER_URL")]
    pub keycloak_issuer_url: Option<String>,

    /// Browser-facing Keycloak URL (authorize and logout endpoints, `issuer-url` in the OIDC Secret).
    #[arg(long = "keycloak-external-url", env = "KEYCLOAK_EXTERNAL_URL")]
    pub keycloak_external_url: Option<String>,

    /// Timeout of each Keycloak request, in seconds.
    #[arg(
        long = "keycloak-api-timeout-seconds",
        env = "KEYCLOAK_API_TIMEOUT_SECONDS",
        default_value_t = 30
    )]
    pub keycloak_api_timeout_seconds: u64,
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
        let base = self.keycloak_issuer_url.as_deref().unwrap_or(&self.keycloak_url);
        format!("{}/realms/{}", base.trim_end_matches('/'), self.keycloak_realm)
    }

    /// The browser-facing issuer URL of the realm, when an external URL is configured.
    pub fn external_issuer(&self) -> Option<String> {
        self.keycloak_external_url
            .as_deref()
            .map(|base| format!("{}/realms/{}", base.trim_end_matches('/'), self.keycloak_realm))
    }
}
