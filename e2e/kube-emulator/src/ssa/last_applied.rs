//! The upgrade path from kubectl's client-side apply: for applies by the `kubectl` manager,
//! conflicts on fields the object's `last-applied-configuration` still describes are forced, and the
//! annotation is rewritten to the new applied configuration.

use serde_json::{Map, Value};

use super::compare::compare;
use super::typed::{check_body, field_set};
use crate::fields::{FieldSet, Shape, gojson};

/// The annotation kubectl's client-side apply keeps the last applied configuration in.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The manager name whose applies take part in the upgrade.
pub(crate) const KUBECTL_MANAGER: &str = "kubectl";

/// The total size kube-apiserver allows for all annotations of an object.
const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;

fn annotation(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .and_then(|a| a.get(LAST_APPLIED_ANNOTATION))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// The fields of the live object's last-applied configuration whose values still match the live object:
/// conflicts on them are what client-side apply used to own. `None` when there is no usable annotation.
pub(crate) fn allowed_conflicts(live: &Value, api_version: &str, shape: &Shape) -> Option<FieldSet> {
    let text = annotation(live)?;
    let last_applied: Value = serde_json::from_str(text).ok()?;
    if last_applied.get("apiVersion").and_then(Value::as_str).unwrap_or("") != api_version {
        return None;
    }
    check_body(&last_applied, shape).ok()?;
    let set = field_set(&last_applied, shape);
    let comparison = compare(&last_applied, live, shape);
    Some(
        set.difference(&comparison.modified)
            .difference(&comparison.added)
            .difference(&comparison.removed),
    )
}

/// The annotation value for an applied configuration: the body without the annotation, as Go encodes it
/// (sorted keys, HTML-safe escaping, trailing newline).
pub fn last_applied_value(body: &Value) -> String {
    let mut applied = body.clone();
    if let Some(Value::Object(annotations)) = applied.pointer_mut("/metadata/annotations") {
        annotations.remove(LAST_APPLIED_ANNOTATION);
    }
    let mut text = gojson::to_string(&applied);
    text.push('\n');
    text
}

/// After an apply by `kubectl`: if the result carries a last-applied annotation, rewrite it to the applied
/// body, or drop it if that would push the annotations over their size limit.
pub(crate) fn sync_annotation(object: &mut Value, body: &Value) {
    if annotation(object).is_none() {
        return;
    }
    let value = last_applied_value(body);
    let Some(Value::Object(annotations)) = object.pointer_mut("/metadata/annotations") else {
        return;
    };
    annotations.insert(LAST_APPLIED_ANNOTATION.to_string(), Value::String(value));
    if annotations_size(annotations) > MAX_ANNOTATIONS_BYTES {
        annotations.remove(LAST_APPLIED_ANNOTATION);
    }
}

fn annotations_size(annotations: &Map<String, Value>) -> usize {
    annotations
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn value_is_the_body_without_the_annotation_go_encoded() {
        let body = json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "cm",
            "annotations": {LAST_APPLIED_ANNOTATION: "old", "a": "<b>"}}, "data": {"k": "v"}});
        assert_eq!(
            last_applied_value(&body),
            "{\"apiVersion\":\"v1\",\"data\":{\"k\":\"v\"},\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{\"a\":\"\\u003cb\\u003e\"},\"name\":\"cm\"}}\n"
        );
    }

    #[test]
    fn annotation_is_rewritten_only_when_present() {
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}});
        let mut without = json!({"metadata": {"name": "cm"}});
        sync_annotation(&mut without, &body);
        assert_eq!(without, json!({"metadata": {"name": "cm"}}));
        let mut with = json!({"metadata": {"name": "cm", "annotations": {LAST_APPLIED_ANNOTATION: "{}"}}});
        sync_annotation(&mut with, &body);
        assert_eq!(
            with["metadata"]["annotations"][LAST_APPLIED_ANNOTATION],
            json!(last_applied_value(&body))
        );
    }
}
