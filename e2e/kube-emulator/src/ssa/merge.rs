//! Merging an applied configuration into the live object (structured-merge-diff's `Merge`, body on the
//! right): leaves and atomic nodes take the body's value, granular objects merge key by key, and sets and
//! list-maps merge item by item with the body's relative order for the items it names.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::typed::{NodeKind, classify, item_element, not_a_list, not_an_object};
use crate::fields::{ListKind, PathElement, Shape};

/// The live object with the applied configuration merged in.
pub(crate) fn merge(live: &Value, applied: &Value, shape: &Shape) -> Value {
    merge_node(live, applied, shape)
}

fn merge_node(lhs: &Value, rhs: &Value, shape: &Shape) -> Value {
    match classify(shape, &[Some(lhs), Some(rhs)]) {
        NodeKind::Leaf => rhs.clone(),
        NodeKind::Object(object_shape) => merge_object(lhs, rhs, object_shape),
        NodeKind::List(items, kind) => merge_list(lhs, rhs, items, kind),
    }
}

fn merge_object(lhs: &Value, rhs: &Value, shape: &Shape) -> Value {
    if not_an_object(Some(lhs)) || not_an_object(Some(rhs)) {
        return rhs.clone();
    }
    let l = lhs.as_object().filter(|m| !m.is_empty());
    let r = rhs.as_object().filter(|m| !m.is_empty());
    let (l, r) = match (l, r) {
        // Both empty or null: the body's form wins, so `{}` and null stay distinct.
        (None, None) => return rhs.clone(),
        (Some(l), None) => return Value::Object(l.clone()),
        (None, Some(r)) => return Value::Object(r.clone()),
        (Some(l), Some(r)) => (l, r),
    };
    let mut out = Map::new();
    for (key, lv) in l {
        let merged = match r.get(key) {
            Some(rv) => merge_node(lv, rv, shape.field_or_untyped(key).0),
            None => lv.clone(),
        };
        out.insert(key.clone(), merged);
    }
    for (key, rv) in r {
        if !l.contains_key(key) {
            out.insert(key.clone(), rv.clone());
        }
    }
    Value::Object(out)
}

/// Items of one side of a list, keyed by path element. Items that cannot be keyed, and repeated
/// occurrences of a key, get a private `Index` key so they are carried through untouched.
fn keyed_items<'v>(list: &'v [Value], kind: &ListKind) -> (Vec<PathElement>, BTreeMap<PathElement, &'v Value>) {
    let mut order = Vec::with_capacity(list.len());
    let mut items = BTreeMap::new();
    for (index, item) in list.iter().enumerate() {
        let element = match item_element(kind, item) {
            Ok(element) if !items.contains_key(&element) => element,
            _ => PathElement::Index(index),
        };
        order.push(element.clone());
        items.insert(element, item);
    }
    (order, items)
}

