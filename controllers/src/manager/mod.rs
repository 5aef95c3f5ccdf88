//! Wires the process together: client, admin server, leader election, and the selected controllers.
//!
//! The manager owns the command line: [`cli`] parses it and maps each controller's flags to that controller's
//! settings, [`registry`] starts the selected controllers with them. Controllers never see the command line.

pub mod cli;
pub mod handback;
pub mod legacy_env;
pub mod logging;
pub mod registry;
pub mod takeover_check;

use framework::admin::{self, AdminState};
use framework::leader::{LeaderSettings, Leadership};
use framework::metrics::Metrics;
use framework::runner::{Readiness, Runtime};
use tokio_util::sync::CancellationToken;

use cli::Cli;

/// Why the manager stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// Metrics could not be set up.
    #[error(transparent)]
    Metrics(#[from] framework::metrics::MetricsError),
    /// No Kubernetes client could be built.
    #[error(transparent)]
    Client(#[from] framework::kube_client::ClientError),
    /// An admin endpoint could not listen.
    #[error(transparent)]
    Admin(#[from] admin::AdminError),
    /// Controller selection or configuration is wrong.
    #[error(transparent)]
    Select(#[from] registry::SelectError),
    /// A controller refused to start.
    #[error(transparent)]
    Start(#[from] framework::runner::StartError),
    /// Leader election failed or was lost.
    #[error(transparent)]
    Leader(#[from] framework::leader::LeaderError),
    /// The shard flags name no shard.
    #[error(transparent)]
    Shard(#[from] framework::shard::ShardError),
}

/// Runs the manager until SIGTERM/SIGINT (clean exit) or a fatal error.
pub async fn run(cli: Cli) -> Result<(), ManagerError> {
    let shutdown = CancellationToken::new();
    tokio::spawn(framework::shutdown::cancel_on_signal(shutdown.clone()));

    let entries = registry::select(&cli.run.controllers)?;
    let shard = cli.shard()?;
    if shard.is_sharded() {
        tracing::info!(
            shard = shard.index(),
            of = shard.count(),
            "reconciling one shard of the objects"
        );
    }
    let metrics = Metrics::new()?;
    let readiness = Readiness::default();
    let client = framework::kube_client::instrumented_client(&metrics, cli.client_settings()).await?;
    let admin_state = AdminState {
        metrics: metrics.clone(),
        readiness: readiness.clone(),
    };

    let mut servers = Vec::new();
    let metrics_addr = cli.run.metrics_bind_address.clone();
    let probe_addr = cli.run.health_probe_bind_address.clone();
    for addr in [metrics_addr.as_str(), probe_addr.as_str()] {
        if let Some((bound, server)) = admin::bind(addr, admin_state.clone(), shutdown.clone()).await? {
            tracing::info!(%bound, "admin endpoint listening");
            servers.push(tokio::spawn(server));
        }
        if metrics_addr == probe_addr {
            break;
        }
    }

    let runtime = Runtime {
        client: client.clone(),
        metrics: metrics.clone(),
        readiness,
        shutdown: shutdown.clone(),
        defaults: cli.controller_defaults(shard),
    };

    let leadership = if cli.run.leader_elect {
        let settings = LeaderSettings {
            lease_name: shard.lease_name(&cli.run.leader_election_id),
            namespace: cli
                .run
                .leader_election_namespace
                .clone()
                .or_else(|| std::env::var("POD_NAMESPACE").ok())
                .unwrap_or_else(|| "default".to_string()),
            identity: std::env::var("POD_NAME")
                .ok()
                .or_else(|| hostname::get().ok().and_then(|h| h.into_string().ok()))
                .unwrap_or_else(|| format!("manager-{}", std::process::id())),
            lease_duration_secs: 15,
            renew_margin_secs: 5,
        };
        match Leadership::acquire(client.clone(), &settings, metrics.clone(), &shutdown).await? {
            Some(leadership) => Some(leadership),
            None => {
                join_servers(servers).await;
                return Ok(());
            }
        }
    } else {
        None
    };

    let mut running = Vec::new();
    for entry in &entries {
        tracing::info!(controller = entry.name, "starting controller");
        running.push(tokio::spawn((entry.start)(&runtime, &cli)?));
    }
    if entries.is_empty() {
        tracing::warn!("no controllers selected; serving probes and metrics only");
    }

    let mut lost = false;
    match leadership {
        Some(mut leadership) => {
            tokio::select! {
                _ = shutdown.cancelled() => {}
                _ = leadership.lost() => {
                    tracing::error!("leadership lost; stopping controllers at once");
                    lost = true;
                    shutdown.cancel();
                }
            }
            if lost {
                // Another replica may already lead: in-flight reconciles must not keep writing (as
                // controller-runtime, exit at once rather than drain).
                for task in &running {
                    task.abort();
                }
            }
            for task in running {
                let _ = task.await;
            }
            leadership.release().await;
        }
        None => {
            shutdown.cancelled().await;
            for task in running {
                let _ = task.await;
            }
        }
    }
    join_servers(servers).await;
    if lost {
        return Err(ManagerError::Leader(framework::leader::LeaderError::Lost));
    }
    tracing::info!("manager stopped");
    Ok(())
}

async fn join_servers(servers: Vec<tokio::task::JoinHandle<()>>) {
    for server in servers {
        let _ = server.await;
    }
}
