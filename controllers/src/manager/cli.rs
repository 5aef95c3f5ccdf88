//! The `manager` command line: kubebuilder-style flags, each also settable through an environment variable, and
//! their mapping into each controller's settings (controllers never see the command line).

use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use framework::runner::ControllerDefaults;
use framework::secrets::SecretRef;
use framework::shard::{Shard, ShardError};

use crate::application_credential::KeystoneApplicationCredentialSettings;
use crate::application_credential::orphans::CredentialOrphanSettings;
use crate::keycloak::KeycloakConnection;
use crate::nebari_app::NebariAppSettings;
use crate::nebari_app::auth_policy::{self, KeycloakPolicy};
use crate::nebari_app::health::HealthCheckSettings;
use crate::nebari_app::hostname::{HostnamePattern, HostnamePolicy};
use crate::nebari_app::keycloak_groups::GroupPattern;
use crate::nebari_app::orphans::OrphanSettings;
use crate::nebari_app::token_exchange::TokenExchangeSetting;
use crate::orphan_policy::OrphanPolicy;
use crate::rancher::RancherConnection;
use crate::rancher_inventory::RancherInventorySettings;
use crate::rancher_project::RancherProjectSettings;
use crate::rancher_project::policy::RancherPolicy;
use framework::trust::{BundleRef, TrustSettings};
use secrecy::SecretString;

use crate::keycloak::Credentials;

/// A Kubernetes operator hosting the NebariApp, KeystoneApplicationCredential and ManagedRancherProject
/// controllers in one process.
#[derive(Debug, Parser)]
#[command(name = "manager", version)]
pub struct Cli {
    /// What to do; without a subcommand the manager runs the controllers.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Settings of the controller manager.
    #[command(flatten)]
    pub run: RunArgs,

    /// Flags of the KeystoneApplicationCredential controller.
    #[command(flatten)]
    pub keystone_application_credential: KeystoneFlags,

    /// Flags of the NebariApp controller.
    #[command(flatten)]
    pub nebari_app: NebariAppFlags,

    /// Flags of the ManagedRancherProject and RancherProjectInventory controllers.
    #[command(flatten)]
    pub managed_rancher_project: RancherFlags,
}

/// Subcommands besides running.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the controllers (the default).
    Run,
    /// Print every CustomResourceDefinition of the operator as YAML and exit.
    Crds,
    /// Roll back to a replaced operator: rename this operator's finalizer on every object of its kind to the
    /// original's (run with the manager stopped, as a cluster administrator; uses the current kubeconfig).
    Handback {
        /// Whose objects to hand back.
        #[arg(value_enum)]
        original: super::handback::Original,
    },
    /// Before a cut-over: list the objects the controllers, run with the same flags, would refuse, and the flag
    /// that keeps each working. Reads the cluster (current kubeconfig) and Keycloak; changes nothing. Exits 1
    /// when some object would be refused.
    TakeoverCheck,
}

/// Log output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One JSON object per line (for log collectors).
    Json,
    /// Human-readable lines.
    Text,
}

/// Settings shared by all controllers.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Address of the Prometheus metrics endpoint (`/metrics`); "0" disables it.
    #[arg(long, env = "METRICS_BIND_ADDRESS", default_value = ":8080")]
    pub metrics_bind_address: String,

    /// Address of the health probes (`/healthz`, `/readyz`); "0" disables them.
    #[arg(long, env = "HEALTH_PROBE_BIND_ADDRESS", default_value = ":8081")]
    pub health_probe_bind_address: String,

    /// Hold a Lease so that only one replica reconciles at a time.
    #[arg(long, env = "LEADER_ELECT", default_value_t = false)]
    pub leader_elect: bool,

    /// Namespace of the leader-election Lease (default: the pod's namespace, else "default").
    #[arg(long, env = "LEADER_ELECTION_NAMESPACE")]
    pub leader_election_namespace: Option<String>,

    /// Name of the leader-election Lease.
    #[arg(long, env = "LEADER_ELECTION_ID", default_value = "platform-operator-leader")]
    pub leader_election_id: String,

    /// Namespace to watch; repeat the flag (or comma-separate the variable) for several. Empty watches all.
    #[arg(long = "watch-namespace", env = "WATCH_NAMESPACE", value_delimiter = ',')]
    pub watch_namespaces: Vec<String>,

    /// Controllers to run, comma-separated, or "all".
    #[arg(long, env = "CONTROLLERS", value_delimiter = ',', default_value = "all")]
    pub controllers: Vec<String>,

    /// Reconciles each controller runs at once (per watched namespace).
    #[arg(long, env = "MAX_CONCURRENT_RECONCILES", default_value_t = 4)]
    pub max_concurrent_reconciles: u16,

    /// Milliseconds a change waits for more changes to the same object before its reconcile starts; changes
    /// arriving in that window share one reconcile. 0 reconciles at once.
    #[arg(long, env = "RECONCILE_DEBOUNCE_MS", default_value_t = 100)]
    pub reconcile_debounce_ms: u64,

    /// Split the objects among this many shards (separate Deployments); this replica reconciles only its own
    /// shard's (a stable hash of namespace and name). Each shard elects its own leader.
    #[arg(long, env = "SHARD_COUNT", default_value_t = 1)]
    pub shard_count: u32,

    /// Which shard this replica reconciles, 0 to `--shard-count` - 1.
    #[arg(long, env = "SHARD_INDEX", default_value_t = 0)]
    pub shard_index: u32,

    /// Seconds one reconcile may run before it is abandoned and retried with backoff (a stuck call never holds a
    /// worker for good).
    #[arg(long, env = "RECONCILE_TIMEOUT_SECONDS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    pub reconcile_timeout_seconds: u64,

    /// Seconds a Kubernetes API request may wait for its answer (watch streams are not limited).
    #[arg(long, env = "KUBE_REQUEST_TIMEOUT_SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub kube_request_timeout_seconds: u64,

    /// Log format: `json` for log collectors, `text` for people.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value = "json")]
    pub log_format: LogFormat,

    /// Log level or filter (e.g. `info`, `debug`, `info,controllers=debug`).
    #[arg(long, env = "LOG_LEVEL", default_value = "info")]
    pub log_level: String,
}

