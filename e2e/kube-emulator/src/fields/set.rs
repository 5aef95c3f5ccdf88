//! Field sets: tries of path elements saying which fields of an object a manager owns, with the set algebra
//! server-side apply needs and the `fieldsV1` encoding stored in `metadata.managedFields`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::Shape;
#[cfg(test)]
use super::gojson;
use super::path::{Path, PathElement};

/// A set of field paths. A path is in the set when its last element is a member of the node its prefix
/// leads to. Invariant: no child node is empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, FieldSet>,
}

/// A `fieldsV1` document that is not a valid field set.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FieldsV1Error {
    /// A node of the trie was not a JSON object.
    #[error("expected an object at {key:?} in fieldsV1")]
    NotAnObject {
        /// The key whose value was wrong (empty for the root).
        key: String,
    },
    /// A `k:`, `v:` or `i:` key did not parse.
    #[error("parsing path element {key:?}: {reason}")]
    BadPathElement {
        /// The offending key.
        key: String,
        /// Why it did not parse.
        reason: String,
    },
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// A set holding the given paths, each given as field names (`&["spec", "replicas"]`).
    pub fn from_field_paths(paths: &[&[&str]]) -> Self {
        let mut set = FieldSet::new();
        for path in paths {
            let path: Path = path
                .iter()
                .map(|name| PathElement::Field((*name).to_string()))
                .collect();
            set.insert(&path);
        }
        set
    }

    /// Whether the set holds no path.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// Adds a path. The empty path is ignored.
    pub fn insert(&mut self, path: &[PathElement]) {
        let Some((last, prefix)) = path.split_last() else {
            return;
        };
        let mut node = self;
        for element in prefix {
            node = node.children.entry(element.clone()).or_default();
        }
        node.members.insert(last.clone());
    }

    /// Adds `element` as a member of this node and/or a child subtree (an empty subtree adds nothing).
    pub(crate) fn add_child(&mut self, element: PathElement, member: bool, subtree: FieldSet) {
        if member {
            self.members.insert(element.clone());
        }
        if !subtree.is_empty() {
            match self.children.get_mut(&element) {
                Some(existing) => existing.union_with(&subtree),
                None => {
                    self.children.insert(element, subtree);
                }
            }
        }
    }

    /// Whether the path is in the set.
    #[cfg(test)]
    pub fn has(&self, path: &[PathElement]) -> bool {
        let Some((last, prefix)) = path.split_last() else {
            return false;
        };
        let mut node = self;
        for element in prefix {
            match node.children.get(element) {
                Some(child) => node = child,
                None => return false,
            }
        }
        node.members.contains(last)
    }

    /// Whether `element` is a member of this node.
    pub(crate) fn has_member(&self, element: &PathElement) -> bool {
        self.members.contains(element)
    }

    /// The paths below `element`, relative to it (structured-merge-diff's `WithPrefix`).
    pub(crate) fn child(&self, element: &PathElement) -> Option<&FieldSet> {
        self.children.get(element)
    }

    /// Adds every path of `other`.
    pub fn union_with(&mut self, other: &FieldSet) {
        self.members.extend(other.members.iter().cloned());
        for (element, subtree) in &other.children {
            match self.children.get_mut(element) {
                Some(existing) => existing.union_with(subtree),
                None => {
                    self.children.insert(element.clone(), subtree.clone());
                }
            }
        }
    }

    /// The paths in either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.union_with(other);
        out
    }

    /// The paths of `self` that are not in `other`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (element, subtree) in &self.children {
            match other.children.get(element) {
                Some(theirs) => {
                    let diff = subtree.difference(theirs);
                    if !diff.is_empty() {
                        children.insert(element.clone(), diff);
                    }
                }
                None => {
                    children.insert(element.clone(), subtree.clone());
                }
            }
        }
        FieldSet { members, children }
    }

    /// The paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (element, subtree) in &self.children {
            if let Some(theirs) = other.children.get(element) {
                let both = subtree.intersection(theirs);
                if !both.is_empty() {
                    children.insert(element.clone(), both);
                }
            }
        }
        FieldSet { members, children }
    }

    /// The paths of `self` that are neither in `other` nor below a path of `other`.
    pub fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (element, subtree) in &self.children {
            if other.members.contains(element) {
                continue;
            }
            match other.children.get(element) {
                Some(theirs) => {
                    let diff = subtree.recursive_difference(theirs);
                    if !diff.is_empty() {
                        children.insert(element.clone(), diff);
                    }
                }
                None => {
                    children.insert(element.clone(), subtree.clone());
                }
            }
        }
        FieldSet { members, children }
    }

    /// This set plus, for every path, each declared struct field along it: owning `spec.template.x` then
    /// also means owning `spec` and `spec.template`, but not a map entry or list item on the way.
    pub(crate) fn ensure_named_fields_are_members(&self, shape: &Shape) -> FieldSet {
        let mut members = self.members.clone();
        let mut children = BTreeMap::new();
        for (element, subtree) in &self.children {
            if let PathElement::Field(name) = element
                && shape.declares_field(name)
            {
                members.insert(element.clone());
            }
            let child_shape = shape.child_for(element);
            children.insert(element.clone(), subtree.ensure_named_fields_are_members(child_shape));
        }
        FieldSet { members, children }
    }

    /// Every path, in structured-merge-diff's iteration order: a node's members first, then its children.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        let mut prefix = Vec::new();
        self.collect_paths(&mut prefix, &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for member in &self.members {
            let mut path = prefix.clone();
            path.push(member.clone());
            out.push(path);
        }
        for (element, subtree) in &self.children {
            prefix.push(element.clone());
            subtree.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// The elements of this node (members and children) in order, each with whether it is a member and
    /// its subtree.
    fn entries(&self) -> Vec<(&PathElement, bool, Option<&FieldSet>)> {
        let mut out: Vec<(&PathElement, bool, Option<&FieldSet>)> = Vec::new();
        let mut members = self.members.iter().peekable();
        let mut children = self.children.iter().peekable();
        loop {
            match (members.peek(), children.peek()) {
                (Some(m), Some((c, _))) if *m < *c => {
                    out.push((m, true, None));
                    members.next();
                }
                (Some(m), Some((c, subtree))) if *m == *c => {
                    out.push((c, true, Some(subtree)));
                    members.next();
                    children.next();
                }
                (_, Some((c, subtree))) => {
                    out.push((c, false, Some(subtree)));
                    children.next();
                }
                (Some(m), None) => {
                    out.push((m, true, None));
                    members.next();
                }
                (None, None) => break,
            }
        }
        out
    }

    /// The `fieldsV1` trie as JSON. Keys are inserted in structured-merge-diff's order (`"."` first), which
    /// survives serialization only where `serde_json` preserves insertion order; use
    /// [`FieldSet::to_fields_v1_string`] for the exact bytes.
    pub fn to_fields_v1(&self) -> Value {
        Value::Object(self.to_fields_v1_map(false))
    }

    fn to_fields_v1_map(&self, include_self: bool) -> Map<String, Value> {
        let mut map = Map::new();
        if include_self && !self.is_empty() {
            map.insert(".".to_string(), Value::Object(Map::new()));
        }
        for (element, member, subtree) in self.entries() {
            let value = match subtree {
                Some(subtree) => Value::Object(subtree.to_fields_v1_map(member)),
                None => Value::Object(Map::new()),
            };
            map.insert(element.to_fields_v1_key(), value);
        }
        map
    }

    /// The `fieldsV1` trie as kube-apiserver writes it, byte for byte.
    #[cfg(test)]
    pub fn to_fields_v1_string(&self) -> String {
        let mut out = String::new();
        self.write_fields_v1(&mut out, false);
        out
    }

    #[cfg(test)]
    fn write_fields_v1(&self, out: &mut String, include_self: bool) {
        out.push('{');
        let mut first = true;
        if include_self && !self.is_empty() {
            out.push_str("\".\":{}");
            first = false;
        }
        for (element, member, subtree) in self.entries() {
            if !first {
                out.push(',');
            }
            first = false;
            gojson::write_string(out, &element.to_fields_v1_key());
            out.push(':');
            match subtree {
                Some(subtree) => subtree.write_fields_v1(out, member),
                None => out.push_str("{}"),
            }
        }
        out.push('}');
    }

    /// Parses a `fieldsV1` trie. Keys of unknown kinds are dropped, as kube-apiserver does.
    pub fn from_fields_v1(value: &Value) -> Result<FieldSet, FieldsV1Error> {
        let Value::Object(map) = value else {
            return Err(FieldsV1Error::NotAnObject { key: String::new() });
        };
        Ok(Self::read_node(map)?.0)
    }

    /// Reads one node: its children as a set, and whether it carried `"."` or had no children (a member).
    fn read_node(map: &Map<String, Value>) -> Result<(FieldSet, bool), FieldsV1Error> {
        let mut set = FieldSet::new();
        let mut dot = false;
        for (key, child) in map {
            if key == "." {
                dot = true;
                continue;
            }
            let element = match PathElement::from_fields_v1_key(key) {
                Ok(Some(element)) => element,
                Ok(None) => continue,
                Err(reason) => {
                    return Err(FieldsV1Error::BadPathElement {
                        key: key.clone(),
                        reason,
                    });
                }
            };
            let Value::Object(child_map) = child else {
                return Err(FieldsV1Error::NotAnObject { key: key.clone() });
            };
            let (subtree, member) = Self::read_node(child_map)?;
            set.add_child(element, member, subtree);
        }
        let member = dot || set.is_empty();
        Ok((set, member))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> FieldSet {
        FieldSet::from_fields_v1(&serde_json::from_str(text).unwrap()).unwrap()
    }

    #[test]
    fn fields_v1_round_trips_byte_for_byte() {
        let samples = [
            r#"{"f:data":{"f:key":{}},"f:metadata":{"f:labels":{"f:test-label":{}}}}"#,
            r#"{"f:data":{".":{},"f:key":{}},"f:metadata":{"f:labels":{".":{},"f:test-label":{}}}}"#,
            r#"{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:selector":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:env":{"k:{\"name\":\"HOME\"}":{".":{},"f:name":{},"f:value":{}}},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":443,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{}}}}}}}}}"#,
            r#"{"f:metadata":{"f:finalizers":{".":{},"v:\"f\"":{}}}}"#,
            r#"{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:observedGeneration":{}}}"#,
        ];
        for sample in samples {
            assert_eq!(parse(sample).to_fields_v1_string(), sample);
        }
    }

    #[test]
    fn output_order_is_canonical_whatever_the_input_order() {
        let set = parse(
            r#"{"f:ports":{"k:{\"port\":443,\"protocol\":\"TCP\"}":{},"k:{\"port\":80,\"protocol\":\"TCP\"}":{}},"f:a":{"v:\"x\"":{},".":{},"f:b":{}}}"#,
        );
        assert_eq!(
            set.to_fields_v1_string(),
            r#"{"f:a":{".":{},"f:b":{},"v:\"x\"":{}},"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{},"k:{\"port\":443,\"protocol\":\"TCP\"}":{}}}"#
        );
    }

    #[test]
    fn value_form_matches_string_form() {
        let text = r#"{"f:data":{".":{},"f:key":{}},"f:spec":{"f:x":{}}}"#;
        let set = parse(text);
        assert_eq!(set.to_fields_v1(), serde_json::from_str::<Value>(text).unwrap());
    }

    #[test]
    fn unknown_elements_are_dropped_and_bad_ones_rejected() {
        assert_eq!(parse(r#"{"z:what":{},"f:a":{}}"#), parse(r#"{"f:a":{}}"#));
        assert!(FieldSet::from_fields_v1(&json!({"k:nope": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"f:a": 1})).is_err());
    }

    #[test]
    fn set_algebra() {
        let a = FieldSet::from_field_paths(&[&["spec", "a"], &["spec", "b"], &["status", "c"]]);
        let b = FieldSet::from_field_paths(&[&["spec", "b"], &["status"]]);
        assert_eq!(
            a.difference(&b),
            FieldSet::from_field_paths(&[&["spec", "a"], &["status", "c"]])
        );
        assert_eq!(
            a.recursive_difference(&b),
            FieldSet::from_field_paths(&[&["spec", "a"]])
        );
        assert_eq!(a.intersection(&b), FieldSet::from_field_paths(&[&["spec", "b"]]));
        assert!(a.union(&b).has(&[PathElement::Field("status".into())]));
        let paths: Vec<String> = a.paths().iter().map(|p| super::super::path::path_display(p)).collect();
        assert_eq!(paths, vec![".spec.a", ".spec.b", ".status.c"]);
    }
}
