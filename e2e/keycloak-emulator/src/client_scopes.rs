//! Realm client scopes (reference A4 "Client scopes").

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::response::Response;
use serde::Deserialize;

use super::app::App;
use super::auth::{AdminRequest, Need};
use super::ids::new_id;
use super::model::{ClientScope, ProtocolMapper, Realm};
use super::wire::{self, ApiError, JsonBody, check_column_length};

/// The body of client-scope creates and updates.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScopeBody {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    protocol: Option<String>,
    #[serde(default)]
    attributes: Option<BTreeMap<String, String>>,
    #[serde(default)]
    protocol_mappers: Option<Vec<ProtocolMapper>>,
}

fn scope_or_404<'a>(realm: &'a Realm, id: &str) -> Result<&'a ClientScope, ApiError> {
    realm
        .client_scopes
        .get(id)
        .ok_or_else(|| ApiError::not_found("Could not find client scope"))
}

/// Keycloak refuses blank names and names with spaces; a name must also fit its column and be unique.
fn check_scope_name(realm: &Realm, name: &str, except: Option<&str>) -> Result<(), ApiError> {
    if name.trim().is_empty() || name.contains(' ') {
        return Err(ApiError::bad_request(&format!(
            "Unexpected name \"{name}\" for ClientScope"
        )));
    }
    check_column_length(name)?;
    if realm
        .client_scopes
        .values()
        .any(|s| s.name == name && Some(s.id.as_str()) != except)
    {
        return Err(ApiError::conflict(format!("Client Scope {name} already exists")));
    }
    Ok(())
}

/// `GET /client-scopes`, ordered by name.
pub async fn list(State(app): State<App>, request: AdminRequest, Path(realm): Path<String>) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ViewClients)?;
        let mut scopes: Vec<&ClientScope> = ctx.realm.client_scopes.values().collect();
        scopes.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(wire::read(&scopes))
    })
}

/// `POST /client-scopes`: 201; 409 `Client Scope X already exists`.
pub async fn create(
    State(app): State<App>,
    request: AdminRequest,
    Path(realm): Path<String>,
    body: Result<JsonBody<ScopeBody>, ApiError>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        let JsonBody(body) = body?;
        ctx.require(Need::ManageClients)?;
        let name = body.name.unwrap_or_default();
        check_scope_name(ctx.realm, &name, None)?;
        let id = new_id();
        let mut mappers = body.protocol_mappers.unwrap_or_default();
        for mapper in &mut mappers {
            mapper.id = Some(new_id());
        }
        ctx.realm.client_scopes.insert(
            id.clone(),
            ClientScope {
                id: id.clone(),
                name,
                description: body.description,
                protocol: body.protocol.unwrap_or_else(|| "openid-connect".into()),
                attributes: body.attributes.unwrap_or_default(),
                protocol_mappers: mappers,
            },
        );
        Ok(wire::created(&format!("{}/client-scopes/{id}", ctx.base)))
    })
}

/// `GET /client-scopes/{id}`.
pub async fn get(State(app): State<App>, request: AdminRequest, Path((realm, id)): Path<(String, String)>) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ViewClients)?;
        Ok(wire::read(scope_or_404(ctx.realm, &id)?))
    })
}

/// `PUT /client-scopes/{id}`: sets the fields sent.
pub async fn update(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id)): Path<(String, String)>,
    body: Result<JsonBody<ScopeBody>, ApiError>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        let JsonBody(body) = body?;
        ctx.require(Need::ManageClients)?;
        scope_or_404(ctx.realm, &id)?;
        if let Some(name) = &body.name {
            check_scope_name(ctx.realm, name, Some(&id))?;
        }
        if let Some(scope) = ctx.realm.client_scopes.get_mut(&id) {
            if let Some(name) = body.name {
                scope.name = name;
            }
            if body.description.is_some() {
                scope.description = body.description;
            }
            if let Some(attributes) = body.attributes {
                scope.attributes = attributes;
            }
        }
        Ok(wire::updated())
    })
}

/// `DELETE /client-scopes/{id}`: also detaches the scope from every client.
pub async fn delete(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id)): Path<(String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ManageClients)?;
        scope_or_404(ctx.realm, &id)?;
        ctx.realm.client_scopes.remove(&id);
        for client in ctx.realm.clients.values_mut() {
            client.default_scopes.retain(|s| s != &id);
            client.optional_scopes.retain(|s| s != &id);
        }
        ctx.realm.default_default_scopes.retain(|s| s != &id);
        ctx.realm.default_optional_scopes.retain(|s| s != &id);
        Ok(wire::deleted())
    })
}
