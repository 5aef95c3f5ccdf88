//! Small accessors and stamps for `metadata` of objects held as JSON: names, resourceVersion, uid,
//! timestamps, labels, finalizers and owner references.

use std::collections::BTreeMap;

use rand::Rng;
use serde_json::{Map, Value, json};

/// `metadata.name`, or empty.
pub fn name(obj: &Value) -> &str {
    obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("")
}

/// `metadata.namespace`, or empty.
pub fn namespace(obj: &Value) -> &str {
    obj.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("")
}

/// `metadata.uid`, or empty.
pub fn uid(obj: &Value) -> &str {
    obj.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("")
}

/// `metadata.resourceVersion`, or empty.
pub fn resource_version(obj: &Value) -> &str {
    obj.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `metadata.generation`, or 0.
pub fn generation(obj: &Value) -> i64 {
    obj.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0)
}

/// Whether `metadata.deletionTimestamp` is set.
pub fn is_terminating(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp").is_some_and(|v| !v.is_null())
}

/// `metadata.finalizers`.
pub fn finalizers(obj: &Value) -> Vec<String> {
    string_list(obj.pointer("/metadata/finalizers"))
}

/// The strings of a JSON array, ignoring anything else.
pub fn string_list(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// `metadata.labels` as a map.
pub fn labels(obj: &Value) -> BTreeMap<String, String> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// `metadata`, created if missing (a non-object metadata is replaced).
pub fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let Value::Object(root) = obj else {
        unreachable!("replaced by an object just above")
    };
    let meta = root.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    match meta {
        Value::Object(m) => m,
        _ => unreachable!("replaced by an object just above"),
    }
}

/// Writes `metadata.resourceVersion`.
pub fn set_resource_version(obj: &mut Value, rv: u64) {
    metadata_mut(obj).insert("resourceVersion".into(), Value::String(rv.to_string()));
}

/// Sets `metadata.finalizers`, removing the key when the list is empty (the server never stores `[]`).
pub fn set_finalizers(obj: &mut Value, finalizers: &[String]) {
    let meta = metadata_mut(obj);
    if finalizers.is_empty() {
        meta.remove("finalizers");
    } else {
        meta.insert("finalizers".into(), json!(finalizers));
    }
}

/// A random UUIDv4 in its canonical text form.
pub fn new_uid() -> String {
    let mut bytes: [u8; 16] = rand::rng().random();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// `generateName` expansion: the base cut to 58 characters plus 5 characters of kube's alphabet.
pub fn generate_name(base: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    let suffix: String = (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect();
    let base: String = base.chars().take(58).collect();
    format!("{base}{suffix}")
}

/// Now as an RFC3339 timestamp with seconds (`metav1.Time`).
pub fn now_rfc3339() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// One owner reference.
#[derive(Clone, Debug, PartialEq)]
pub struct OwnerRef {
    /// The owner's apiVersion.
    pub api_version: String,
    /// The owner's kind.
    pub kind: String,
    /// The owner's name.
    pub name: String,
    /// The owner's uid.
    pub uid: String,
    /// Whether the owner's foreground deletion waits for this dependent.
    pub block_owner_deletion: bool,
}

/// `metadata.ownerReferences`.
pub fn owner_references(obj: &Value) -> Vec<OwnerRef> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .map(|r| OwnerRef {
                    api_version: r.get("apiVersion").and_then(Value::as_str).unwrap_or("").to_string(),
                    kind: r.get("kind").and_then(Value::as_str).unwrap_or("").to_string(),
                    name: r.get("name").and_then(Value::as_str).unwrap_or("").to_string(),
                    uid: r.get("uid").and_then(Value::as_str).unwrap_or("").to_string(),
                    block_owner_deletion: r.get("blockOwnerDeletion").and_then(Value::as_bool).unwrap_or(false),
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uid_is_a_version_4_uuid() {
        let uid = new_uid();
        assert_eq!(uid.len(), 36);
        assert_eq!(&uid[14..15], "4");
    }

    #[test]
    fn generated_names_cut_the_base_and_add_five_characters() {
        let long = "a".repeat(70);
        let name = generate_name(&long);
        assert_eq!(name.len(), 63);
        assert!(generate_name("web-").starts_with("web-"));
    }

    #[test]
    fn empty_finalizers_are_removed() {
        let mut obj = json!({"metadata":{"finalizers":["a"]}});
        set_finalizers(&mut obj, &[]);
        assert_eq!(obj, json!({"metadata":{}}));
    }
}
