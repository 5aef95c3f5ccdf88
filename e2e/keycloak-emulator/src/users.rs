//! Users and their group memberships (reference A2).

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::response::Response;
use serde::Deserialize;

use super::app::App;
use super::auth::{AdminRequest, Need};
use super::model::{Realm, User};
use super::realm::NewUser;
use super::representations::{GroupShape, UserAccess, group_rep, user_rep};
use super::wire::{self, ApiError, JsonBody, Params};

/// `max` of `GET /users` when the caller gives none (`Constants.DEFAULT_MAX_RESULTS`).
const DEFAULT_USER_PAGE: usize = 100;

/// A `*` wildcard pattern (`%` in Keycloak's SQL), matched case-insensitively against whole values.
fn glob_match(pattern: &str, value: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let Some((first, rest)) = parts.split_first() else {
        return true;
    };
    let Some(mut remaining) = value.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return remaining.is_empty();
    };
    for part in middle {
        match remaining.find(part) {
            Some(at) => remaining = &remaining[at + part.len()..],
            None => return false,
        }
    }
    remaining.ends_with(last)
}

/// One `search` term against a user: `"x"` is exact, otherwise a prefix match where `*` is a wildcard.
fn search_term_matches(term: &str, user: &User) -> bool {
    let term = term.to_lowercase();
    let fields = [
        Some(&user.username),
        user.email.as_ref(),
        user.first_name.as_ref(),
        user.last_name.as_ref(),
    ];
    let values = fields.into_iter().flatten().map(|v| v.to_lowercase());
    if term.len() >= 2 && term.starts_with('"') && term.ends_with('"') {
        let exact = &term[1..term.len() - 1];
        return values.into_iter().any(|v| v == exact);
    }
    let pattern = if term.ends_with('*') {
        term.clone()
    } else {
        format!("{term}*")
    };
    values.into_iter().any(|v| glob_match(&pattern, &v))
}

/// Whether a user passes the filters of `GET /users` and `GET /users/count`.
fn user_matches(user: &User, params: &Params) -> bool {
    if params.text("idpAlias").is_some() || params.text("idpUserId").is_some() {
        // The emulator has no identity-provider links.
        return false;
    }
    if let Some(enabled) = params.text("enabled")
        && enabled.eq_ignore_ascii_case("true") != user.enabled
    {
        return false;
    }
    if let Some(verified) = params.text("emailVerified")
        && verified.eq_ignore_ascii_case("true") != user.email_verified
    {
        return false;
    }
    if let Some(query) = params.text("q") {
        for pair in query.split_whitespace() {
            let Some((key, value)) = pair.split_once(':') else {
                continue;
            };
            if !user
                .attributes
                .get(key)
                .is_some_and(|values| values.iter().any(|v| v == value))
            {
                return false;
            }
        }
    }
    if let Some(search) = params.text("search") {
        let search = search.trim();
        if let Some(id) = search.strip_prefix("id:") {
            return user.id == id.trim();
        }
        if user.service_account_client.is_some() {
            return false;
        }
        return search == "*" || search.split_whitespace().all(|term| search_term_matches(term, user));
    }
    let exact = params.flag("exact", false);
    let field = |name: &str, value: Option<&String>| -> bool {
        let Some(wanted) = params.text(name) else { return true };
        let wanted = wanted.to_lowercase();
        let Some(value) = value.map(|v| v.to_lowercase()) else {
            return false;
        };
        if exact {
            value == wanted
        } else {
            value.contains(&wanted)
        }
    };
    field("username", Some(&user.username))
        && field("email", user.email.as_ref())
        && field("firstName", user.first_name.as_ref())
        && field("lastName", user.last_name.as_ref())
}

fn matching_users<'a>(realm: &'a Realm, params: &Params) -> Vec<&'a User> {
    let mut users: Vec<&User> = realm.users.values().filter(|u| user_matches(u, params)).collect();
    users.sort_by(|a, b| a.username.cmp(&b.username));
    users
}

/// `GET /users`.
pub async fn list(
    State(app): State<App>,
    request: AdminRequest,
    Path(realm): Path<String>,
    params: Params,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ViewUsers)?;
        let window = params.window(Some(DEFAULT_USER_PAGE))?;
        let brief = params.flag("briefRepresentation", false);
        let access = Some(UserAccess::listing(ctx.may(Need::ManageUsers)));
        let rows: Vec<_> = window
            .apply(matching_users(ctx.realm, &params))
            .into_iter()
            .map(|u| user_rep(u, brief, access))
            .collect();
        Ok(wire::read(&rows))
    })
}

/// `GET /users/count`: a bare number.
pub async fn count(
    State(app): State<App>,
    request: AdminRequest,
    Path(realm): Path<String>,
    params: Params,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ViewUsers)?;
        Ok(wire::read(&matching_users(ctx.realm, &params).len()))
    })
}

/// The body of `POST /users`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserCreate {
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    first_name: Option<String>,
    #[serde(default)]
    last_name: Option<String>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    email_verified: Option<bool>,
    #[serde(default)]
    attributes: Option<BTreeMap<String, Vec<String>>>,
    #[serde(default)]
    groups: Option<Vec<String>>,
    #[serde(default)]
    credentials: Option<Vec<Credential>>,
}

/// A credential in a user create request.
#[derive(Debug, Default, Deserialize)]
pub struct Credential {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    value: Option<String>,
}

