//! Clients, their secrets, protocol mappers and default/optional client scopes (reference A4).

use axum::extract::{Path, State};
use axum::response::Response;
use serde_json::Value;

use super::app::{AdminCtx, App};
use super::auth::{AdminRequest, Need};
use super::ids::{new_id, new_secret};
use super::model::{Client, ProtocolMapper, Realm};
use super::realm::check_mapper;
use super::representations::{UserAccess, client_rep, user_rep};
use super::wire::{self, ApiError, JsonBody, Params};

fn client_or_404<'a>(realm: &'a Realm, id: &str) -> Result<&'a Client, ApiError> {
    realm
        .clients
        .get(id)
        .ok_or_else(|| ApiError::not_found("Could not find client"))
}

fn client_mut<'a>(realm: &'a mut Realm, id: &str) -> Result<&'a mut Client, ApiError> {
    realm
        .clients
        .get_mut(id)
        .ok_or_else(|| ApiError::not_found("Could not find client"))
}

/// `GET /clients`: `clientId` is an exact lookup unless `search=true` makes it a substring match.
pub async fn list(
    State(app): State<App>,
    request: AdminRequest,
    Path(realm): Path<String>,
    params: Params,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ViewClients)?;
        let window = params.window(None)?;
        let substring = params.flag("search", false);
        let wanted = params.text("clientId");
        let lowered = wanted.map(str::to_lowercase);
        let attributes = params.text("q");
        let mut clients: Vec<&Client> = ctx
            .realm
            .clients
            .values()
            .filter(|c| match (wanted, &lowered) {
                (Some(_), Some(l)) if substring => c.settings.client_id.to_lowercase().contains(l.as_str()),
                (Some(w), _) => c.settings.client_id == w,
                _ => true,
            })
            .filter(|c| {
                attributes.is_none_or(|q| {
                    q.split_whitespace().all(|pair| {
                        pair.split_once(':')
                            .is_none_or(|(k, v)| c.settings.attributes.get(k).is_some_and(|a| a == v))
                    })
                })
            })
            .collect();
        clients.sort_by(|a, b| a.settings.client_id.cmp(&b.settings.client_id));
        let manage = ctx.may(Need::ManageClients);
        let rows: Vec<_> = window
            .apply(clients)
            .into_iter()
            .map(|c| client_rep(ctx.realm, c, manage))
            .collect();
        Ok(wire::read(&rows))
    })
}

/// `POST /clients`: Keycloak's defaults for everything not sent; 409 on a duplicate `clientId`.
pub async fn create(
    State(app): State<App>,
    request: AdminRequest,
    Path(realm): Path<String>,
    body: Result<JsonBody<Value>, ApiError>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        let JsonBody(body) = body?;
        ctx.require(Need::ManageClients)?;
        let id = ctx.realm.create_client(&body, ctx.now_millis)?;
        Ok(wire::created(&format!("{}/clients/{id}", ctx.base)))
    })
}

/// `GET /clients/{id}`.
pub async fn get(State(app): State<App>, request: AdminRequest, Path((realm, id)): Path<(String, String)>) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ViewClients)?;
        let client = client_or_404(ctx.realm, &id)?;
        Ok(wire::read(&client_rep(ctx.realm, client, ctx.may(Need::ManageClients))))
    })
}

/// `PUT /clients/{id}`: a merge (absent fields kept, attributes set key by key).
pub async fn update(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id)): Path<(String, String)>,
    body: Result<JsonBody<Value>, ApiError>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        let JsonBody(body) = body?;
        ctx.require(Need::ManageClients)?;
        ctx.realm.update_client(&id, &body, ctx.now_millis)?;
        Ok(wire::updated())
    })
}

/// `DELETE /clients/{id}`.
pub async fn delete(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id)): Path<(String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ManageClients)?;
        client_or_404(ctx.realm, &id)?;
        ctx.realm.remove_client(&id);
        Ok(wire::deleted())
    })
}

fn secret_body(client: &Client) -> Value {
    match &client.settings.secret {
        Some(secret) => serde_json::json!({ "type": "secret", "value": secret }),
        None => serde_json::json!({ "type": "secret" }),
    }
}

/// `GET /clients/{id}/client-secret`.
pub async fn get_secret(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id)): Path<(String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ViewClients)?;
        Ok(wire::read(&secret_body(client_or_404(ctx.realm, &id)?)))
    })
}

/// `POST /clients/{id}/client-secret`: a new secret, answered with 200.
pub async fn regenerate_secret(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id)): Path<(String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ManageClients)?;
        let seconds = (ctx.now_millis / 1000).to_string();
        let client = client_mut(ctx.realm, &id)?;
        client.settings.secret = Some(new_secret());
        client
            .settings
            .attributes
            .insert("client.secret.creation.time".into(), seconds);
        Ok(wire::read(&secret_body(client)))
    })
}

/// `GET /clients/{id}/service-account-user`.
pub async fn service_account_user(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id)): Path<(String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ViewClients)?;
        client_or_404(ctx.realm, &id)?;
        let user = ctx
            .realm
            .users
            .values()
            .find(|u| u.service_account_client.as_deref() == Some(id.as_str()))
            .ok_or_else(|| ApiError::bad_request("Service account not enabled for the client"))?;
        Ok(wire::read(&user_rep(
            user,
            false,
            Some(UserAccess::full(ctx.may(Need::ManageUsers))),
        )))
    })
}

/// `GET /clients/{id}/protocol-mappers/models`.
pub async fn list_mappers(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id)): Path<(String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ViewClients)?;
        Ok(wire::read(&client_or_404(ctx.realm, &id)?.protocol_mappers))
    })
}

