//! `metadata.managedFields`: decoding the entries into per-manager field sets, encoding them back in
//! kube-apiserver's order, and the rules around them (manager identity, the stripped metadata fields, the
//! cap on Update entries).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::fields::gojson;
use crate::fields::{FieldSet, FieldsV1Error, PathElement};

/// The operation of an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Operation {
    /// Written by server-side apply.
    Apply,
    /// Written by create, update or a non-apply patch.
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// Who an entry belongs to. Apply entries are identified without their apiVersion, so re-applying through
/// another version updates the same entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ManagerId {
    /// The manager name.
    pub(crate) manager: String,
    /// Apply or Update.
    pub(crate) operation: Operation,
    /// The request's group/version; part of the identity of Update entries only.
    pub(crate) api_version: String,
    /// `status`, `scale`, or empty for the main resource.
    pub(crate) subresource: String,
}

impl ManagerId {
    /// An identity for a write through `api_version` and `subresource`.
    pub(crate) fn new(manager: &str, operation: Operation, api_version: &str, subresource: &str) -> Self {
        let manager = if manager.is_empty() { "unknown" } else { manager };
        ManagerId {
            manager: manager.to_string(),
            operation,
            api_version: api_version.to_string(),
            subresource: subresource.to_string(),
        }
    }

    /// The identifier kube-apiserver keys and sorts managers by: the entry's JSON without time and fields
    /// (and without apiVersion for Apply), as Go encodes it.
    pub(crate) fn key(&self) -> String {
        let mut out = String::from("{");
        let mut first = true;
        let mut field = |out: &mut String, name: &str, value: &str| {
            if value.is_empty() {
                return;
            }
            if !first {
                out.push(',');
            }
            first = false;
            gojson::write_string(out, name);
            out.push(':');
            gojson::write_string(out, value);
        };
        field(&mut out, "manager", &self.manager);
        field(&mut out, "operation", self.operation.as_str());
        if self.operation == Operation::Update {
            field(&mut out, "apiVersion", &self.api_version);
        }
        field(&mut out, "subresource", &self.subresource);
        out.push('}');
        out
    }

    /// The manager as conflict messages name it: `"alice"`, `"op" using v1`, `"ctl" with subresource
    /// "status"`.
    pub(crate) fn describe(&self) -> String {
        let mut text = gojson::go_quote(&self.manager);
        if !self.subresource.is_empty() {
            text.push_str(&format!(" with subresource {}", gojson::go_quote(&self.subresource)));
        }
        if self.operation == Operation::Update {
            text.push_str(&format!(" using {}", self.api_version));
        }
        text
    }
}

/// One manager's entry.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ManagedEntry {
    /// Whose entry this is.
    pub(crate) id: ManagerId,
    /// The apiVersion written in the entry (for Apply entries, the version of the last apply).
    pub(crate) api_version: String,
    /// When the manager last changed the object, RFC3339 UTC; absent if it never did.
    pub(crate) time: Option<String>,
    /// The fields it owns.
    pub(crate) set: FieldSet,
}

/// All entries of an object, keyed by [`ManagerId::key`].
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Managed {
    pub(crate) entries: BTreeMap<String, ManagedEntry>,
}

/// managedFields that do not decode.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DecodeError {
    #[error("managedFields must be a list")]
    NotAList,
    #[error("managedFields entry {0} is not an object")]
    NotAnObject(usize),
    #[error("operation must be `Apply` or `Update`")]
    BadOperation,
    #[error("apiVersion must not be empty")]
    EmptyApiVersion,
    #[error("missing fieldsType in managed fields entry {0}")]
    MissingFieldsType(usize),
    #[error("invalid fieldsType {1:?} in managed fields entry {0}")]
    BadFieldsType(usize, String),
    #[error("error decoding versioned set: {0}")]
    Fields(#[from] FieldsV1Error),
}

/// The fields no entry ever owns: `apiVersion`, `kind`, `metadata` itself and its server-set fields.
pub(crate) fn stripped_fields() -> FieldSet {
    let mut set = FieldSet::from_field_paths(&[&["apiVersion"], &["kind"], &["metadata"]]);
    for name in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        set.insert(&[PathElement::Field("metadata".into()), PathElement::Field(name.into())]);
    }
    set
}

fn string_field<'v>(entry: &'v Map<String, Value>, name: &str) -> &'v str {
    entry.get(name).and_then(Value::as_str).unwrap_or("")
}

/// Normalizes an RFC3339 time to UTC whole seconds, as Go re-encodes a `metav1.Time`.
fn normalize_time(text: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&chrono::Utc).format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|_| text.to_string())
}

/// The Unix seconds of an entry's time, 0 when absent or unreadable (the sort rule of kube-apiserver).
pub(crate) fn time_seconds(time: Option<&str>) -> i64 {
    time.and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.timestamp())
        .unwrap_or(0)
}

