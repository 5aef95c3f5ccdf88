//! `/v3/clusters/<id>/namespaces`: the norman view of namespaces, whose `projectId`, `description`,
//! `resourceQuota` and `containerDefaultResourceLimit` are the `field.cattle.io/*` annotations; with the quota
//! checks of Rancher's namespace store and the `move` action.

use std::collections::BTreeMap;

use axum::response::Response;
use chrono::Utc;
use serde_json::{Value, json};

use super::merge::merge_protected;
use super::norman::{self, ApiError, CollectionSpec, Common, json_response};
use super::projects::quota_object;
use super::quantity;
use super::request::{Call, string_field, string_map_field};
use super::store::{
    CONTAINER_LIMIT_ANNOTATION, CREATOR_ID_ANNOTATION, DESCRIPTION_ANNOTATION, Namespace, PROJECT_ID_ANNOTATION,
    RESOURCE_QUOTA_ANNOTATION, State, random_uuid, rfc3339, string_map, sync_project_label,
};

/// Query parameters that filter namespace collections.
pub const FILTERABLE: &[&str] = &[
    "id",
    "name",
    "projectId",
    "description",
    "state",
    "uuid",
    "created",
    "creatorId",
    "transitioning",
];

/// Handles `/v3/clusters/<cluster>/namespaces[/<name>]`.
pub fn serve(state: &mut State, call: &Call, cluster: &str, name: Option<&str>) -> Result<Response, ApiError> {
    if !state.clusters.contains_key(cluster) {
        return Err(ApiError::not_found(format!(
            "clusters.management.cattle.io \"{cluster}\" not found"
        )));
    }
    match (call.method.as_str(), name) {
        ("GET", None) => Ok(list(state, call, cluster)),
        ("POST", None) => create(state, call, cluster),
        ("GET", Some(name)) => {
            let namespace = visible(state, cluster, name)?;
            Ok(json_response(200, &render(namespace, &call.base)))
        }
        ("PUT", Some(name)) => update(state, call, cluster, name),
        ("DELETE", Some(name)) => delete(state, call, cluster, name),
        ("POST", Some(name)) if call.param("action") == Some("move") => move_to_project(state, call, cluster, name),
        ("POST", Some(_)) => Err(ApiError::new(404, "ActionNotAvailable", "")),
        (method, _) => Err(ApiError::method_not_allowed(method)),
    }
}

fn not_found(name: &str) -> ApiError {
    ApiError::not_found(format!("namespaces \"{name}\" not found"))
}

fn visible<'a>(state: &'a State, cluster: &str, name: &str) -> Result<&'a Namespace, ApiError> {
    state
        .namespaces
        .get(&(cluster.to_string(), name.to_string()))
        .filter(|ns| !ns.is_system())
        .ok_or_else(|| not_found(name))
}

fn list(state: &State, call: &Call, cluster: &str) -> Response {
    let items = state
        .namespaces
        .values()
        .filter(|ns| ns.cluster_id == cluster && !ns.is_system())
        .map(|ns| render(ns, &call.base))
        .collect();
    let collection_url = format!("{}/v3/clusters/{cluster}/namespaces", call.base);
    let self_url = call.self_url();
    let spec = CollectionSpec {
        resource_type: "namespace",
        filterable: FILTERABLE,
        self_url: &self_url,
        collection_url: &collection_url,
        creatable: true,
    };
    json_response(200, &norman::collection(&spec, &call.query, items))
}

/// A namespace as the norman cluster API renders it.
pub fn render(namespace: &Namespace, base: &str) -> Value {
    let self_link = format!(
        "{base}/v3/clusters/{}/namespaces/{}",
        namespace.cluster_id, namespace.name
    );
    let creator = namespace
        .annotations
        .get(CREATOR_ID_ANNOTATION)
        .cloned()
        .unwrap_or_default();
    let common = Common {
        id: &namespace.name,
        type_name: "namespace",
        name: &namespace.name,
        created: rfc3339(&namespace.created),
        created_ts: namespace.created.timestamp_millis(),
        creator_id: &creator,
        uuid: &namespace.uuid,
        labels: string_map(&namespace.labels),
        annotations: string_map(&namespace.annotations),
        self_link: self_link.clone(),
    };
    let mut out = common.render();
    out.insert(
        "projectId".into(),
        namespace.project_id().map(|p| json!(p)).unwrap_or(Value::Null),
    );
    out.insert(
        "description".into(),
        json!(
            namespace
                .annotations
                .get(DESCRIPTION_ANNOTATION)
                .cloned()
                .unwrap_or_default()
        ),
    );
    out.insert(
        "resourceQuota".into(),
        namespace.json_annotation(RESOURCE_QUOTA_ANNOTATION),
    );
    out.insert(
        "containerDefaultResourceLimit".into(),
        namespace.json_annotation(CONTAINER_LIMIT_ANNOTATION),
    );
    out.insert("state".into(), json!("active"));
    out.insert("transitioning".into(), json!("no"));
    out.insert("transitioningMessage".into(), json!(""));
    out.insert("actions".into(), json!({"move": format!("{self_link}?action=move")}));
    Value::Object(out)
}

