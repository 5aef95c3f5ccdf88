//! The wire conventions shared by every endpoint (reference Part A0): success headers, the four error body
//! shapes, JSON bodies that fail to parse, and query parameters as JAX-RS reads them.

use std::collections::HashMap;

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Content type of successful admin reads.
pub const JSON_UTF8: &str = "application/json;charset=UTF-8";
/// Content type of error bodies, token responses and the few bodies Keycloak writes without a charset.
pub const JSON: &str = "application/json";
/// `error_description` Keycloak 26 adds to unhandled errors.
pub const CONSULT_LOG: &str = "For more on this error consult the server log.";

/// An error answer in one of Keycloak's shapes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// Shape 1: `{"error":"<prose>"}`.
    Prose(StatusCode, String),
    /// Shape 2: `{"errorMessage":"<text>"}` (duplicates, missing names).
    Message(StatusCode, String),
    /// Shape 3 and 4: `{"error":"<code>","error_description":"<text>"}` (OAuth style).
    OAuth(StatusCode, String, String),
    /// A status with an empty body.
    Empty(StatusCode),
}

impl ApiError {
    /// 401 for a missing, garbage or expired token (no `WWW-Authenticate`).
    pub fn unauthorized() -> Self {
        ApiError::Prose(StatusCode::UNAUTHORIZED, "HTTP 401 Unauthorized".into())
    }

    /// 403 when the caller lacks the role an operation needs.
    pub fn forbidden() -> Self {
        ApiError::Prose(StatusCode::FORBIDDEN, "HTTP 403 Forbidden".into())
    }

    /// 404 with the resource-specific prose.
    pub fn not_found(message: &str) -> Self {
        ApiError::Prose(StatusCode::NOT_FOUND, message.into())
    }

    /// 404 for a path no route matches.
    pub fn no_route() -> Self {
        ApiError::not_found("Unable to find matching target resource method")
    }

    /// 404 for a known path with the wrong method, and for query parameters JAX-RS cannot convert.
    pub fn generic_not_found() -> Self {
        ApiError::not_found("HTTP 404 Not Found")
    }

    /// 409 with the `errorMessage` shape.
    pub fn conflict(message: String) -> Self {
        ApiError::Message(StatusCode::CONFLICT, message)
    }

    /// 400 with the `errorMessage` shape.
    pub fn bad_request(message: &str) -> Self {
        ApiError::Message(StatusCode::BAD_REQUEST, message.into())
    }

    /// 400 for a body that is not valid JSON for the endpoint.
    pub fn cannot_parse_json() -> Self {
        ApiError::OAuth(
            StatusCode::BAD_REQUEST,
            "invalid_request".into(),
            "Cannot parse the JSON".into(),
        )
    }

    /// 400 from client validation (redirect URIs and the like).
    pub fn invalid_input(description: &str) -> Self {
        ApiError::OAuth(StatusCode::BAD_REQUEST, "invalid_input".into(), description.into())
    }

    /// 500 for database failures such as a name longer than its 255-character column.
    pub fn unknown_error() -> Self {
        ApiError::OAuth(
            StatusCode::INTERNAL_SERVER_ERROR,
            "unknown_error".into(),
            CONSULT_LOG.into(),
        )
    }

    /// 501 when a server feature (fine-grained admin permissions v1) is off.
    pub fn feature_not_enabled() -> Self {
        ApiError::OAuth(
            StatusCode::NOT_IMPLEMENTED,
            "Feature not enabled".into(),
            CONSULT_LOG.into(),
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, body) = match self {
            ApiError::Prose(status, message) => (status, serde_json::json!({ "error": message })),
            ApiError::Message(status, message) => (status, serde_json::json!({ "errorMessage": message })),
            ApiError::OAuth(status, error, description) => (
                status,
                serde_json::json!({ "error": error, "error_description": description }),
            ),
            ApiError::Empty(status) => return status.into_response(),
        };
        json_with(status, JSON, &body)
    }
}

/// What admin handlers return.
pub type ApiResult = Result<Response, ApiError>;

/// A JSON response with an explicit status and content type.
pub fn json_with<T: Serialize>(status: StatusCode, content_type: &'static str, body: &T) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => {
            let mut response = Response::new(Body::from(bytes));
            *response.status_mut() = status;
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
            response
        }
        Err(_) => ApiError::unknown_error().into_response(),
    }
}

