//! Leader election on a `coordination.k8s.io/v1` Lease, so only one replica reconciles at a time.
//!
//! Built on `kube-lease-manager`, which renews the lease by server-side apply. The lease is released on a
//! graceful shutdown so a replacement replica takes over at once instead of waiting for expiry.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;

/// How often a standby looks whether the lease was released.
const STANDBY_POLL: Duration = Duration::from_secs(2);

/// The task renewing (or waiting for) the lease.
type WatchTask = JoinHandle<Result<LeaseManager, kube_lease_manager::LeaseManagerError>>;

/// Whether nobody holds the lease (it was released, or never taken); an unreadable lease counts as held.
async fn is_free(leases: &Api<Lease>, name: &str) -> bool {
    match leases.get_opt(name).await {
        Ok(Some(lease)) => lease
            .spec
            .and_then(|spec| spec.holder_identity)
            .is_none_or(|holder| holder.is_empty()),
        Ok(None) => true,
        Err(error) => {
            tracing::debug!(%error, "could not read the lease");
            false
        }
    }
}

/// Where and how to hold the lease.
#[derive(Clone, Debug)]
pub struct LeaderSettings {
    /// Lease name (the metric's `name` label).
    pub lease_name: String,
    /// Namespace holding the lease.
    pub namespace: String,
    /// This replica's identity (pod name).
    pub identity: String,
    /// Seconds the lease stays valid without renewal.
    pub lease_duration_secs: u64,
    /// Seconds before expiry at which the holder renews.
    pub renew_margin_secs: u64,
}

/// Failure of the election machinery.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    /// The lease could not be created or read.
    #[error("leader election: {0}")]
    Lease(#[from] kube_lease_manager::LeaseManagerError),
    /// Leadership was lost while running: the process must stop reconciling.
    #[error("leader election lost")]
    Lost,
}

/// A held (or awaited) leadership.
pub struct Leadership {
    state: watch::Receiver<bool>,
    task: WatchTask,
    metrics: Metrics,
    lease_name: String,
}

impl Leadership {
    /// Joins the election and waits until this replica leads, or `shutdown` is cancelled (then `Ok(None)`).
    pub async fn acquire(
        client: Client,
        settings: &LeaderSettings,
        metrics: Metrics,
        shutdown: &CancellationToken,
    ) -> Result<Option<Self>, LeaderError> {
        metrics.set_leader(&settings.lease_name, false);
        let (mut state, mut task) = Self::join(&client, settings).await?;
        tracing::info!(
            lease = settings.lease_name,
            identity = settings.identity,
            "waiting for leadership"
        );
        // kube-lease-manager's standby sleeps until the holder's lease would expire, so a holder that released
        // the lease on shutdown would be replaced only a lease duration later. Looking at the lease every
        // STANDBY_POLL (client-go's retry period) and joining afresh when it is free makes a release a handover.
        let leases: Api<Lease> = Api::namespaced(client.clone(), &settings.namespace);
        let mut poll = tokio::time::interval_at(tokio::time::Instant::now() + STANDBY_POLL, STANDBY_POLL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            if *state.borrow_and_update() {
                break;
            }
            tokio::select! {
                changed = state.changed() => {
                    if changed.is_err() {
                        return Err(LeaderError::Lost);
                    }
                }
                _ = poll.tick() => {
                    if is_free(&leases, &settings.lease_name).await {
                        drop(state);
                        let _ = task.await;
                        (state, task) = Self::join(&client, settings).await?;
                    }
                }
                _ = shutdown.cancelled() => {
                    drop(state);
                    let _ = task.await;
                    return Ok(None);
                }
            }
        }
        tracing::info!(lease = settings.lease_name, "became leader");
        metrics.set_leader(&settings.lease_name, true);
        Ok(Some(Self {
            state,
            task,
            metrics,
            lease_name: settings.lease_name.clone(),
        }))
    }

    /// A fresh lease manager (it reads the lease anew) and its watch.
    async fn join(
        client: &Client,
        settings: &LeaderSettings,
    ) -> Result<(watch::Receiver<bool>, WatchTask), LeaderError> {
        let manager = LeaseManagerBuilder::new(client.clone(), &settings.lease_name)
            .with_namespace(&settings.namespace)
            .with_identity(&settings.identity)
            .with_duration(settings.lease_duration_secs)
            .with_grace(settings.renew_margin_secs)
            .with_field_manager(format!("{}-leader-election", settings.lease_name))
            .build()
            .await?;
        Ok(manager.watch().await)
    }

    /// Resolves when leadership is lost (the lease was taken or could not be renewed).
    pub async fn lost(&mut self) {
        loop {
            if !*self.state.borrow_and_update() {
                return;
            }
            if self.state.changed().await.is_err() {
                return;
            }
        }
    }

    /// Gives the lease up so another replica can lead immediately.
    pub async fn release(self) {
        drop(self.state);
        match self.task.await {
            Ok(Ok(_)) => tracing::info!(lease = self.lease_name, "lease released"),
            Ok(Err(error)) => tracing::warn!(%error, "releasing the lease failed"),
            Err(error) => tracing::warn!(%error, "lease task failed"),
        }
        self.metrics.set_leader(&self.lease_name, false);
    }
}