/// Rancher's namespace-store quota rule: inside a project with a quota, a namespace's quota (or the project's
/// namespace default) must name exactly the project's keys and fit in what other namespaces leave. Returns the
/// quota the namespace ends up with.
fn check_quota(
    state: &State,
    project_id: &str,
    quota: Option<&Value>,
    exclude: Option<&str>,
) -> Result<Option<Value>, ApiError> {
    let Some(project) = state.projects.get(project_id) else {
        return Ok(quota.cloned());
    };
    let Some(project_limit) = project
        .fields
        .get("resourceQuota")
        .and_then(|q| q.get("limit"))
        .and_then(Value::as_object)
        .map(quantity::limit_entries)
    else {
        return Ok(quota.cloned());
    };
    let Some(namespace_quota) = quota
        .cloned()
        .or_else(|| project.fields.get("namespaceDefaultResourceQuota").cloned())
    else {
        return Ok(None);
    };
    let namespace_limit = namespace_quota
        .get("limit")
        .and_then(Value::as_object)
        .map(quantity::limit_entries)
        .unwrap_or_default();
    if namespace_limit.len() != project_limit.len() {
        return Err(ApiError::field(
            422,
            "MissingRequired",
            "resourceQuota",
            "does not have all fields defined on a project quota",
        ));
    }
    if let Some(missing) = project_limit.keys().find(|k| !namespace_limit.contains_key(*k)) {
        return Err(ApiError::field(
            422,
            "MissingRequired",
            "resourceQuota",
            format!("misses {missing} defined on a project quota"),
        ));
    }
    let mut used: BTreeMap<String, f64> = BTreeMap::new();
    for other in state.namespaces.values() {
        if other.project_id() != Some(project_id) || Some(other.name.as_str()) == exclude {
            continue;
        }
        let other_quota = other.json_annotation(RESOURCE_QUOTA_ANNOTATION);
        let other_limit = other_quota
            .get("limit")
            .and_then(Value::as_object)
            .map(quantity::limit_entries);
        for (key, value) in other_limit.iter().flatten() {
            if let Some(amount) = value.as_str().and_then(quantity::parse) {
                *used.entry(key.clone()).or_default() += amount;
            }
        }
    }
    let mut exceeded = Vec::new();
    for (key, limit) in &project_limit {
        let wanted = namespace_limit
            .get(key)
            .and_then(Value::as_str)
            .and_then(quantity::parse)
            .unwrap_or(0.0);
        let available = limit.as_str().and_then(quantity::parse).unwrap_or(0.0) - used.get(key).copied().unwrap_or(0.0);
        if wanted > available {
            exceeded.push(format!(
                "{}={}",
                quantity::resource_name(key),
                namespace_limit.get(key).and_then(Value::as_str).unwrap_or_default()
            ));
        }
    }
    if !exceeded.is_empty() {
        return Err(ApiError::field(
            422,
            "MaxLimitExceeded",
            "resourceQuota",
            format!("exceeds projectLimit on fields: {}", exceeded.join(",")),
        ));
    }
    Ok(Some(namespace_quota))
}

fn project_of_cluster(state: &State, cluster: &str, project_id: &str) -> Result<(), ApiError> {
    match state.projects.get(project_id) {
        Some(project) if project.cluster_id == cluster => Ok(()),
        _ => Err(ApiError::field(422, "InvalidReference", "projectId", "")),
    }
}

fn set_json_annotation(annotations: &mut BTreeMap<String, String>, key: &str, value: Option<&Value>) {
    match value.filter(|v| !v.is_null()) {
        Some(value) => {
            annotations.insert(key.to_string(), value.to_string());
        }
        None => {
            annotations.remove(key);
        }
    }
}