impl Managed {
    /// Decodes `metadata.managedFields` (absent or null is empty). A later entry with the same identity as
    /// an earlier one replaces it.
    pub(crate) fn decode(value: Option<&Value>) -> Result<Managed, DecodeError> {
        let mut managed = Managed::default();
        let list = match value {
            None | Some(Value::Null) => return Ok(managed),
            Some(Value::Array(list)) => list,
            Some(_) => return Err(DecodeError::NotAList),
        };
        for (index, item) in list.iter().enumerate() {
            let Value::Object(entry) = item else {
                return Err(DecodeError::NotAnObject(index));
            };
            let operation = match string_field(entry, "operation") {
                "Apply" => Operation::Apply,
                "Update" => Operation::Update,
                _ => return Err(DecodeError::BadOperation),
            };
            let api_version = string_field(entry, "apiVersion");
            if api_version.is_empty() {
                return Err(DecodeError::EmptyApiVersion);
            }
            match string_field(entry, "fieldsType") {
                "FieldsV1" => {}
                "" => return Err(DecodeError::MissingFieldsType(index)),
                other => return Err(DecodeError::BadFieldsType(index, other.to_string())),
            }
            let set = match entry.get("fieldsV1") {
                None | Some(Value::Null) => FieldSet::new(),
                Some(fields) => FieldSet::from_fields_v1(fields)?,
            };
            let id = ManagerId {
                manager: string_field(entry, "manager").to_string(),
                operation,
                api_version: api_version.to_string(),
                subresource: string_field(entry, "subresource").to_string(),
            };
            let time = entry.get("time").and_then(Value::as_str).map(normalize_time);
            managed.entries.insert(
                id.key(),
                ManagedEntry {
                    id,
                    api_version: api_version.to_string(),
                    time,
                    set,
                },
            );
        }
        Ok(managed)
    }

    /// Whether there are no entries.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Removes entries whose field set is empty.
    pub(crate) fn drop_empty(&mut self) {
        self.entries.retain(|_, entry| !entry.set.is_empty());
    }

    /// The entries in kube-apiserver's order: Apply before Update, then by time (seconds, absent = 0), then
    /// manager, apiVersion and subresource.
    pub(crate) fn sorted(&self) -> Vec<&ManagedEntry> {
        let mut entries: Vec<&ManagedEntry> = self.entries.values().collect();
        entries.sort_by(|p, q| {
            let p_apply = p.id.operation == Operation::Apply;
            let q_apply = q.id.operation == Operation::Apply;
            q_apply
                .cmp(&p_apply)
                .then_with(|| time_seconds(p.time.as_deref()).cmp(&time_seconds(q.time.as_deref())))
                .then_with(|| p.id.manager.cmp(&q.id.manager))
                .then_with(|| p.api_version.cmp(&q.api_version))
                .then_with(|| p.id.subresource.cmp(&q.id.subresource))
        });
        entries
    }

    /// The `metadata.managedFields` value, or `None` when there are no entries (the field is then absent).
    pub(crate) fn encode(&self) -> Option<Value> {
        if self.entries.is_empty() {
            return None;
        }
        let list = self
            .sorted()
            .into_iter()
            .map(|entry| {
                let mut out = Map::new();
                out.insert("manager".into(), Value::String(entry.id.manager.clone()));
                out.insert("operation".into(), Value::String(entry.id.operation.as_str().into()));
                out.insert("apiVersion".into(), Value::String(entry.api_version.clone()));
                if let Some(time) = &entry.time {
                    out.insert("time".into(), Value::String(time.clone()));
                }
                out.insert("fieldsType".into(), Value::String("FieldsV1".into()));
                out.insert("fieldsV1".into(), entry.set.to_fields_v1());
                if !entry.id.subresource.is_empty() {
                    out.insert("subresource".into(), Value::String(entry.id.subresource.clone()));
                }
                Value::Object(out)
            })
            .collect();
        Some(Value::Array(list))
    }

