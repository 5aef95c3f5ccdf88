//! Validation of `x-kubernetes-embedded-resource` objects inside a custom resource (apiextensions'
//! `schema/objectmeta.Validate`): `apiVersion` and `kind` must be non-empty strings and the embedded
//! `metadata` labels and annotations follow the ObjectMeta rules. Paths use Go's field paths
//! (`spec.template.metadata.labels`, map keys in brackets).

use serde_json::Value;

use super::super::path;
use super::super::{FieldError, object_meta};
use super::schema::{Additional, SchemaNode};

/// Checks every embedded resource under `value` (the root itself is the resource and is checked by the
/// ObjectMeta rules instead).
pub fn validate(value: &Value, node: &SchemaNode, at: &str, is_root: bool, errs: &mut Vec<FieldError>) {
    if !node.has_embedded_below {
        return;
    }
    if node.embedded_resource
        && !is_root
        && let Some(map) = value.as_object()
    {
        for key in ["apiVersion", "kind"] {
            match map.get(key) {
                None | Some(Value::Null) => errs.push(FieldError::required(path::child(at, key), "must not be empty")),
                Some(Value::String(s)) if s.is_empty() => {
                    errs.push(FieldError::required(path::child(at, key), "must not be empty"))
                }
                Some(Value::String(_)) => {}
                Some(other) => errs.push(FieldError::invalid(path::child(at, key), other, "must be a string")),
            }
        }
        if let Some(meta) = map.get("metadata").and_then(Value::as_object) {
            let meta_at = path::child(at, "metadata");
            errs.extend(object_meta::validate_labels(
                meta.get("labels"),
                &path::child(&meta_at, "labels"),
            ));
            errs.extend(object_meta::validate_annotations(
                meta.get("annotations"),
                &path::child(&meta_at, "annotations"),
            ));
        }
    }
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                if let Some(prop) = node.properties.get(key) {
                    validate(child, prop, &path::child(at, key), false, errs);
                } else if let Additional::Schema(additional) = &node.additional {
                    validate(child, additional, &path::key(at, key), false, errs);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = node.items.as_deref() {
                for (i, item) in items.iter().enumerate() {
                    validate(item, item_schema, &path::index(at, i), false, errs);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn embedded_resources_need_type_meta_and_valid_labels() {
        let node = SchemaNode::compile(&json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}
        }}}}))
        .expect("compiles");
        let mut errs = Vec::new();
        validate(
            &json!({"spec": {"template": {"kind": "", "metadata": {"labels": {"a": "-"}}}}}),
            &node,
            "",
            true,
            &mut errs,
        );
        let texts: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(texts.len(), 3, "{texts:#?}");
        assert_eq!(texts[0], "spec.template.apiVersion: Required value: must not be empty");
        assert_eq!(texts[1], "spec.template.kind: Required value: must not be empty");
        assert!(texts[2].starts_with("spec.template.metadata.labels: Invalid value: \"-\": a valid label"));
    }
}