/// `POST /clients/{id}/protocol-mappers/models`: 201; 409 on a duplicate name; 404 for an unknown type.
pub async fn create_mapper(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id)): Path<(String, String)>,
    body: Result<JsonBody<ProtocolMapper>, ApiError>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        let JsonBody(mut mapper) = body?;
        ctx.require(Need::ManageClients)?;
        let base = ctx.base.clone();
        let client = client_mut(ctx.realm, &id)?;
        check_mapper(&mapper)?;
        if client.protocol_mappers.iter().any(|m| m.name == mapper.name) {
            return Err(ApiError::conflict("Protocol mapper exists with same name".into()));
        }
        let mapper_id = new_id();
        mapper.id = Some(mapper_id.clone());
        client.protocol_mappers.push(mapper);
        Ok(wire::created(&format!(
            "{base}/clients/{id}/protocol-mappers/models/{mapper_id}"
        )))
    })
}

fn mapper_index(client: &Client, mapper: &str) -> Result<usize, ApiError> {
    client
        .protocol_mappers
        .iter()
        .position(|m| m.id.as_deref() == Some(mapper))
        .ok_or_else(|| ApiError::not_found("Model not found"))
}

/// `GET /clients/{id}/protocol-mappers/models/{mapperId}`.
pub async fn get_mapper(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id, mapper)): Path<(String, String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ViewClients)?;
        let client = client_or_404(ctx.realm, &id)?;
        Ok(wire::read(&client.protocol_mappers[mapper_index(client, &mapper)?]))
    })
}

/// `PUT /clients/{id}/protocol-mappers/models/{mapperId}`: replaces the mapper (send it whole).
pub async fn update_mapper(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id, mapper)): Path<(String, String, String)>,
    body: Result<JsonBody<ProtocolMapper>, ApiError>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        let JsonBody(mut update) = body?;
        ctx.require(Need::ManageClients)?;
        let client = client_mut(ctx.realm, &id)?;
        let index = mapper_index(client, &mapper)?;
        check_mapper(&update)?;
        if client
            .protocol_mappers
            .iter()
            .enumerate()
            .any(|(i, m)| i != index && m.name == update.name)
        {
            return Err(ApiError::conflict("Protocol mapper exists with same name".into()));
        }
        update.id = Some(mapper);
        client.protocol_mappers[index] = update;
        Ok(wire::updated())
    })
}

/// `DELETE /clients/{id}/protocol-mappers/models/{mapperId}`.
pub async fn delete_mapper(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id, mapper)): Path<(String, String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ManageClients)?;
        let client = client_mut(ctx.realm, &id)?;
        let index = mapper_index(client, &mapper)?;
        client.protocol_mappers.remove(index);
        Ok(wire::deleted())
    })
}

/// Default or optional attachment of client scopes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScopeKind {
    /// `default-client-scopes`.
    Default,
    /// `optional-client-scopes`.
    Optional,
}

fn scope_list(ctx: &AdminCtx<'_>, id: &str, kind: ScopeKind) -> Result<Response, ApiError> {
    let client = client_or_404(ctx.realm, id)?;
    let ids = if kind == ScopeKind::Default {
        &client.default_scopes
    } else {
        &client.optional_scopes
    };
    let rows: Vec<Value> = ids
        .iter()
        .filter_map(|sid| ctx.realm.client_scopes.get(sid))
        .map(|s| serde_json::json!({ "id": s.id, "name": s.name }))
        .collect();
    Ok(wire::read(&rows))
}

/// Attaches a scope as default or optional (moving it from the other list), or detaches it from one list.
fn scope_change(ctx: AdminCtx<'_>, id: &str, scope: &str, kind: ScopeKind, attach: bool) -> Result<Response, ApiError> {
    ctx.require(Need::ManageClients)?;
    client_or_404(ctx.realm, id)?;
    if !ctx.realm.client_scopes.contains_key(scope) {
        return Err(ApiError::not_found("Could not find client scope"));
    }
    let client = client_mut(ctx.realm, id)?;
    let (target, other) = match kind {
        ScopeKind::Default => (&mut client.default_scopes, &mut client.optional_scopes),
        ScopeKind::Optional => (&mut client.optional_scopes, &mut client.default_scopes),
    };
    if attach {
        other.retain(|s| s != scope);
        if !target.iter().any(|s| s == scope) {
            target.push(scope.to_string());
        }
    } else {
        target.retain(|s| s != scope);
    }
    Ok(wire::updated())
}

/// `GET /clients/{id}/default-client-scopes`: `[{id,name}]`.
pub async fn default_scopes(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id)): Path<(String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ViewClients)?;
        scope_list(&ctx, &id, ScopeKind::Default)
    })
}

/// `PUT /clients/{id}/default-client-scopes/{scopeId}`.
pub async fn add_default_scope(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id, scope)): Path<(String, String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        scope_change(ctx, &id, &scope, ScopeKind::Default, true)
    })
}

/// `DELETE /clients/{id}/default-client-scopes/{scopeId}`.
pub async fn remove_default_scope(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id, scope)): Path<(String, String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        scope_change(ctx, &id, &scope, ScopeKind::Default, false)
    })
}

/// `GET /clients/{id}/optional-client-scopes`.
pub async fn optional_scopes(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id)): Path<(String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ViewClients)?;
        scope_list(&ctx, &id, ScopeKind::Optional)
    })
}

/// `PUT /clients/{id}/optional-client-scopes/{scopeId}`.
pub async fn add_optional_scope(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id, scope)): Path<(String, String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        scope_change(ctx, &id, &scope, ScopeKind::Optional, true)
    })
}

/// `DELETE /clients/{id}/optional-client-scopes/{scopeId}`.
pub async fn remove_optional_scope(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id, scope)): Path<(String, String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        scope_change(ctx, &id, &scope, ScopeKind::Optional, false)
    })
}
