//! `NebariApp` (`reconcilers.nebari.dev/v1`): how an application is exposed (routing), secured (TLS) and
//! protected (OIDC authentication) on a Nebari platform.
//!
//! Fields, defaults and validation follow the nebari-operator API exactly, so existing NebariApp YAML applies
//! unchanged; the status gains fields the original declared but never filled (gatewayRef, clientSecretRef).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The desired state of a NebariApp: the hostname and backend Service to expose, the shared Gateway that routes
/// to it, and its routing, TLS, authentication and landing-page settings.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "reconcilers.nebari.dev",
    version = "v1",
    kind = "NebariApp",
    plural = "nebariapps",
    singular = "nebariapp",
    shortname = "nebariapp",
    namespaced,
    status = "NebariAppStatus",
    doc = "NebariApp onboards an application onto a Nebari platform: the operator exposes its Service at a \
           hostname through HTTPRoutes on a shared Gateway, secures it with TLS, and protects it with OIDC \
           authentication (Keycloak clients and an Envoy Gateway SecurityPolicy) when asked.",
    printcolumn = r#"{"name": "Hostname", "type": "string", "jsonPath": ".spec.hostname"}"#,
    printcolumn = r#"{"name": "Gateway", "type": "string", "jsonPath": ".spec.gateway"}"#,
    printcolumn = r#"{"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name": "Reason", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].reason"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct NebariAppSpec {
    /// Hostname is the fully qualified domain name where the application is accessible, used for the
    /// HTTPRoute, the TLS certificate and the OIDC redirect URIs. Example: "myapp.nebari.local".
    #[schemars(
        length(min = 1),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
    )]
    pub hostname: String,

    /// Service is the backend Kubernetes Service that receives the traffic.
    pub service: ServiceReference,

    /// Routing configures path-based rules, public (unauthenticated) paths and TLS. Omit it to manage routing
    /// outside the operator: then no HTTPRoute, Certificate or listener is created (and existing ones are
    /// removed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing: Option<Box<RoutingConfig>>,

    /// Auth configures OIDC authentication for the application.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<Box<AuthConfig>>,

    /// Gateway selects the shared Gateway that routes to the application: "public" (default) or "internal".
    #[serde(default)]
    pub gateway: GatewayKind,

    /// ServiceAccountName is the ServiceAccount of the app's pods; it alone may read the OIDC client Secret.
    /// Defaults to the NebariApp's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub service_account_name: Option<String>,

    /// LandingPage configures how the service appears on the Nebari landing page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landing_page: Option<Box<LandingPageConfig>>,
}

/// Which shared Gateway routes to the application.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GatewayKind {
    /// The internet-facing gateway.
    #[default]
    Public,
    /// The cluster-internal gateway.
    Internal,
}

/// ServiceReference identifies the Kubernetes Service that backs the application.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceReference {
    /// Name of the Service.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Port on the Service to route traffic to.
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
    /// Namespace of the Service, when it is not the NebariApp's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub namespace: Option<String>,
}

/// RoutingConfig configures how traffic reaches the application.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoutingConfig {
    /// Routes are path rules; only matching traffic is routed. Without routes all traffic to the hostname is.
    /// At most 64, the matches one HTTPRoute rule can carry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub routes: Option<Vec<RouteMatch>>,
    /// PublicRoutes are paths that bypass OIDC authentication, served by a separate HTTPRoute that the
    /// SecurityPolicy does not cover. Path type defaults to Exact here (safer for an auth bypass). At most 64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub public_routes: Option<Vec<RouteMatch>>,
    /// TLS configures certificate management and HTTPS termination (enabled by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<RoutingTlsConfig>,
    /// Annotations to merge onto the generated HTTPRoute (operator annotations win on a clash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Timeouts of the app's routes (Gateway API's HTTPRoute timeouts, honoured by Envoy Gateway). Envoy's
    /// default ends every request after 15 s, which breaks server-sent events, long polling and gRPC streams:
    /// `request: 0s` turns the limit off for such apps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeouts: Option<RouteTimeouts>,
}

/// Timeouts of an app's routes, as Gateway API durations (`30s`, `5m`, `1h30m`, `500ms`; `0s` disables).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[x_kube(validation = Rule::new(
    "!has(self.request) || !has(self.backendRequest) || duration(self.request) == duration('0s') || \
     duration(self.backendRequest) <= duration(self.request)"
).message("backendRequest must not be longer than request (unless request is 0s, no limit)"))]
#[serde(rename_all = "camelCase")]
pub struct RouteTimeouts {
    /// How long the gateway waits for the whole request to be answered, from the client's first byte to the last
    /// byte of the response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]{1,5}(h|m|s|ms)){1,4}$"), length(max = 32))]
    pub request: Option<String>,
    /// How long the gateway waits for one backend call (a retried request makes several); at most `request`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]{1,5}(h|m|s|ms)){1,4}$"), length(max = 32))]
    pub backend_request: Option<String>,
}

