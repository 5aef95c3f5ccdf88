//! Pruning of fields a structural schema does not declare, as
//! apiextensions' `structuralpruning.PruneWithOptions` and `objectmeta.Coerce` do it.
//!
//! The root and every `x-kubernetes-embedded-resource` node keep `apiVersion`, `kind` (strings) and
//! `metadata` (an object), whose content is reduced to the real ObjectMeta fields.
//! `x-kubernetes-preserve-unknown-fields` keeps undeclared fields but still prunes inside declared ones.
//! The removed paths (`spec.foo`, `spec.items[0].bar`, `metadata.foo`) are returned sorted, for the
//! strict-decoding error or warning.

use serde_json::{Map, Value};

use super::schema::{Additional, SchemaNode};

/// The ObjectMeta fields kept in `metadata`.
const OBJECT_META_FIELDS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];
const OWNER_REFERENCE_FIELDS: &[&str] = &["apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"];
const MANAGED_FIELDS_ENTRY_FIELDS: &[&str] = &[
    "manager",
    "operation",
    "apiVersion",
    "time",
    "fieldsType",
    "fieldsV1",
    "subresource",
];

/// Prunes `obj` (a whole custom resource) against its version's schema; returns the removed paths, sorted.
pub fn prune(obj: &mut Value, root: &SchemaNode) -> Vec<String> {
    let mut pruner = Pruner {
        path: Vec::new(),
        unknown: Vec::new(),
    };
    pruner.prune(obj, Some(root), true);
    pruner.unknown.sort();
    pruner.unknown
}

struct Pruner {
    /// The path segments to the current value (`spec`, `items[0]`).
    path: Vec<String>,
    unknown: Vec<String>,
}

impl Pruner {
    fn record(&mut self, field: &str) {
        let mut full = self.path.join(".");
        if !full.is_empty() {
            full.push('.');
        }
        full.push_str(field);
        self.unknown.push(full);
    }

    fn push_index(&mut self, i: usize) {
        match self.path.last_mut() {
            Some(last) => last.push_str(&format!("[{i}]")),
            None => self.path.push(format!("[{i}]")),
        }
    }

    fn pop_index(&mut self, i: usize) {
        let suffix = format!("[{i}]");
        if let Some(last) = self.path.last_mut()
            && let Some(stripped) = last.strip_suffix(&suffix)
        {
            let stripped = stripped.to_string();
            if stripped.is_empty() {
                self.path.pop();
            } else {
                *last = stripped;
            }
        }
    }

    /// `resource_root` marks the object root and embedded resources, which keep their type and object meta.
    fn prune(&mut self, value: &mut Value, schema: Option<&SchemaNode>, resource_root: bool) {
        if let Some(s) = schema
            && s.preserve_unknown_fields
        {
            self.skip_prune(value, s, resource_root || s.embedded_resource);
            return;
        }
        match value {
            Value::Object(map) => {
                let Some(s) = schema else {
                    for (key, _) in std::mem::take(map) {
                        self.record(&key);
                    }
                    return;
                };
                let embedded = resource_root || s.embedded_resource;
                let keys: Vec<String> = map.keys().cloned().collect();
                for key in keys {
                    if embedded && self.keep_type_meta(map, &key) {
                        continue;
                    }
                    let child_schema = s.properties.get(&key).or(match &s.additional {
                        Additional::Schema(a) => Some(a.as_ref()),
                        _ => None,
                    });
                    let declared = s.properties.contains_key(&key) || !matches!(s.additional, Additional::None);
                    if declared {
                        self.path.push(key.clone());
                        if let Some(child) = map.get_mut(&key) {
                            self.prune(child, child_schema, false);
                        }
                        self.path.pop();
                    } else {
                        // Go drops an unknown apiVersion/kind/metadata at the root without reporting it.
                        let silent = self.path.is_empty() && matches!(key.as_str(), "apiVersion" | "kind" | "metadata");
                        if !silent {
                            self.record(&key);
                        }
                        map.remove(&key);
                    }
                }
            }
            Value::Array(items) => {
                let item_schema = schema.and_then(|s| s.items.as_deref());
                for (i, item) in items.iter_mut().enumerate() {
                    self.push_index(i);
                    self.prune(item, item_schema, false);
                    self.pop_index(i);
                }
            }
            _ => {}
        }
    }

