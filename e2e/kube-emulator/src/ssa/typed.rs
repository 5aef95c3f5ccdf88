//! Objects read against a [`Shape`]: how a node behaves (leaf, granular object, associative list), the path
//! element of a list item, the typed-conversion check of an applied body, and the field set of an object.

use serde_json::Value;

use crate::fields::gojson::{self, go_quote};
use crate::fields::{FieldSet, ListKind, PathElement, Shape};

/// How a node merges, compares and is owned.
pub(crate) enum NodeKind<'s> {
    /// Scalars, atomic lists/maps/structs and untyped lists: replaced and owned as one node.
    Leaf,
    /// A granular struct or map, walked key by key; the shape resolves its keys.
    Object(&'s Shape),
    /// A list of type set or map, walked item by item.
    List(&'s Shape, &'s ListKind),
}

/// The kind of a node of `shape` holding `values` (untyped content is classified by its values).
pub(crate) fn classify<'s>(shape: &'s Shape, values: &[Option<&Value>]) -> NodeKind<'s> {
    match shape {
        Shape::Scalar => NodeKind::Leaf,
        Shape::Struct { atomic: true, .. } | Shape::Map { atomic: true, .. } => NodeKind::Leaf,
        Shape::Struct { .. } | Shape::Map { .. } => NodeKind::Object(shape),
        Shape::List {
            kind: ListKind::Atomic, ..
        } => NodeKind::Leaf,
        Shape::List { items, kind } => NodeKind::List(items, kind),
        Shape::Untyped => {
            // Untyped objects (and nulls) merge as granular maps; untyped lists and scalars are leaves.
            if values.iter().flatten().all(|v| v.is_object() || v.is_null()) {
                NodeKind::Object(shape)
            } else {
                NodeKind::Leaf
            }
        }
    }
}

/// Whether a value present at an object node has the wrong JSON type for it (null is always fine).
pub(crate) fn not_an_object(value: Option<&Value>) -> bool {
    matches!(value, Some(v) if !v.is_object() && !v.is_null())
}

/// Whether a value present at a list node has the wrong JSON type for it (null is always fine).
pub(crate) fn not_a_list(value: Option<&Value>) -> bool {
    matches!(value, Some(v) if !v.is_array() && !v.is_null())
}

/// The path element naming `item` in a list of `kind`, with structured-merge-diff's error texts.
pub(crate) fn item_element(kind: &ListKind, item: &Value) -> Result<PathElement, String> {
    match kind {
        ListKind::Map { keys, key_defaults } => {
            let map = match item {
                Value::Object(map) => map,
                Value::Null => return Err("associative list with keys may not have a null element".to_string()),
                _ => return Err("associative list with keys may not have non-map elements".to_string()),
            };
            let mut fields = Vec::with_capacity(keys.len());
            for key in keys {
                match map.get(key).or_else(|| key_defaults.get(key)) {
                    Some(value) => fields.push((key.clone(), value.clone())),
                    None => {
                        return Err(format!(
                            "associative list with keys has an element that omits key field {} (and doesn't have default value)",
                            go_quote(key)
                        ));
                    }
                }
            }
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(PathElement::Key(fields))
        }
        ListKind::Set => match item {
            Value::Object(_) => Err("associative list without keys has an element that's a map type".to_string()),
            Value::Array(_) => Err("not supported: associative list with lists as elements".to_string()),
            Value::Null => Err("associative list without keys has an element that's an explicit null".to_string()),
            _ => Ok(PathElement::Value(item.clone())),
        },
        ListKind::Atomic => Err("atomic lists have no item keys".to_string()),
    }
}

/// Checks an applied body the way kube-apiserver's typed conversion does: unknown fields (outside
/// preserved content), duplicate or unkeyable items of sets and list-maps, and containers of the wrong JSON
/// type. The error text is what follows `failed to create typed patch object (…): `.
pub(crate) fn check_body(body: &Value, shape: &Shape) -> Result<(), String> {
    let mut errors = Vec::new();
    let mut path = String::new();
    check_node(body, shape, &mut path, &mut errors);
    match errors.len() {
        0 => Ok(()),
        1 => Err(render_error(&errors[0])),
        _ => {
            let mut lines = vec!["errors:".to_string()];
            lines.extend(errors.iter().map(|e| format!("  {}", render_error(e))));
            Err(lines.join("\n"))
        }
    }
}

