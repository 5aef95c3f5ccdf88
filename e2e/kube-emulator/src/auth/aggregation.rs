//! The ClusterRole aggregation controller: keeps the stored `rules` of every ClusterRole with an
//! `aggregationRule` equal to the union of the rules of the ClusterRoles it selects, so `kubectl get
//! clusterrole -o yaml` shows what the role grants. Authorization resolves aggregation itself and never waits
//! for this controller.

use serde_json::Value;

use super::super::meta;
use super::super::server::Shared;
use super::super::store::StoredEvent;
use super::rbac::{aggregation_selectors, rbac_resource, resolve_cluster_roles};

/// Brings every aggregated ClusterRole's stored rules up to date.
pub fn sync(shared: &Shared) {
    let cluster_roles = rbac_resource("clusterroles");
    shared.store.write(|txn| {
        let roles: Vec<_> = txn.range(&cluster_roles, None).into_iter().map(|(_, v)| v).collect();
        let resolved = resolve_cluster_roles(&roles);
        for role in &roles {
            if aggregation_selectors(role).is_none() {
                continue;
            }
            let wanted: Vec<Value> = resolved
                .get(meta::name(role))
                .map(|rules| rules.iter().map(|r| r.rule.to_value()).collect())
                .unwrap_or_default();
            let current = role.get("rules").and_then(Value::as_array).cloned().unwrap_or_default();
            if current != wanted {
                let mut updated = (**role).clone();
                updated["rules"] = Value::Array(wanted);
                txn.put(&cluster_roles, updated);
            }
        }
    });
}

/// Reacts to one change: any ClusterRole change may change what an aggregated role selects.
pub fn on_event(shared: &Shared, event: &StoredEvent) {
    if event.resource == rbac_resource("clusterroles") {
        sync(shared);
    }
}
