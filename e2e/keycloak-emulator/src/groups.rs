//! Groups: the tree, top-level listing, search with ancestor nesting, `/children`, members, create, rename,
//! move and delete (reference A3).

use std::collections::{BTreeMap, BTreeSet};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;

use super::app::{AdminCtx, App};
use super::auth::{AdminRequest, Need};
use super::model::{Group, Realm};
use super::representations::{GroupAccess, GroupRep, GroupShape, UserAccess, group_rep, user_rep};
use super::wire::{self, ApiError, JSON, JsonBody, Params, check_column_length, json_with};

/// `max` of `/groups/{id}/children` when the caller gives none: only ten children come back.
const DEFAULT_CHILDREN_PAGE: usize = 10;
/// `max` of `/groups/{id}/members` when the caller gives none.
const DEFAULT_MEMBERS_PAGE: usize = 100;

/// The body of group creates and updates.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupBody {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    attributes: Option<BTreeMap<String, Vec<String>>>,
}

fn group_or_404<'a>(realm: &'a Realm, id: &str) -> Result<&'a Group, ApiError> {
    realm
        .groups
        .get(id)
        .ok_or_else(|| ApiError::not_found("Could not find group by id"))
}

fn access(ctx: &AdminCtx<'_>) -> Option<GroupAccess> {
    Some(GroupAccess::for_manager(ctx.may(Need::ManageUsers)))
}

/// A name filter: `exact` is a case-sensitive equality, otherwise a case-insensitive substring.
fn name_filter(search: &str, exact: bool) -> impl Fn(&Group) -> bool + '_ {
    let lowered = search.to_lowercase();
    move |group: &Group| {
        if exact {
            group.name == search
        } else {
            group.name.to_lowercase().contains(&lowered)
        }
    }
}

/// A `q` filter: every `key:value` pair must be among the group's attributes.
fn attribute_filter(query: &str) -> impl Fn(&Group) -> bool + '_ {
    move |group: &Group| {
        query.split_whitespace().all(|pair| {
            pair.split_once(':').is_none_or(|(key, value)| {
                group
                    .attributes
                    .get(key)
                    .is_some_and(|values| values.iter().any(|v| v == value))
            })
        })
    }
}

/// The row of `group` with the children on the way to a match nested in `subGroups`.
fn hierarchy(realm: &Realm, group: &Group, shape: GroupShape, in_match_path: &BTreeSet<String>) -> GroupRep {
    let mut rep = group_rep(realm, group, shape);
    rep.sub_groups = realm
        .children_of(Some(&group.id))
        .into_iter()
        .filter(|child| in_match_path.contains(&child.id))
        .map(|child| hierarchy(realm, child, shape, in_match_path))
        .collect();
    rep
}