/// Flags of the NebariApp controller (nebari-operator's names and defaults; its environment variables work).
#[derive(Debug, Clone, Args)]
pub struct NebariAppFlags {
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
    /// Accepts `true`/`1`/`yes` and `false`/`0`/`no`; any other value is refused (nebari-operator read it as false).
    #[arg(
        long = "keycloak-enabled",
        env = "KEYCLOAK_ENABLED",
        default_value_t = true,
        action = clap::ArgAction::Set,
        value_parser = super::legacy_env::original_bool
    )]
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

    /// Admin credentials from nebari-operator's `KEYCLOAK_ADMIN_USERNAME`/`_PASSWORD` (only with an empty
    /// `KEYCLOAK_ADMIN_SECRET_NAME`, as there); set by `legacy_env`, never a flag.
    #[arg(skip)]
    pub legacy_admin_credentials: Option<Credentials>,

    /// CA bundle Keycloak's TLS certificate is verified against instead of the public CA roots:
    /// `secret:<namespace>/<name>[:<key>]` or `configmap:<namespace>/<name>[:<key>]` (key `ca.crt` by default),
    /// re-read when it changes.
    #[arg(long = "keycloak-ca-bundle", env = "KEYCLOAK_CA_BUNDLE")]
    pub keycloak_ca_bundle: Option<BundleRef>,

    /// Trust the system trust store (the image's CA certificates) for Keycloak too.
    #[arg(
        long = "keycloak-ca-system-trust",
        env = "KEYCLOAK_CA_SYSTEM_TRUST",
        default_value_t = false
    )]
    pub keycloak_ca_system_trust: bool,

    /// Do not verify Keycloak's TLS certificate at all. Insecure: anyone on the network path can impersonate
    /// it and read the operator's credentials; logged loudly. For self-signed servers nobody can distribute a CA
    /// for.
    #[arg(
        long = "keycloak-insecure-skip-verify",
        env = "KEYCLOAK_INSECURE_SKIP_VERIFY",
        default_value_t = false
    )]
    pub keycloak_insecure_skip_verify: bool,

    /// Hostnames each namespace's apps may serve, comma-separated patterns with a `{namespace}` placeholder
    /// (`{namespace}.apps.example.com,*.{namespace}.example.com`). Empty allows every hostname; either way a
    /// hostname belongs to the namespace that claimed it first.
    #[arg(
        long = "nebari-allowed-hostnames",
        env = "NEBARI_ALLOWED_HOSTNAMES",
        value_delimiter = ',',
        value_parser = clap::value_parser!(HostnamePattern)
    )]
    pub allowed_hostnames: Vec<HostnamePattern>,

    /// Probe the health endpoint (`landingPage.healthCheck`) of every Ready app that enables it, and publish the
    /// result in `status.serviceDiscovery.health` and `nebariapp_health_up`. Off by default: the manager must be
    /// able to reach the apps' Services.
    #[arg(long = "nebari-health-checks", env = "NEBARI_HEALTH_CHECKS", default_value_t = false)]
    pub health_checks: bool,

    /// What to do with Keycloak clients whose NebariApp is gone: `report` (log, metric) or `delete` after
    /// `--keycloak-orphan-grace-seconds`.
    #[arg(
        long = "keycloak-orphaned-clients",
        env = "KEYCLOAK_ORPHANED_CLIENTS",
        value_enum,
        default_value_t = OrphanPolicy::Report
    )]
    pub orphaned_clients: OrphanPolicy,

    /// Seconds a client must stay orphaned before `--keycloak-orphaned-clients=delete` deletes it.
    #[arg(
        long = "keycloak-orphan-grace-seconds",
        env = "KEYCLOAK_ORPHAN_GRACE_SECONDS",
        default_value_t = 3600
    )]
    pub orphan_grace_seconds: u64,

    /// Seconds between looks for orphaned Keycloak clients.
    #[arg(
        long = "keycloak-orphan-scan-seconds",
        env = "KEYCLOAK_ORPHAN_SCAN_SECONDS",
        default_value_t = 300,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub orphan_scan_seconds: u64,

    /// Health checks in flight at once.
    #[arg(
        long = "nebari-health-check-concurrency",
        env = "NEBARI_HEALTH_CHECK_CONCURRENCY",
        default_value_t = 16,
        value_parser = clap::value_parser!(u16).range(1..)
    )]
    pub health_check_concurrency: u16,

    /// How many listeners of their own (apps with TLS of their own) one namespace's apps may hold on one shared
    /// Gateway. Gateway API allows 64 listeners per Gateway; this keeps one tenant from taking them all.
    #[arg(
        long = "nebari-listeners-per-namespace",
        env = "NEBARI_LISTENERS_PER_NAMESPACE",
        default_value_t = 16,
        value_parser = clap::value_parser!(u16).range(1..=64)
    )]
    pub listeners_per_namespace: u16,

    /// TEST ONLY: send every health check to this address instead of resolving the Service's name, so end-to-end
    /// tests outside a cluster reach their stand-in app. Only in builds with the `test-hooks` feature.
    #[cfg(feature = "test-hooks")]
    #[arg(
        long = "nebari-test-health-check-address",
        env = "NEBARI_TEST_HEALTH_CHECK_ADDRESS",
        hide = true
    )]
    pub test_health_check_address: Option<std::net::IpAddr>,

    /// Protocol mapper types an app may put on its Keycloak client (comma-separated).
    #[arg(
        long = "keycloak-allowed-mapper-types",
        env = "KEYCLOAK_ALLOWED_MAPPER_TYPES",
        value_delimiter = ',',
        default_values_t = auth_policy::DEFAULT_MAPPER_TYPES.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    )]
    pub allowed_mapper_types: Vec<String>,

    /// Realm client scopes an app may request (comma-separated).
    #[arg(
        long = "keycloak-allowed-client-scopes",
        env = "KEYCLOAK_ALLOWED_CLIENT_SCOPES",
        value_delimiter = ',',
        default_values_t = auth_policy::DEFAULT_CLIENT_SCOPES.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    )]
    pub allowed_client_scopes: Vec<String>,

    /// Which token exchange `tokenExchange.enabled` configures: `v1` (fine-grained admin permissions), `v2`
    /// (standard token exchange, Keycloak 26.2+) or `auto` (v1 when the server has its preview features on, else
    /// v2 when it has it).
    #[arg(
        long = "keycloak-token-exchange",
        env = "KEYCLOAK_TOKEN_EXCHANGE",
        value_enum,
        default_value_t = TokenExchangeSetting::Auto
    )]
    pub token_exchange: TokenExchangeSetting,

    /// Adopt a Keycloak client that records no owner under an id an app derives from its name (only needed while
    /// taking over the replaced operator's clients; Keycloak's built-in clients are never adopted).
    #[arg(
        long = "keycloak-adopt-unowned-clients",
        env = "KEYCLOAK_ADOPT_UNOWNED_CLIENTS",
        default_value_t = false
    )]
    pub adopt_unowned_clients: bool,

    /// Existing Keycloak groups an app may add members to besides the groups it created: comma-separated name
    /// patterns, `*` for any text and `{namespace}` for the app's namespace (`{namespace}-*`). Empty: only the
    /// app's own groups.
    #[arg(
        long = "keycloak-group-policy",
        env = "KEYCLOAK_GROUP_POLICY",
        value_delimiter = ',',
        value_parser = clap::value_parser!(GroupPattern)
    )]
    pub group_policy: Vec<GroupPattern>,
}

