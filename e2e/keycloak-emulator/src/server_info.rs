//! `GET /admin/serverinfo`: the server version and its features, for clients that choose between Keycloak
//! versions' ways of doing things (token exchange v1 or v2). Any authenticated admin may read it.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::app::App;
use super::auth::{AdminRequest, Caller};
use super::wire::{JSON, json_with};

/// The Keycloak version the emulator answers as.
pub const VERSION: &str = "26.2.5";

/// `GET /admin/serverinfo`: `systemInfo.version` and `features[]` (`name`, `type`, `enabled`) for the features
/// the emulator models.
pub async fn get(State(app): State<App>, request: AdminRequest) -> Response {
    let now = app.clock.now();
    let store = app.lock();
    if let Err(error) = Caller::from_token(&store, request.bearer.as_deref(), now) {
        return error.into_response();
    }
    let feature = |name: &str, kind: &str, enabled: bool| json!({"name": name, "label": name, "type": kind, "enabled": enabled, "dependencies": []});
    let body = json!({
        "systemInfo": {"version": VERSION, "serverTime": "", "uptime": ""},
        "features": [
            feature("ADMIN_FINE_GRAINED_AUTHZ", "PREVIEW", store.fgap_v1),
            feature("ADMIN_FINE_GRAINED_AUTHZ_V2", "DEFAULT", true),
            feature("TOKEN_EXCHANGE", "PREVIEW", store.fgap_v1),
            feature("TOKEN_EXCHANGE_STANDARD_V2", "DEFAULT", store.standard_token_exchange),
        ],
    });
    json_with(StatusCode::OK, JSON, &body)
}
