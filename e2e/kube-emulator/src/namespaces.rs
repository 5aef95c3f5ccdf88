//! Namespaces: the default ones that exist at start, and the namespace controller that empties a
//! terminating namespace, reports progress in its conditions and finally removes it.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::builtin;
use super::lifecycle::{self, DeleteOptions, NAMESPACE_FINALIZER, Propagation};
use super::meta;
use super::resources::{BuiltinKind, GroupResource};
use super::server::Shared;
use super::store::{StoredEvent, Txn};

fn namespaces() -> GroupResource {
    GroupResource::new("", "namespaces")
}

/// Creates `default`, `kube-system` and `kube-public`.
pub fn create_defaults(shared: &Shared) {
    shared.store.write(|txn| {
        for name in lifecycle::PROTECTED_NAMESPACES {
            let mut ns = json!({"apiVersion":"v1","kind":"Namespace","metadata":{
                "name": name, "uid": meta::new_uid(), "creationTimestamp": meta::now_rfc3339()}});
            builtin::prepare_create(BuiltinKind::Namespace, &mut ns);
            txn.put(&namespaces(), ns);
        }
    });
}

/// The namespace controller's memory: which namespaces are being emptied.
#[derive(Default)]
pub struct NamespaceController {
    terminating: BTreeSet<String>,
}

impl NamespaceController {
    /// Finds every terminating namespace and works on it.
    pub fn resync(&mut self, shared: &Shared) {
        let names: Vec<String> = shared.store.read(|r| {
            r.range(&namespaces(), None, None)
                .into_iter()
                .filter(|(_, ns)| meta::is_terminating(ns))
                .map(|(k, _)| k.1)
                .collect()
        });
        for name in names {
            self.terminating.insert(name.clone());
            self.sync(shared, &name);
        }
    }

    /// Reacts to one change.
    pub fn on_event(&mut self, shared: &Shared, event: &StoredEvent) {
        if event.resource == namespaces() {
            let name = meta::name(&event.object).to_string();
            if matches!(event.event_type, super::store::EventType::Deleted) {
                self.terminating.remove(&name);
            } else if meta::is_terminating(&event.object) {
                let first = self.terminating.insert(name.clone());
                if first {
                    self.sync(shared, &name);
                }
            }
            return;
        }
        let ns = meta::namespace(&event.object);
        if !ns.is_empty()
            && self.terminating.contains(ns)
            && matches!(event.event_type, super::store::EventType::Deleted)
        {
            let ns = ns.to_string();
            self.sync(shared, &ns);
        }
    }

    fn sync(&mut self, shared: &Shared, name: &str) {
        shared.store.write(|txn| sync_namespace(txn, name));
    }
}

fn condition(type_: &str, status: &str, reason: &str, message: &str, now: &str) -> Value {
    json!({"type": type_, "status": status, "lastTransitionTime": now, "reason": reason, "message": message})
}

fn sync_namespace(txn: &mut Txn<'_>, name: &str) {
    let Some(ns) = txn.get(&namespaces(), "", name) else {
        return;
    };
    if !meta::is_terminating(&ns) {
        return;
    }
    let defs: Vec<_> = txn
        .registry()
        .all()
        .filter(|d| d.namespaced && !(d.group == "events.k8s.io" && d.plural == "events"))
        .cloned()
        .collect();
    let opts = DeleteOptions {
        propagation: Some(Propagation::Background),
        ..DeleteOptions::default()
    };
    let mut remaining: Vec<(String, usize)> = Vec::new();
    let mut finalizer_counts: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for def in &defs {
        let gr = def.group_resource();
        let objects = txn.range(&gr, Some(name));
        if objects.is_empty() {
            continue;
        }
        for ((_, obj_name), obj) in &objects {
            if !meta::is_terminating(obj)
                && let Err(err) = lifecycle::delete_in_txn(txn, def, name, obj_name, &opts)
            {
                tracing::debug!(error = %err, "namespace controller could not delete an object");
            }
        }
        let left = txn.range(&gr, Some(name));
        if !left.is_empty() {
            // kube prints the group-resource as `resource.group`, so a core kind reads `configmaps.`.
            remaining.push((format!("{}.{}", gr.resource, gr.group), left.len()));
            for (_, obj) in &left {
                for f in meta::finalizers(obj) {
                    *finalizer_counts.entry(f).or_default() += 1;
                }
            }
        }
    }
    let now = meta::now_rfc3339();
    let mut conditions = vec![
        condition(
            "NamespaceDeletionDiscoveryFailure",
            "False",
            "ResourcesDiscovered",
            "All resources successfully discovered",
            &now,
        ),
        condition(
            "NamespaceDeletionGroupVersionParsingFailure",
            "False",
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
            &now,
        ),
        condition(
            "NamespaceDeletionContentFailure",
            "False",
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
            &now,
        ),
    ];
    if remaining.is_empty() {
        conditions.push(condition(
            "NamespaceContentRemaining",
            "False",
            "ContentRemoved",
            "All content successfully removed",
            &now,
        ));
        conditions.push(condition(
            "NamespaceFinalizersRemaining",
            "False",
            "ContentRemoved",
            "All content successfully removed",
            &now,
        ));
    } else {
        let content = remaining
            .iter()
            .map(|(gr, n)| format!("{gr} has {n} resource instances"))
            .collect::<Vec<_>>()
            .join(", ");
        conditions.push(condition(
            "NamespaceContentRemaining",
            "True",
            "SomeResourcesRemain",
            &format!("Some resources are remaining: {content}"),
            &now,
        ));
        if finalizer_counts.is_empty() {
            conditions.push(condition(
                "NamespaceFinalizersRemaining",
                "False",
                "ContentRemoved",
                "All content successfully removed",
                &now,
            ));
        } else {
            let text = finalizer_counts
                .iter()
                .map(|(f, n)| format!("{f} in {n} resource instances"))
                .collect::<Vec<_>>()
                .join(", ");
            conditions.push(condition(
                "NamespaceFinalizersRemaining",
                "True",
                "SomeFinalizersRemain",
                &format!("Some content in the namespace has finalizers remaining: {text}"),
                &now,
            ));
        }
    }
    let mut next = (*ns).clone();
    let old_conditions = ns.pointer("/status/conditions").cloned().unwrap_or(json!([]));
    let same = strip_times(&old_conditions) == strip_times(&json!(conditions));
    if !same {
        next["status"]["conditions"] = json!(conditions);
    }
    if remaining.is_empty() {
        let finalizers: Vec<String> = meta::string_list(next.pointer("/spec/finalizers"))
            .into_iter()
            .filter(|f| f != NAMESPACE_FINALIZER)
            .collect();
        next["spec"]["finalizers"] = json!(finalizers);
        if finalizers.is_empty()
            && let Some(spec) = next.get_mut("spec").and_then(Value::as_object_mut)
        {
            spec.remove("finalizers");
        }
        if let Some(def) = txn.registry().get(&namespaces()).cloned()
            && lifecycle::deletion_complete(&def, &next)
        {
            lifecycle::remove(txn, &def, next);
            return;
        }
    }
    if next != *ns {
        txn.put(&namespaces(), next);
    }
}

fn strip_times(conditions: &Value) -> Value {
    let mut copy = conditions.clone();
    if let Value::Array(items) = &mut copy {
        for item in items.iter_mut().filter_map(Value::as_object_mut) {
            item.remove("lastTransitionTime");
        }
    }
    copy
}