/// Flags of the KeystoneApplicationCredential controller.
#[derive(Debug, Clone, Args)]
pub struct KeystoneFlags {
    /// Keystone base URL used when the KeystoneAPI kind (keystone-operator) is not installed; where it is, each
    /// namespace's KeystoneAPI names Keystone.
    #[arg(long = "keystone-url", env = "KEYSTONE_URL")]
    pub keystone_url: Option<String>,

    /// CA bundle the Keystone of `--keystone-url` (a KeystoneAPI names its own CA bundle in `spec.tls.caBundleSecretName`)'s TLS certificate is verified against instead of the public CA roots:
    /// `secret:<namespace>/<name>[:<key>]` or `configmap:<namespace>/<name>[:<key>]` (key `ca.crt` by default),
    /// re-read when it changes.
    #[arg(long = "keystone-ca-bundle", env = "KEYSTONE_CA_BUNDLE")]
    pub keystone_ca_bundle: Option<BundleRef>,

    /// Trust the system trust store (the image's CA certificates) for the Keystone of `--keystone-url` (a KeystoneAPI names its own CA bundle in `spec.tls.caBundleSecretName`) too.
    #[arg(
        long = "keystone-ca-system-trust",
        env = "KEYSTONE_CA_SYSTEM_TRUST",
        default_value_t = false
    )]
    pub keystone_ca_system_trust: bool,

    /// Do not verify the Keystone of `--keystone-url` (a KeystoneAPI names its own CA bundle in `spec.tls.caBundleSecretName`)'s TLS certificate at all. Insecure: anyone on the network path can impersonate
    /// it and read the operator's credentials; logged loudly. For self-signed servers nobody can distribute a CA
    /// for.
    #[arg(
        long = "keystone-insecure-skip-verify",
        env = "KEYSTONE_INSECURE_SKIP_VERIFY",
        default_value_t = false
    )]
    pub keystone_insecure_skip_verify: bool,

    /// Domain of the service users.
    #[arg(
        long = "keystone-user-domain",
        env = "KEYSTONE_USER_DOMAIN",
        default_value = "Default"
    )]
    pub keystone_user_domain: String,

    /// Project the service users' tokens are scoped to (application credentials belong to it).
    #[arg(long = "keystone-project", env = "KEYSTONE_PROJECT", default_value = "service")]
    pub keystone_project: String,

    /// Domain of that project.
    #[arg(
        long = "keystone-project-domain",
        env = "KEYSTONE_PROJECT_DOMAIN",
        default_value = "Default"
    )]
    pub keystone_project_domain: String,

    /// Seconds allowed for one Keystone request.
    #[arg(
        long = "keystone-timeout-seconds",
        env = "KEYSTONE_TIMEOUT_SECONDS",
        default_value_t = 30
    )]
    pub keystone_timeout_seconds: u64,

    /// What to do with Keystone application credentials whose KeystoneApplicationCredential is gone: `report`
    /// (log, metric) or `delete` after `--keystone-orphan-grace-seconds`. Deleting cuts off anyone still using one.
    #[arg(
        long = "keystone-orphaned-credentials",
        env = "KEYSTONE_ORPHANED_CREDENTIALS",
        value_enum,
        default_value_t = OrphanPolicy::Report
    )]
    pub keystone_orphaned_credentials: OrphanPolicy,

    /// Seconds a credential must stay orphaned before `--keystone-orphaned-credentials=delete` deletes it.
    #[arg(
        long = "keystone-orphan-grace-seconds",
        env = "KEYSTONE_ORPHAN_GRACE_SECONDS",
        default_value_t = 86400
    )]
    pub keystone_orphan_grace_seconds: u64,

    /// Seconds between looks for orphaned Keystone application credentials (one list per service user).
    #[arg(
        long = "keystone-orphan-scan-seconds",
        env = "KEYSTONE_ORPHAN_SCAN_SECONDS",
        default_value_t = 3600,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub keystone_orphan_scan_seconds: u64,

    /// TEST ONLY: runs this controller's clock ahead (or behind) by this many seconds, so end-to-end tests can
    /// reach a rotation time without waiting days. Only in builds with the `test-hooks` feature.
    #[cfg(feature = "test-hooks")]
    #[arg(
        long = "appcred-test-clock-offset-seconds",
        env = "APPCRED_TEST_CLOCK_OFFSET_SECONDS",
        default_value_t = 0,
        allow_negative_numbers = true,
        hide = true
    )]
    pub appcred_test_clock_offset_seconds: i64,
}

