//! The garbage collector, acting as kube-controller-manager's: deletes dependents whose owners are gone
//! (background), deletes dependents first for `foregroundDeletion` owners and releases them once no
//! `blockOwnerDeletion` dependent remains, and orphans dependents for `orphan` owners. An owner in another
//! namespace than its namespaced dependent counts as absent.
//!
//! It keeps its own index (uid → object, owner uid → dependents) fed from the store's change stream.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::{Value, json};

use super::lifecycle::{self, DeleteOptions, FOREGROUND_FINALIZER, ORPHAN_FINALIZER, Propagation};
use super::meta::{self, OwnerRef};
use super::resources::GroupResource;
use super::server::Shared;
use super::store::{EventType, StoredEvent};

type ObjRef = (GroupResource, String, String);

#[derive(Clone, Debug)]
struct Node {
    key: ObjRef,
    owners: Vec<OwnerRef>,
}

/// The collector's index.
#[derive(Default)]
pub struct GarbageCollector {
    live: HashMap<String, Node>,
    dependents: HashMap<String, BTreeSet<ObjRef>>,
}

impl GarbageCollector {
    /// Rebuilds the index from the store and processes everything once.
    pub fn resync(&mut self, shared: &Shared) {
        self.live.clear();
        self.dependents.clear();
        let objects: Vec<(GroupResource, Arc<Value>)> = shared.store.write(|txn| {
            let mut all = Vec::new();
            for gr in txn.stored_resources() {
                for (_, obj) in txn.range(&gr, None) {
                    all.push((gr.clone(), obj));
                }
            }
            all
        });
        for (gr, obj) in &objects {
            self.index(gr, obj);
        }
        for (gr, obj) in &objects {
            self.process_object(shared, gr, obj);
        }
    }

    fn index(&mut self, gr: &GroupResource, obj: &Value) {
        let uid = meta::uid(obj).to_string();
        if uid.is_empty() {
            return;
        }
        self.unindex(&uid);
        let key = (
            gr.clone(),
            meta::namespace(obj).to_string(),
            meta::name(obj).to_string(),
        );
        let owners = meta::owner_references(obj);
        for owner in &owners {
            self.dependents
                .entry(owner.uid.clone())
                .or_default()
                .insert(key.clone());
        }
        self.live.insert(uid, Node { key, owners });
    }

    fn unindex(&mut self, uid: &str) {
        if let Some(node) = self.live.remove(uid) {
            for owner in &node.owners {
                if let Some(set) = self.dependents.get_mut(&owner.uid) {
                    set.remove(&node.key);
                    if set.is_empty() {
                        self.dependents.remove(&owner.uid);
                    }
                }
            }
        }
    }

    /// Reacts to one change.
    pub fn on_event(&mut self, shared: &Shared, event: &StoredEvent) {
        let uid = meta::uid(&event.object).to_string();
        match event.event_type {
            EventType::Added | EventType::Modified => {
                self.index(&event.resource, &event.object);
                self.process_object(shared, &event.resource, &event.object);
            }
            EventType::Deleted => {
                let owners = meta::owner_references(&event.object);
                self.unindex(&uid);
                let dependents: Vec<ObjRef> = self
                    .dependents
                    .get(&uid)
                    .map(|s| s.iter().cloned().collect())
                    .unwrap_or_default();
                for dep in dependents {
                    self.check_dependent(shared, &dep);
                }
                for owner in owners {
                    if let Some(node) = self.live.get(&owner.uid).cloned() {
                        self.check_owner_by_ref(shared, &node.key);
                    }
                }
            }
        }
    }

    fn process_object(&mut self, shared: &Shared, gr: &GroupResource, obj: &Value) {
        let key = (
            gr.clone(),
            meta::namespace(obj).to_string(),
            meta::name(obj).to_string(),
        );
        if !meta::owner_references(obj).is_empty() {
            self.check_dependent(shared, &key);
        }
        if meta::is_terminating(obj) {
            let finalizers = meta::finalizers(obj);
            if finalizers.iter().any(|f| f == FOREGROUND_FINALIZER) {
                self.foreground(shared, gr, obj);
            } else if finalizers.iter().any(|f| f == ORPHAN_FINALIZER) {
                self.orphan(shared, gr, obj);
            }
        }
    }

    fn check_owner_by_ref(&mut self, shared: &Shared, key: &ObjRef) {
        let obj = shared.store.read(|r| r.get(&key.0, &key.1, &key.2));
        if let Some(obj) = obj
            && meta::is_terminating(&obj)
            && meta::finalizers(&obj).iter().any(|f| f == FOREGROUND_FINALIZER)
        {
            self.foreground(shared, &key.0, &obj);
        }
    }

    /// Whether `owner` refers to a live object a dependent at `dep` may have as owner.
    fn owner_present(&self, owner: &OwnerRef, dep: &ObjRef) -> bool {
        match self.live.get(&owner.uid) {
            None => false,
            Some(node) => node.key.1.is_empty() || node.key.1 == dep.1,
        }
    }

    fn check_dependent(&mut self, shared: &Shared, dep: &ObjRef) {
        let Some(obj) = shared.store.read(|r| r.get(&dep.0, &dep.1, &dep.2)) else {
            return;
        };
        if meta::is_terminating(&obj) {
            return;
        }
        let owners = meta::owner_references(&obj);
        if owners.is_empty() {
            return;
        }
        let foreground_owner = owners
            .iter()
            .any(|o| self.owner_terminating_in_foreground(shared, o, dep));
        if foreground_owner || owners.iter().all(|o| !self.owner_present(o, dep)) {
            let propagation = if foreground_owner {
                Propagation::Foreground
            } else {
                Propagation::Background
            };
            if !foreground_owner {
                for owner in owners
                    .iter()
                    .filter(|o| self.live.get(&o.uid).is_some_and(|n| !n.key.1.is_empty()))
                {
                    record_invalid_namespace(shared, dep, &obj, owner);
                }
            }
            delete(shared, dep, propagation);
        }
    }

