//! The 422 `Invalid` message and `details.causes` built from a list of field errors (`errors.NewInvalid`).
//!
//! Every error becomes one cause (duplicates included, as Go does); the message is
//! `GK "name" is invalid: <aggregate>`, where the aggregate drops repeated `path: body` texts, prints a single
//! error bare and two or more joined by `, ` inside `[...]`. The server wraps this into the Status envelope.

use serde::Serialize;

use super::FieldError;

/// One entry of `details.causes`, serialized in Go's key order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StatusCause {
    /// The cause type, e.g. `FieldValueInvalid`.
    pub reason: String,
    /// The error body, e.g. `Invalid value: 11: ...`.
    pub message: String,
    /// The field path, e.g. `spec.size`.
    pub field: String,
}

/// The parts of an `Invalid` Status that depend on the errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidStatus {
    /// The Status `message`.
    pub message: String,
    /// The Status `details.causes`.
    pub causes: Vec<StatusCause>,
}

/// The aggregate text of `errors` (`field.ErrorList.ToAggregate().Error()`), or `None` when there are none.
pub fn aggregate_message(errors: &[FieldError]) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    let texts: Vec<String> = errors
        .iter()
        .map(ToString::to_string)
        .filter(|text| seen.insert(text.clone()))
        .collect();
    match texts.len() {
        0 => None,
        1 => texts.into_iter().next(),
        _ => Some(format!("[{}]", texts.join(", "))),
    }
}

/// The message and causes of the Invalid Status for object `name` of kind `kind` in `group` (empty for
/// core). An empty group and kind give the `" "" is invalid: ..."` form used for patch errors.
pub fn invalid_status(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> InvalidStatus {
    let group_kind = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    let quoted_name = super::go_format::quote(name);
    let message = match aggregate_message(errors) {
        Some(aggregate) => format!("{group_kind} {quoted_name} is invalid: {aggregate}"),
        None => format!("{group_kind} {quoted_name} is invalid"),
    };
    let causes = errors
        .iter()
        .map(|e| StatusCause {
            reason: e.reason().to_string(),
            message: e.message.clone(),
            field: e.field.clone(),
        })
        .collect();
    InvalidStatus { message, causes }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// An end-to-end example probed against kube-apiserver, rendered byte for byte.
    #[test]
    fn probed_example_renders_byte_exactly() {
        let errors = vec![
            FieldError::invalid(
                "spec.size",
                &json!(11),
                "spec.size in body should be less than or equal to 10",
            ),
            FieldError::not_supported("spec.mode", &json!("medium"), &["fast", "slow"]),
            FieldError::required("spec.owner", ""),
        ];
        let status = invalid_status("hidden.example.com", "Gizmo", "g2", &errors);
        let body = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": status.message,
            "reason": "Invalid",
            "details": {"name": "g2", "group": "hidden.example.com", "kind": "Gizmo", "causes": status.causes},
            "code": 422,
        });
        // serde_json orders keys alphabetically, so compare parsed values and the two rendered strings.
        let probed = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Gizmo.hidden.example.com \"g2\" is invalid: [spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10, spec.mode: Unsupported value: \"medium\": supported values: \"fast\", \"slow\", spec.owner: Required value]","reason":"Invalid","details":{"name":"g2","group":"hidden.example.com","kind":"Gizmo","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: 11: spec.size in body should be less than or equal to 10","field":"spec.size"},{"reason":"FieldValueNotSupported","message":"Unsupported value: \"medium\": supported values: \"fast\", \"slow\"","field":"spec.mode"},{"reason":"FieldValueRequired","message":"Required value","field":"spec.owner"}]},"code":422}"#;
        let expected: serde_json::Value = serde_json::from_str(probed).expect("probe is JSON");
        assert_eq!(body, expected);
        assert_eq!(
            serde_json::to_string(&status.causes).expect("serializes"),
            r#"[{"reason":"FieldValueInvalid","message":"Invalid value: 11: spec.size in body should be less than or equal to 10","field":"spec.size"},{"reason":"FieldValueNotSupported","message":"Unsupported value: \"medium\": supported values: \"fast\", \"slow\"","field":"spec.mode"},{"reason":"FieldValueRequired","message":"Required value","field":"spec.owner"}]"#
        );
        assert_eq!(
            status.message,
            "Gizmo.hidden.example.com \"g2\" is invalid: [spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10, spec.mode: Unsupported value: \"medium\": supported values: \"fast\", \"slow\", spec.owner: Required value]"
        );
    }

    #[test]
    fn one_error_prints_bare_and_duplicates_leave_the_message_only() {
        let e = FieldError::required("spec.owner", "");
        let status = invalid_status("", "ConfigMap", "c", &[e.clone(), e]);
        assert_eq!(status.message, "ConfigMap \"c\" is invalid: spec.owner: Required value");
        assert_eq!(
            status.causes.len(),
            2,
            "Go keeps every cause; only the aggregate drops repeats"
        );
    }

    #[test]
    fn empty_group_kind_and_no_errors() {
        let patch = FieldError::invalid("patch", "{}", "strict decoding error: unknown field \"spec.foo\"");
        assert_eq!(
            invalid_status("", "", "", &[patch]).message,
            " \"\" is invalid: patch: Invalid value: \"{}\": strict decoding error: unknown field \"spec.foo\""
        );
        assert_eq!(invalid_status("g", "K", "n", &[]).message, "K.g \"n\" is invalid");
    }
}