/// Flags of the ManagedRancherProject and RancherProjectInventory controllers: where Rancher and Keycloak are,
/// where their credentials live (Secrets read at use time, never flags), and the policies the original operator
/// hard-wired.
#[derive(Debug, Clone, Args)]
pub struct RancherFlags {
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

    /// The token of rancher-keycloak-operator's `RANCHER_BEARER_TOKEN`; set by `legacy_env`, never a flag.
    #[arg(skip)]
    pub legacy_rancher_token: Option<SecretString>,

    /// Keycloak admin credentials of rancher-keycloak-operator's `KEYCLOAK_USERNAME`/`KEYCLOAK_PASSWORD`; set by
    /// `legacy_env`, never a flag.
    #[arg(skip)]
    pub legacy_keycloak_credentials: Option<Credentials>,

    /// CA bundle Rancher's TLS certificate is verified against instead of the public CA roots:
    /// `secret:<namespace>/<name>[:<key>]` or `configmap:<namespace>/<name>[:<key>]` (key `ca.crt` by default),
    /// re-read when it changes.
    #[arg(long = "rancher-ca-bundle", env = "RANCHER_CA_BUNDLE")]
    pub rancher_ca_bundle: Option<BundleRef>,

    /// Trust the system trust store (the image's CA certificates) for Rancher too.
    #[arg(
        long = "rancher-ca-system-trust",
        env = "RANCHER_CA_SYSTEM_TRUST",
        default_value_t = false
    )]
    pub rancher_ca_system_trust: bool,

    /// Do not verify Rancher's TLS certificate at all. Insecure: anyone on the network path can impersonate
    /// it and read the operator's credentials; logged loudly. For self-signed servers nobody can distribute a CA
    /// for.
    #[arg(
        long = "rancher-insecure-skip-verify",
        env = "RANCHER_INSECURE_SKIP_VERIFY",
        default_value_t = false
    )]
    pub rancher_insecure_skip_verify: bool,

    /// Keycloak base URL for the projects' groups (include `/auth` for keycloakx); without it a project with
    /// `spec.keycloak.enabled` reports `KeycloakNotConfigured`.
    #[arg(long = "rancher-keycloak-url", env = "RANCHER_KEYCLOAK_URL")]
    pub rancher_keycloak_url: Option<String>,

    /// CA bundle the projects' Keycloak's TLS certificate is verified against instead of the public CA roots:
    /// `secret:<namespace>/<name>[:<key>]` or `configmap:<namespace>/<name>[:<key>]` (key `ca.crt` by default),
    /// re-read when it changes.
    #[arg(long = "rancher-keycloak-ca-bundle", env = "RANCHER_KEYCLOAK_CA_BUNDLE")]
    pub rancher_keycloak_ca_bundle: Option<BundleRef>,

    /// Trust the system trust store (the image's CA certificates) for the projects' Keycloak too.
    #[arg(
        long = "rancher-keycloak-ca-system-trust",
        env = "RANCHER_KEYCLOAK_CA_SYSTEM_TRUST",
        default_value_t = false
    )]
    pub rancher_keycloak_ca_system_trust: bool,

    /// Do not verify the projects' Keycloak's TLS certificate at all. Insecure: anyone on the network path can impersonate
    /// it and read the operator's credentials; logged loudly. For self-signed servers nobody can distribute a CA
    /// for.
    #[arg(
        long = "rancher-keycloak-insecure-skip-verify",
        env = "RANCHER_KEYCLOAK_INSECURE_SKIP_VERIFY",
        default_value_t = false
    )]
    pub rancher_keycloak_insecure_skip_verify: bool,

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

    /// Percent of a project's quota each of its namespaces gets by default (Rancher's namespace default quota;
    /// 1–100). Whole units (pods, GPUs) are rounded up. 100 is the original operator's behaviour, where the
    /// first namespace takes the whole quota and the next ones get nothing.
    #[arg(
        long = "rancher-namespace-default-quota-percent",
        env = "RANCHER_NAMESPACE_DEFAULT_QUOTA_PERCENT",
        default_value_t = 50,
        value_parser = clap::value_parser!(u8).range(1..=100)
    )]
    pub rancher_namespace_default_quota_percent: u8,

    /// Delete Rancher projects this operator made for a ManagedRancherProject that no longer exists (deleted while
    /// its finalizer was missing), once they stayed orphaned for the grace period. Off: inventories report them.
    #[arg(
        long = "rancher-delete-orphans",
        env = "RANCHER_DELETE_ORPHANS",
        default_value_t = false
    )]
    pub rancher_delete_orphans: bool,

    /// Seconds a project must stay orphaned before `--rancher-delete-orphans` deletes it.
    #[arg(
        long = "rancher-orphan-grace-seconds",
        env = "RANCHER_ORPHAN_GRACE_SECONDS",
        default_value_t = 3600
    )]
    pub rancher_orphan_grace_seconds: u64,

    /// Seconds between looks for Keycloak groups whose ManagedRancherProject is gone.
    #[arg(
        long = "rancher-orphan-scan-seconds",
        env = "RANCHER_ORPHAN_SCAN_SECONDS",
        default_value_t = 300,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub rancher_orphan_scan_seconds: u64,

    /// Rancher cluster ids ManagedRancherProjects and RancherProjectInventories may name (comma-separated; unset
    /// allows every cluster; an empty entry is refused). Defence in depth behind the trusted writer, see docs/trust-model.md.
    #[arg(
        long = "rancher-allowed-clusters",
        env = "RANCHER_ALLOWED_CLUSTERS",
        value_delimiter = ',',
        value_parser = allow_list_entry
    )]
    pub rancher_allowed_clusters: Vec<String>,

    /// Role templates project bindings may use (comma-separated; unset allows every role template; an empty entry is refused).
    #[arg(
        long = "rancher-allowed-project-roles",
        env = "RANCHER_ALLOWED_PROJECT_ROLES",
        value_delimiter = ',',
        value_parser = allow_list_entry
    )]
    pub rancher_allowed_project_roles: Vec<String>,

    /// Role templates cluster bindings may use (comma-separated; unset allows every role template; an empty entry is refused).
    #[arg(
        long = "rancher-allowed-cluster-roles",
        env = "RANCHER_ALLOWED_CLUSTER_ROLES",
        value_delimiter = ',',
        value_parser = allow_list_entry
    )]
    pub rancher_allowed_cluster_roles: Vec<String>,

    /// A prefix every Keycloak group name of a ManagedRancherProject must start with (empty: any name; only blanks is refused).
    #[arg(
        long = "rancher-group-prefix",
        env = "RANCHER_GROUP_PREFIX",
        default_value = "",
        value_parser = optional_prefix
    )]
    pub rancher_group_prefix: String,
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