fn render_error((path, message): &(String, String)) -> String {
    if path.is_empty() {
        message.clone()
    } else {
        format!("{path}: {message}")
    }
}

fn check_node(value: &Value, shape: &Shape, path: &mut String, errors: &mut Vec<(String, String)>) {
    match shape {
        Shape::Untyped => {}
        Shape::Scalar => {
            if value.is_object() || value.is_array() {
                let got = if value.is_object() { "map" } else { "list" };
                errors.push((
                    path.clone(),
                    format!("expected scalar, got {got}: {}", gojson::to_string(value)),
                ));
            }
        }
        Shape::Struct { .. } | Shape::Map { .. } => match value {
            Value::Null => {}
            Value::Object(map) => {
                for (key, child) in map {
                    let mark = path.len();
                    path.push('.');
                    path.push_str(key);
                    match shape.field(key) {
                        Some((child_shape, _)) => check_node(child, child_shape, path, errors),
                        None => {
                            errors.push((path.clone(), "field not declared in schema".to_string()));
                            path.truncate(mark);
                            // Like structured-merge-diff, stop at the first unknown field of an object.
                            break;
                        }
                    }
                    path.truncate(mark);
                }
            }
            other => errors.push((path.clone(), format!("expected map, got {}", gojson::to_string(other)))),
        },
        Shape::List { items, kind } => match value {
            Value::Null => {}
            Value::Array(list) => check_list(list, items, kind, path, errors),
            other => errors.push((path.clone(), format!("expected list, got {}", gojson::to_string(other)))),
        },
    }
}

fn check_list(list: &[Value], items: &Shape, kind: &ListKind, path: &mut String, errors: &mut Vec<(String, String)>) {
    let mut seen = std::collections::BTreeSet::new();
    for (index, item) in list.iter().enumerate() {
        let element = if *kind == ListKind::Atomic {
            PathElement::Index(index)
        } else {
            match item_element(kind, item) {
                Ok(element) => element,
                Err(reason) => {
                    errors.push((path.clone(), format!("element {index}: {reason}")));
                    return;
                }
            }
        };
        if *kind != ListKind::Atomic && !seen.insert(element.clone()) {
            errors.push((path.clone(), format!("duplicate entries for key {}", element.display())));
        }
        let mark = path.len();
        path.push_str(&element.display());
        check_node(item, items, path, errors);
        path.truncate(mark);
    }
}

/// The field set of an object (structured-merge-diff's `ToFieldSet`): scalar leaves, atomic nodes, list
/// items, map entries, and keys whose value is `null` or `{}`. Items that appear more than once in a
/// list-map are owned as bare items. Never fails: content that does not fit the shape is owned as a leaf.
pub(crate) fn field_set(value: &Value, shape: &Shape) -> FieldSet {
    let mut set = FieldSet::new();
    collect(value, shape, &mut set);
    set
}

/// Adds the paths below `value` (relative to it) to `out`; returns whether the node itself is a member.
fn collect(value: &Value, shape: &Shape, out: &mut FieldSet) -> bool {
    match classify(shape, &[Some(value)]) {
        NodeKind::Leaf => true,
        NodeKind::Object(object_shape) => {
            let Value::Object(map) = value else {
                return !value.is_null();
            };
            for (key, child) in map {
                let (child_shape, declared) = object_shape.field_or_untyped(key);
                let mut subtree = FieldSet::new();
                let member = collect(child, child_shape, &mut subtree);
                let member = member || !declared || child.is_null() || is_empty_object(child);
                out.add_child(PathElement::Field(key.clone()), member, subtree);
            }
            false
        }
        NodeKind::List(items, kind) => {
            let Value::Array(list) = value else {
                return !value.is_null();
            };
            let elements: Vec<Option<PathElement>> = list.iter().map(|item| item_element(kind, item).ok()).collect();
            let mut counts: std::collections::BTreeMap<&PathElement, usize> = std::collections::BTreeMap::new();
            for element in elements.iter().flatten() {
                *counts.entry(element).or_insert(0) += 1;
            }
            for (item, element) in list.iter().zip(&elements) {
                let Some(element) = element else { continue };
                let mut subtree = FieldSet::new();
                if counts.get(element).copied().unwrap_or(0) == 1 {
                    collect(item, items, &mut subtree);
                }
                out.add_child(element.clone(), true, subtree);
            }
            false
        }
    }
}