/// A successful admin read: 200, `application/json;charset=UTF-8`, `Cache-Control: no-cache`.
pub fn read<T: Serialize>(body: &T) -> Response {
    let mut response = json_with(StatusCode::OK, JSON_UTF8, body);
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// A create: 201, empty body, no content type, an absolute `Location`.
pub fn created(location: &str) -> Response {
    let mut response = StatusCode::CREATED.into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

/// An update: 204 with an empty body.
pub fn updated() -> Response {
    StatusCode::NO_CONTENT.into_response()
}

/// A delete: 204 with an empty body and `Cache-Control: no-cache`.
pub fn deleted() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// A request body parsed as JSON, answering Keycloak's 400 `Cannot parse the JSON` when it is not.
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|_| ApiError::cannot_parse_json())?;
        serde_json::from_slice(&bytes)
            .map(JsonBody)
            .map_err(|_| ApiError::cannot_parse_json())
    }
}

/// Query parameters, read the way JAX-RS converts them (an unconvertible number is a 404).
#[derive(Debug, Default, Clone)]
pub struct Params(HashMap<String, String>);

impl<S: Send + Sync> FromRequestParts<S> for Params {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or("");
        let pairs = url::form_urlencoded::parse(query.as_bytes()).into_owned();
        let mut map = HashMap::new();
        for (key, value) in pairs {
            // JAX-RS hands a single-valued parameter its first occurrence.
            map.entry(key).or_insert(value);
        }
        Ok(Params(map))
    }
}

impl Params {
    /// A text parameter.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// A boolean parameter (`Boolean.valueOf`: only `true`, in any case, is true).
    pub fn flag(&self, name: &str, default: bool) -> bool {
        self.text(name).map_or(default, |v| v.eq_ignore_ascii_case("true"))
    }

    /// An integer parameter; text that is not a number is answered with 404 as JAX-RS does.
    pub fn int(&self, name: &str) -> Result<Option<i64>, ApiError> {
        match self.text(name) {
            None => Ok(None),
            Some(v) => v.trim().parse().map(Some).map_err(|_| ApiError::generic_not_found()),
        }
    }

    /// The `first`/`max` window of a listing, with the endpoint's default `max` (`None`: unlimited).
    pub fn window(&self, default_max: Option<usize>) -> Result<Window, ApiError> {
        let first = self
            .int("first")?
            .filter(|f| *f >= 0)
            .map_or(0, |f| usize::try_from(f).unwrap_or(usize::MAX));
        let max = match self.int("max")? {
            Some(m) if m < 0 => None,
            Some(m) => Some(usize::try_from(m).unwrap_or(usize::MAX)),
            None => default_max,
        };
        Ok(Window { first, max })
    }
}

/// A page of a listing: skip `first`, keep at most `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Items to skip.
    pub first: usize,
    /// Items to keep (`None`: all).
    pub max: Option<usize>,
}

impl Window {
    /// Applies the window to an ordered listing.
    pub fn apply<T>(&self, items: impl IntoIterator<Item = T>) -> Vec<T> {
        let rest = items.into_iter().skip(self.first);
        match self.max {
            Some(max) => rest.take(max).collect(),
            None => rest.collect(),
        }
    }
}

/// Keycloak stores names in `varchar(255)` columns without validating them first; longer ones fail in the
/// database and come back as 500 (reference A3 "Name length").
pub fn check_column_length(value: &str) -> Result<(), ApiError> {
    if value.chars().count() > 255 {
        Err(ApiError::unknown_error())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_skip_then_cap() {
        let w = Window { first: 2, max: Some(2) };
        assert_eq!(w.apply(1..=10), vec![3, 4]);
        let all = Window { first: 0, max: None };
        assert_eq!(all.apply(1..=3), vec![1, 2, 3]);
    }

    #[test]
    fn negative_max_means_unlimited_and_bad_numbers_are_404() {
        let params = Params(HashMap::from([("max".to_string(), "-1".to_string())]));
        assert_eq!(params.window(Some(10)).expect("window").max, None);
        let params = Params(HashMap::from([("first".to_string(), "x".to_string())]));
        assert_eq!(params.window(None), Err(ApiError::generic_not_found()));
    }

    #[test]
    fn column_length_allows_exactly_255_characters() {
        assert!(check_column_length(&"é".repeat(255)).is_ok());
        assert_eq!(check_column_length(&"a".repeat(256)), Err(ApiError::unknown_error()));
    }
}