fn merge_list(lhs: &Value, rhs: &Value, items_shape: &Shape, kind: &ListKind) -> Value {
    if not_a_list(Some(lhs)) || not_a_list(Some(rhs)) {
        return rhs.clone();
    }
    let l = lhs.as_array().filter(|a| !a.is_empty());
    let r = rhs.as_array().filter(|a| !a.is_empty());
    let (l, r) = match (l, r) {
        (None, None) => return rhs.clone(),
        (Some(l), None) => return Value::Array(l.clone()),
        (None, Some(r)) => return Value::Array(r.clone()),
        (Some(l), Some(r)) => (l, r),
    };
    let (left_order, left) = keyed_items(l, kind);
    // Private index keys of the body must not match the live object's: the body was checked to have none.
    let (right_order, right) = keyed_items(r, kind);
    let is_shared =
        |e: &PathElement| !matches!(e, PathElement::Index(_)) && left.contains_key(e) && right.contains_key(e);
    let in_right = |e: &PathElement| !matches!(e, PathElement::Index(_)) && right.contains_key(e);

    // The shared items in the body's order: each is emitted when the walk reaches it in the body.
    let mut shared = right_order.iter().filter(|e| is_shared(e));
    let mut next_shared = shared.next();
    let merged_item = |e: &PathElement| -> Value {
        match (left.get(e), right.get(e)) {
            (Some(lv), Some(rv)) if !matches!(e, PathElement::Index(_)) => merge_node(lv, rv, items_shape),
            (_, Some(rv)) => (*rv).clone(),
            (Some(lv), None) => (*lv).clone(),
            (None, None) => Value::Null,
        }
    };

    let mut out = Vec::with_capacity(l.len().max(r.len()));
    let (mut li, mut ri) = (0, 0);
    while li < left_order.len() || ri < right_order.len() {
        if li < left_order.len() && ri < right_order.len() {
            let element = &left_order[li];
            if in_right(element) && *element == right_order[ri] {
                out.push(merged_item(element));
                li += 1;
                ri += 1;
                next_shared = shared.next();
                continue;
            }
            if in_right(element) && next_shared.is_some_and(|n| n != element) {
                // A shared item, but not the next one in the body's order: it comes later.
                li += 1;
                continue;
            }
        }
        if li < left_order.len() {
            let element = &left_order[li];
            if !in_right(element) {
                out.push(left.get(element).map(|v| (*v).clone()).unwrap_or(Value::Null));
                li += 1;
                continue;
            }
        }
        if ri < right_order.len() {
            let element = &right_order[ri];
            out.push(merged_item(element));
            ri += 1;
            if next_shared == Some(element) {
                next_shared = shared.next();
            }
        } else {
            // Only shared live items already emitted remain.
            li += 1;
        }
    }
    Value::Array(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shape() -> Shape {
        Shape::from_openapi_v3(
            &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "integer"},
                        "w": {"type": "integer"}}}},
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "args": {"type": "array", "items": {"type": "string"}},
                "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                    "additionalProperties": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}
            }}}}),
        )
        .unwrap()
    }

    fn names(value: &Value) -> Vec<String> {
        value["spec"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["name"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn list_map_follows_the_body_order_for_shared_items() {
        let live = json!({"spec": {"items": [{"name": "a", "v": 1}, {"name": "b"}, {"name": "c"}]}});
        let body = json!({"spec": {"items": [{"name": "c"}, {"name": "a", "w": 2}, {"name": "d"}]}});
        let merged = merge(&live, &body, &shape());
        assert_eq!(names(&merged), vec!["b", "c", "a", "d"]);
        assert_eq!(merged["spec"]["items"][2], json!({"name": "a", "v": 1, "w": 2}));
    }

    #[test]
    fn reordering_shared_items_terminates() {
        let live = json!({"spec": {"items": [{"name": "a"}, {"name": "b"}]}});
        let body = json!({"spec": {"items": [{"name": "b"}, {"name": "a"}]}});
        assert_eq!(names(&merge(&live, &body, &shape())), vec!["b", "a"]);
    }

    #[test]
    fn granular_atomic_and_null() {
        let live = json!({"spec": {"labels": {"a": "1"}, "selector": {"a": "1"}, "args": ["x"], "tags": ["y"]}});
        let body = json!({"spec": {"labels": {"b": "2"}, "selector": {"b": "2"}, "args": ["z"], "tags": ["x"]}});
        let merged = merge(&live, &body, &shape());
        assert_eq!(merged["spec"]["labels"], json!({"a": "1", "b": "2"}));
        assert_eq!(merged["spec"]["selector"], json!({"b": "2"}));
        assert_eq!(merged["spec"]["args"], json!(["z"]));
        assert_eq!(merged["spec"]["tags"], json!(["y", "x"]));
        let nulled = merge(&live, &json!({"spec": {"labels": null, "args": null}}), &shape());
        assert_eq!(nulled["spec"]["labels"], json!({"a": "1"}));
        assert_eq!(nulled["spec"]["args"], Value::Null);
    }
}
