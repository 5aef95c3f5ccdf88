//! `/v3/projects`: create (201), merge-style update (200), delete (200 `removing`, then gone), and the project
//! admission webhook's checks (cluster exists, quotas consistent, the System project stays).

use std::collections::BTreeMap;
use std::time::Instant;

use axum::response::Response;
use serde_json::{Map, Value, json};

use super::merge::{merge_fields, merge_protected};
use super::norman::{self, ApiError, CollectionSpec, Common, PROJECT_WEBHOOK, json_response};
use super::quantity::{self, QUOTA_KEYS};
use super::request::{Call, string_field, string_map_field};
use super::store::{Project, ProjectSeed, RESOURCE_QUOTA_ANNOTATION, State, rfc3339, string_map};

/// Query parameters that filter project collections.
pub const FILTERABLE: &[&str] = &[
    "id",
    "name",
    "clusterId",
    "description",
    "state",
    "uuid",
    "created",
    "creatorId",
    "namespaceId",
    "transitioning",
];

const CONTAINER_LIMIT_KEYS: [&str; 4] = ["limitsCpu", "limitsMemory", "requestsCpu", "requestsMemory"];

/// Handles `/v3/projects[/<id>]`.
pub fn serve(state: &mut State, call: &Call, id: Option<&str>) -> Result<Response, ApiError> {
    match (call.method.as_str(), id) {
        ("GET", None) => Ok(list(state, call)),
        ("POST", None) => create(state, call),
        ("GET", Some(id)) => {
            let project = find(state, id)?;
            Ok(json_response(200, &render(state, project, &call.base)))
        }
        ("PUT", Some(id)) => update(state, call, id),
        ("DELETE", Some(id)) => delete(state, call, id),
        (method, _) => Err(ApiError::method_not_allowed(method)),
    }
}

fn list(state: &State, call: &Call) -> Response {
    let items = state.projects.values().map(|p| render(state, p, &call.base)).collect();
    let collection_url = format!("{}/v3/projects", call.base);
    let self_url = call.self_url();
    let spec = CollectionSpec {
        resource_type: "project",
        filterable: FILTERABLE,
        self_url: &self_url,
        collection_url: &collection_url,
        creatable: true,
    };
    json_response(200, &norman::collection(&spec, &call.query, items))
}

/// The 404 for a project id (`projects.management.cattle.io "p-xxxxx" not found`).
pub fn not_found(id: &str) -> ApiError {
    let name = id.split_once(':').map(|(_, name)| name).unwrap_or(id);
    ApiError::not_found(format!("projects.management.cattle.io \"{name}\" not found"))
}

fn find<'a>(state: &'a State, id: &str) -> Result<&'a Project, ApiError> {
    state.projects.get(id).ok_or_else(|| not_found(id))
}

/// A project as norman renders it.
pub fn render(state: &State, project: &Project, base: &str) -> Value {
    let id = project.id();
    let self_link = format!("{base}/v3/projects/{id}");
    let common = Common {
        id: &id,
        type_name: "project",
        name: project.display_name(),
        created: rfc3339(&project.created),
        created_ts: project.created.timestamp_millis(),
        creator_id: &project.creator_id,
        uuid: &project.uuid,
        labels: string_map(&project.labels),
        annotations: string_map(&project.annotations),
        self_link: self_link.clone(),
    };
    let mut out = common.render();
    let removing = project.removing_since.is_some();
    out.insert("clusterId".into(), json!(project.cluster_id));
    out.insert(
        "description".into(),
        project.fields.get("description").cloned().unwrap_or(json!("")),
    );
    out.insert("namespaceId".into(), Value::Null);
    out.insert("enableProjectMonitoring".into(), json!(false));
    let resource_quota = project.fields.get("resourceQuota").cloned().map(|mut quota| {
        if let Some(object) = quota.as_object_mut() {
            object.insert("usedLimit".into(), used_limit(state, project));
        }
        quota
    });
    out.insert("resourceQuota".into(), resource_quota.unwrap_or(Value::Null));
    for field in ["namespaceDefaultResourceQuota", "containerDefaultResourceLimit"] {
        out.insert(field.into(), project.fields.get(field).cloned().unwrap_or(Value::Null));
    }
    out.insert("state".into(), json!(if removing { "removing" } else { "active" }));
    out.insert("transitioning".into(), json!(if removing { "yes" } else { "no" }));
    out.insert("transitioningMessage".into(), json!(""));
    out.insert(
        "conditions".into(),
        json!([{"type": "InitialRolesPopulated", "status": "True"}, {"type": "BackingNamespaceCreated", "status": "True"}]),
    );
    out.insert(
        "links".into(),
        json!({
            "self": self_link,
            "update": self_link,
            "remove": self_link,
            "projectRoleTemplateBindings": format!("{base}/v3/projectroletemplatebindings?projectId={id}"),
            "namespaces": format!("{base}/v3/clusters/{}/namespaces?projectId={id}", project.cluster_id),
        }),
    );
    out.insert(
        "actions".into(),
        json!({"exportYaml": format!("{self_link}?action=exportYaml")}),
    );
    Value::Object(out)
}