fn seconds(value: u64) -> Duration {
    Duration::from_secs(value)
}

impl Cli {
    /// The share of the objects this replica reconciles.
    pub fn shard(&self) -> Result<Shard, ShardError> {
        Shard::new(self.run.shard_count, self.run.shard_index)
    }

    /// What every controller runs with, reconciling `shard`'s objects.
    pub fn controller_defaults(&self, shard: Shard) -> ControllerDefaults {
        ControllerDefaults {
            shard,
            namespaces: self.run.watch_namespaces.clone(),
            concurrency: self.run.max_concurrent_reconciles,
            field_manager_prefix: FIELD_MANAGER_PREFIX.to_string(),
            backoff: framework::backoff::BackoffPolicy::default(),
            reconcile_timeout: Duration::from_secs(self.run.reconcile_timeout_seconds),
            debounce: Duration::from_millis(self.run.reconcile_debounce_ms),
        }
    }

    /// How the manager's Kubernetes client behaves.
    pub fn client_settings(&self) -> framework::kube_client::ClientSettings {
        framework::kube_client::ClientSettings {
            request_timeout: Duration::from_secs(self.run.kube_request_timeout_seconds),
        }
    }
}

/// A comma-separated list's items, trimmed, without empty ones.
/// One entry of an allow-list flag, trimmed. An empty entry is refused: `RANCHER_ALLOWED_CLUSTERS=""` or a
/// templated `--rancher-allowed-project-roles=` would otherwise leave the list empty, which allows everything.
fn allow_list_entry(value: &str) -> Result<String, String> {
    let entry = value.trim();
    if entry.is_empty() {
        return Err(
            "an empty entry: a list that is set must name what it allows (leave the flag unset to allow everything)"
                .to_string(),
        );
    }
    Ok(entry.to_string())
}

