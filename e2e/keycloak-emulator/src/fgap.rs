//! Fine-grained admin permissions v1 for clients and the authorization objects of `realm-management` that the
//! legacy token-exchange setup writes (reference A5). Behind a switch: off, every `management/permissions` call
//! is answered 501 once the client in the path has been found.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;

use super::app::{AdminCtx, App};
use super::auth::{AdminRequest, Need};
use super::ids::new_id;
use super::model::{ClientPermissions, Policy, REALM_MANAGEMENT, Realm};
use super::wire::{self, ApiError, JSON, JsonBody, Params, json_with};

fn permissions_body(permissions: Option<&ClientPermissions>) -> Value {
    match permissions {
        None => serde_json::json!({ "enabled": false }),
        Some(p) => serde_json::json!({
            "enabled": true,
            "resource": p.resource_id,
            "scopePermissions": p.scope_permissions,
        }),
    }
}

/// The order of checks Keycloak applies: the client must exist (404), then the feature must be on (501).
fn client_with_feature(ctx: &AdminCtx<'_>, id: &str) -> Result<(), ApiError> {
    if !ctx.realm.clients.contains_key(id) {
        return Err(ApiError::not_found("Could not find client"));
    }
    if !ctx.fgap_v1 {
        return Err(ApiError::feature_not_enabled());
    }
    Ok(())
}

/// `GET /clients/{id}/management/permissions`.
pub async fn get_permissions(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id)): Path<(String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        client_with_feature(&ctx, &id)?;
        ctx.require(Need::ViewClients)?;
        let permissions = ctx.realm.clients.get(&id).and_then(|c| c.permissions.as_ref());
        Ok(wire::read(&permissions_body(permissions)))
    })
}

/// The body of `PUT …/management/permissions`.
#[derive(Debug, Default, Deserialize)]
pub struct PermissionsToggle {
    #[serde(default)]
    enabled: bool,
}

/// `PUT /clients/{id}/management/permissions`: 200 with the seven scope permissions, or `{"enabled":false}`.
pub async fn set_permissions(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id)): Path<(String, String)>,
    body: Result<JsonBody<PermissionsToggle>, ApiError>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        let JsonBody(body) = body?;
        client_with_feature(&ctx, &id)?;
        ctx.require(Need::ManageClients)?;
        let permissions = if body.enabled {
            ctx.realm.enable_client_permissions(&id)
        } else {
            ctx.realm.disable_client_permissions(&id);
            None
        };
        Ok(wire::read(&permissions_body(permissions.as_ref())))
    })
}

/// The resource server lives on `realm-management` and exists only while the v1 feature is on.
fn resource_server(ctx: &AdminCtx<'_>, client: &str, need: Need) -> Result<(), ApiError> {
    let found = ctx
        .realm
        .clients
        .get(client)
        .ok_or_else(|| ApiError::not_found("Could not find client"))?;
    if found.settings.client_id != REALM_MANAGEMENT || !ctx.fgap_v1 {
        return Err(ApiError::generic_not_found());
    }
    ctx.require(need)
}

fn policy_rep(policy: &Policy) -> Value {
    let mut rep = serde_json::json!({
        "id": policy.id,
        "name": policy.name,
        "type": policy.kind,
        "logic": policy.logic,
        "decisionStrategy": policy.decision_strategy,
    });
    if let Some(description) = &policy.description {
        rep["description"] = Value::String(description.clone());
    }
    rep
}

/// `GET …/authz/resource-server/scope?name=`: a case-insensitive substring match.
pub async fn list_scopes(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, client)): Path<(String, String)>,
    params: Params,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        resource_server(&ctx, &client, Need::ViewAuthorization)?;
        let wanted = params.text("name").map(str::to_lowercase);
        let mut scopes: Vec<_> = ctx
            .realm
            .authz
            .scopes
            .values()
            .filter(|s| wanted.as_deref().is_none_or(|w| s.name.to_lowercase().contains(w)))
            .collect();
        scopes.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(wire::read(&scopes))
    })
}

/// `GET …/authz/resource-server/scope/search?name=`: exact; 204 when nothing matches.
pub async fn search_scope(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, client)): Path<(String, String)>,
    params: Params,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        resource_server(&ctx, &client, Need::ViewAuthorization)?;
        let wanted = params.text("name").unwrap_or_default();
        match ctx.realm.authz.scopes.values().find(|s| s.name == wanted) {
            Some(scope) => Ok(wire::read(scope)),
            None => Ok(StatusCode::NO_CONTENT.into_response()),
        }
    })
}

/// `GET …/authz/resource-server/policy?name=`: a case-insensitive substring search, ordered by name.
pub async fn list_policies(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, client)): Path<(String, String)>,
    params: Params,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        resource_server(&ctx, &client, Need::ViewAuthorization)?;
        let window = params.window(None)?;
        let wanted = params.text("name").map(str::to_lowercase);
        let mut policies: Vec<&Policy> = ctx
            .realm
            .authz
            .policies
            .values()
            .filter(|p| wanted.as_deref().is_none_or(|w| p.name.to_lowercase().contains(w)))
            .filter(|p| params.text("type").is_none_or(|t| p.kind == t))
            .collect();
        policies.sort_by(|a, b| a.name.cmp(&b.name));
        let rows: Vec<Value> = window.apply(policies).into_iter().map(policy_rep).collect();
        Ok(wire::read(&rows))
    })
}

