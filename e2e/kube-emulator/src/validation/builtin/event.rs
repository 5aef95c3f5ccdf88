//! Events (`ValidateEventCreate`, `ValidateEventUpdate`). Every event passes the legacy checks; an event
//! written through `events.k8s.io/v1` also gets the strict ones (eventTime, type, no deprecated fields,
//! series) and, on update, may change only its `series`. Paths use the internal field names
//! (`message`, `involvedObject`, ...) as kube-apiserver reports them, except `reportingController`, which
//! core/v1 requests see as `reportingComponent`.

use serde_json::Value;

use super::super::go_format::{BadValue, ZERO_TIME, quote, time_string};
use super::super::{FieldError, names, object_meta};

const REPORTING_INSTANCE_LIMIT: usize = 128;
const ACTION_LIMIT: usize = 128;
const REASON_LIMIT: usize = 128;
const NOTE_LIMIT: usize = 1024;

/// The fields of an event under either API's names.
struct EventView<'a> {
    obj: &'a Value,
    events_api: bool,
}

impl<'a> EventView<'a> {
    fn field(&self, core: &str, events: &str) -> Option<&'a Value> {
        self.obj
            .get(if self.events_api { events } else { core })
            .filter(|v| !v.is_null())
    }
    fn text(&self, core: &str, events: &str) -> &'a str {
        self.field(core, events).and_then(Value::as_str).unwrap_or("")
    }
    fn namespace(&self) -> &'a str {
        self.obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
    fn involved_namespace(&self) -> &'a str {
        self.field("involvedObject", "regarding")
            .and_then(|o| o.get("namespace"))
            .and_then(Value::as_str)
            .unwrap_or("")
    }
    fn has_time(&self, core: &str, events: &str) -> bool {
        self.field(core, events)
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty())
    }
}

/// `legacyValidateEvent`.
fn legacy(view: &EventView<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let namespace = view.namespace();
    let involved = view.involved_namespace();
    let mismatch = || FieldError::invalid("involvedObject.namespace", involved, "does not match event.namespace");
    if !view.has_time("eventTime", "eventTime") {
        if involved.is_empty() {
            if !namespace.is_empty() && namespace != "default" {
                errs.push(mismatch());
            }
        } else if namespace != involved {
            errs.push(mismatch());
        }
    } else {
        if involved.is_empty() && namespace != "default" && namespace != "kube-system" {
            errs.push(mismatch());
        }
        let controller_field = if view.events_api {
            "reportingController"
        } else {
            "reportingComponent"
        };
        let controller = view.text("reportingComponent", "reportingController");
        if controller.is_empty() {
            errs.push(FieldError::required(controller_field, ""));
        }
        for msg in names::is_qualified_name(controller) {
            errs.push(FieldError::invalid(controller_field, controller, &msg));
        }
        let limited = [
            (
                "reportingInstance",
                view.text("reportingInstance", "reportingInstance"),
                REPORTING_INSTANCE_LIMIT,
                true,
            ),
            ("action", view.text("action", "action"), ACTION_LIMIT, true),
            ("reason", view.text("reason", "reason"), REASON_LIMIT, true),
            ("message", view.text("message", "note"), NOTE_LIMIT, false),
        ];
        for (field, value, limit, required) in limited {
            if required && value.is_empty() {
                errs.push(FieldError::required(field, ""));
            }
            if value.len() > limit {
                errs.push(FieldError::invalid(
                    field,
                    "",
                    &format!("can have at most {limit} characters"),
                ));
            }
        }
    }
    for msg in names::is_dns1123_subdomain(namespace) {
        errs.push(FieldError::invalid("namespace", namespace, &msg));
    }
    errs
}

/// `validateV1EventSeries`.
fn series(view: &EventView<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(series) = view.field("series", "series") {
        if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
            errs.push(FieldError::invalid("series.count", "", "should be at least 2"));
        }
        if series
            .get("lastObservedTime")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            errs.push(FieldError::required("series.lastObservedTime", ""));
        }
    }
    errs
}

