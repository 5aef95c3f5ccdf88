//! Uniqueness of `x-kubernetes-list-type: set` items and `map` keys (apiextensions' `listtype` package).
//!
//! Only the second occurrence of a repeated value is reported, as `Duplicate value: <v>` at its index;
//! for map lists the value is the map of key fields (`map[string]interface {}{"name":"a"}`).

use serde_json::{Map, Value};

use super::super::FieldError;
use super::super::go_format::BadValue;
use super::super::path;
use super::schema::{Additional, ListType, SchemaNode};

/// Checks every set and map list under `value` (a whole object, or a subtree at `at`).
pub fn validate(value: &Value, node: &SchemaNode, at: &str, errs: &mut Vec<FieldError>) {
    if !node.has_list_types_below {
        return;
    }
    match value {
        Value::Object(map) => {
            if let Additional::Schema(additional) = &node.additional {
                for (key, child) in map {
                    validate(child, additional, &path::key(at, key), errs);
                }
            }
            for (key, child) in map {
                if let Some(prop) = node.properties.get(key) {
                    validate(child, prop, &path::child(at, key), errs);
                }
            }
        }
        Value::Array(items) => {
            match &node.list_type {
                ListType::Set => {
                    for i in second_occurrences(items.iter().map(Some)) {
                        errs.push(FieldError::duplicate(path::index(at, i), &items[i]));
                    }
                }
                ListType::Map(keys) => validate_map_list(items, keys, at, errs),
                ListType::Atomic => {}
            }
            if let Some(item_schema) = node.items.as_deref() {
                for (i, item) in items.iter().enumerate() {
                    validate(item, item_schema, &path::index(at, i), errs);
                }
            }
        }
        _ => {}
    }
}

/// Indices of the second occurrence of each repeated key (`None` keys compare equal to each other).
fn second_occurrences<'a>(keys: impl Iterator<Item = Option<&'a Value>>) -> Vec<usize> {
    let keys: Vec<Option<&Value>> = keys.collect();
    let mut found = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let earlier = keys[..i].iter().filter(|k| *k == key).count();
        if earlier == 1 {
            found.push(i);
        }
    }
    found
}

fn validate_map_list(items: &[Value], keys: &[String], at: &str, errs: &mut Vec<FieldError>) {
    for (i, item) in items.iter().enumerate() {
        if !item.is_null() && !item.is_object() {
            errs.push(FieldError::invalid(
                path::index(at, i),
                item,
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    if items.len() <= 1 {
        return;
    }
    let key_maps: Vec<Value> = items
        .iter()
        .map(|item| {
            let mut key_map = Map::new();
            if let Some(obj) = item.as_object() {
                for key in keys {
                    if let Some(v) = obj.get(key) {
                        key_map.insert(key.clone(), v.clone());
                    }
                }
            }
            Value::Object(key_map)
        })
        .collect();
    for i in second_occurrences(key_maps.iter().map(Some)) {
        errs.push(FieldError::duplicate(path::index(at, i), BadValue::from(&key_maps[i])));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(value: Value) -> Vec<String> {
        let node = SchemaNode::compile(
            &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "pairs": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b"],
                    "items": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}}
            }}}}),
        )
        .expect("compiles");
        let mut errs = Vec::new();
        validate(&value, &node, "", &mut errs);
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn set_and_map_duplicates() {
        assert_eq!(
            check(json!({"spec": {"tags": ["a", "b", "a", "a"]}})),
            vec!["spec.tags[2]: Duplicate value: \"a\""]
        );
        assert_eq!(
            check(json!({"spec": {"ports": [{"name": "http"}, {"name": "http"}]}})),
            vec!["spec.ports[1]: Duplicate value: map[string]interface {}{\"name\":\"http\"}"]
        );
        assert_eq!(
            check(json!({"spec": {"pairs": [{"a": "x", "b": 1}, {"a": "x", "b": 2}, {"a": "x", "b": 1}]}})),
            vec!["spec.pairs[2]: Duplicate value: map[string]interface {}{\"a\":\"x\", \"b\":1}"]
        );
        assert_eq!(
            check(json!({"spec": {"ports": ["x"]}})),
            vec!["spec.ports[0]: Invalid value: \"x\": must be an object for an array of list-type map"]
        );
        assert!(check(json!({"spec": {"tags": ["a", "b"], "ports": [{"name": "a"}, {"name": "b"}]}})).is_empty());
    }
}