/// The sum of the project's namespace quotas, for the keys the project limits (`resourceQuota.usedLimit`).
pub fn used_limit(state: &State, project: &Project) -> Value {
    let id = project.id();
    let mut used: BTreeMap<String, f64> = BTreeMap::new();
    for namespace in state
        .namespaces
        .values()
        .filter(|ns| ns.project_id() == Some(id.as_str()))
    {
        let quota = namespace.json_annotation(RESOURCE_QUOTA_ANNOTATION);
        let limit = quota
            .get("limit")
            .and_then(Value::as_object)
            .map(quantity::limit_entries);
        for (key, value) in limit.iter().flatten() {
            if let Some(amount) = value.as_str().and_then(quantity::parse) {
                *used.entry(key.clone()).or_default() += amount;
            }
        }
    }
    Value::Object(quantity::nest_entries(
        used.into_iter()
            .map(|(key, amount)| (key, json!(format_quantity(amount))))
            .collect(),
    ))
}

fn format_quantity(amount: f64) -> String {
    const GI: f64 = 1024.0 * 1024.0 * 1024.0;
    const MI: f64 = 1024.0 * 1024.0;
    if amount.fract() != 0.0 {
        return format!("{}m", (amount * 1000.0).round());
    }
    if amount >= GI && amount % GI == 0.0 {
        return format!("{}Gi", amount / GI);
    }
    if amount >= MI && amount % MI == 0.0 {
        return format!("{}Mi", amount / MI);
    }
    format!("{amount}")
}

/// The updatable fields of a body: quota maps keep only norman's keys (others are silently dropped, as
/// norman's builder does), numbers become strings, and nulls are kept so a merge can clear.
pub fn updatable_fields(body: &Map<String, Value>, extended_quotas: bool) -> Map<String, Value> {
    let mut out = Map::new();
    for field in ["name", "description"] {
        if let Some(value) = body.get(field) {
            out.insert(field.into(), stringify(value));
        }
    }
    for field in ["resourceQuota", "namespaceDefaultResourceQuota"] {
        if let Some(value) = body.get(field) {
            out.insert(field.into(), quota_object(value, extended_quotas));
        }
    }
    if let Some(value) = body.get("containerDefaultResourceLimit") {
        out.insert(
            "containerDefaultResourceLimit".into(),
            filter_keys(value, &CONTAINER_LIMIT_KEYS),
        );
    }
    out
}

fn stringify(value: &Value) -> Value {
    match value {
        Value::Number(n) => json!(n.to_string()),
        Value::Bool(b) => json!(b.to_string()),
        other => other.clone(),
    }
}

/// `{limit: {…}}` with only known keys, plus `extended` (values as strings, `null`s kept for the merge) when the
/// emulated Rancher has it (v2.14+; older ones prune it like any unknown key); anything that is not an object is
/// taken as null.
pub fn quota_object(value: &Value, extended_quotas: bool) -> Value {
    let Some(object) = value.as_object() else {
        return Value::Null;
    };
    let known: Vec<&str> = QUOTA_KEYS.iter().map(|(k, _)| *k).collect();
    match object.get("limit") {
        Some(limit) => {
            let mut filtered = filter_keys(limit, &known);
            if let (true, Some(Value::Object(extended)), Some(out)) =
                (extended_quotas, limit.get(quantity::EXTENDED), filtered.as_object_mut())
            {
                let extended: Map<String, Value> = extended.iter().map(|(k, v)| (k.clone(), stringify(v))).collect();
                out.insert(quantity::EXTENDED.into(), Value::Object(extended));
            }
            json!({ "limit": filtered })
        }
        None => json!({}),
    }
}

