//! The realm itself: `GET /admin/realms/{realm}` with the few settings the emulator models.

use axum::extract::{Path, State};
use axum::response::Response;

use super::app::App;
use super::auth::{AdminRequest, Need};
use super::wire;

/// `GET /admin/realms/{realm}`.
pub async fn get(State(app): State<App>, request: AdminRequest, Path(realm): Path<String>) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ViewRealm)?;
        Ok(wire::read(&serde_json::json!({
            "id": ctx.realm.id,
            "realm": ctx.realm.name,
            "enabled": true,
            "accessTokenLifespan": ctx.realm.access_token_lifespan.as_secs(),
            "ssoSessionIdleTimeout": ctx.realm.refresh_token_lifespan.as_secs(),
        })))
    })
}