    /// Folds the oldest Update entries into one `ancient-changes` entry per apiVersion until at most `max`
    /// Update entries remain. Apply entries are never folded.
    pub(crate) fn cap_updates(&mut self, max: usize) {
        let mut updaters: Vec<String> = self
            .entries
            .iter()
            .filter(|(_, e)| e.id.operation == Operation::Update)
            .map(|(key, _)| key.clone())
            .collect();
        if updaters.len() <= max {
            return;
        }
        updaters.sort_by(|a, b| {
            let ta = time_seconds(self.entries[a].time.as_deref());
            let tb = time_seconds(self.entries[b].time.as_deref());
            ta.cmp(&tb).then_with(|| a.cmp(b))
        });
        let mut first_of_version: BTreeMap<String, String> = BTreeMap::new();
        let mut length = updaters.len();
        for key in updaters {
            if length <= max {
                break;
            }
            let Some(entry) = self.entries.get(&key).cloned() else {
                continue;
            };
            let version = entry.api_version.clone();
            let bucket_id = ManagerId::new("ancient-changes", Operation::Update, &version, "");
            let bucket_key = bucket_id.key();
            match first_of_version.get(&version) {
                None => {
                    first_of_version.insert(version, key);
                }
                Some(first) => {
                    if !self.entries.contains_key(&bucket_key)
                        && let Some(mut moved) = self.entries.remove(first)
                    {
                        moved.id = bucket_id.clone();
                        self.entries.insert(bucket_key.clone(), moved);
                    }
                    self.entries.remove(&key);
                    if let Some(bucket) = self.entries.get_mut(&bucket_key) {
                        bucket.set.union_with(&entry.set);
                        bucket.api_version = version;
                        bucket.time = entry.time.clone();
                    }
                    length -= 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn identity_keys_match_go_encoding() {
        let apply = ManagerId::new("alice", Operation::Apply, "v1", "");
        assert_eq!(apply.key(), r#"{"manager":"alice","operation":"Apply"}"#);
        let update = ManagerId::new("op", Operation::Update, "apps/v1", "status");
        assert_eq!(
            update.key(),
            r#"{"manager":"op","operation":"Update","apiVersion":"apps/v1","subresource":"status"}"#
        );
        assert_eq!(update.describe(), r#""op" with subresource "status" using apps/v1"#);
        assert_eq!(apply.describe(), r#""alice""#);
        assert_eq!(ManagerId::new("", Operation::Update, "v1", "").manager, "unknown");
    }

    #[test]
    fn decode_and_encode_sort_entries() {
        let list = json!([
            {"manager": "z", "operation": "Update", "apiVersion": "v1", "time": "2024-01-01T00:00:02Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:a": {}}},
            {"manager": "y", "operation": "Update", "apiVersion": "v1", "time": "2024-01-01T02:00:01+02:00", "fieldsType": "FieldsV1", "fieldsV1": {"f:b": {}}},
            {"manager": "x", "operation": "Apply", "apiVersion": "v1", "time": "2024-01-01T00:00:09Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:c": {}}, "subresource": "status"}
        ]);
        let managed = Managed::decode(Some(&list)).unwrap();
        let encoded = managed.encode().unwrap();
        let managers: Vec<&str> = encoded
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["manager"].as_str().unwrap())
            .collect();
        assert_eq!(managers, vec!["x", "y", "z"]);
        assert_eq!(encoded[1]["time"], json!("2024-01-01T00:00:01Z"));
        let keys: Vec<&String> = encoded[0].as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 7);
    }

    #[test]
    fn invalid_entries_are_rejected() {
        for bad in [
            json!([{"manager": "a", "operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}]),
            json!([{"manager": "a", "operation": "Update", "apiVersion": "", "fieldsType": "FieldsV1"}]),
            json!([{"manager": "a", "operation": "Update", "apiVersion": "v1"}]),
            json!([{"manager": "a", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV2"}]),
        ] {
            assert!(Managed::decode(Some(&bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn cap_folds_oldest_updates_per_version() {
        let mut managed = Managed::default();
        for i in 0..12 {
            let id = ManagerId::new(&format!("m{i:02}"), Operation::Update, "v1", "");
            let mut set = FieldSet::new();
            set.insert(&[PathElement::Field(format!("f{i}"))]);
            let time = Some(format!("2024-01-01T00:00:{i:02}Z"));
            managed.entries.insert(
                id.key(),
                ManagedEntry {
                    id,
                    api_version: "v1".into(),
                    time,
                    set,
                },
            );
        }
        let apply = ManagerId::new("a", Operation::Apply, "v1", "");
        managed.entries.insert(
            apply.key(),
            ManagedEntry {
                id: apply,
                api_version: "v1".into(),
                time: None,
                set: FieldSet::from_field_paths(&[&["x"]]),
            },
        );
        managed.cap_updates(10);
        let updates: Vec<&ManagedEntry> = managed
            .entries
            .values()
            .filter(|e| e.id.operation == Operation::Update)
            .collect();
        assert_eq!(updates.len(), 10);
        let bucket = updates.iter().find(|e| e.id.manager == "ancient-changes").unwrap();
        assert_eq!(bucket.set, FieldSet::from_field_paths(&[&["f0"], &["f1"], &["f2"]]));
        assert_eq!(bucket.time.as_deref(), Some("2024-01-01T00:00:02Z"));
        assert_eq!(managed.entries.len(), 11);
    }
}