/// A prefix flag: empty means none, but only blanks is refused (a typo'd value must not mean "any name").
fn optional_prefix(value: &str) -> Result<String, String> {
    if !value.is_empty() && value.trim().is_empty() {
        return Err("only blanks: leave it empty for no prefix, or name the prefix".to_string());
    }
    Ok(value.trim().to_string())
}

fn trimmed(items: &[String]) -> Vec<String> {
    items
        .iter()
        .map(|item| item.trim().to_string())
        .filter(|item| !item.is_empty())
        .collect()
}

/// One system's trust settings from its three flags.
fn trust(bundle: &Option<BundleRef>, system_roots: bool, insecure_skip_verify: bool) -> TrustSettings {
    TrustSettings {
        bundle: bundle.clone(),
        system_roots,
        insecure_skip_verify,
    }
}

/// Field managers are `platform-operator-<controller>`.
pub const FIELD_MANAGER_PREFIX: &str = "platform-operator";

impl NebariAppFlags {
    /// The NebariApp controller's settings.
    pub fn settings(&self) -> NebariAppSettings {
        NebariAppSettings {
            public_gateway: self.public_gateway.clone(),
            internal_gateway: self.internal_gateway.clone(),
            gateway_namespace: self.gateway_namespace.clone(),
            https_section: self.https_section.clone(),
            http_section: self.http_section.clone(),
            cluster_issuer: self.cluster_issuer.clone(),
            keycloak_enabled: self.keycloak_enabled,
            keycloak: KeycloakConnection {
                url: self.keycloak_url.clone(),
                realm: self.keycloak_realm.clone(),
                admin_realm: self.keycloak_admin_realm.clone(),
                admin_secret: SecretRef::new(&self.keycloak_admin_secret_namespace, &self.keycloak_admin_secret_name),
                request_timeout: seconds(self.keycloak_api_timeout_seconds),
                trust: trust(
                    &self.keycloak_ca_bundle,
                    self.keycloak_ca_system_trust,
                    self.keycloak_insecure_skip_verify,
                ),
                static_credentials: self.legacy_admin_credentials.clone(),
            },
            keycloak_issuer_url: self.keycloak_issuer_url.clone(),
            keycloak_external_url: self.keycloak_external_url.clone(),
            allowed_hostnames: HostnamePolicy::new(self.allowed_hostnames.clone()),
            keycloak_policy: KeycloakPolicy {
                mapper_types: trimmed(&self.allowed_mapper_types),
                client_scopes: trimmed(&self.allowed_client_scopes),
                adopt_unowned_clients: self.adopt_unowned_clients,
                group_patterns: self.group_policy.clone(),
            },
            keycloak_token_exchange: self.token_exchange,
            orphans: OrphanSettings {
                policy: self.orphaned_clients,
                grace: seconds(self.orphan_grace_seconds),
                interval: seconds(self.orphan_scan_seconds),
                watched: None,
            },
            listeners_per_namespace: usize::from(self.listeners_per_namespace),
            health_checks: HealthCheckSettings {
                enabled: self.health_checks,
                concurrency: usize::from(self.health_check_concurrency),
                #[cfg(feature = "test-hooks")]
                resolve_to: self.test_health_check_address,
                #[cfg(not(feature = "test-hooks"))]
                resolve_to: None,
            },
        }
    }
}