    /// Under `x-kubernetes-preserve-unknown-fields`: keep undeclared keys, prune inside declared ones.
    fn skip_prune(&mut self, value: &mut Value, s: &SchemaNode, embedded: bool) {
        match value {
            Value::Object(map) => {
                let keys: Vec<String> = map.keys().cloned().collect();
                for key in keys {
                    if embedded && self.keep_type_meta(map, &key) {
                        continue;
                    }
                    let child_schema = s.child(&key);
                    if child_schema.is_some() {
                        self.path.push(key.clone());
                        if let Some(child) = map.get_mut(&key) {
                            self.prune(child, child_schema, false);
                        }
                        self.path.pop();
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = s.items.as_deref() {
                    for (i, item) in items.iter_mut().enumerate() {
                        self.push_index(i);
                        self.skip_prune(item, item_schema, item_schema.embedded_resource);
                        self.pop_index(i);
                    }
                }
            }
            _ => {}
        }
    }

    /// Keeps `apiVersion`/`kind` strings and a `metadata` object (coerced to ObjectMeta) of a resource.
    fn keep_type_meta(&mut self, map: &mut Map<String, Value>, key: &str) -> bool {
        match (key, map.get_mut(key)) {
            ("apiVersion" | "kind", Some(Value::String(_))) => true,
            ("metadata", Some(Value::Object(meta))) => {
                self.path.push("metadata".to_string());
                self.coerce_object_meta(meta);
                self.path.pop();
                true
            }
            _ => false,
        }
    }

    /// Reduces `metadata` to the fields of ObjectMeta (and of its nested owner references and managed
    /// fields entries), recording what it drops.
    fn coerce_object_meta(&mut self, meta: &mut Map<String, Value>) {
        self.retain_fields(meta, OBJECT_META_FIELDS);
        for (list, fields) in [
            ("ownerReferences", OWNER_REFERENCE_FIELDS),
            ("managedFields", MANAGED_FIELDS_ENTRY_FIELDS),
        ] {
            if let Some(Value::Array(items)) = meta.get_mut(list) {
                self.path.push(list.to_string());
                for (i, item) in items.iter_mut().enumerate() {
                    if let Value::Object(entry) = item {
                        self.push_index(i);
                        self.retain_fields(entry, fields);
                        self.pop_index(i);
                    }
                }
                self.path.pop();
            }
        }
    }

    fn retain_fields(&mut self, map: &mut Map<String, Value>, fields: &[&str]) {
        let unknown: Vec<String> = map.keys().filter(|k| !fields.contains(&k.as_str())).cloned().collect();
        for key in unknown {
            self.record(&key);
            map.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> SchemaNode {
        SchemaNode::compile(&json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {
                    "type": "object",
                    "properties": {
                        "size": {"type": "integer"},
                        "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"typed": {"type": "object", "properties": {"a": {"type": "string"}}}}},
                        "template": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}}}
                    }
                }
            }
        }))
        .expect("compiles")
    }

    #[test]
    fn prunes_unknown_fields_and_reports_sorted_paths() {
        let mut obj = json!({
            "apiVersion": "hidden.example.com/v1",
            "kind": "Gizmo",
            "metadata": {"name": "g", "bogus": 1, "ownerReferences": [{"uid": "u", "extra": true}]},
            "spec": {
                "size": 1,
                "foo": 2,
                "items": [{"name": "a", "bar": 3}],
                "labels": {"k": "v"},
                "free": {"anything": {"deep": 1}, "typed": {"a": "x", "b": "y"}},
                "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "junk": 1}, "spec": {"x": "1", "y": "2"}, "other": 1}
            },
            "status": {"phase": "x"}
        });
        let unknown = prune(&mut obj, &schema());
        assert_eq!(
            unknown,
            vec![
                "metadata.bogus",
                "metadata.ownerReferences[0].extra",
                "spec.foo",
                "spec.free.typed.b",
                "spec.items[0].bar",
                "spec.template.metadata.junk",
                "spec.template.other",
                "spec.template.spec.y",
                "status",
            ]
        );
        assert_eq!(
            obj,
            json!({
                "apiVersion": "hidden.example.com/v1",
                "kind": "Gizmo",
                "metadata": {"name": "g", "ownerReferences": [{"uid": "u"}]},
                "spec": {
                    "size": 1,
                    "items": [{"name": "a"}],
                    "labels": {"k": "v"},
                    "free": {"anything": {"deep": 1}, "typed": {"a": "x"}},
                    "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": "1"}}
                }
            })
        );
    }
}
