//! `metav1.Status` error bodies, built exactly as kube-apiserver writes them.
//!
//! The JSON key order matters to byte-comparing tests and is fixed by the field order of the serde structs
//! below: `kind, apiVersion, metadata, status, message, reason, details, code`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;

use super::resources::GroupResource;

/// One cause of a failure (`metav1.StatusCause`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cause {
    /// The machine-readable cause type, e.g. `FieldValueInvalid`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The human-readable text of this cause.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The field path the cause refers to.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub field: String,
}

/// The `details` of a Status; empty fields are omitted, in Go's field order.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Details {
    /// The object's name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The API group (absent for the core group).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The plural resource, or the Kind for Invalid.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The object's uid (successful deletes only).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Per-field causes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<Cause>,
    /// Seconds the client should wait before retrying.
    #[serde(rename = "retryAfterSeconds", skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u32>,
}

impl Details {
    fn is_empty(&self) -> bool {
        *self == Details::default()
    }
}

/// The serialized `Status` object.
#[derive(Clone, Debug, Serialize)]
struct StatusBody<'a> {
    kind: &'static str,
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    metadata: serde_json::Map<String, Value>,
    status: &'static str,
    #[serde(skip_serializing_if = "str::is_empty")]
    message: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    reason: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<&'a Details>,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<u16>,
}

/// A failed request, rendered as a `Status` body with the matching HTTP status.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    /// The HTTP status and `code` field.
    pub code: u16,
    /// The `reason` (`NotFound`, `Invalid`, ...); empty for plain Go errors.
    pub reason: String,
    /// The `message` text.
    pub message: String,
    /// The `details`, omitted when empty (boxed: errors travel through many `Result`s).
    pub details: Box<Details>,
    /// `Warning` headers to send with the error.
    pub warnings: Vec<String>,
    /// Send `details: {}` even when empty (kube does for some plain errors, e.g. a failed JSON patch test).
    pub empty_details: bool,
}

impl ApiError {
    fn new(code: u16, reason: &str, message: String, details: Details) -> Self {
        ApiError {
            code,
            reason: reason.to_string(),
            message,
            details: Box::new(details),
            warnings: Vec::new(),
            empty_details: false,
        }
    }

    fn gr_details(gr: &GroupResource, name: &str) -> Details {
        Details {
            name: name.to_string(),
            group: gr.group.clone(),
            kind: gr.resource.clone(),
            ..Details::default()
        }
    }

    /// 404 `GR "n" not found`.
    pub fn not_found(gr: &GroupResource, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{gr} \"{name}\" not found"),
            Self::gr_details(gr, name),
        )
    }

    /// 409 `GR "n" already exists`.
    pub fn already_exists(gr: &GroupResource, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{gr} \"{name}\" already exists"),
            Self::gr_details(gr, name),
        )
    }

    /// 409 `Operation cannot be fulfilled on GR "n": <detail>`.
    pub fn conflict(gr: &GroupResource, name: &str, detail: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {gr} \"{name}\": {detail}"),
            Self::gr_details(gr, name),
        )
    }

    /// The 409 for a stale `metadata.resourceVersion`.
    pub fn stale(gr: &GroupResource, name: &str) -> Self {
        Self::conflict(
            gr,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 403 `GR "n" is forbidden: <detail>`.
    pub fn forbidden(gr: &GroupResource, name: &str, detail: &str) -> Self {
        let message = if name.is_empty() {
            format!("{gr} is forbidden: {detail}")
        } else {
            format!("{gr} \"{name}\" is forbidden: {detail}")
        };
        Self::new(403, "Forbidden", message, Self::gr_details(gr, name))
    }

    /// 405 `<verb> is not supported on resources of kind "GR"`.
    pub fn method_not_allowed(gr: &GroupResource, verb: &str) -> Self {
        let details = Details {
            group: gr.group.clone(),
            kind: gr.resource.clone(),
            ..Details::default()
        };
        Self::new(
            405,
            "MethodNotAllowed",
            format!("{verb} is not supported on resources of kind \"{gr}\""),
            details,
        )
    }

    /// 422 Invalid: `GK "n" is invalid: <aggregate>`, with one cause per field error.
    /// `group_kind` prints as `Kind.group` (`Kind` for core); an empty one gives the leading-space form.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> Self {
        let gk = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let mut seen = std::collections::BTreeSet::new();
        let mut unique = Vec::new();
        for cause in causes {
            let text = render_cause(&cause);
            if seen.insert(text) {
                unique.push(cause);
            }
        }
        let rendered: Vec<String> = unique.iter().map(render_cause).collect();
        let aggregate = match rendered.len() {
            1 => rendered[0].clone(),
            _ => format!("[{}]", rendered.join(", ")),
        };
        let details = Details {
            name: name.to_string(),
            group: group.to_string(),
            kind: kind.to_string(),
            causes: unique,
            ..Details::default()
        };
        Self::new(
            422,
            "Invalid",
            format!("{gk} \"{name}\" is invalid: {aggregate}"),
            details,
        )
    }

    /// 422 Invalid with a free message and empty details (e.g. a failed JSON-patch `test`).
    pub fn invalid_plain(message: &str) -> Self {
        Self {
            // kube-apiserver 1.36 sends `"details":{}` here (seen by the conformance suite on the real apiserver).
            empty_details: true,
            ..Self::new(422, "Invalid", message.to_string(), Details::default())
        }
    }

    /// 400 BadRequest with a free message.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message.into(), Details::default())
    }

    /// 410 Expired.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message.into(), Details::default())
    }

    /// 415 for a patch type the resource does not accept.
    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
            Details::default(),
        )
    }

    /// 406 NotAcceptable (apiserver's `errNotAcceptable`: no details).
    pub fn not_acceptable(message: impl Into<String>) -> Self {
        Self::new(406, "NotAcceptable", message.into(), Details::default())
    }

    /// 504 `Timeout: Too large resource version: N, current: M`.
    pub fn too_large_resource_version(requested: u64, current: u64) -> Self {
        let details = Details {
            causes: vec![Cause {
                reason: "ResourceVersionTooLarge".into(),
                message: "Too large resource version".into(),
                field: String::new(),
            }],
            retry_after_seconds: Some(1),
            ..Details::default()
        };
        Self::new(
            504,
            "Timeout",
            format!("Timeout: Too large resource version: {requested}, current: {current}"),
            details,
        )
    }

    /// 500 InternalError `Internal error occurred: <err>`.
    pub fn internal(err: &str) -> Self {
        let details = Details {
            causes: vec![Cause {
                reason: String::new(),
                message: err.to_string(),
                field: String::new(),
            }],
            ..Details::default()
        };
        Self::new(500, "InternalError", format!("Internal error occurred: {err}"), details)
    }

    /// 500 with an empty reason: how a plain Go error reaches the client.
    pub fn plain(code: u16, message: impl Into<String>) -> Self {
        Self::new(code, "", message.into(), Details::default())
    }

    /// An error with the given status and reason (e.g. 429 TooManyRequests from fault injection).
    pub fn with_reason(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Self::new(code, reason, message.into(), Details::default())
    }

    /// Adds `Warning` header texts.
    pub fn with_warnings(mut self, warnings: Vec<String>) -> Self {
        self.warnings.extend(warnings);
        self
    }

    /// The Status object as JSON bytes.
    pub fn body(&self) -> Vec<u8> {
        status_bytes(
            "Failure",
            &self.message,
            &self.reason,
            if self.details.is_empty() && !self.empty_details {
                None
            } else {
                Some(&self.details)
            },
            Some(self.code),
        )
    }

    /// The Status object as a JSON value (for watch ERROR events).
    pub fn to_value(&self) -> Value {
        serde_json::from_slice(&self.body()).unwrap_or(Value::Null)
    }
}