/// Whether a value is `{}`.
pub(crate) fn is_empty_object(value: &Value) -> bool {
    matches!(value, Value::Object(map) if map.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shape() -> Shape {
        Shape::from_openapi_v3(&json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "containers": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "image": {"type": "string"}}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "args": {"type": "array", "items": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "nested": {"type": "object", "properties": {"a": {"type": "string"}}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }}}}))
        .unwrap()
    }

    #[test]
    fn body_field_set_owns_leaves_items_entries_and_empties() {
        let body = json!({"apiVersion": "x/v1", "kind": "K", "spec": {
            "containers": [{"name": "a", "image": "i"}],
            "tags": ["t"], "args": ["x"], "labels": {"l": "v"}, "nested": {}, "free": {"m": {"n": 1}, "o": null}
        }});
        let set = field_set(&body, &shape());
        assert_eq!(
            set.to_fields_v1_string(),
            r#"{"f:apiVersion":{},"f:kind":{},"f:spec":{"f:args":{},"f:containers":{"k:{\"name\":\"a\"}":{".":{},"f:image":{},"f:name":{}}},"f:free":{"f:m":{".":{},"f:n":{}},"f:o":{}},"f:labels":{"f:l":{}},"f:nested":{},"f:tags":{"v:\"t\"":{}}}}"#
        );
    }

    #[test]
    fn duplicated_items_are_owned_bare() {
        let body = json!({"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "a", "image": "2"}]}});
        assert_eq!(
            field_set(&body, &shape()).to_fields_v1_string(),
            r#"{"f:spec":{"f:containers":{"k:{\"name\":\"a\"}":{}}}}"#
        );
    }

    #[test]
    fn body_check_reports_structured_merge_diff_texts() {
        let shape = shape();
        assert_eq!(
            check_body(&json!({"spec": {"foo": 1}}), &shape),
            Err(".spec.foo: field not declared in schema".into())
        );
        assert_eq!(
            check_body(&json!({"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}), &shape),
            Err(r#".spec.containers: duplicate entries for key [name="a"]"#.into())
        );
        assert_eq!(
            check_body(&json!({"spec": {"containers": [{"image": "a"}]}}), &shape),
            Err(r#".spec.containers: element 0: associative list with keys has an element that omits key field "name" (and doesn't have default value)"#.into())
        );
        assert_eq!(
            check_body(&json!({"spec": {"containers": [{"name": "a", "bad": 1}]}}), &shape),
            Err(r#".spec.containers[name="a"].bad: field not declared in schema"#.into())
        );
        assert!(
            check_body(
                &json!({"spec": {"free": {"anything": [1]}}, "metadata": {"labels": {"a": "b"}}}),
                &shape
            )
            .is_ok()
        );
        // One error per object at most (the first unknown key), but errors of different objects add up.
        let two = check_body(
            &json!({"spec": {"foo": 1, "containers": [{"name": "a", "x": 1}]}}),
            &shape,
        )
        .unwrap_err();
        assert_eq!(
            two,
            "errors:\n  .spec.containers[name=\"a\"].x: field not declared in schema\n  .spec.foo: field not declared in schema"
        );
        let first_only = check_body(&json!({"b": 1, "a": 2}), &shape).unwrap_err();
        assert!(first_only.ends_with(": field not declared in schema") && !first_only.starts_with("errors:"));
    }
}
