//! Comparing two versions of an object (structured-merge-diff's `Compare`): which paths a write added,
//! modified or removed. Non-leaf nodes that appear or disappear count too, which is what puts `"."` on the
//! nodes an update created.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::typed::{NodeKind, classify, item_element, not_a_list, not_an_object};
use crate::fields::{FieldSet, ListKind, Path, PathElement, Shape, values_equal};

/// The difference between two objects.
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    /// Paths present only in the new object.
    pub(crate) added: FieldSet,
    /// Leaves whose value changed.
    pub(crate) modified: FieldSet,
    /// Paths present only in the old object.
    pub(crate) removed: FieldSet,
}

impl Comparison {
    /// Drops every path at or below the given fields (the endpoint's reset fields).
    pub(crate) fn exclude(&mut self, reset: &FieldSet) {
        if reset.is_empty() {
            return;
        }
        self.added = self.added.recursive_difference(reset);
        self.modified = self.modified.recursive_difference(reset);
        self.removed = self.removed.recursive_difference(reset);
    }

    /// Modified ∪ Added: the paths a write changed.
    pub(crate) fn changed(&self) -> FieldSet {
        self.modified.union(&self.added)
    }
}

/// Compares `old` with `new`.
pub(crate) fn compare(old: &Value, new: &Value, shape: &Shape) -> Comparison {
    let mut comparison = Comparison::default();
    let mut path = Path::new();
    walk(Some(old), Some(new), shape, &mut path, &mut comparison);
    comparison
}

fn walk(lhs: Option<&Value>, rhs: Option<&Value>, shape: &Shape, path: &mut Path, out: &mut Comparison) {
    if let (Some(l), Some(r)) = (lhs, rhs)
        && l == r
    {
        return;
    }
    let descended = match classify(shape, &[lhs, rhs]) {
        NodeKind::Leaf => false,
        NodeKind::Object(object_shape) => walk_object(lhs, rhs, object_shape, path, out),
        NodeKind::List(items, kind) => walk_list(lhs, rhs, items, kind, path, out),
    };
    if !descended {
        leaf(lhs, rhs, path, out);
    } else if lhs.is_none() {
        out.added.insert(path);
    } else if rhs.is_none() {
        out.removed.insert(path);
    }
}

fn leaf(lhs: Option<&Value>, rhs: Option<&Value>, path: &Path, out: &mut Comparison) {
    match (lhs, rhs) {
        (None, _) => out.added.insert(path),
        (_, None) => out.removed.insert(path),
        (Some(l), Some(r)) => {
            if !values_equal(l, r) {
                out.modified.insert(path);
            }
        }
    }
}

fn non_empty_object(value: Option<&Value>) -> Option<&Map<String, Value>> {
    value.and_then(Value::as_object).filter(|m| !m.is_empty())
}

/// Walks the keys of an object node; returns false when the node is to be treated as a leaf.
fn walk_object(lhs: Option<&Value>, rhs: Option<&Value>, shape: &Shape, path: &mut Path, out: &mut Comparison) -> bool {
    if not_an_object(lhs) || not_an_object(rhs) {
        return false;
    }
    let (l, r) = (non_empty_object(lhs), non_empty_object(rhs));
    if l.is_none() && r.is_none() {
        // Both empty or null: a leaf, which keeps `{}` and null distinct.
        return false;
    }
    for (key, lv) in l.into_iter().flatten() {
        path.push(PathElement::Field(key.clone()));
        walk(
            Some(lv),
            r.and_then(|r| r.get(key)),
            shape.field_or_untyped(key).0,
            path,
            out,
        );
        path.pop();
    }
    for (key, rv) in r.into_iter().flatten() {
        if l.is_some_and(|l| l.contains_key(key)) {
            continue;
        }
        path.push(PathElement::Field(key.clone()));
        walk(None, Some(rv), shape.field_or_untyped(key).0, path, out);
        path.pop();
    }
    true
}

/// The items of a list indexed by path element: unique elements in first-seen order, and every occurrence.
struct IndexedItems<'v> {
    order: Vec<PathElement>,
    occurrences: BTreeMap<PathElement, Vec<&'v Value>>,
}

