//! Leader election on a `coordination.k8s.io/v1` Lease, so only one replica reconciles at a time.
//!
//! Built on `kube-lease-manager`, which renews the lease by server-side apply. The lease is released on a
//! graceful shutdown so a replacement replica takes over at once instead of waiting for expiry.

use kube::Client;
use kube_lease_manager::{LeaseManager, LeaseManagerBuilder};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;

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
    task: JoinHandle<Result<LeaseManager, kube_lease_manager::LeaseManagerError>>,
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
        let manager = LeaseManagerBuilder::new(client, &settings.lease_name)
            .with_namespace(&settings.namespace)
            .with_identity(&settings.identity)
            .with_duration(settings.lease_duration_secs)
            .with_grace(settings.renew_margin_secs)
            .with_field_manager(format!("{}-leader-election", settings.lease_name))
            .build()
            .await?;
        let (mut state, task) = manager.watch().await;
        tracing::info!(
            lease = settings.lease_name,
            identity = settings.identity,
            "waiting for leadership"
        );
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