fn create(state: &mut State, call: &Call, cluster: &str) -> Result<Response, ApiError> {
    let body = call.json_object()?;
    let Some(name) = string_field(&body, "name") else {
        return Err(ApiError::missing_required("name"));
    };
    let key = (cluster.to_string(), name.clone());
    if state.namespaces.contains_key(&key) {
        return Err(ApiError::already_exists("namespaces", &name));
    }
    let project_id = string_field(&body, "projectId");
    let mut annotations = string_map_field(&body, "annotations");
    let quota = body
        .get("resourceQuota")
        .map(|q| quota_object(q, state.extended_quotas))
        .filter(|q| !q.is_null());
    let container_limit = body
        .get("containerDefaultResourceLimit")
        .filter(|v| v.is_object())
        .cloned();
    if let Some(project_id) = &project_id {
        project_of_cluster(state, cluster, project_id)?;
        let effective = check_quota(state, project_id, quota.as_ref(), None)?;
        set_json_annotation(&mut annotations, RESOURCE_QUOTA_ANNOTATION, effective.as_ref());
        let inherited = state
            .projects
            .get(project_id)
            .and_then(|p| p.fields.get("containerDefaultResourceLimit"))
            .cloned();
        set_json_annotation(
            &mut annotations,
            CONTAINER_LIMIT_ANNOTATION,
            container_limit.as_ref().or(inherited.as_ref()),
        );
        annotations.insert(PROJECT_ID_ANNOTATION.to_string(), project_id.clone());
    } else {
        set_json_annotation(&mut annotations, RESOURCE_QUOTA_ANNOTATION, quota.as_ref());
        set_json_annotation(&mut annotations, CONTAINER_LIMIT_ANNOTATION, container_limit.as_ref());
    }
    if let Some(description) = string_field(&body, "description") {
        annotations.insert(DESCRIPTION_ANNOTATION.to_string(), description);
    }
    annotations.insert(CREATOR_ID_ANNOTATION.to_string(), call.user.clone());
    let resource_version = state.next_resource_version();
    let mut namespace = Namespace {
        cluster_id: cluster.to_string(),
        name: name.clone(),
        labels: string_map_field(&body, "labels"),
        annotations,
        created: Utc::now(),
        uuid: random_uuid(),
        resource_version,
    };
    sync_project_label(&mut namespace);
    let mut rendered = render(&namespace, &call.base);
    rendered["state"] = json!("activating");
    rendered["transitioning"] = json!("yes");
    state.namespaces.insert(key, namespace);
    Ok(json_response(201, &rendered))
}

fn update(state: &mut State, call: &Call, cluster: &str, name: &str) -> Result<Response, ApiError> {
    let body = call.json_object()?;
    let current = visible(state, cluster, name)?.clone();
    let mut annotations = merge_protected(&current.annotations, body.get("annotations"));
    if let Some(quota) = body.get("resourceQuota") {
        let quota = quota_object(quota, state.extended_quotas);
        let quota = Some(&quota).filter(|q| !q.is_null());
        let effective = match current.project_id() {
            Some(project_id) => check_quota(state, project_id, quota, Some(name))?,
            None => quota.cloned(),
        };
        set_json_annotation(&mut annotations, RESOURCE_QUOTA_ANNOTATION, effective.as_ref());
    }
    if let Some(limit) = body.get("containerDefaultResourceLimit") {
        set_json_annotation(&mut annotations, CONTAINER_LIMIT_ANNOTATION, Some(limit));
    }
    if let Some(description) = body.get("description") {
        match description.as_str() {
            Some(text) => annotations.insert(DESCRIPTION_ANNOTATION.to_string(), text.to_string()),
            None => annotations.remove(DESCRIPTION_ANNOTATION),
        };
    }
    // projectId is not updatable here (use the move action); the annotation keeps its stored value.
    match current.project_id() {
        Some(project_id) => annotations.insert(PROJECT_ID_ANNOTATION.to_string(), project_id.to_string()),
        None => annotations.remove(PROJECT_ID_ANNOTATION),
    };
    let labels = merge_protected(&current.labels, body.get("labels"));
    let resource_version = state.next_resource_version();
    let key = (cluster.to_string(), name.to_string());
    let Some(namespace) = state.namespaces.get_mut(&key) else {
        return Err(not_found(name));
    };
    namespace.annotations = annotations;
    namespace.labels = labels;
    namespace.resource_version = resource_version;
    sync_project_label(namespace);
    Ok(json_response(200, &render(namespace, &call.base)))
}

fn delete(state: &mut State, call: &Call, cluster: &str, name: &str) -> Result<Response, ApiError> {
    visible(state, cluster, name)?;
    let Some(namespace) = state.namespaces.remove(&(cluster.to_string(), name.to_string())) else {
        return Err(not_found(name));
    };
    let mut rendered = render(&namespace, &call.base);
    rendered["state"] = json!("removing");
    Ok(json_response(200, &rendered))
}

fn move_to_project(state: &mut State, call: &Call, cluster: &str, name: &str) -> Result<Response, ApiError> {
    let body = call.json_object()?;
    visible(state, cluster, name)?;
    let target = string_field(&body, "projectId");
    if let Some(project_id) = &target {
        project_of_cluster(state, cluster, project_id)?;
    }
    let default_quota = target
        .as_ref()
        .and_then(|id| state.projects.get(id))
        .filter(|p| p.fields.contains_key("resourceQuota"))
        .and_then(|p| p.fields.get("namespaceDefaultResourceQuota"))
        .cloned();
    let resource_version = state.next_resource_version();
    let key = (cluster.to_string(), name.to_string());
    let Some(namespace) = state.namespaces.get_mut(&key) else {
        return Err(not_found(name));
    };
    match &target {
        Some(project_id) => namespace
            .annotations
            .insert(PROJECT_ID_ANNOTATION.to_string(), project_id.clone()),
        None => namespace.annotations.remove(PROJECT_ID_ANNOTATION),
    };
    set_json_annotation(
        &mut namespace.annotations,
        RESOURCE_QUOTA_ANNOTATION,
        default_quota.as_ref(),
    );
    namespace.resource_version = resource_version;
    sync_project_label(namespace);
    Ok(json_response(200, &render(namespace, &call.base)))
}