/// Validation of a core/v1 event write (create or update): the legacy checks only.
pub fn validate_core(obj: &Value) -> Vec<FieldError> {
    legacy(&EventView { obj, events_api: false })
}

/// Validation of an `events.k8s.io/v1` create.
pub fn validate_events(obj: &Value) -> Vec<FieldError> {
    let view = EventView { obj, events_api: true };
    let mut errs = legacy(&view);
    errs.extend(object_meta::validate_object_meta(
        obj,
        true,
        &names::name_is_dns_subdomain,
    ));
    errs.extend(series(&view));
    if !view.has_time("eventTime", "eventTime") {
        errs.push(FieldError::required("eventTime", ""));
    }
    let ty = view.text("type", "type");
    if ty != "Normal" && ty != "Warning" {
        errs.push(FieldError::invalid("type", "", &format!("has invalid value: {ty}")));
    }
    for (events_name, core_name) in [
        ("deprecatedFirstTimestamp", "firstTimestamp"),
        ("deprecatedLastTimestamp", "lastTimestamp"),
    ] {
        if view.has_time(core_name, events_name) {
            errs.push(FieldError::invalid(events_name, "", "needs to be unset"));
        }
    }
    if view
        .field("count", "deprecatedCount")
        .and_then(Value::as_i64)
        .unwrap_or(0)
        != 0
    {
        errs.push(FieldError::invalid("deprecatedCount", "", "needs to be unset"));
    }
    let source = view.field("source", "deprecatedSource");
    let source_set = ["component", "host"].iter().any(|k| {
        source
            .and_then(|s| s.get(*k))
            .and_then(Value::as_str)
            .is_some_and(|v| !v.is_empty())
    });
    if source_set {
        errs.push(FieldError::invalid("deprecatedSource", "", "needs to be unset"));
    }
    errs
}

/// `%#v` of a `core.ObjectReference`.
fn go_object_reference(reference: Option<&Value>) -> String {
    let text = |key: &str| quote(reference.and_then(|r| r.get(key)).and_then(Value::as_str).unwrap_or(""));
    format!(
        "core.ObjectReference{{Kind:{}, Namespace:{}, Name:{}, UID:{}, APIVersion:{}, ResourceVersion:{}, FieldPath:{}}}",
        text("kind"),
        text("namespace"),
        text("name"),
        text("uid"),
        text("apiVersion"),
        text("resourceVersion"),
        text("fieldPath")
    )
}

fn go_time(value: Option<&Value>) -> BadValue {
    match value.and_then(Value::as_str).filter(|t| !t.is_empty()) {
        Some(t) => BadValue::raw(time_string(t)),
        None => BadValue::raw(ZERO_TIME),
    }
}