impl KeystoneFlags {
    /// The KeystoneApplicationCredential controller's settings.
    pub fn settings(&self) -> KeystoneApplicationCredentialSettings {
        KeystoneApplicationCredentialSettings {
            fallback_url: self.keystone_url.clone().filter(|url| !url.trim().is_empty()),
            fallback_trust: trust(
                &self.keystone_ca_bundle,
                self.keystone_ca_system_trust,
                self.keystone_insecure_skip_verify,
            ),
            user_domain: self.keystone_user_domain.clone(),
            project: self.keystone_project.clone(),
            project_domain: self.keystone_project_domain.clone(),
            request_timeout: seconds(self.keystone_timeout_seconds),
            #[cfg(feature = "test-hooks")]
            test_clock_offset_seconds: self.appcred_test_clock_offset_seconds,
            #[cfg(not(feature = "test-hooks"))]
            test_clock_offset_seconds: 0,
            orphans: CredentialOrphanSettings {
                policy: self.keystone_orphaned_credentials,
                grace: seconds(self.keystone_orphan_grace_seconds),
                interval: seconds(self.keystone_orphan_scan_seconds),
            },
        }
    }
}

impl RancherFlags {
    fn rancher(&self) -> Option<RancherConnection> {
        let url = self.rancher_url.as_deref().map(str::trim).filter(|u| !u.is_empty())?;
        Some(RancherConnection {
            url: url.to_string(),
            token_secret: SecretRef::new(
                own_namespace(self.rancher_token_secret_namespace.as_deref()),
                &self.rancher_token_secret_name,
            ),
            token_key: self.rancher_token_secret_key.clone(),
            request_timeout: seconds(self.rancher_timeout_seconds),
            trust: trust(
                &self.rancher_ca_bundle,
                self.rancher_ca_system_trust,
                self.rancher_insecure_skip_verify,
            ),
            static_token: self.legacy_rancher_token.clone(),
        })
    }

    /// The ManagedRancherProject controller's settings.
    pub fn project_settings(&self) -> RancherProjectSettings {
        let keycloak = self
            .rancher_keycloak_url
            .as_deref()
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(|url| KeycloakConnection {
                url: url.to_string(),
                realm: self.rancher_keycloak_realm.clone(),
                admin_realm: self.rancher_keycloak_admin_realm.clone(),
                admin_secret: SecretRef::new(
                    own_namespace(self.rancher_keycloak_admin_secret_namespace.as_deref()),
                    &self.rancher_keycloak_admin_secret_name,
                ),
                request_timeout: seconds(self.rancher_keycloak_timeout_seconds),
                trust: trust(
                    &self.rancher_keycloak_ca_bundle,
                    self.rancher_keycloak_ca_system_trust,
                    self.rancher_keycloak_insecure_skip_verify,
                ),
                static_credentials: self.legacy_keycloak_credentials.clone(),
            });
        RancherProjectSettings {
            rancher: self.rancher(),
            keycloak,
            resync_interval: seconds(self.rancher_resync_interval_seconds.max(1)),
            authoritative_membership: self.rancher_authoritative_membership,
            error_after: seconds(self.rancher_error_after_seconds),
            namespace_default_quota_percent: self.rancher_namespace_default_quota_percent,
            delete_orphans: self.rancher_delete_orphans,
            orphan_grace: seconds(self.rancher_orphan_grace_seconds),
            orphan_scan_interval: seconds(self.rancher_orphan_scan_seconds),
            policy: self.rancher_policy(),
        }
    }

    /// The RancherProjectInventory controller's settings.
    pub fn inventory_settings(&self) -> RancherInventorySettings {
        RancherInventorySettings {
            rancher: self.rancher(),
            policy: self.rancher_policy(),
            delete_orphans: self.rancher_delete_orphans,
            orphan_grace: seconds(self.rancher_orphan_grace_seconds),
        }
    }