/// `GET …/authz/resource-server/policy/search?name=`: exact; 200 with the policy or 204.
pub async fn search_policy(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, client)): Path<(String, String)>,
    params: Params,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        resource_server(&ctx, &client, Need::ViewAuthorization)?;
        let wanted = params.text("name").unwrap_or_default();
        match ctx.realm.authz.policies.values().find(|p| p.name == wanted) {
            Some(policy) => Ok(wire::read(&policy_rep(policy))),
            None => Ok(StatusCode::NO_CONTENT.into_response()),
        }
    })
}

/// The body of `POST …/policy/client`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientPolicyBody {
    #[serde(default)]
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    logic: Option<String>,
    #[serde(default)]
    decision_strategy: Option<String>,
    #[serde(default)]
    clients: Vec<String>,
}

fn resolve_client(realm: &Realm, reference: &str) -> Option<String> {
    realm
        .clients
        .get(reference)
        .map(|c| c.id.clone())
        .or_else(|| realm.client_by_client_id(reference).map(|c| c.id.clone()))
}

/// `POST …/authz/resource-server/policy/client`: 201 with the policy echoed back and no `Location`.
pub async fn create_client_policy(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, client)): Path<(String, String)>,
    body: Result<JsonBody<ClientPolicyBody>, ApiError>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        let JsonBody(body) = body?;
        resource_server(&ctx, &client, Need::ManageAuthorization)?;
        if ctx.realm.authz.policies.values().any(|p| p.name == body.name) {
            return Err(ApiError::OAuth(
                StatusCode::CONFLICT,
                format!("Policy with name [{}] already exists", body.name),
                "Conflicting policy".into(),
            ));
        }
        // An unknown client is a RuntimeException in Keycloak's client policy provider: a 500.
        let clients = body
            .clients
            .iter()
            .map(|c| resolve_client(ctx.realm, c).ok_or_else(ApiError::unknown_error))
            .collect::<Result<Vec<_>, _>>()?;
        let policy = Policy {
            id: new_id(),
            name: body.name,
            description: body.description,
            kind: "client".into(),
            logic: body.logic.unwrap_or_else(|| "POSITIVE".into()),
            decision_strategy: body.decision_strategy.unwrap_or_else(|| "UNANIMOUS".into()),
            clients,
            resources: Vec::new(),
            scopes: Vec::new(),
            policies: Vec::new(),
        };
        let mut echo = policy_rep(&policy);
        echo["clients"] = serde_json::json!(policy.clients);
        ctx.realm.authz.policies.insert(policy.id.clone(), policy);
        Ok(json_with(StatusCode::CREATED, JSON, &echo))
    })
}

/// `GET …/authz/resource-server/policy/{id}` (permissions included); 404 with an empty body when unknown.
pub async fn get_policy(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, client, id)): Path<(String, String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        resource_server(&ctx, &client, Need::ViewAuthorization)?;
        let policy = ctx
            .realm
            .authz
            .policies
            .get(&id)
            .ok_or(ApiError::Empty(StatusCode::NOT_FOUND))?;
        Ok(wire::read(&policy_rep(policy)))
    })
}

/// `GET …/authz/resource-server/policy/{id}/associatedPolicies`.
pub async fn associated_policies(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, client, id)): Path<(String, String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        resource_server(&ctx, &client, Need::ViewAuthorization)?;
        let policy = ctx
            .realm
            .authz
            .policies
            .get(&id)
            .ok_or(ApiError::Empty(StatusCode::NOT_FOUND))?;
        let rows: Vec<Value> = policy
            .policies
            .iter()
            .filter_map(|p| ctx.realm.authz.policies.get(p))
            .map(policy_rep)
            .collect();
        Ok(wire::read(&rows))
    })
}

/// `GET …/authz/resource-server/permission/scope/{id}`; 404 with an empty body when unknown.
pub async fn get_scope_permission(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, client, id)): Path<(String, String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        resource_server(&ctx, &client, Need::ViewAuthorization)?;
        let policy = ctx
            .realm
            .authz
            .policies
            .get(&id)
            .filter(|p| p.kind == "scope")
            .ok_or(ApiError::Empty(StatusCode::NOT_FOUND))?;
        Ok(wire::read(&policy_rep(policy)))
    })
}

/// The body of `PUT …/permission/scope/{id}`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScopePermissionBody {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    logic: Option<String>,
    #[serde(default)]
    decision_strategy: Option<String>,
    #[serde(default)]
    resources: Option<Vec<String>>,
    #[serde(default)]
    scopes: Option<Vec<String>>,
    #[serde(default)]
    policies: Option<Vec<String>>,
}