fn index_items<'v>(list: Option<&'v Vec<Value>>, kind: &ListKind) -> IndexedItems<'v> {
    let mut indexed = IndexedItems {
        order: Vec::new(),
        occurrences: BTreeMap::new(),
    };
    for item in list.into_iter().flatten() {
        let Ok(element) = item_element(kind, item) else {
            continue;
        };
        match indexed.occurrences.get_mut(&element) {
            Some(all) => all.push(item),
            None => {
                indexed.order.push(element.clone());
                indexed.occurrences.insert(element, vec![item]);
            }
        }
    }
    indexed
}

/// Walks the items of a set or list-map; returns false when the node is to be treated as a leaf.
fn walk_list(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    items: &Shape,
    kind: &ListKind,
    path: &mut Path,
    out: &mut Comparison,
) -> bool {
    if not_a_list(lhs) || not_a_list(rhs) {
        return false;
    }
    let l = lhs.and_then(Value::as_array).filter(|a| !a.is_empty());
    let r = rhs.and_then(Value::as_array).filter(|a| !a.is_empty());
    if l.is_none() && r.is_none() {
        return false;
    }
    let left = index_items(l, kind);
    let right = index_items(r, kind);
    let mut all = left.order.clone();
    all.extend(
        right
            .order
            .iter()
            .filter(|e| !left.occurrences.contains_key(e))
            .cloned(),
    );
    let empty = Vec::new();
    for element in all {
        let lv = left.occurrences.get(&element).unwrap_or(&empty);
        let rv = right.occurrences.get(&element).unwrap_or(&empty);
        path.push(element);
        match (lv.len(), rv.len()) {
            (0..=1, 0..=1) => walk(lv.first().copied(), rv.first().copied(), items, path, out),
            (2.., 2..) => {
                let same = lv.len() == rv.len() && lv.iter().zip(rv.iter()).all(|(a, b)| values_equal(a, b));
                if !same {
                    out.modified.insert(path);
                }
            }
            (2.., _) => {
                if let Some(first) = rv.first() {
                    walk(None, Some(first), items, path, out);
                }
                out.removed.insert(path);
            }
            (_, _) => {
                if let Some(first) = lv.first() {
                    walk(Some(first), None, items, path, out);
                }
                out.added.insert(path);
            }
        }
        path.pop();
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shape() -> Shape {
        Shape::from_openapi_v3(
            &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}
            }}}}),
        )
        .unwrap()
    }

    #[test]
    fn created_nodes_are_added_with_their_leaves() {
        let c = compare(
            &json!({}),
            &json!({"spec": {"replicas": 1, "labels": {"a": "b"}}}),
            &shape(),
        );
        assert_eq!(
            c.added.to_fields_v1_string(),
            r#"{"f:spec":{".":{},"f:labels":{".":{},"f:a":{}},"f:replicas":{}}}"#
        );
        assert!(c.modified.is_empty() && c.removed.is_empty());
    }

    #[test]
    fn changes_and_removals() {
        let old = json!({"spec": {"replicas": 1, "tags": ["a", "b"], "labels": {"x": "1"}}});
        let new = json!({"spec": {"replicas": 2.0, "tags": ["b"], "labels": {}}});
        let c = compare(&old, &new, &shape());
        assert_eq!(c.modified.to_fields_v1_string(), r#"{"f:spec":{"f:replicas":{}}}"#);
        assert_eq!(
            c.removed.to_fields_v1_string(),
            r#"{"f:spec":{"f:labels":{"f:x":{}},"f:tags":{"v:\"a\"":{}}}}"#
        );
        assert!(c.added.is_empty());
        let same = compare(
            &json!({"spec": {"replicas": 1}}),
            &json!({"spec": {"replicas": 1.0}}),
            &shape(),
        );
        assert!(same.modified.is_empty());
    }

    #[test]
    fn empty_and_null_are_leaves() {
        let c = compare(
            &json!({"spec": {"labels": null}}),
            &json!({"spec": {"labels": {}}}),
            &shape(),
        );
        assert_eq!(c.modified.to_fields_v1_string(), r#"{"f:spec":{"f:labels":{}}}"#);
    }
}