    /// The clusters, role templates and group names objects may use.
    fn rancher_policy(&self) -> RancherPolicy {
        let prefix = self.rancher_group_prefix.trim();
        RancherPolicy {
            allowed_clusters: trimmed(&self.rancher_allowed_clusters),
            project_roles: trimmed(&self.rancher_allowed_project_roles),
            cluster_roles: trimmed(&self.rancher_allowed_cluster_roles),
            group_prefix: (!prefix.is_empty()).then(|| prefix.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;

    #[test]
    fn every_flag_maps_into_its_controllers_settings() {
        // Catches flag or field names that collide between controllers (clap checks on first parse).
        Cli::command().debug_assert();
        let cli = Cli::parse_from([
            "manager",
            "--rancher-url=https://rancher.example.com",
            "--rancher-token-secret-namespace=ops",
            "--rancher-keycloak-url=http://keycloak:8080",
            "--rancher-resync-interval-seconds=2",
            "--rancher-authoritative-membership",
            "--keycloak-url=http://kc:8080/auth/",
            "--keycloak-admin-secret-namespace=kc",
            "--watch-namespace=a,b",
        ]);
        let projects = cli.managed_rancher_project.project_settings();
        let rancher = projects.rancher.expect("Rancher configured");
        assert_eq!(rancher.url, "https://rancher.example.com");
        assert_eq!(rancher.token_secret, SecretRef::new("ops", "rancher-token"));
        assert_eq!(rancher.token_key, "token");
        assert_eq!(projects.resync_interval, Duration::from_secs(2));
        assert!(projects.authoritative_membership);
        assert_eq!(projects.keycloak.expect("Keycloak configured").realm, "waldur");
        let nebari = cli.nebari_app.settings();
        assert_eq!(
            nebari.keycloak.admin_secret,
            SecretRef::new("kc", "nebari-realm-admin-credentials")
        );
        assert_eq!(nebari.internal_issuer(), "http://kc:8080/auth/realms/nebari");
        let defaults = cli.controller_defaults(Shard::WHOLE);
        assert_eq!(defaults.namespaces, vec!["a", "b"]);
        assert_eq!(defaults.field_manager("nebariapp"), "platform-operator-nebariapp");
        assert_eq!(cli.keystone_application_credential.settings().fallback_url, None);
        assert!(
            nebari.allowed_hostnames.allows("any", "any.example.org"),
            "no patterns allow everything"
        );
    }

    #[test]
    fn an_allow_list_that_is_set_but_empty_is_refused_not_read_as_allow_all() {
        for args in [
            ["manager", "--rancher-allowed-clusters="],
            ["manager", "--rancher-allowed-project-roles= "],
            ["manager", "--rancher-allowed-cluster-roles=,"],
            ["manager", "--rancher-group-prefix= "],
        ] {
            assert!(Cli::try_parse_from(args).is_err(), "{args:?} was accepted");
        }
        let cli = Cli::parse_from([
            "manager",
            "--rancher-allowed-clusters= c-1 ,c-2",
            "--rancher-group-prefix=p_",
        ]);
        let policy = cli.managed_rancher_project.project_settings().policy;
        assert_eq!(policy.allowed_clusters, vec!["c-1", "c-2"]);
        assert_eq!(policy.group_prefix.as_deref(), Some("p_"));
        let open = Cli::parse_from(["manager"])
            .managed_rancher_project
            .project_settings()
            .policy;
        assert!(
            open.allowed_clusters.is_empty() && open.group_prefix.is_none(),
            "unset allows everything"
        );
    }

    #[test]
    fn hostname_policies_are_validated_at_start() {
        let cli = Cli::parse_from([
            "manager",
            "--nebari-allowed-hostnames={namespace}.apps.example.com,*.{namespace}.example.com",
        ]);
        let policy = cli.nebari_app.settings().allowed_hostnames;
        assert!(policy.allows("team", "team.apps.example.com"));
        assert!(policy.allows("team", "web.team.example.com"));
        assert!(!policy.allows("team", "web.other.example.com"));
        let error = Cli::try_parse_from(["manager", "--nebari-allowed-hostnames=*.{tenant}.example.com"])
            .expect_err("a bad pattern stops the start");
        assert!(
            error.to_string().contains("the only placeholder is {namespace}"),
            "{error}"
        );
    }

    #[test]
    fn reconciles_wait_100_ms_for_more_changes_unless_turned_off() {
        let defaults = Cli::parse_from(["manager"]).controller_defaults(Shard::WHOLE);
        assert_eq!(defaults.debounce, Duration::from_millis(100));
        let off = Cli::parse_from(["manager", "--reconcile-debounce-ms=0"]).controller_defaults(Shard::WHOLE);
        assert_eq!(off.debounce, Duration::ZERO);
    }

    #[test]
    fn shard_flags_name_one_shard_and_its_lease_or_stop_the_start() {
        let cli = Cli::parse_from(["manager", "--shard-count=3", "--shard-index=2"]);
        let shard = cli.shard().expect("a valid shard");
        assert_eq!((shard.count(), shard.index()), (3, 2));
        assert_eq!(cli.controller_defaults(shard).shard, shard);
        assert_eq!(
            shard.lease_name(&cli.run.leader_election_id),
            "platform-operator-leader-shard-2"
        );
        assert_eq!(Cli::parse_from(["manager"]).shard(), Ok(Shard::WHOLE));
        let error = Cli::parse_from(["manager", "--shard-count=3", "--shard-index=3"])
            .shard()
            .expect_err("index out of range");
        assert_eq!(error, ShardError::OutOfRange { index: 3, count: 3 });
    }
}