/// Resolves ids or names against one kind of authz object, keeping only the ones that exist.
fn resolve<'a, T>(references: &[String], items: &'a BTreeMap<String, T>, name: impl Fn(&T) -> &str) -> Vec<String>
where
    T: 'a,
{
    references
        .iter()
        .filter_map(|r| {
            if items.contains_key(r) {
                Some(r.clone())
            } else {
                items.iter().find(|(_, item)| name(item) == r).map(|(id, _)| id.clone())
            }
        })
        .collect()
}

/// `PUT …/authz/resource-server/permission/scope/{id}`: 201 with an empty body (an update answered with 201);
/// 404 with an empty body for an unknown id.
pub async fn update_scope_permission(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, client, id)): Path<(String, String, String)>,
    body: Result<JsonBody<ScopePermissionBody>, ApiError>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        let JsonBody(body) = body?;
        resource_server(&ctx, &client, Need::ManageAuthorization)?;
        if ctx.realm.authz.policies.get(&id).is_none_or(|p| p.kind != "scope") {
            return Err(ApiError::Empty(StatusCode::NOT_FOUND));
        }
        let authz = &ctx.realm.authz;
        let resources = body
            .resources
            .as_deref()
            .map(|r| resolve(r, &authz.resources, |x| x.name.as_str()));
        let scopes = body
            .scopes
            .as_deref()
            .map(|s| resolve(s, &authz.scopes, |x| x.name.as_str()));
        let policies = body
            .policies
            .as_deref()
            .map(|p| resolve(p, &authz.policies, |x| x.name.as_str()));
        let Some(permission) = ctx.realm.authz.policies.get_mut(&id) else {
            return Err(ApiError::Empty(StatusCode::NOT_FOUND));
        };
        if let Some(name) = body.name {
            permission.name = name;
        }
        if body.description.is_some() {
            permission.description = body.description;
        }
        if let Some(logic) = body.logic {
            permission.logic = logic;
        }
        if let Some(strategy) = body.decision_strategy {
            permission.decision_strategy = strategy;
        }
        if let Some(resources) = resources {
            permission.resources = resources;
        }
        if let Some(scopes) = scopes {
            permission.scopes = scopes;
        }
        if let Some(policies) = policies {
            permission.policies = policies;
        }
        Ok(StatusCode::CREATED.into_response())
    })
}

fn client_policy_rep(policy: &Policy) -> Value {
    let mut rep = policy_rep(policy);
    rep["clients"] = serde_json::json!(policy.clients);
    rep
}

/// `GET …/authz/resource-server/policy/client/{id}`: the typed client policy with its clients.
pub async fn get_client_policy(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, client, id)): Path<(String, String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        resource_server(&ctx, &client, Need::ViewAuthorization)?;
        let policy = ctx
            .realm
            .authz
            .policies
            .get(&id)
            .filter(|p| p.kind == "client")
            .ok_or(ApiError::Empty(StatusCode::NOT_FOUND))?;
        Ok(wire::read(&client_policy_rep(policy)))
    })
}

/// `PUT …/authz/resource-server/policy/client/{id}`: 201 with an empty body, like every policy update.
pub async fn update_client_policy(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, client, id)): Path<(String, String, String)>,
    body: Result<JsonBody<ClientPolicyBody>, ApiError>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        let JsonBody(body) = body?;
        resource_server(&ctx, &client, Need::ManageAuthorization)?;
        if ctx.realm.authz.policies.get(&id).is_none_or(|p| p.kind != "client") {
            return Err(ApiError::Empty(StatusCode::NOT_FOUND));
        }
        if ctx
            .realm
            .authz
            .policies
            .values()
            .any(|p| p.name == body.name && p.id != id)
        {
            return Err(ApiError::OAuth(
                StatusCode::CONFLICT,
                format!("Policy with name [{}] already exists", body.name),
                "Conflicting policy".into(),
            ));
        }
        let clients = body
            .clients
            .iter()
            .map(|c| resolve_client(ctx.realm, c).ok_or_else(ApiError::unknown_error))
            .collect::<Result<Vec<_>, _>>()?;
        let Some(policy) = ctx.realm.authz.policies.get_mut(&id) else {
            return Err(ApiError::Empty(StatusCode::NOT_FOUND));
        };
        if !body.name.is_empty() {
            policy.name = body.name;
        }
        if body.description.is_some() {
            policy.description = body.description;
        }
        if let Some(logic) = body.logic {
            policy.logic = logic;
        }
        if let Some(strategy) = body.decision_strategy {
            policy.decision_strategy = strategy;
        }
        policy.clients = clients;
        Ok(StatusCode::CREATED.into_response())
    })
}

/// `DELETE …/authz/resource-server/policy/{id}` (policies and permissions); 404 with an empty body when unknown.
pub async fn delete_policy(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, client, id)): Path<(String, String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        resource_server(&ctx, &client, Need::ManageAuthorization)?;
        if ctx.realm.authz.policies.remove(&id).is_none() {
            return Err(ApiError::Empty(StatusCode::NOT_FOUND));
        }
        for permission in ctx.realm.authz.policies.values_mut() {
            permission.policies.retain(|p| p != &id);
        }
        Ok(wire::deleted())
    })
}
