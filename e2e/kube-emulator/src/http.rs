//! Response helpers shared by the handlers: JSON bodies, `Warning` headers and the plain-text 404.

use axum::http::{HeaderValue, StatusCode, header::InvalidHeaderValue};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// A JSON response with the given status and warnings.
pub fn json_bytes(status: u16, body: Vec<u8>, warnings: &[String]) -> Response {
    with_content_type(status, body, "application/json", warnings)
}

/// A response with an explicit content type.
pub fn with_content_type(status: u16, body: Vec<u8>, content_type: &'static str, warnings: &[String]) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    let mut response = (status, [("content-type", content_type)], body).into_response();
    for warning in warnings {
        if let Ok(value) = warning_header(warning) {
            response.headers_mut().append("warning", value);
        }
    }
    response
}

/// A JSON value response.
pub fn json_value(status: u16, value: &Value, warnings: &[String]) -> Response {
    json_bytes(status, serde_json::to_vec(value).unwrap_or_default(), warnings)
}

/// A `Warning: 299 - "text"` header value, with quotes and backslashes escaped as Go does.
pub fn warning_header(text: &str) -> Result<HeaderValue, InvalidHeaderValue> {
    let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
    HeaderValue::from_str(&format!("299 - \"{escaped}\""))
}

/// The plain-text `404 page not found` that the Go mux answers for unknown paths.
pub fn page_not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [("content-type", "text/plain; charset=utf-8")],
        "404 page not found\n",
    )
        .into_response()
}
