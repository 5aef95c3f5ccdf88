//! The background controllers the emulator runs in place of kube-controller-manager and the
//! apiextensions controllers: the garbage collector, the namespace controller and CRD instance cleanup.
//! One task consumes the store's change stream and hands each change to each controller; no polling.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;

use super::crd::CLEANUP_FINALIZER;
use super::gc::{GarbageCollector, remove_finalizer};
use super::lifecycle::{self, DeleteOptions, Propagation};
use super::meta;
use super::namespaces::NamespaceController;
use super::resources::{GroupResource, Origin};
use super::server::Shared;
use super::store::StoredEvent;

/// Starts the controller task; it ends at shutdown.
pub fn spawn(shared: Arc<Shared>) -> JoinHandle<()> {
    let mut events = shared.store.subscribe();
    tokio::spawn(async move {
        let mut gc = GarbageCollector::default();
        let mut namespaces = NamespaceController::default();
        super::auth::aggregation::sync(&shared);
        gc.resync(&shared);
        namespaces.resync(&shared);
        loop {
            tokio::select! {
                received = events.recv() => match received {
                    Ok(event) => {
                        super::auth::aggregation::on_event(&shared, &event);
                        gc.on_event(&shared, &event);
                        namespaces.on_event(&shared, &event);
                        crd_cleanup(&shared, &event);
                    }
                    Err(RecvError::Lagged(_)) => {
                        gc.resync(&shared);
                        namespaces.resync(&shared);
                    }
                    Err(RecvError::Closed) => return,
                },
                _ = shared.shutdown.cancelled() => return,
            }
        }
    })
}

fn crds() -> GroupResource {
    GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions")
}

/// Deletes the instances of a terminating CRD, then releases the CRD.
fn crd_cleanup(shared: &Shared, event: &StoredEvent) {
    let crd_name = if event.resource == crds() {
        if !meta::is_terminating(&event.object) {
            return;
        }
        meta::name(&event.object).to_string()
    } else {
        let owner = shared.store.read(|r| {
            r.registry().get(&event.resource).and_then(|d| match &d.origin {
                Origin::Custom { crd_name } if d.terminating => Some(crd_name.clone()),
                _ => None,
            })
        });
        match owner {
            Some(name) => name,
            None => return,
        }
    };
    let done = shared.store.write(|txn| {
        let Some(crd) = txn.get(&crds(), "", &crd_name) else {
            return false;
        };
        if !meta::is_terminating(&crd) {
            return false;
        }
        let group = crd
            .pointer("/spec/group")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let plural = crd
            .pointer("/spec/names/plural")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let gr = GroupResource::new(&group, &plural);
        let Some(def) = txn.registry().get(&gr).cloned() else {
            return true;
        };
        let opts = DeleteOptions {
            propagation: Some(Propagation::Background),
            ..DeleteOptions::default()
        };
        for ((ns, name), obj) in txn.range(&gr, None) {
            if !meta::is_terminating(&obj)
                && let Err(err) = lifecycle::delete_in_txn(txn, &def, &ns, &name, &opts)
            {
                tracing::debug!(error = %err, "CRD cleanup could not delete an instance");
            }
        }
        txn.range(&gr, None).is_empty()
    });
    if done {
        remove_finalizer(shared, &crds(), "", &crd_name, CLEANUP_FINALIZER);
    }
}