    fn owner_terminating_in_foreground(&self, shared: &Shared, owner: &OwnerRef, dep: &ObjRef) -> bool {
        if !self.owner_present(owner, dep) {
            return false;
        }
        let Some(node) = self.live.get(&owner.uid) else {
            return false;
        };
        shared
            .store
            .read(|r| r.get(&node.key.0, &node.key.1, &node.key.2))
            .is_some_and(|o| meta::is_terminating(&o) && meta::finalizers(&o).iter().any(|f| f == FOREGROUND_FINALIZER))
    }

    fn foreground(&mut self, shared: &Shared, gr: &GroupResource, owner: &Value) {
        let uid = meta::uid(owner).to_string();
        let dependents: Vec<ObjRef> = self
            .dependents
            .get(&uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        let mut blocking = false;
        for dep in &dependents {
            let Some(obj) = shared.store.read(|r| r.get(&dep.0, &dep.1, &dep.2)) else {
                continue;
            };
            let refs: Vec<OwnerRef> = meta::owner_references(&obj)
                .into_iter()
                .filter(|o| o.uid == uid)
                .collect();
            if refs.iter().any(|o| o.block_owner_deletion) {
                blocking = true;
            }
            if !meta::is_terminating(&obj) {
                delete(shared, dep, Propagation::Foreground);
            }
        }
        if !blocking {
            remove_finalizer(
                shared,
                gr,
                meta::namespace(owner),
                meta::name(owner),
                FOREGROUND_FINALIZER,
            );
        }
    }

    fn orphan(&mut self, shared: &Shared, gr: &GroupResource, owner: &Value) {
        let uid = meta::uid(owner).to_string();
        let dependents: Vec<ObjRef> = self
            .dependents
            .get(&uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        for dep in &dependents {
            shared.store.write(|txn| {
                let Some(obj) = txn.get(&dep.0, &dep.1, &dep.2) else {
                    return;
                };
                let mut next = (*obj).clone();
                if let Some(Value::Array(refs)) = next.pointer_mut("/metadata/ownerReferences") {
                    refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid.as_str()));
                    if refs.is_empty()
                        && let Some(m) = next.get_mut("metadata").and_then(Value::as_object_mut)
                    {
                        m.remove("ownerReferences");
                    }
                }
                if next != *obj {
                    txn.put(&dep.0, next);
                }
            });
        }
        remove_finalizer(shared, gr, meta::namespace(owner), meta::name(owner), ORPHAN_FINALIZER);
    }
}

fn delete(shared: &Shared, dep: &ObjRef, propagation: Propagation) {
    let opts = DeleteOptions {
        propagation: Some(propagation),
        ..DeleteOptions::default()
    };
    shared.store.write(|txn| {
        let Some(def) = txn.registry().get(&dep.0).cloned() else {
            return;
        };
        if let Err(err) = lifecycle::delete_in_txn(txn, &def, &dep.1, &dep.2, &opts) {
            tracing::debug!(error = %err, "garbage collector could not delete a dependent");
        }
    });
}

/// Removes one finalizer; an object left with none while terminating is removed.
pub fn remove_finalizer(shared: &Shared, gr: &GroupResource, namespace: &str, name: &str, finalizer: &str) {
    shared.store.write(|txn| {
        let Some(def) = txn.registry().get(gr).cloned() else {
            return;
        };
        let Some(obj) = txn.get(gr, namespace, name) else {
            return;
        };
        let mut finalizers = meta::finalizers(&obj);
        let before = finalizers.len();
        finalizers.retain(|f| f != finalizer);
        if finalizers.len() == before {
            return;
        }
        let mut next = (*obj).clone();
        meta::set_finalizers(&mut next, &finalizers);
        if meta::is_terminating(&next) && lifecycle::deletion_complete(&def, &next) {
            lifecycle::remove(txn, &def, next);
        } else {
            txn.put(gr, next);
        }
    });
}

/// The Warning event kube-controller-manager's garbage collector records when a dependent names an owner that
/// lives in another namespace (the owner counts as absent and the dependent is deleted).
fn record_invalid_namespace(shared: &Shared, dep: &ObjRef, obj: &Value, owner: &OwnerRef) {
    let namespace = if dep.1.is_empty() {
        "default".to_string()
    } else {
        dep.1.clone()
    };
    let now = meta::now_rfc3339();
    let event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": format!("{}.{}", dep.2, meta::new_uid().replace('-', "")), "namespace": namespace,
            "uid": meta::new_uid(), "creationTimestamp": now},
        "involvedObject": {"apiVersion": obj.get("apiVersion").cloned().unwrap_or(Value::Null),
            "kind": obj.get("kind").cloned().unwrap_or(Value::Null), "name": dep.2, "namespace": dep.1, "uid": meta::uid(obj)},
        "reason": "OwnerRefInvalidNamespace",
        "message": format!(
            "ownerRef [{}/{}, namespace: {}, name: {}, uid: {}] does not exist in namespace \"{}\"",
            owner.api_version, owner.kind, dep.1, owner.name, owner.uid, dep.1
        ),
        "source": {"component": "garbage-collector-controller"},
        "firstTimestamp": now, "lastTimestamp": now, "count": 1, "type": "Warning",
        "reportingComponent": "", "reportingInstance": ""
    });
    let events = GroupResource::new("", "events");
    shared.store.write(|txn| {
        if txn.get(&GroupResource::new("", "namespaces"), "", &namespace).is_some() {
            txn.put(&events, event);
        }
    });
}