/// RouteMatch is one path rule.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RouteMatch {
    /// PathPrefix is the path to match; must start with "/". Example: "/api/v1". The path rules of Gateway API's
    /// HTTPRoute apply (no `//`, `/./`, `/../`, encoded slash or `#`), so a path the route could not carry is
    /// refused here rather than failing later. At most 1024 characters, Gateway API's own limit; the bound also
    /// keeps the rule below within the apiserver's CEL cost budget (unbounded, a real kube-apiserver refuses the
    /// CRD: the rule's estimated cost exceeded the budget 12-fold).
    #[schemars(regex(pattern = r"^/.*"), length(max = 1024))]
    #[x_kube(validation = Rule::new(
        "!self.contains('//') && !self.contains('/./') && !self.contains('/../') && !self.contains('%2f') && \
         !self.contains('%2F') && !self.contains('#') && !self.endsWith('/..') && !self.endsWith('/.')"
    ).message("pathPrefix must not contain '//', '/./', '/../', '%2f', '%2F' or '#', nor end with '/.' or '/..'"))]
    pub path_prefix: String,
    /// PathType is PathPrefix (default in routes) or Exact (default in publicRoutes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_type: Option<PathType>,
}

/// How a path is matched.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum PathType {
    /// Requests whose path starts with the prefix.
    PathPrefix,
    /// Requests with exactly this path.
    Exact,
}

/// RoutingTlsConfig controls TLS termination.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoutingTlsConfig {
    /// Enabled: when true (default) the operator issues a certificate for the hostname and adds a per-app HTTPS
    /// listener to the shared Gateway; when false only HTTP is used.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// SecretName names an existing `kubernetes.io/tls` Secret in the Gateway's namespace to use instead of
    /// issuing a certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 253),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
    )]
    pub secret_name: Option<String>,
}

/// AuthConfig configures OIDC authentication for the application.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new(
    "!has(self.forwardAccessToken) || self.forwardAccessToken == false || (has(self.enforceAtGateway) && self.enforceAtGateway == true)"
).message("forwardAccessToken: true requires enforceAtGateway: true"))]
#[x_kube(validation = Rule::new(
    "!has(self.enabled) || self.enabled == false || !has(self.provider) || self.provider != 'generic-oidc' || (has(self.issuerURL) && self.issuerURL != '')"
).message("issuerURL is required when provider is generic-oidc"))]
pub struct AuthConfig {
    /// Enabled requires users to authenticate via OIDC before reaching the application.
    #[serde(default)]
    pub enabled: bool,
    /// Provider is the OIDC provider: keycloak (default) or generic-oidc.
    #[serde(default)]
    pub provider: AuthProvider,
    /// RedirectURI is the OAuth2 callback path; defaults to "/oauth2/callback" (Envoy Gateway's default).
    #[serde(default, rename = "redirectURI", skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
    /// ClientSecretRef names a Secret in the app's namespace holding `client-id` and `client-secret`. Without it
    /// (and with provisionClient) the operator creates `<app>-oidc-client`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 253),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
    )]
    pub client_secret_ref: Option<String>,
    /// Scopes to request; defaults to openid, profile, email.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
    /// Groups that should have access; created in Keycloak and published in status.serviceDiscovery. Top-level
    /// group names, without `/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(inner(length(min = 1, max = 255), regex(pattern = r"^[^/]+$")))]
    pub groups: Option<Vec<String>>,
    /// ProvisionClient makes the operator create the OIDC client in the provider (keycloak only; default true).
    #[serde(default = "default_true")]
    pub provision_client: bool,
    /// EnforceAtGateway creates an Envoy Gateway SecurityPolicy that runs the OIDC flow at the gateway
    /// (default true). When false the app handles OAuth itself with the provisioned credentials.
    #[serde(default = "default_true")]
    pub enforce_at_gateway: bool,
    /// ForwardAccessToken forwards the user's access token upstream as `Authorization: Bearer` (gateway
    /// enforcement only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_access_token: Option<bool>,
    /// DenyRedirect lists headers that make the OIDC filter answer 401 instead of redirecting (prevents PKCE
    /// races when SPAs fire parallel requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny_redirect: Option<Vec<DenyRedirectHeader>>,
    /// IssuerURL is the OIDC issuer for provider generic-oidc (required there); `https://` only, since the
    /// gateway trusts the keys it finds there.
    #[serde(default, rename = "issuerURL", skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2048), regex(pattern = r"^https://"))]
    pub issuer_url: Option<String>,
    /// SPAClient provisions a public PKCE (S256) client for browser apps (keycloak only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spa_client: Option<SpaClientConfig>,
    /// DeviceFlowClient provisions a public client for the OAuth2 device authorization grant (keycloak only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_flow_client: Option<DeviceFlowClientConfig>,
    /// KeycloakConfig manages groups (with members) and protocol mappers for the app's client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keycloak_config: Option<KeycloakClientConfig>,
    /// TokenExchange lets other NebariApp clients of the realm exchange their tokens for this client's audience
    /// (requires the server's token-exchange feature).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_exchange: Option<TokenExchangeConfig>,
}