/// `GET /groups`: top-level groups, or with `search`/`q` the matches anywhere in the tree under their roots.
pub async fn list(
    State(app): State<App>,
    request: AdminRequest,
    Path(realm): Path<String>,
    params: Params,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ViewUsers)?;
        let window = params.window(None)?;
        let shape = GroupShape {
            brief: params.flag("briefRepresentation", true),
            sub_group_count: params.flag("subGroupsCount", true),
            access: access(&ctx),
        };
        let realm = &*ctx.realm;
        let search = params.text("search");
        let query = params.text("q");
        if search.is_none() && query.is_none() {
            let rows: Vec<GroupRep> = window
                .apply(realm.children_of(None))
                .into_iter()
                .map(|g| group_rep(realm, g, shape))
                .collect();
            return Ok(wire::read(&rows));
        }
        let by_name = search.map(|s| name_filter(s, params.flag("exact", false)));
        let by_attribute = query.map(attribute_filter);
        let is_match = |g: &Group| by_name.as_ref().is_none_or(|f| f(g)) && by_attribute.as_ref().is_none_or(|f| f(g));
        let mut matches: Vec<&Group> = realm.groups.values().filter(|g| is_match(g)).collect();
        matches.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.id.cmp(&b.id)));
        let page = window.apply(matches);
        if !params.flag("populateHierarchy", true) {
            let rows: Vec<GroupRep> = page.into_iter().map(|g| group_rep(realm, g, shape)).collect();
            return Ok(wire::read(&rows));
        }
        // Every group on the way from a root down to any match (matches included).
        let mut in_match_path = BTreeSet::new();
        for group in realm.groups.values().filter(|g| is_match(g)) {
            let mut current = Some(group);
            while let Some(g) = current {
                in_match_path.insert(g.id.clone());
                current = g.parent_id.as_deref().and_then(|p| realm.groups.get(p));
            }
        }
        let mut roots: Vec<&Group> = Vec::new();
        for group in page {
            let mut root = group;
            while let Some(parent) = root.parent_id.as_deref().and_then(|p| realm.groups.get(p)) {
                root = parent;
            }
            if !roots.iter().any(|r| r.id == root.id) {
                roots.push(root);
            }
        }
        roots.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.id.cmp(&b.id)));
        let rows: Vec<GroupRep> = roots
            .into_iter()
            .map(|g| hierarchy(realm, g, shape, &in_match_path))
            .collect();
        Ok(wire::read(&rows))
    })
}

/// `GET /groups/count`: the whole tree, top level with `top=true`, or the matches of `search`.
pub async fn count(
    State(app): State<App>,
    request: AdminRequest,
    Path(realm): Path<String>,
    params: Params,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ViewUsers)?;
        let realm = &*ctx.realm;
        let count = match params.text("search") {
            Some(search) => {
                let filter = name_filter(search, false);
                realm.groups.values().filter(|g| filter(g)).count()
            }
            None if params.flag("top", false) => realm.children_of(None).len(),
            None => realm.groups.len(),
        };
        Ok(wire::read(&serde_json::json!({ "count": count })))
    })
}

/// `POST /groups`: a new top-level group (201, empty body), or with an existing `id` a move to the top (204).
pub async fn create_top_level(
    State(app): State<App>,
    request: AdminRequest,
    Path(realm): Path<String>,
    body: Result<JsonBody<GroupBody>, ApiError>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        let JsonBody(body) = body?;
        ctx.require(Need::ManageUsers)?;
        if let Some(id) = body.id.as_deref() {
            ctx.realm.move_group(id, None)?;
            return Ok(wire::updated());
        }
        let name = body.name.unwrap_or_default();
        let id = ctx
            .realm
            .add_group(None, &name, body.description, body.attributes.unwrap_or_default())?;
        Ok(wire::created(&format!("{}/groups/{id}", ctx.base)))
    })
}

/// `GET /groups/{id}`: the full representation (`attributes` always present, `subGroups` empty).
pub async fn get(State(app): State<App>, request: AdminRequest, Path((realm, id)): Path<(String, String)>) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ViewUsers)?;
        let shape = GroupShape {
            brief: false,
            sub_group_count: true,
            access: access(&ctx),
        };
        let group = group_or_404(ctx.realm, &id)?;
        Ok(wire::read(&group_rep(ctx.realm, group, shape)))
    })
}

/// `GET /group-by-path/{path}`.
pub async fn by_path(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, path)): Path<(String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ViewUsers)?;
        let shape = GroupShape {
            brief: false,
            sub_group_count: true,
            access: access(&ctx),
        };
        let group = ctx
            .realm
            .group_by_path(&path)
            .ok_or_else(|| ApiError::not_found("Group path does not exist"))?;
        Ok(wire::read(&group_rep(ctx.realm, group, shape)))
    })
}