/// `POST /users`.
pub async fn create(
    State(app): State<App>,
    request: AdminRequest,
    Path(realm): Path<String>,
    body: Result<JsonBody<UserCreate>, ApiError>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        let JsonBody(body) = body?;
        ctx.require(Need::ManageUsers)?;
        let group_ids = body
            .groups
            .unwrap_or_default()
            .iter()
            .map(|path| {
                ctx.realm
                    .group_by_path(path)
                    .map(|g| g.id.clone())
                    .ok_or_else(|| ApiError::bad_request(&format!("Group {path} not found")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let id = ctx.realm.add_user(
            NewUser {
                username: body.username.unwrap_or_default(),
                email: body.email,
                first_name: body.first_name,
                last_name: body.last_name,
                enabled: body.enabled.unwrap_or(false),
                attributes: body.attributes.unwrap_or_default(),
            },
            ctx.now_millis,
        )?;
        if let Some(user) = ctx.realm.users.get_mut(&id) {
            user.email_verified = body.email_verified.unwrap_or(false);
            user.password = body
                .credentials
                .unwrap_or_default()
                .into_iter()
                .find(|c| c.kind.as_deref().is_none_or(|k| k == "password"))
                .and_then(|c| c.value);
        }
        for group in group_ids {
            ctx.realm.memberships.insert((id.clone(), group));
        }
        Ok(wire::created(&format!("{}/users/{id}", ctx.base)))
    })
}

fn user_or_404<'a>(realm: &'a Realm, id: &str) -> Result<&'a User, ApiError> {
    realm.users.get(id).ok_or_else(|| ApiError::not_found("User not found"))
}

/// `GET /users/{id}`.
pub async fn get(State(app): State<App>, request: AdminRequest, Path((realm, id)): Path<(String, String)>) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ViewUsers)?;
        let user = user_or_404(ctx.realm, &id)?;
        Ok(wire::read(&user_rep(
            user,
            false,
            Some(UserAccess::full(ctx.may(Need::ManageUsers))),
        )))
    })
}

/// `DELETE /users/{id}`.
pub async fn delete(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id)): Path<(String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ManageUsers)?;
        user_or_404(ctx.realm, &id)?;
        ctx.realm.remove_user(&id);
        Ok(wire::deleted())
    })
}

fn user_groups_filtered<'a>(realm: &'a Realm, user: &str, params: &Params) -> Vec<&'a super::model::Group> {
    let search = params.text("search").map(str::to_lowercase);
    realm
        .groups_of(user)
        .into_iter()
        .filter(|g| search.as_deref().is_none_or(|s| g.name.to_lowercase().contains(s)))
        .collect()
}

/// `GET /users/{id}/groups`: direct memberships, brief by default, no default `max`.
pub async fn groups(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id)): Path<(String, String)>,
    params: Params,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ViewUsers)?;
        user_or_404(ctx.realm, &id)?;
        let window = params.window(None)?;
        let shape = GroupShape {
            brief: params.flag("briefRepresentation", true),
            sub_group_count: false,
            access: None,
        };
        let rows: Vec<_> = window
            .apply(user_groups_filtered(ctx.realm, &id, &params))
            .into_iter()
            .map(|g| group_rep(ctx.realm, g, shape))
            .collect();
        Ok(wire::read(&rows))
    })
}

/// `GET /users/{id}/groups/count`: `{"count":n}`.
pub async fn groups_count(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id)): Path<(String, String)>,
    params: Params,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ViewUsers)?;
        user_or_404(ctx.realm, &id)?;
        let count = user_groups_filtered(ctx.realm, &id, &params).len();
        Ok(wire::read(&serde_json::json!({ "count": count })))
    })
}

/// `PUT /users/{id}/groups/{groupId}`: idempotent; the user is checked before the group.
pub async fn join(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id, group)): Path<(String, String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ManageUsers)?;
        user_or_404(ctx.realm, &id)?;
        if !ctx.realm.groups.contains_key(&group) {
            return Err(ApiError::not_found("Group not found"));
        }
        ctx.realm.memberships.insert((id, group));
        Ok(wire::updated())
    })
}

/// `DELETE /users/{id}/groups/{groupId}`: 204 even when the user was not a member.
pub async fn leave(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id, group)): Path<(String, String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ManageUsers)?;
        user_or_404(ctx.realm, &id)?;
        if !ctx.realm.groups.contains_key(&group) {
            return Err(ApiError::not_found("Group not found"));
        }
        ctx.realm.memberships.remove(&(id, group));
        Ok(wire::updated())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_whole_values() {
        assert!(glob_match("al*", "alice"));
        assert!(!glob_match("al*", "malice"));
        assert!(glob_match("*lic*", "malice"));
        assert!(glob_match("a*e", "alice"));
        assert!(!glob_match("a*x", "alice"));
        assert!(glob_match("alice", "alice"));
    }

    fn user(username: &str, email: Option<&str>) -> User {
        User {
            id: "id".into(),
            username: username.into(),
            email: email.map(str::to_string),
            first_name: None,
            last_name: None,
            enabled: true,
            email_verified: false,
            created_timestamp: 0,
            attributes: BTreeMap::new(),
            password: None,
            roles: Default::default(),
            service_account_client: None,
        }
    }

    #[test]
    fn search_is_prefix_by_default_infix_with_stars_and_exact_in_quotes() {
        let alice = user("alice", Some("a@example.org"));
        assert!(search_term_matches("ali", &alice));
        assert!(!search_term_matches("lic", &alice));
        assert!(search_term_matches("*lic*", &alice));
        assert!(search_term_matches("\"alice\"", &alice));
        assert!(!search_term_matches("\"ali\"", &alice));
        assert!(search_term_matches("A@EXAMPLE", &alice), "email, case-insensitive");
    }
}