/// Which OIDC provider authenticates users.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum AuthProvider {
    /// Keycloak; the operator can provision clients.
    #[default]
    #[serde(rename = "keycloak")]
    Keycloak,
    /// Any OIDC provider; credentials come from clientSecretRef.
    #[serde(rename = "generic-oidc")]
    GenericOidc,
}

/// A header rule that makes the OIDC filter answer 401 instead of redirecting.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DenyRedirectHeader {
    /// Header name.
    #[schemars(length(min = 1))]
    pub name: String,
    /// How the value is matched (default Exact).
    #[serde(default, rename = "type")]
    pub match_type: HeaderMatchType,
    /// Header value.
    #[schemars(length(min = 1))]
    pub value: String,
}

/// How a header value is matched.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum HeaderMatchType {
    /// Equal to the value.
    #[default]
    Exact,
    /// Starts with the value.
    Prefix,
    /// Ends with the value.
    Suffix,
    /// Matches the regular expression.
    RegularExpression,
}

/// A public OIDC client for single-page applications (PKCE S256).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpaClientConfig {
    /// Enabled provisions the client.
    #[serde(default)]
    pub enabled: bool,
    /// ClientID overrides the generated `<namespace>-<app>-spa`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
}

/// A public OIDC client for the OAuth2 device authorization grant (CLIs).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceFlowClientConfig {
    /// Enabled provisions the client; its id is written to the OIDC Secret as `device-client-id`.
    #[serde(default)]
    pub enabled: bool,
}

/// Token exchange (RFC 8693) towards this client.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenExchangeConfig {
    /// Enabled permits the clients of the other NebariApps of this namespace (and of the apps listed in peers) to
    /// exchange tokens for this client's audience.
    #[serde(default)]
    pub enabled: bool,
    /// NebariApps of other namespaces, as "<namespace>/<name>", whose clients may exchange tokens for this
    /// client's audience too. Apps of the same namespace need not be listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peers: Option<Vec<String>>,
}

/// Keycloak realm resources managed for the app's client.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeycloakClientConfig {
    /// Groups to ensure exist, with members added (never removed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<KeycloakGroup>>,
    /// Protocol mappers on the client; when given, the default group-membership mapper is not created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_mappers: Option<Vec<KeycloakProtocolMapperConfig>>,
}

/// A Keycloak group with users to add to it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeycloakGroup {
    /// Group name: a top-level group, without `/`.
    #[schemars(length(min = 1, max = 255), regex(pattern = r"^[^/]+$"))]
    pub name: String,
    /// Usernames to add (additive: other members stay; unknown users are reported, not fatal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub members: Option<Vec<String>>,
}

/// A protocol mapper with free-form configuration.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeycloakProtocolMapperConfig {
    /// Mapper name (unique per client).
    #[schemars(length(min = 1))]
    pub name: String,
    /// Mapper type, e.g. "oidc-group-membership-mapper".
    #[schemars(length(min = 1))]
    pub protocol_mapper: String,
    /// Mapper configuration, e.g. {"claim.name": "groups", "full.path": "false"}.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<BTreeMap<String, String>>,
}

