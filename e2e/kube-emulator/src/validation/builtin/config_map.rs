//! ConfigMaps (`ValidateConfigMap`, `ValidateConfigMapUpdate`): keys of `data` and `binaryData`, no key in
//! both, 1 MiB in total (reported with an empty field path), and `immutable` freezing.

use serde_json::{Map, Value};

use super::super::{FieldError, names, object_meta, path};
use super::secret::{MAX_SECRET_SIZE, decode_base64};

const IMMUTABLE: &str = "field is immutable when `immutable` is set";

fn map<'a>(obj: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    obj.get(key).and_then(Value::as_object)
}

/// `ValidateConfigMap`.
pub fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = object_meta::validate_object_meta(obj, true, &names::name_is_dns_subdomain);
    let empty = Map::new();
    let (data, binary) = (
        map(obj, "data").unwrap_or(&empty),
        map(obj, "binaryData").unwrap_or(&empty),
    );
    let mut total = 0usize;
    for (key, value) in data {
        for msg in names::is_config_map_key(key) {
            errs.push(FieldError::invalid(path::key("data", key), key, &msg));
        }
        if binary.contains_key(key) {
            errs.push(FieldError::invalid(
                path::key("data", key),
                key,
                "duplicate of key present in binaryData",
            ));
        }
        total += value.as_str().map_or(0, str::len);
    }
    for (key, value) in binary {
        for msg in names::is_config_map_key(key) {
            errs.push(FieldError::invalid(path::key("binaryData", key), key, &msg));
        }
        total += value
            .as_str()
            .and_then(|v| decode_base64(v).ok())
            .map_or(0, |b| b.len());
    }
    if total > MAX_SECRET_SIZE {
        errs.push(FieldError::too_long("", MAX_SECRET_SIZE as i64));
    }
    errs
}

/// `ValidateConfigMapUpdate`: ObjectMeta update, `immutable` freezing, then [`validate`].
pub fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = object_meta::validate_object_meta_update(new, old);
    if old.get("immutable").and_then(Value::as_bool) == Some(true) {
        if new.get("immutable").and_then(Value::as_bool) != Some(true) {
            errs.push(FieldError::forbidden("immutable", IMMUTABLE));
        }
        for key in ["data", "binaryData"] {
            if map(new, key) != map(old, key) {
                errs.push(FieldError::forbidden(key, IMMUTABLE));
            }
        }
    }
    errs.extend(validate(new));
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn texts(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn keys_duplicates_and_size() {
        let cm = json!({"metadata": {"name": "c", "namespace": "n"}, "data": {"k": "v", "ok.key": "v"}, "binaryData": {"k": "eA=="}});
        assert_eq!(
            texts(&validate(&cm)),
            vec!["data[k]: Invalid value: \"k\": duplicate of key present in binaryData"]
        );
        let big = json!({"metadata": {"name": "c", "namespace": "n"}, "data": {"k": "x".repeat(MAX_SECRET_SIZE + 1)}});
        assert_eq!(
            texts(&validate(&big)),
            vec![": Too long: may not be more than 1048576 bytes"]
        );
    }

    #[test]
    fn immutable_config_maps_are_frozen() {
        let old = json!({"metadata": {"name": "c", "namespace": "n", "resourceVersion": "1"}, "immutable": true, "data": {"k": "v"}});
        let mut new = old.clone();
        new["binaryData"] = json!({"b": "eA=="});
        assert_eq!(
            texts(&validate_update(&new, &old)),
            vec!["binaryData: Forbidden: field is immutable when `immutable` is set"]
        );
    }
}
