//! Conversion between the stored form of an object and the version a client asked for.
//!
//! Custom resources are stored in their storage version and served in any served version by rewriting
//! `apiVersion` (no conversion webhooks). Events are stored as core/v1 and served as events.k8s.io/v1 by
//! renaming fields.

use serde_json::{Map, Value};

use super::resources::{BuiltinKind, ResourceDef};

/// core/v1 field ↔ events.k8s.io/v1 field.
const EVENT_RENAMES: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
];

fn is_events_v1(def: &ResourceDef) -> bool {
    def.builtin() == Some(BuiltinKind::Event) && def.group == "events.k8s.io"
}

/// The object as served at `version` of `def` (a copy with `apiVersion`/`kind` set and fields renamed).
pub fn to_output(def: &ResourceDef, version: &str, stored: &Value) -> Value {
    let mut out = stored.clone();
    if is_events_v1(def) {
        out = core_event_to_events_v1(out);
    }
    if let Value::Object(map) = &mut out {
        map.insert("apiVersion".into(), Value::String(def.api_version(version)));
        map.insert("kind".into(), Value::String(def.kind.clone()));
    }
    out
}

/// Whether serving a stored object at `version` needs a rewrite (so list paths can skip the copy).
pub fn needs_conversion(def: &ResourceDef, version: &str) -> bool {
    is_events_v1(def) || version != def.storage_version
}

/// The object as stored, from a body sent to `version` of `def`.
pub fn to_storage(def: &ResourceDef, body: Value) -> Value {
    let mut out = body;
    if is_events_v1(def) {
        out = events_v1_to_core_event(out);
    }
    let storage_api_version = if is_events_v1(def) {
        "v1".to_string()
    } else {
        def.api_version(&def.storage_version)
    };
    if let Value::Object(map) = &mut out {
        map.insert("apiVersion".into(), Value::String(storage_api_version));
        map.insert("kind".into(), Value::String(def.kind.clone()));
    }
    out
}

fn rename(map: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(value) = map.remove(from) {
        map.insert(to.to_string(), value);
    }
}

fn core_event_to_events_v1(value: Value) -> Value {
    let Value::Object(mut map) = value else { return value };
    for (core, v1) in EVENT_RENAMES {
        rename(&mut map, core, v1);
    }
    // events.k8s.io/v1 has no `lastObservedTime` rename: series keeps it; core's `series.count` is shared.
    Value::Object(map)
}

fn events_v1_to_core_event(value: Value) -> Value {
    let Value::Object(mut map) = value else { return value };
    for (core, v1) in EVENT_RENAMES {
        rename(&mut map, v1, core);
    }
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::{GroupResource, Registry};
    use serde_json::json;

    #[test]
    fn events_round_trip_between_the_two_apis() {
        let registry = Registry::with_builtins();
        let v1 = registry.get(&GroupResource::new("events.k8s.io", "events")).unwrap();
        let body = json!({"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e"},"regarding":{"name":"x"},"note":"hi","reportingController":"ctl"});
        let stored = to_storage(v1, body.clone());
        assert_eq!(stored["involvedObject"]["name"], "x");
        assert_eq!(stored["message"], "hi");
        assert_eq!(stored["apiVersion"], "v1");
        assert_eq!(to_output(v1, "v1", &stored), body);
    }
}
