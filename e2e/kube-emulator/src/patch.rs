//! The non-apply patch types: JSON merge patch (RFC 7386), JSON patch (RFC 6902 with evanphx/json-patch v4
//! semantics for `test` against null), and strategic merge patch for the built-in kinds.

use serde_json::{Map, Value};

use super::status::ApiError;

/// The patch types a request can carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    /// `application/json-patch+json`.
    Json,
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/apply-patch+yaml`.
    Apply,
}

impl PatchType {
    /// The patch type of a Content-Type, if it is one.
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        match content_type {
            "application/json-patch+json" => Some(PatchType::Json),
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/strategic-merge-patch+json" => Some(PatchType::Strategic),
            "application/apply-patch+yaml" => Some(PatchType::Apply),
            _ => None,
        }
    }
}

/// The media types a custom resource accepts for PATCH, in kube-apiserver's order.
pub const CUSTOM_PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];

/// The media types a built-in kind accepts for PATCH.
pub const BUILTIN_PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

fn rejected() -> ApiError {
    ApiError::invalid_plain("the server rejected our request due to an error in our request")
}

/// Applies an RFC 7386 merge patch.
pub fn merge(original: &Value, patch: &Value) -> Value {
    let mut out = original.clone();
    json_patch::merge(&mut out, patch);
    out
}

/// Applies a JSON patch, op by op. A `test` for `null` passes when the path is absent (evanphx v4), which
/// kube-runtime's finalizer helper relies on. Any failing op rejects the whole patch with 422.
pub fn json(original: &Value, patch: &Value) -> Result<Value, ApiError> {
    let ops = patch
        .as_array()
        .ok_or_else(|| ApiError::bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch"))?;
    let mut doc = original.clone();
    for op in ops {
        let is_test = op.get("op").and_then(Value::as_str) == Some("test");
        if is_test {
            let path = op.get("path").and_then(Value::as_str).unwrap_or("");
            let value = op.get("value").unwrap_or(&Value::Null);
            let actual = doc.pointer(path);
            let passes = match actual {
                None => value.is_null(),
                Some(actual) => actual == value,
            };
            if !passes {
                return Err(rejected());
            }
            continue;
        }
        let single: json_patch::Patch =
            serde_json::from_value(Value::Array(vec![op.clone()])).map_err(|e| ApiError::bad_request(e.to_string()))?;
        json_patch::patch(&mut doc, &single).map_err(|_| rejected())?;
    }
    Ok(doc)
}

/// How a list field merges under strategic merge patch.
enum ListStrategy {
    /// Items are objects matched by this key.
    MergeKey(&'static str),
    /// Items are scalars merged as a set.
    Primitive,
    /// Replaced wholesale.
    Replace,
}

fn list_strategy(field: &str) -> ListStrategy {
    match field {
        "finalizers" => ListStrategy::Primitive,
        "ownerReferences" => ListStrategy::MergeKey("uid"),
        "ports" => ListStrategy::MergeKey("port"),
        "secrets" | "imagePullSecrets" | "containers" | "initContainers" | "volumes" | "env" => {
            ListStrategy::MergeKey("name")
        }
        "conditions" => ListStrategy::MergeKey("type"),
        _ => ListStrategy::Replace,
    }
}

/// Applies a strategic merge patch to a built-in object, honouring the merge keys of the fields the
/// emulator's kinds have and the `$patch`, `$retainKeys`, `$setElementOrder` and
/// `$deleteFromPrimitiveList` directives.
pub fn strategic(original: &Value, patch: &Value) -> Result<Value, ApiError> {
    match (original, patch) {
        (_, Value::Object(p)) => {
            let base = match original {
                Value::Object(m) => m.clone(),
                _ => Map::new(),
            };
            Ok(Value::Object(merge_map(base, p)?))
        }
        _ => Err(ApiError::bad_request("strategic merge patch must be a JSON object")),
    }
}

fn merge_map(mut base: Map<String, Value>, patch: &Map<String, Value>) -> Result<Map<String, Value>, ApiError> {
    if patch.get("$patch").and_then(Value::as_str) == Some("replace") {
        let mut replaced = patch.clone();
        replaced.remove("$patch");
        return Ok(replaced);
    }
    if let Some(keep) = patch.get("$retainKeys").and_then(Value::as_array) {
        let keep: Vec<&str> = keep.iter().filter_map(Value::as_str).collect();
        base.retain(|k, _| keep.contains(&k.as_str()));
    }
    for (key, value) in patch {
        if key.starts_with("$setElementOrder/") || key == "$retainKeys" || key == "$patch" {
            continue;
        }
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(items)), Some(remove)) = (base.get_mut(field), value.as_array()) {
                items.retain(|item| !remove.contains(item));
            }
            continue;
        }
        match value {
            Value::Null => {
                base.remove(key);
            }
            Value::Object(p) => {
                if p.get("$patch").and_then(Value::as_str) == Some("delete") {
                    base.remove(key);
                    continue;
                }
                let existing = match base.remove(key) {
                    Some(Value::Object(m)) => m,
                    _ => Map::new(),
                };
                base.insert(key.clone(), Value::Object(merge_map(existing, p)?));
            }
            Value::Array(items) => {
                let merged = match (list_strategy(key), base.remove(key)) {
                    (ListStrategy::Replace, _) | (_, None) => strip_directives(items),
                    (ListStrategy::Primitive, Some(Value::Array(mut existing))) => {
                        for item in items {
                            if !existing.contains(item) {
                                existing.push(item.clone());
                            }
                        }
                        existing
                    }
                    (ListStrategy::MergeKey(merge_key), Some(Value::Array(existing))) => {
                        merge_keyed(existing, items, merge_key)?
                    }
                    (_, Some(_)) => strip_directives(items),
                };
                base.insert(key.clone(), Value::Array(merged));
            }
            scalar => {
                base.insert(key.clone(), scalar.clone());
            }
        }
    }
    Ok(base)
}

fn strip_directives(items: &[Value]) -> Vec<Value> {
    items
        .iter()
        .filter(|item| item.get("$patch").is_none())
        .cloned()
        .collect()
}

fn merge_keyed(mut existing: Vec<Value>, patch: &[Value], merge_key: &str) -> Result<Vec<Value>, ApiError> {
    for item in patch {
        let Some(obj) = item.as_object() else {
            existing.push(item.clone());
            continue;
        };
        let key_value = obj.get(merge_key);
        let position = existing
            .iter()
            .position(|e| key_value.is_some() && e.get(merge_key) == key_value);
        let directive = obj.get("$patch").and_then(Value::as_str);
        match (position, directive) {
            (Some(i), Some("delete")) => {
                existing.remove(i);
            }
            (None, Some("delete")) => {}
            (Some(i), Some("replace")) => {
                let mut replaced = obj.clone();
                replaced.remove("$patch");
                existing[i] = Value::Object(replaced);
            }
            (Some(i), _) => {
                let base = existing[i].as_object().cloned().unwrap_or_default();
                existing[i] = Value::Object(merge_map(base, obj)?);
            }
            (None, _) => {
                let mut added = obj.clone();
                added.remove("$patch");
                existing.push(Value::Object(added));
            }
        }
    }
    Ok(existing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn test_against_null_passes_when_the_path_is_absent() {
        let obj = json!({"metadata":{"name":"a"}});
        let patch = json!([{"op":"test","path":"/metadata/finalizers","value":null},{"op":"add","path":"/metadata/finalizers","value":["x"]}]);
        let out = json(&obj, &patch).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["x"]));
        let again = json(&out, &patch).unwrap_err();
        assert_eq!(again.code, 422);
        assert_eq!(
            again.message,
            "the server rejected our request due to an error in our request"
        );
    }

    #[test]
    fn removing_a_missing_key_is_rejected() {
        let err = json(&json!({}), &json!([{"op":"remove","path":"/x"}])).unwrap_err();
        assert_eq!(err.code, 422);
    }

    #[test]
    fn strategic_merge_merges_ports_by_key_and_finalizers_as_a_set() {
        let live = json!({"metadata":{"finalizers":["a"]},"spec":{"ports":[{"port":80,"name":"http"},{"port":443,"name":"https"}]}});
        let patch = json!({"metadata":{"finalizers":["b"]},"spec":{"ports":[{"port":80,"name":"web"},{"port":443,"$patch":"delete"}]}});
        let out = strategic(&live, &patch).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["a", "b"]));
        assert_eq!(out["spec"]["ports"], json!([{"port":80,"name":"web"}]));
    }

    #[test]
    fn merge_patch_null_removes_keys() {
        let out = merge(&json!({"a":1,"b":{"c":2}}), &json!({"b":{"c":null}}));
        assert_eq!(out, json!({"a":1,"b":{}}));
    }
}