fn filter_keys(value: &Value, keys: &[&str]) -> Value {
    let Some(object) = value.as_object() else {
        return Value::Null;
    };
    Value::Object(
        object
            .iter()
            .filter(|(k, _)| keys.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), stringify(v)))
            .collect(),
    )
}

fn create(state: &mut State, call: &Call) -> Result<Response, ApiError> {
    let body = call.json_object()?;
    let Some(name) = string_field(&body, "name") else {
        return Err(ApiError::missing_required("name"));
    };
    let Some(cluster_id) = string_field(&body, "clusterId") else {
        return Err(ApiError::missing_required("clusterId"));
    };
    if !state.clusters.contains_key(&cluster_id) {
        return Err(denied(&invalid_value(
            "project.spec.clusterName",
            &cluster_id,
            "cluster not found",
        )));
    }
    let fields = updatable_fields(&body, state.extended_quotas);
    let fields = merge_fields(&Map::new(), &fields, false);
    check_quotas(&fields, None)?;
    let seed = ProjectSeed {
        cluster_id,
        name,
        description: string_field(&body, "description"),
        annotations: string_map_field(&body, "annotations"),
        labels: string_map_field(&body, "labels"),
        resource_quota: None,
        namespace_default_resource_quota: None,
    };
    let id = state
        .add_project(&seed, &call.user)
        .map_err(|e| ApiError::new(400, "BadRequest", e.to_string()))?;
    if let Some(project) = state.projects.get_mut(&id) {
        for (key, value) in fields {
            project.fields.insert(key, value);
        }
    }
    let project = find(state, &id)?;
    let mut rendered = render(state, project, &call.base);
    rendered["state"] = json!("initializing");
    rendered["transitioning"] = json!("yes");
    Ok(json_response(201, &rendered))
}

fn update(state: &mut State, call: &Call, id: &str) -> Result<Response, ApiError> {
    let body = call.json_object()?;
    let current = find(state, id)?.clone();
    if let Some(cluster_id) = string_field(&body, "clusterId")
        && cluster_id != current.cluster_id
    {
        return Err(denied(&invalid_value(
            "project.spec.clusterName",
            &cluster_id,
            "field is immutable",
        )));
    }
    let replace = call.param("_replace") == Some("true");
    let fields = merge_fields(
        &current.fields,
        &updatable_fields(&body, state.extended_quotas),
        replace,
    );
    if fields.get("name").and_then(Value::as_str).is_none_or(str::is_empty) {
        return Err(ApiError::missing_required("name"));
    }
    check_quotas(&fields, Some((state, &current)))?;
    let labels = merge_protected(&current.labels, body.get("labels"));
    let annotations = merge_protected(&current.annotations, body.get("annotations"));
    if let Some(project) = state.projects.get_mut(id) {
        project.fields = fields;
        project.labels = labels;
        project.annotations = annotations;
    }
    let project = find(state, id)?;
    Ok(json_response(200, &render(state, project, &call.base)))
}

fn delete(state: &mut State, call: &Call, id: &str) -> Result<Response, ApiError> {
    let project = find(state, id)?;
    if project.is_system() {
        return Err(denied("System Project cannot be deleted"));
    }
    if let Some(project) = state.projects.get_mut(id) {
        project.removing_since.get_or_insert_with(Instant::now);
    }
    let project = find(state, id)?;
    Ok(json_response(200, &render(state, project, &call.base)))
}

/// A project webhook denial (400 `BadRequest`).
fn denied(message: &str) -> ApiError {
    ApiError::webhook(400, "BadRequest", PROJECT_WEBHOOK, message)
}

/// A Kubernetes `field.Invalid` error text.
pub fn invalid_value(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: \"{value}\": {detail}")
}

/// The entries of a quota field's `limit` (see [`quantity::limit_entries`]), `None` without the field.
fn limit_of(fields: &Map<String, Value>, field: &str) -> Option<Map<String, Value>> {
    let quota = fields.get(field)?;
    Some(
        quota
            .get("limit")
            .and_then(Value::as_object)
            .map(quantity::limit_entries)
            .unwrap_or_default(),
    )
}

