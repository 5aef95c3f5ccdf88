//! Removing paths from an object (structured-merge-diff's `RemoveItems`): a listed path takes its whole
//! subtree with it; a container emptied by removals below it becomes `null`, as upstream does.

use serde_json::{Map, Value};

use super::typed::{NodeKind, classify, item_element};
use crate::fields::{FieldSet, Shape};

/// `value` without the paths in `remove` (relative to `value`).
pub(crate) fn remove_items(value: &Value, remove: &FieldSet, shape: &Shape) -> Value {
    if remove.is_empty() {
        return value.clone();
    }
    match classify(shape, &[Some(value)]) {
        NodeKind::Leaf => match value {
            // An atomic container reached by a removal below it loses everything.
            Value::Object(_) | Value::Array(_) if !shape_is_scalar(shape) => Value::Null,
            other => other.clone(),
        },
        NodeKind::Object(object_shape) => {
            let Value::Object(map) = value else { return Value::Null };
            let mut out = Map::new();
            for (key, child) in map {
                let element = crate::fields::PathElement::Field(key.clone());
                if remove.has_member(&element) {
                    continue;
                }
                let kept = match remove.child(&element) {
                    Some(below) => remove_items(child, below, object_shape.field_or_untyped(key).0),
                    None => child.clone(),
                };
                out.insert(key.clone(), kept);
            }
            if out.is_empty() {
                Value::Null
            } else {
                Value::Object(out)
            }
        }
        NodeKind::List(items, kind) => {
            let Value::Array(list) = value else { return Value::Null };
            let mut out = Vec::with_capacity(list.len());
            for item in list {
                let Ok(element) = item_element(kind, item) else {
                    out.push(item.clone());
                    continue;
                };
                if remove.has_member(&element) {
                    continue;
                }
                out.push(match remove.child(&element) {
                    Some(below) => remove_items(item, below, items),
                    None => item.clone(),
                });
            }
            if out.is_empty() { Value::Null } else { Value::Array(out) }
        }
    }
}

fn shape_is_scalar(shape: &Shape) -> bool {
    matches!(shape, Shape::Scalar)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields::PathElement;
    use serde_json::json;

    #[test]
    fn removes_subtrees_and_nulls_emptied_containers() {
        let shape = Shape::from_openapi_v3(&json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "string"}}}}
        }}}}))
        .unwrap();
        let object =
            json!({"kind": "K", "spec": {"labels": {"a": "1"}, "items": [{"name": "x", "v": "1"}, {"name": "y"}]}});
        let mut remove = FieldSet::new();
        remove.insert(&[
            PathElement::Field("spec".into()),
            PathElement::Field("labels".into()),
            PathElement::Field("a".into()),
        ]);
        remove.insert(&[
            PathElement::Field("spec".into()),
            PathElement::Field("items".into()),
            PathElement::Key(vec![("name".into(), json!("y"))]),
        ]);
        remove.insert(&[
            PathElement::Field("spec".into()),
            PathElement::Field("items".into()),
            PathElement::Key(vec![("name".into(), json!("x"))]),
            PathElement::Field("v".into()),
        ]);
        let pruned = remove_items(&object, &remove, &shape);
        assert_eq!(
            pruned,
            json!({"kind": "K", "spec": {"labels": null, "items": [{"name": "x"}]}})
        );
    }
}