/// How the service appears on the Nebari landing page.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new(
    "!has(self.enabled) || self.enabled == false || (has(self.displayName) && size(self.displayName) > 0)"
).message("displayName is required when the landing page is enabled"))]
pub struct LandingPageConfig {
    /// Enabled lists the service on the landing page.
    #[serde(default)]
    pub enabled: bool,
    /// DisplayName is the name shown (required when enabled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub display_name: Option<String>,
    /// Description shown on the service card.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub description: Option<String>,
    /// Icon: a built-in identifier (jupyter, grafana, ...) or an image URL (`http(s)://`, a path, or
    /// `data:image/...`); any other scheme (`javascript:`) is refused, since the landing page puts it in a page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 65536),
        regex(pattern = r"^(https?://.*|/.*|data:image/.*|[A-Za-z0-9][A-Za-z0-9._-]*)$")
    )]
    pub icon: Option<String>,
    /// Icon for light themes (as `icon`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 65536),
        regex(pattern = r"^(https?://.*|/.*|data:image/.*|[A-Za-z0-9][A-Za-z0-9._-]*)$")
    )]
    pub icon_light: Option<String>,
    /// Icon for dark themes (as `icon`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(max = 65536),
        regex(pattern = r"^(https?://.*|/.*|data:image/.*|[A-Za-z0-9][A-Za-z0-9._-]*)$")
    )]
    pub icon_dark: Option<String>,
    /// Category groups related services.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Priority orders services within a category (lower first).
    #[serde(default = "default_priority")]
    #[schemars(range(min = 0, max = 1000))]
    pub priority: i32,
    /// ExternalUrl overrides the URL derived from the hostname; `http://` or `https://` only (the landing page
    /// links to it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2048), regex(pattern = r"^https?://"))]
    pub external_url: Option<String>,
    /// HealthCheck configures health monitoring of the service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check: Option<HealthCheckConfig>,
}

/// Health check parameters for a service.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthCheckConfig {
    /// Enabled turns health checks on.
    #[serde(default)]
    pub enabled: bool,
    /// Path to check.
    #[serde(default = "default_health_path")]
    pub path: String,
    /// Port to check; defaults to the service port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: Option<i32>,
    /// Seconds between checks.
    #[serde(default = "default_interval")]
    #[schemars(range(min = 10, max = 300))]
    pub interval_seconds: i32,
    /// Seconds before a check times out.
    #[serde(default = "default_timeout")]
    #[schemars(range(min = 1, max = 30))]
    pub timeout_seconds: i32,
}

/// The observed state of a NebariApp.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NebariAppStatus {
    /// Conditions: RoutingReady, TLSReady, AuthReady and the aggregate Ready.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// The generation the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Keycloak groups the app created or added members to, so those memberships can be reverted when a group
    /// leaves the spec or the app is deleted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keycloak_groups: Vec<String>,
    /// The hostname the app serves: spec.hostname once the app's namespace owns it; empty while another
    /// namespace's app holds it or the platform does not allow it (see the RoutingReady condition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// The Gateway routing to the application.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_ref: Option<GatewayReference>,
    /// The Secret holding the OIDC client credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_ref: Option<ResourceReference>,
    /// Hash of the Keycloak-shaping configuration last provisioned; provisioning is skipped while it matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_config_hash: Option<String>,
    /// The resolved landing-page descriptor consumed by the landing page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_discovery: Option<Box<ServiceDiscoveryStatus>>,
}

/// Identifies a Gateway.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct GatewayReference {
    /// Gateway name.
    pub name: String,
    /// Gateway namespace.
    pub namespace: String,
}

/// Identifies a Kubernetes object.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ResourceReference {
    /// Object name.
    pub name: String,
    /// Object namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// The landing-page descriptor computed from spec.landingPage.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceDiscoveryStatus {
    /// Mirrors spec.landingPage.enabled.
    pub enabled: bool,
    /// Name shown on the landing page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Supplementary text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The effective URL of the service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Icon identifier or URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
    /// Icon for light themes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon_light: Option<String>,
    /// Icon for dark themes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon_dark: Option<String>,
    /// Category of the service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Sort order within the category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1000))]
    pub priority: Option<i32>,
    /// "public" without auth, "private" with auth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<String>,
    /// Groups required to see a private service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_groups: Option<Vec<String>>,
    /// The last health check of the service (landingPage.healthCheck, when the operator runs health checks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<ServiceHealth>,
}

/// What the last health check of a service found.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceHealth {
    /// Healthy (the endpoint answered 2xx or 3xx), Unhealthy (another status, an error or no answer in time), or
    /// Unknown (not checked yet).
    pub status: HealthStatus,
    /// When the service was last checked (refreshed at least every ten intervals while nothing changes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_check_time: Option<Time>,
    /// What the check found, e.g. "HTTP 503" or "no answer within 5s".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The health of a service.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum HealthStatus {
    /// The endpoint answered with a 2xx or 3xx status.
    Healthy,
    /// The endpoint answered with another status, failed, or did not answer in time.
    Unhealthy,
    /// Not checked yet.
    #[default]
    Unknown,
}

fn default_true() -> bool {
    true
}

fn default_priority() -> i32 {
    100
}

fn default_health_path() -> String {
    "/health".to_string()
}

fn default_interval() -> i32 {
    30
}

fn default_timeout() -> i32 {
    5
}
