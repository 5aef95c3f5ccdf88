//! Keycloak clients whose NebariApp is gone: a client records its app in `nebari.dev/owner`; when no such app
//! exists (it was deleted while its finalizer was missing, or with `skip-external-cleanup`), the client — and the
//! secret the gateway no longer uses — would stay in the realm forever. A sweep every
//! `--keycloak-orphan-scan-seconds` reports them (a warning in the log and `nebariapp_orphaned_keycloak_clients`)
//! and, with `--keycloak-orphaned-clients=delete`, deletes those orphaned for the grace period. Deleting is not
//! the default: a client may serve something outside the cluster that the operator cannot see.
//!
//! Only apps in the watched namespaces are judged, and only once the app cache is complete (an app not yet in the
//! cache is not gone). The grace period counts from when this process first saw the client orphaned.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crds::nebari::NebariApp;
use framework::metrics::Metrics;
use framework::orphans::OrphanLedger;
use kube::ResourceExt;
use kube::runtime::reflector::Store;
use tokio_util::sync::CancellationToken;

use super::keycloak_sync::OWNER_ATTRIBUTE;
use crate::keycloak::RealmClient;
pub use crate::orphan_policy::OrphanPolicy;

/// Metric: Keycloak clients whose NebariApp is gone.
pub const ORPHANS_METRIC: &str = "nebariapp_orphaned_keycloak_clients";

/// How the sweep runs.
#[derive(Clone, Debug)]
pub struct OrphanSettings {
    /// Report or delete.
    pub policy: OrphanPolicy,
    /// How long a client stays orphaned before it is deleted.
    pub grace: Duration,
    /// Time between sweeps.
    pub interval: Duration,
    /// The namespaces whose apps are judged (`None`: all).
    pub watched: Option<Vec<String>>,
}

/// Whether a cache has its initial listing (a cache that is not ready cannot tell an app is gone).
fn is_ready(store: &Store<NebariApp>) -> bool {
    futures::FutureExt::now_or_never(store.wait_until_ready()).is_some_and(|ready| ready.is_ok())
}

/// The sweep, with the app caches it judges from.
pub struct OrphanSweep {
    settings: OrphanSettings,
    stores: Mutex<Vec<Store<NebariApp>>>,
    ledger: OrphanLedger,
}

impl OrphanSweep {
    /// A sweep publishing its gauge in `metrics`.
    pub fn new(settings: OrphanSettings, metrics: Option<&Metrics>) -> Result<Self, prometheus::Error> {
        let ledger = OrphanLedger::new(
            ORPHANS_METRIC,
            "Keycloak clients recording a NebariApp that no longer exists",
            metrics,
        )?;
        Ok(Self {
            settings,
            stores: Mutex::default(),
            ledger,
        })
    }

    /// Adds the app cache of one watch.
    pub fn register(&self, store: Store<NebariApp>) {
        self.stores.lock().unwrap_or_else(PoisonError::into_inner).push(store);
    }

    /// Sweeps every interval until `shutdown`.
    pub async fn run(&self, realm: RealmClient, shutdown: CancellationToken) {
        // The first look is one interval after start: starting costs no Keycloak listing.
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(self.settings.interval) => {}
            }
            // The caches register when the controller's watches start; judge only once they are complete.
            let stores: Vec<Store<NebariApp>> = self.stores.lock().unwrap_or_else(PoisonError::into_inner).clone();
            if stores.is_empty() || !stores.iter().all(is_ready) {
                continue;
            }
            if let Err(error) = self.sweep(&realm, &stores).await {
                tracing::warn!(%error, "could not look for orphaned Keycloak clients");
            }
        }
    }

    async fn sweep(
        &self,
        realm: &RealmClient,
        stores: &[Store<NebariApp>],
    ) -> Result<(), crate::keycloak::KeycloakError> {
        let apps: std::collections::BTreeSet<String> = stores
            .iter()
            .flat_map(Store::state)
            .map(|app| format!("{}/{}", app.namespace().unwrap_or_default(), app.name_any()))
            .collect();
        let judged = |owner: &str| {
            let namespace = owner.split_once('/').map_or("", |(ns, _)| ns);
            self.settings
                .watched
                .as_ref()
                .is_none_or(|watched| watched.iter().any(|w| w == namespace))
        };
        let mut orphans = Vec::new();
        for client in realm.list_clients().await? {
            let Some(owner) = client.attributes.get(OWNER_ATTRIBUTE).filter(|o| !o.is_empty()) else {
                continue;
            };
            if judged(owner) && !apps.contains(owner) {
                orphans.push((client.id.clone(), client.client_id.clone(), owner.clone()));
            }
        }
        let mut sweep = self.ledger.sweep(Instant::now());
        for (id, client_id, owner) in orphans {
            let sighting = sweep.observe(&id, self.settings.grace);
            if sighting.first {
                tracing::warn!(client = %client_id, %owner, "Keycloak client of a NebariApp that no longer exists");
            }
            if self.settings.policy == OrphanPolicy::Delete && sighting.due {
                match realm.delete_client(&id).await {
                    Ok(_) => {
                        tracing::info!(client = %client_id, %owner, "deleted an orphaned Keycloak client");
                        sweep.deleted(&id);
                    }
                    Err(error) => tracing::warn!(client = %client_id, %error, "could not delete an orphaned client"),
                }
            }
        }
        sweep.finish();
        Ok(())
    }
}
