//! Keycloak groups whose ManagedRancherProject is gone: a binding group this operator created records its object
//! in `waldur.io/owner`. When that object was deleted without its cleanup (its finalizer was missing, as after the
//! Waldur site agent's replace) and no other object uses a group of that name (cluster groups are shared), the
//! group and its members — still bound in Rancher if the project survived — stay in the realm. A sweep every
//! `--rancher-orphan-scan-seconds` reports them (`managedrancherproject_orphaned_keycloak_groups`, a warning in the
//! log) and, with `--rancher-delete-orphans`, deletes those orphaned for `--rancher-orphan-grace-seconds`.
//!
//! Only objects of the watched namespaces are judged. The grace period counts from when this process first saw
//! the group orphaned.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use framework::metrics::Metrics;
use framework::namespaces::WatchedNamespaces;
use framework::orphans::OrphanLedger;
use tokio_util::sync::CancellationToken;

use super::RancherProjectController;
use super::cluster_scope;
use super::groups::{OWNER_ATTRIBUTE, is_managed};
use crate::keycloak::{Group, KeycloakError, RealmClient};

/// Metric: Keycloak groups whose ManagedRancherProject is gone and that no other object uses.
pub const ORPHANS_METRIC: &str = "managedrancherproject_orphaned_keycloak_groups";

/// The sweep's memory and gauge.
pub struct GroupSweep {
    ledger: OrphanLedger,
}

impl GroupSweep {
    /// A sweep publishing its gauge in `metrics`.
    pub fn new(metrics: Option<&Metrics>) -> Result<Self, prometheus::Error> {
        let ledger = OrphanLedger::new(
            ORPHANS_METRIC,
            "Keycloak groups recording a ManagedRancherProject that no longer exists, used by no other object",
            metrics,
        )?;
        Ok(Self { ledger })
    }
}

/// Every group this operator created (marked `managed_by`) with an owner: top-level ones, and the children of the
/// parent groups it created.
async fn owned_groups(realm: &RealmClient) -> Result<Vec<Group>, KeycloakError> {
    let mut found = Vec::new();
    for group in realm.list_top_level_groups().await? {
        if !is_managed(&group) {
            continue;
        }
        if group.sub_group_count.unwrap_or(1) > 0 {
            found.extend(realm.list_child_groups(&group.id).await?.into_iter().filter(is_managed));
        }
        found.push(group);
    }
    Ok(found
        .into_iter()
        .filter(|g| g.attributes.get(OWNER_ATTRIBUTE).is_some_and(|v| !v.is_empty()))
        .collect())
}

/// Sweeps every interval until `shutdown` (the first look one interval after start).
pub async fn run(
    controller: Arc<RancherProjectController>,
    client: kube::Client,
    namespaces: WatchedNamespaces,
    shutdown: CancellationToken,
) {
    let Some(realm) = controller.keycloak.clone() else {
        return;
    };
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(controller.settings.orphan_scan_interval) => {}
        }
        if let Err(error) = sweep(&controller, &realm, &client, &namespaces).await {
            tracing::warn!(%error, "could not look for orphaned Keycloak groups");
        }
    }
}

async fn sweep(
    controller: &RancherProjectController,
    realm: &RealmClient,
    client: &kube::Client,
    namespaces: &WatchedNamespaces,
) -> Result<(), String> {
    let objects = controller
        .peers
        .all(client, namespaces)
        .await
        .map_err(|e| e.to_string())?;
    let owners: BTreeSet<String> = objects.iter().map(|o| super::project::owner_key(o)).collect();
    let groups = owned_groups(realm).await.map_err(|e| e.to_string())?;
    let mut sweep = controller.orphan_groups.ledger.sweep(Instant::now());
    for group in groups {
        let owner = group
            .attributes
            .get(OWNER_ATTRIBUTE)
            .and_then(|v| v.first())
            .cloned()
            .unwrap_or_default();
        let namespace = owner.split_once('/').map_or("", |(ns, _)| ns);
        if !namespaces.contains(namespace)
            || owners.contains(&owner)
            || cluster_scope::uses_group(&objects, &group.name)
        {
            continue;
        }
        let sighting = sweep.observe(&group.id, controller.settings.orphan_grace);
        if sighting.first {
            tracing::warn!(group = %group.name, %owner, "Keycloak group of a ManagedRancherProject that no longer exists");
        }
        if controller.settings.delete_orphans && sighting.due {
            match realm.delete_group(&group.id).await {
                Ok(_) => {
                    tracing::info!(group = %group.name, %owner, "deleted an orphaned Keycloak group");
                    sweep.deleted(&group.id);
                }
                Err(error) => tracing::warn!(group = %group.name, %error, "could not delete an orphaned group"),
            }
        }
    }
    sweep.finish();
    Ok(())
}