/// `PUT /groups/{id}`: rename (409 onto a sibling's name), replace attributes, set the description.
pub async fn update(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id)): Path<(String, String)>,
    body: Result<JsonBody<GroupBody>, ApiError>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        let JsonBody(body) = body?;
        ctx.require(Need::ManageUsers)?;
        let parent = group_or_404(ctx.realm, &id)?.parent_id.clone();
        if body.id.as_deref().is_some_and(|given| given != id) {
            return Err(ApiError::bad_request("Invalid group id"));
        }
        let name = body.name.unwrap_or_default();
        ctx.realm.check_group_name(parent.as_deref(), &name, Some(&id))?;
        if let Some(description) = &body.description {
            check_column_length(description)?;
        }
        if let Some(group) = ctx.realm.groups.get_mut(&id) {
            group.name = name;
            if let Some(attributes) = body.attributes {
                group.attributes = attributes;
            }
            if body.description.is_some() {
                group.description = body.description;
            }
        }
        Ok(wire::updated())
    })
}

/// `DELETE /groups/{id}`: the subtree and its memberships go too.
pub async fn delete(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id)): Path<(String, String)>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ManageUsers)?;
        group_or_404(ctx.realm, &id)?;
        ctx.realm.remove_group(&id);
        Ok(wire::deleted())
    })
}

/// `GET /groups/{id}/children`: ten per page unless told otherwise.
pub async fn children(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id)): Path<(String, String)>,
    params: Params,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ViewUsers)?;
        group_or_404(ctx.realm, &id)?;
        let window = params.window(Some(DEFAULT_CHILDREN_PAGE))?;
        let shape = GroupShape {
            brief: params.flag("briefRepresentation", false),
            sub_group_count: params.flag("subGroupsCount", true),
            access: access(&ctx),
        };
        let realm = &*ctx.realm;
        let filter = params
            .text("search")
            .map(|s| name_filter(s, params.flag("exact", false)));
        let matching: Vec<&Group> = realm
            .children_of(Some(&id))
            .into_iter()
            .filter(|g| filter.as_ref().is_none_or(|f| f(g)))
            .collect();
        let rows: Vec<GroupRep> = window
            .apply(matching)
            .into_iter()
            .map(|g| group_rep(realm, g, shape))
            .collect();
        Ok(wire::read(&rows))
    })
}

/// `POST /groups/{id}/children`: 201 with `Location` and a JSON body (no charset), or 204 for a move.
pub async fn create_child(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id)): Path<(String, String)>,
    body: Result<JsonBody<GroupBody>, ApiError>,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        let JsonBody(body) = body?;
        ctx.require(Need::ManageUsers)?;
        group_or_404(ctx.realm, &id)?;
        if let Some(child) = body.id.as_deref() {
            ctx.realm.move_group(child, Some(&id))?;
            return Ok(wire::updated());
        }
        let name = body.name.unwrap_or_default();
        let child = ctx
            .realm
            .add_group(Some(&id), &name, body.description, body.attributes.unwrap_or_default())?;
        let shape = GroupShape {
            brief: false,
            sub_group_count: false,
            access: access(&ctx),
        };
        let group = group_or_404(ctx.realm, &child)?;
        let mut response = json_with(StatusCode::CREATED, JSON, &group_rep(ctx.realm, group, shape));
        let location = format!("{}/groups/{child}", ctx.base);
        if let Ok(value) = axum::http::HeaderValue::from_str(&location) {
            response.headers_mut().insert(axum::http::header::LOCATION, value);
        }
        Ok(response)
    })
}

/// `GET /groups/{id}/members`: direct members, 100 per page unless told otherwise.
pub async fn members(
    State(app): State<App>,
    request: AdminRequest,
    Path((realm, id)): Path<(String, String)>,
    params: Params,
) -> Response {
    app.admin(&request, &realm, |ctx| {
        ctx.require(Need::ViewUsers)?;
        group_or_404(ctx.realm, &id)?;
        let window = params.window(Some(DEFAULT_MEMBERS_PAGE))?;
        let brief = params.flag("briefRepresentation", false);
        let rows: Vec<_> = window
            .apply(ctx.realm.members_of(&id))
            .into_iter()
            .map(|u| user_rep(u, brief, None::<UserAccess>))
            .collect();
        Ok(wire::read(&rows))
    })
}
