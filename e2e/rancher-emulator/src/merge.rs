//! How norman applies a PUT body to a stored object (rancher/norman `types/convert/merge`).
//!
//! Objects merge key by key, recursively: keys absent from the body keep their value, a `null` clears it, and
//! anything else replaces it. So removing one quota key needs `"limitsCpu": null` (or `?_replace=true`), not just
//! leaving it out. Labels and annotations are replaced as a whole, except that protected `cattle.io/` keys keep
//! their stored values and stored `field.cattle.io/` keys stay unless the body sets them.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Merges `update` into `stored` (both objects of updatable fields). With `replace`, updatable fields absent
/// from the body are cleared first, as `?_replace=true` does.
pub fn merge_fields(stored: &Map<String, Value>, update: &Map<String, Value>, replace: bool) -> Map<String, Value> {
    let mut result = if replace { Map::new() } else { stored.clone() };
    for (key, value) in update {
        let merged = match (stored.get(key), value) {
            (Some(Value::Object(old)), Value::Object(new)) if !replace => Value::Object(merge_fields(old, new, false)),
            _ => value.clone(),
        };
        if merged.is_null() {
            result.remove(key);
        } else {
            result.insert(key.clone(), strip_nulls(merged));
        }
    }
    result
}

/// Removes null members recursively: a null in a body means "no value", and Kubernetes drops it when stored.
fn strip_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, strip_nulls(v)))
                .collect(),
        ),
        other => other,
    }
}

fn is_field_key(key: &str) -> bool {
    key.starts_with("field.cattle.io/")
}

fn is_protected(key: &str) -> bool {
    key.contains("cattle.io/") && !(is_field_key(key) && key != "field.cattle.io/creatorId")
}

/// Applies a body's labels or annotations to the stored ones (`mergeProtected`): when the body has none the
/// stored map stays; otherwise the body replaces the user-set keys, protected keys keep their stored values, and
/// stored `field.cattle.io/` keys the body does not mention stay.
pub fn merge_protected(stored: &BTreeMap<String, String>, body: Option<&Value>) -> BTreeMap<String, String> {
    let Some(Value::Object(body)) = body else {
        return stored.clone();
    };
    let mut result = stored.clone();
    for (key, value) in body {
        if is_protected(key) {
            continue;
        }
        match value {
            Value::String(s) => {
                result.insert(key.clone(), s.clone());
            }
            Value::Null => {
                result.remove(key);
            }
            other => {
                result.insert(key.clone(), other.to_string());
            }
        }
    }
    for key in stored.keys() {
        if is_protected(key) || is_field_key(key) {
            continue;
        }
        if !body.contains_key(key) {
            result.remove(key);
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn nested_objects_merge_and_null_clears() {
        let stored = object(json!({"description": "d", "resourceQuota": {"limit": {"limitsCpu": "2", "pods": "10"}}}));
        let update = object(json!({"resourceQuota": {"limit": {"limitsCpu": "4", "pods": null}}}));
        let merged = merge_fields(&stored, &update, false);
        assert_eq!(
            Value::Object(merged),
            json!({"description": "d", "resourceQuota": {"limit": {"limitsCpu": "4"}}})
        );
    }

    #[test]
    fn replace_drops_fields_the_body_leaves_out() {
        let stored = object(json!({"description": "d", "name": "n"}));
        let merged = merge_fields(&stored, &object(json!({"name": "m"})), true);
        assert_eq!(Value::Object(merged), json!({"name": "m"}));
    }

    #[test]
    fn annotations_replace_user_keys_but_keep_protected_ones() {
        let stored: BTreeMap<String, String> = [
            ("field.cattle.io/creatorId", "u"),
            ("authz.management.cattle.io/creator-role-bindings", "x"),
            ("waldur/managed", "true"),
            ("other", "1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let body = json!({"waldur/managed": "true", "waldur/organization": "org",
                          "authz.management.cattle.io/creator-role-bindings": "changed"});
        let merged = merge_protected(&stored, Some(&body));
        assert_eq!(merged.get("other"), None, "user keys the body omits are removed");
        assert_eq!(merged.get("waldur/organization").map(String::as_str), Some("org"));
        assert_eq!(
            merged
                .get("authz.management.cattle.io/creator-role-bindings")
                .map(String::as_str),
            Some("x")
        );
        assert_eq!(merged.get("field.cattle.io/creatorId").map(String::as_str), Some("u"));
        assert_eq!(
            merge_protected(&stored, None),
            stored,
            "no annotations in the body leaves them alone"
        );
    }
}