/// Validation of an `events.k8s.io/v1` update: legacy checks, ObjectMeta update, the series if it changed,
/// and everything else immutable.
pub fn validate_events_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let (view, old_view) = (
        EventView {
            obj: new,
            events_api: true,
        },
        EventView {
            obj: old,
            events_api: true,
        },
    );
    let mut errs = legacy(&view);
    errs.extend(object_meta::validate_object_meta_update(new, old));
    if view.field("series", "series") != old_view.field("series", "series") {
        errs.extend(series(&view));
    }
    let immutable =
        |errs: &mut Vec<FieldError>, field: &str, events_name: &str, render: &dyn Fn(Option<&Value>) -> BadValue| {
            let (n, o) = (
                new.get(events_name).filter(|v| !v.is_null()),
                old.get(events_name).filter(|v| !v.is_null()),
            );
            if n != o {
                errs.push(FieldError::invalid(field, render(n), "field is immutable"));
            }
        };
    let string = |v: Option<&Value>| BadValue::from(v.and_then(Value::as_str).unwrap_or(""));
    let reference = |v: Option<&Value>| BadValue::raw(go_object_reference(v));
    let source = |v: Option<&Value>| {
        let text = |k: &str| quote(v.and_then(|s| s.get(k)).and_then(Value::as_str).unwrap_or(""));
        BadValue::raw(format!(
            "core.EventSource{{Component:{}, Host:{}}}",
            text("component"),
            text("host")
        ))
    };
    let count = |v: Option<&Value>| BadValue::from(v.and_then(Value::as_i64).unwrap_or(0));
    let related = |v: Option<&Value>| match v {
        Some(r) => BadValue::raw(go_object_reference(Some(r))),
        None => BadValue::null(),
    };
    immutable(&mut errs, "involvedObject", "regarding", &reference);
    immutable(&mut errs, "reason", "reason", &string);
    immutable(&mut errs, "message", "note", &string);
    immutable(&mut errs, "source", "deprecatedSource", &source);
    immutable(&mut errs, "firstTimestamp", "deprecatedFirstTimestamp", &go_time);
    immutable(&mut errs, "lastTimestamp", "deprecatedLastTimestamp", &go_time);
    immutable(&mut errs, "count", "deprecatedCount", &count);
    immutable(&mut errs, "reason", "reason", &string);
    immutable(&mut errs, "type", "type", &string);
    immutable(&mut errs, "eventTime", "eventTime", &go_time);
    immutable(&mut errs, "action", "action", &string);
    immutable(&mut errs, "related", "related", &related);
    immutable(&mut errs, "reportingController", "reportingController", &string);
    immutable(&mut errs, "reportingInstance", "reportingInstance", &string);
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A well-formed `events.k8s.io/v1` event as kube-rs's recorder sends it, for tests.
    fn recorder_event() -> Value {
        json!({
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "app.17a2b3c4d5e6f708", "namespace": "default"},
            "eventTime": "2024-01-02T03:04:05.000000Z",
            "regarding": {"kind": "NebariApp", "namespace": "default", "name": "app", "uid": "u"},
            "reason": "Reconciled",
            "note": "all good",
            "type": "Normal",
            "action": "Reconcile",
            "reportingController": "nebari.dev/operator",
            "reportingInstance": "manager-0"
        })
    }

    fn texts(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn recorder_events_pass_and_missing_fields_fail() {
        assert!(
            validate_events(&recorder_event()).is_empty(),
            "{:?}",
            texts(&validate_events(&recorder_event()))
        );
        let bare = json!({"metadata": {"name": "e", "namespace": "default"}, "type": "Info", "deprecatedCount": 3});
        assert_eq!(
            texts(&validate_events(&bare)),
            vec![
                "eventTime: Required value",
                "type: Invalid value: \"\": has invalid value: Info",
                "deprecatedCount: Invalid value: \"\": needs to be unset",
            ]
        );
        let mut no_action = recorder_event();
        no_action["action"] = json!("");
        no_action["note"] = json!("x".repeat(1025));
        assert_eq!(
            texts(&validate_events(&no_action)),
            vec![
                "action: Required value",
                "message: Invalid value: \"\": can have at most 1024 characters"
            ]
        );
    }

    #[test]
    fn only_the_series_may_change() {
        let mut old = recorder_event();
        old["metadata"]["resourceVersion"] = json!("4");
        let mut new = old.clone();
        new["series"] = json!({"count": 2, "lastObservedTime": "2024-01-02T03:05:05.000000Z"});
        assert!(validate_events_update(&new, &old).is_empty());
        new["note"] = json!("changed");
        new["series"] = json!({"count": 1});
        assert_eq!(
            texts(&validate_events_update(&new, &old)),
            vec![
                "series.count: Invalid value: \"\": should be at least 2",
                "series.lastObservedTime: Required value",
                "message: Invalid value: \"changed\": field is immutable",
            ]
        );
    }

    #[test]
    fn core_events_get_the_legacy_checks() {
        let event = json!({"metadata": {"name": "e", "namespace": "ns"}, "involvedObject": {"namespace": "other"}, "message": "m"});
        assert_eq!(
            texts(&validate_core(&event)),
            vec!["involvedObject.namespace: Invalid value: \"other\": does not match event.namespace"]
        );
    }
}
