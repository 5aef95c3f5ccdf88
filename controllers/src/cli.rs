//! The `manager` command line: kubebuilder-style flags, each also settable through an environment variable.

use clap::{Args, Parser, Subcommand, ValueEnum};

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

    /// Settings of the KeystoneApplicationCredential controller.
    #[command(flatten)]
    pub keystone_application_credential: crate::application_credential::KeystoneApplicationCredentialSettings,

    /// Settings of the NebariApp controller.
    #[command(flatten)]
    pub nebari_app: crate::nebari_app::NebariAppSettings,

    /// Settings of the ManagedRancherProject and RancherProjectInventory controllers.
    #[command(flatten)]
    pub managed_rancher_project: crate::rancher_project::RancherProjectSettings,
}

/// Subcommands besides running.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the controllers (the default).
    Run,
    /// Print every CustomResourceDefinition of the operator as YAML and exit.
    Crds,
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

    /// Log format.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value = "json")]
    pub log_format: LogFormat,

    /// Log level or filter (e.g. `info`, `debug`, `info,controllers=debug`).
    #[arg(long, env = "LOG_LEVEL", default_value = "info")]
    pub log_level: String,
}