/// Renders one cause as it appears in the aggregate message (`field: message`).
fn render_cause(cause: &Cause) -> String {
    if cause.field.is_empty() {
        cause.message.clone()
    } else {
        format!("{}: {}", cause.field, cause.message)
    }
}

fn status_bytes(
    status: &'static str,
    message: &str,
    reason: &str,
    details: Option<&Details>,
    code: Option<u16>,
) -> Vec<u8> {
    let body = StatusBody {
        kind: "Status",
        api_version: "v1",
        metadata: serde_json::Map::new(),
        status,
        message,
        reason,
        details,
        code,
    };
    // Serializing plain structs of strings and numbers cannot fail.
    serde_json::to_vec(&body).unwrap_or_default()
}

/// The `Success` Status returned by a DELETE that removed the object at once.
pub fn delete_success(gr: &GroupResource, name: &str, uid: &str) -> Vec<u8> {
    let details = Details {
        name: name.to_string(),
        group: gr.group.clone(),
        kind: gr.resource.clone(),
        uid: uid.to_string(),
        ..Details::default()
    };
    // kube-apiserver's JSON encoder ends every body with a newline.
    let mut body = status_bytes("Success", "", "", Some(&details), None);
    body.push(b'\n');
    body
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        // kube-apiserver's JSON encoder ends every body with a newline (seen on 1.36 by the conformance suite).
        let mut body = self.body();
        body.push(b'\n');
        let mut response = (status, [("content-type", "application/json")], body).into_response();
        for warning in &self.warnings {
            if let Ok(value) = super::http::warning_header(warning) {
                response.headers_mut().append("warning", value);
            }
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_body_matches_the_reference_byte_for_byte() {
        let gr = GroupResource::new("hidden.example.com", "gizmos");
        let body = String::from_utf8(ApiError::not_found(&gr, "g1").body()).unwrap();
        assert_eq!(
            body,
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"gizmos.hidden.example.com \"g1\" not found","reason":"NotFound","details":{"name":"g1","group":"hidden.example.com","kind":"gizmos"},"code":404}"#
        );
    }

    #[test]
    fn invalid_aggregates_several_causes_in_brackets() {
        let causes = vec![
            Cause {
                reason: "FieldValueRequired".into(),
                message: "Required value".into(),
                field: "spec.owner".into(),
            },
            Cause {
                reason: "FieldValueInvalid".into(),
                message: "Invalid value: 11: x".into(),
                field: "spec.size".into(),
            },
        ];
        let err = ApiError::invalid("hidden.example.com", "Gizmo", "g2", causes);
        assert_eq!(
            err.message,
            "Gizmo.hidden.example.com \"g2\" is invalid: [spec.owner: Required value, spec.size: Invalid value: 11: x]"
        );
        assert_eq!(err.code, 422);
    }

    #[test]
    fn delete_success_has_no_code_and_no_message() {
        let gr = GroupResource::new("", "configmaps");
        let body = String::from_utf8(delete_success(&gr, "c", "u1")).unwrap();
        assert_eq!(
            body,
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Success\",\"details\":{\"name\":\"c\",\"kind\":\"configmaps\",\"uid\":\"u1\"}}\n"
        );
    }
}