fn amount(limit: &Map<String, Value>, key: &str, path: &str) -> Result<Option<f64>, ApiError> {
    match limit.get(key).and_then(Value::as_str) {
        None => Ok(None),
        Some(text) => quantity::parse(text).map(Some).ok_or_else(|| {
            denied(&invalid_value(
                path,
                text,
                "quantities must match the regular expression",
            ))
        }),
    }
}

/// The project webhook's quota rules, on create (`old` absent) and update.
fn check_quotas(fields: &Map<String, Value>, old: Option<(&State, &Project)>) -> Result<(), ApiError> {
    if let Some(limit) = fields.get("containerDefaultResourceLimit").and_then(Value::as_object) {
        let path = "project.spec.namespaceDefaultResourceQuota";
        for (request, limit_key, what) in [
            ("requestsCpu", "limitsCpu", "CPU"),
            ("requestsMemory", "limitsMemory", "memory"),
        ] {
            if let (Some(requested), Some(limited)) = (amount(limit, request, path)?, amount(limit, limit_key, path)?)
                && requested > limited
            {
                let detail = format!(
                    "requested {what} {} is greater than limit {}",
                    limit.get(request).and_then(Value::as_str).unwrap_or_default(),
                    limit.get(limit_key).and_then(Value::as_str).unwrap_or_default()
                );
                return Err(denied(&invalid_value(path, "object", &detail)));
            }
        }
    }
    let project_limit = limit_of(fields, "resourceQuota");
    let namespace_limit = limit_of(fields, "namespaceDefaultResourceQuota");
    let (project_limit, namespace_limit) = match (project_limit, namespace_limit) {
        (None, None) => return Ok(()),
        (None, Some(_)) => {
            return Err(denied(
                "project.spec.resourceQuota: Required value: required when namespaceDefaultResourceQuota is set",
            ));
        }
        (Some(_), None) => {
            return Err(denied(
                "project.spec.namespaceDefaultResourceQuota: Required value: required when resourceQuota is set",
            ));
        }
        (Some(p), Some(n)) => (p, n),
    };
    let (project_limit, namespace_limit) = (&project_limit, &namespace_limit);
    if project_limit.len() != namespace_limit.len() {
        return Err(denied(&invalid_value(
            "project.spec.resourceQuota",
            "object",
            "resource quota and namespace default quota do not have the same resources defined",
        )));
    }
    if let Some(missing) = project_limit.keys().find(|k| !namespace_limit.contains_key(*k)) {
        return Err(denied(&invalid_value(
            "project.spec.namespaceDefaultResourceQuota",
            "object",
            &format!("missing namespace default for resource {missing} defined on resourceQuota"),
        )));
    }
    let mut exceeded = Vec::new();
    for key in namespace_limit.keys() {
        let path = "project.spec.namespaceDefaultResourceQuota";
        if let (Some(ns), Some(project)) = (amount(namespace_limit, key, path)?, amount(project_limit, key, path)?)
            && ns > project
        {
            exceeded.push(format!(
                "{}={}",
                quantity::resource_name(key),
                namespace_limit.get(key).and_then(Value::as_str).unwrap_or_default()
            ));
        }
    }
    if !exceeded.is_empty() {
        exceeded.sort();
        return Err(denied(&format!(
            "project.spec.namespaceDefaultResourceQuota: Forbidden: namespace default quota limit exceeds project limit on fields: {}",
            exceeded.join(",")
        )));
    }
    let Some((state, old)) = old else { return Ok(()) };
    if !old.fields.contains_key("resourceQuota") {
        return Ok(());
    }
    let used = used_limit(state, old);
    let Some(used) = used.as_object() else { return Ok(()) };
    let mut below = Vec::new();
    for (key, value) in used {
        let path = "project.spec.resourceQuota";
        let used_amount = value.as_str().and_then(quantity::parse).unwrap_or(0.0);
        if let Some(limit) = amount(project_limit, key, path)?
            && used_amount > limit
        {
            below.push(format!(
                "{}={}",
                quantity::resource_name(key),
                value.as_str().unwrap_or_default()
            ));
        }
    }
    if !below.is_empty() {
        below.sort();
        return Err(denied(&format!(
            "project.spec.resourceQuota: Forbidden: resourceQuota is below the used limit on fields: {}",
            below.join(",")
        )));
    }
    Ok(())
}
