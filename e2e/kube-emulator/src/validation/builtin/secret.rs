//! Secrets (`ValidateSecret`, `ValidateSecretUpdate`): data keys, the 1 MiB limit, the keys each typed
//! Secret needs, `type` and `immutable` freezing; `type: Opaque` defaulting and the `stringData` merge.
//!
//! Secret contents never appear in error texts: where Go shows a value it shows
//! `"<secret contents redacted>"`, and so does this.

use base64::Engine;
use serde_json::{Map, Value, json};

use super::super::{FieldError, names, object_meta, path};

/// Most bytes of decoded data a Secret (or ConfigMap) may hold.
pub const MAX_SECRET_SIZE: usize = 1024 * 1024;

const IMMUTABLE: &str = "field is immutable when `immutable` is set";

/// Decodes one `data` value as Go's `encoding/json` decodes `[]byte` (standard base64, line breaks
/// ignored), with Go's error text (`illegal base64 data at input byte 4`) for the server's 400.
pub fn decode_base64(encoded: &str) -> Result<Vec<u8>, String> {
    let cleaned: String = encoded.chars().filter(|c| *c != '\n' && *c != '\r').collect();
    base64::engine::general_purpose::STANDARD
        .decode(&cleaned)
        .map_err(|err| {
            let offset = match err {
                base64::DecodeError::InvalidByte(offset, _) | base64::DecodeError::InvalidLastSymbol(offset, _) => {
                    offset
                }
                // An incomplete final quantum: Go reports the offset where that quantum starts.
                base64::DecodeError::InvalidLength(_) | base64::DecodeError::InvalidPadding => {
                    cleaned.len() - cleaned.len() % 4
                }
            };
            format!("illegal base64 data at input byte {offset}")
        })
}

/// Folds `stringData` into `data` (base64-encoding each value, overwriting same-named keys) and removes
/// `stringData`, as the v1 → internal conversion does before validation.
pub fn merge_string_data(obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else { return };
    let Some(Value::Object(string_data)) = map.remove("stringData") else {
        return;
    };
    if !map.get("data").is_some_and(Value::is_object) {
        map.insert("data".into(), json!({}));
    }
    if let Some(Value::Object(data)) = map.get_mut("data") {
        for (key, value) in string_data {
            let text = value.as_str().unwrap_or("");
            data.insert(key, json!(base64::engine::general_purpose::STANDARD.encode(text)));
        }
    }
}

/// `type: Opaque` when unset, and the `stringData` merge.
pub fn default(obj: &mut Value) {
    if obj.get("type").and_then(Value::as_str).is_none_or(str::is_empty)
        && let Some(map) = obj.as_object_mut()
    {
        map.insert("type".into(), json!("Opaque"));
    }
    merge_string_data(obj);
}

fn data(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("data").and_then(Value::as_object)
}

/// Go's `json.Unmarshal` error for `.dockerconfigjson`/`.dockercfg` content that is not a JSON object.
fn json_object_error(bytes: &[u8]) -> Option<String> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(_)) => None,
        Ok(other) => {
            let ty = match other {
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Number(_) => "number",
                Value::Bool(_) => "bool",
                _ => return None, // `null` unmarshals into a map without error in Go.
            };
            Some(format!(
                "json: cannot unmarshal {ty} into Go value of type map[string]interface {{}}"
            ))
        }
        Err(err) if err.is_eof() => Some("unexpected end of JSON input".to_string()),
        Err(_) => {
            let first = String::from_utf8_lossy(bytes)
                .trim_start()
                .chars()
                .next()
                .unwrap_or(' ');
            Some(format!("invalid character '{first}' looking for beginning of value"))
        }
    }
}

/// `ValidateSecret`.
pub fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = object_meta::validate_object_meta(obj, true, &names::name_is_dns_subdomain);
    let empty = Map::new();
    let data = data(obj).unwrap_or(&empty);
    let mut total = 0usize;
    for (key, value) in data {
        for msg in names::is_config_map_key(key) {
            errs.push(FieldError::invalid(path::key("data", key), key, &msg));
        }
        total += value
            .as_str()
            .and_then(|v| decode_base64(v).ok())
            .map_or(0, |b| b.len());
    }
    if total > MAX_SECRET_SIZE {
        errs.push(FieldError::too_long("data", MAX_SECRET_SIZE as i64));
    }
    let decoded = |key: &str| {
        data.get(key)
            .and_then(Value::as_str)
            .and_then(|v| decode_base64(v).ok())
    };
    let required = |key: &str| FieldError::required(path::key("data", key), "");
    match obj.get("type").and_then(Value::as_str).unwrap_or("") {
        "kubernetes.io/service-account-token" => {
            let annotation = "kubernetes.io/service-account.name";
            let name = obj
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(annotation))
                .and_then(Value::as_str);
            if name.is_none_or(str::is_empty) {
                errs.push(FieldError::required(path::key("metadata.annotations", annotation), ""));
            }
        }
        kind @ ("kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson") => {
            let key = if kind == "kubernetes.io/dockercfg" {
                ".dockercfg"
            } else {
                ".dockerconfigjson"
            };
            match decoded(key) {
                None if !data.contains_key(key) => errs.push(required(key)),
                bytes => {
                    if let Some(text) = json_object_error(&bytes.unwrap_or_default()) {
                        errs.push(FieldError::invalid(
                            path::key("data", key),
                            "<secret contents redacted>",
                            &text,
                        ));
                    }
                }
            }
        }
        "kubernetes.io/basic-auth" if !data.contains_key("username") && !data.contains_key("password") => {
            errs.push(required("username"));
            errs.push(required("password"));
        }
        "kubernetes.io/ssh-auth" if decoded("ssh-privatekey").is_none_or(|b| b.is_empty()) => {
            errs.push(required("ssh-privatekey"));
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if !data.contains_key(key) {
                    errs.push(required(key));
                }
            }
        }
        _ => {}
    }
    errs
}

/// `ValidateSecretUpdate`: ObjectMeta update, `type` immutable, `immutable` freezing, then [`validate`].
pub fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = object_meta::validate_object_meta_update(new, old);
    let new_type = new.get("type").and_then(Value::as_str).unwrap_or("");
    if new_type != old.get("type").and_then(Value::as_str).unwrap_or("") {
        errs.push(FieldError::invalid("type", new_type, "field is immutable"));
    }
    if old.get("immutable").and_then(Value::as_bool) == Some(true) {
        if new.get("immutable").and_then(Value::as_bool) != Some(true) {
            errs.push(FieldError::forbidden("immutable", IMMUTABLE));
        }
        if data(new) != data(old) {
            errs.push(FieldError::forbidden("data", IMMUTABLE));
        }
    }
    errs.extend(validate(new));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(kind: &str, data: Value) -> Value {
        json!({"metadata": {"name": "s", "namespace": "ns"}, "type": kind, "data": data})
    }

    fn texts(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn base64_errors_use_go_offsets() {
        assert_eq!(decode_base64("aGVsbG8=").as_deref(), Ok(&b"hello"[..]));
        assert_eq!(
            decode_base64("aGVs!G8=").unwrap_err(),
            "illegal base64 data at input byte 4"
        );
        assert_eq!(
            decode_base64("aGVsbG8").unwrap_err(),
            "illegal base64 data at input byte 4"
        );
        assert_eq!(decode_base64("aGVs\nbG8=").as_deref(), Ok(&b"hello"[..]));
    }

    #[test]
    fn defaults_and_string_data() {
        let mut s = json!({"metadata": {"name": "s"}, "data": {"a": "eA==", "b": "eQ=="}, "stringData": {"b": "new", "c": "z"}});
        default(&mut s);
        assert_eq!(s["type"], "Opaque");
        assert!(s.get("stringData").is_none());
        assert_eq!(s["data"], json!({"a": "eA==", "b": "bmV3", "c": "eg=="}));
    }

    #[test]
    fn keys_size_and_typed_secrets() {
        assert_eq!(
            texts(&validate(&secret("Opaque", json!({"bad key": "eA=="})))),
            vec![
                "data[bad key]: Invalid value: \"bad key\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
            ]
        );
        let big = base64::engine::general_purpose::STANDARD.encode(vec![0u8; MAX_SECRET_SIZE + 1]);
        assert_eq!(
            texts(&validate(&secret("Opaque", json!({"k": big})))),
            vec!["data: Too long: may not be more than 1048576 bytes"]
        );
        assert_eq!(
            texts(&validate(&secret("kubernetes.io/tls", json!({})))),
            vec!["data[tls.crt]: Required value", "data[tls.key]: Required value"]
        );
        assert_eq!(
            texts(&validate(&secret("kubernetes.io/basic-auth", json!({})))),
            vec!["data[username]: Required value", "data[password]: Required value"]
        );
        assert!(validate(&secret("kubernetes.io/basic-auth", json!({"password": ""}))).is_empty());
        assert_eq!(
            texts(&validate(&secret("kubernetes.io/ssh-auth", json!({})))),
            vec!["data[ssh-privatekey]: Required value"]
        );
        assert_eq!(
            texts(&validate(&secret(
                "kubernetes.io/dockerconfigjson",
                json!({".dockerconfigjson": "bm90IGpzb24="})
            ))),
            vec![
                "data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": invalid character 'n' looking for beginning of value"
            ]
        );
        assert_eq!(
            texts(&validate(&secret("kubernetes.io/service-account-token", json!({})))),
            vec!["metadata.annotations[kubernetes.io/service-account.name]: Required value"]
        );
    }

    #[test]
    fn type_and_immutable_secrets_are_frozen() {
        let mut old = secret("Opaque", json!({"k": "eA=="}));
        old["metadata"]["resourceVersion"] = json!("1");
        let mut retyped = old.clone();
        retyped["type"] = json!("kubernetes.io/tls");
        retyped["data"] = json!({"tls.crt": "", "tls.key": ""});
        assert_eq!(
            texts(&validate_update(&retyped, &old)),
            vec!["type: Invalid value: \"kubernetes.io/tls\": field is immutable"]
        );
        old["immutable"] = json!(true);
        let mut changed = old.clone();
        changed["data"] = json!({"k": "eQ=="});
        changed["immutable"] = json!(false);
        assert_eq!(
            texts(&validate_update(&changed, &old)),
            vec![
                "immutable: Forbidden: field is immutable when `immutable` is set",
                "data: Forbidden: field is immutable when `immutable` is set",
            ]
        );
    }
}
