//! `/v3/projectroletemplatebindings` and `/v3/clusterroletemplatebindings`: one subject per binding, the
//! webhook's role-template and target checks, the switchable duplicate policy; plus the read-only `clusters`
//! and `roletemplates` collections.

use std::collections::BTreeMap;

use axum::response::Response;
use chrono::Utc;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::config::DuplicateBindingPolicy;
use super::merge::merge_protected;
use super::norman::{self, ApiError, CRTB_WEBHOOK, CollectionSpec, Common, PRTB_WEBHOOK, json_response};
use super::projects::invalid_value;
use super::request::{Call, string_field, string_map_field};
use super::store::{Binding, SUBJECT_FIELDS, State, generate_name, random_uuid, rfc3339, string_map};

/// Which kind of binding a request is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// ProjectRoleTemplateBinding.
    Project,
    /// ClusterRoleTemplateBinding.
    Cluster,
}

impl Scope {
    fn type_name(self) -> &'static str {
        match self {
            Scope::Project => "projectRoleTemplateBinding",
            Scope::Cluster => "clusterRoleTemplateBinding",
        }
    }

    fn collection(self) -> &'static str {
        match self {
            Scope::Project => "projectroletemplatebindings",
            Scope::Cluster => "clusterroletemplatebindings",
        }
    }

    fn target_field(self) -> &'static str {
        match self {
            Scope::Project => "projectId",
            Scope::Cluster => "clusterId",
        }
    }

    fn context(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::Cluster => "cluster",
        }
    }

    fn prefix(self) -> &'static str {
        match self {
            Scope::Project => "prtb-",
            Scope::Cluster => "crtb-",
        }
    }

    /// The root of the webhook's field paths (`projectroletemplatebinding`).
    fn field_root(self) -> &'static str {
        match self {
            Scope::Project => "projectroletemplatebinding",
            Scope::Cluster => "clusterroletemplatebinding",
        }
    }

    fn webhook(self) -> &'static str {
        match self {
            Scope::Project => PRTB_WEBHOOK,
            Scope::Cluster => CRTB_WEBHOOK,
        }
    }

    fn short(self) -> &'static str {
        match self {
            Scope::Project => "prtb",
            Scope::Cluster => "crtb",
        }
    }

    fn filterable(self) -> &'static [&'static str] {
        match self {
            Scope::Project => &[
                "id",
                "name",
                "projectId",
                "roleTemplateId",
                "userId",
                "userPrincipalId",
                "groupId",
                "groupPrincipalId",
                "namespaceId",
                "uuid",
                "created",
                "creatorId",
                "state",
            ],
            Scope::Cluster => &[
                "id",
                "name",
                "clusterId",
                "roleTemplateId",
                "userId",
                "userPrincipalId",
                "groupId",
                "groupPrincipalId",
                "namespaceId",
                "uuid",
                "created",
                "creatorId",
                "state",
            ],
        }
    }

    fn store(self, state: &State) -> &BTreeMap<String, Binding> {
        match self {
            Scope::Project => &state.prtbs,
            Scope::Cluster => &state.crtbs,
        }
    }

    fn store_mut(self, state: &mut State) -> &mut BTreeMap<String, Binding> {
        match self {
            Scope::Project => &mut state.prtbs,
            Scope::Cluster => &mut state.crtbs,
        }
    }
}

/// Handles `/v3/<scope bindings>[/<id>]`.
pub fn serve(state: &mut State, call: &Call, scope: Scope, id: Option<&str>) -> Result<Response, ApiError> {
    match (call.method.as_str(), id) {
        ("GET", None) => {
            let items = scope
                .store(state)
                .values()
                .map(|b| render(scope, b, &call.base))
                .collect();
            Ok(collection(
                call,
                scope.type_name(),
                scope.collection(),
                scope.filterable(),
                true,
                items,
            ))
        }
        ("POST", None) => create(state, call, scope),
        ("GET", Some(id)) => {
            let binding = find(state, scope, id)?;
            Ok(json_response(200, &render(scope, binding, &call.base)))
        }
        ("PUT", Some(id)) => update(state, call, scope, id),
        ("DELETE", Some(id)) => {
            let binding = find(state, scope, id)?.clone();
            scope.store_mut(state).remove(id);
            let mut rendered = render(scope, &binding, &call.base);
            rendered["state"] = json!("removing");
            Ok(json_response(200, &rendered))
        }
        (method, _) => Err(ApiError::method_not_allowed(method)),
    }
}

fn collection(
    call: &Call,
    resource_type: &str,
    plural: &str,
    filterable: &[&str],
    creatable: bool,
    items: Vec<Value>,
) -> Response {
    let collection_url = format!("{}/v3/{plural}", call.base);
    let self_url = call.self_url();
    let spec = CollectionSpec {
        resource_type,
        filterable,
        self_url: &self_url,
        collection_url: &collection_url,
        creatable,
    };
    json_response(200, &norman::collection(&spec, &call.query, items))
}

fn find<'a>(state: &'a State, scope: Scope, id: &str) -> Result<&'a Binding, ApiError> {
    scope.store(state).get(id).ok_or_else(|| {
        let name = id.split_once(':').map(|(_, name)| name).unwrap_or(id);
        ApiError::not_found(format!(
            "{}.management.cattle.io \"{name}\" not found",
            scope.collection()
        ))
    })
}

/// A binding as norman renders it.
pub fn render(scope: Scope, binding: &Binding, base: &str) -> Value {
    let id = binding.id();
    let self_link = format!("{base}/v3/{}/{id}", scope.collection());
    let common = Common {
        id: &id,
        type_name: scope.type_name(),
        name: &binding.name,
        created: rfc3339(&binding.created),
        created_ts: binding.created.timestamp_millis(),
        creator_id: &binding.creator_id,
        uuid: &binding.uuid,
        labels: string_map(&binding.labels),
        annotations: string_map(&binding.annotations),
        self_link,
    };
    let mut out = common.render();
    out.insert(scope.target_field().into(), json!(binding.target));
    out.insert("roleTemplateId".into(), json!(binding.role_template_id));
    for field in SUBJECT_FIELDS {
        out.insert(
            field.into(),
            binding.subjects.get(field).map(|v| json!(v)).unwrap_or(Value::Null),
        );
    }
    out.insert("namespaceId".into(), Value::Null);
    if scope == Scope::Project {
        out.insert("serviceAccount".into(), Value::Null);
    }
    out.insert("state".into(), json!("active"));
    out.insert("transitioning".into(), json!("no"));
    out.insert("transitioningMessage".into(), json!(""));
    Value::Object(out)
}

fn denied(scope: Scope, message: &str) -> ApiError {
    ApiError::webhook(400, "BadRequest", scope.webhook(), message)
}

/// The subjects a body sets, and whether they name exactly one kind of subject (a user, by id and/or
/// principal; or a group, likewise).
fn subjects(body: &Map<String, Value>) -> (BTreeMap<String, String>, bool) {
    let set: BTreeMap<String, String> = SUBJECT_FIELDS
        .iter()
        .filter_map(|f| string_field(body, f).map(|v| (f.to_string(), v)))
        .collect();
    let user = set.contains_key("userId") || set.contains_key("userPrincipalId");
    let group = set.contains_key("groupId") || set.contains_key("groupPrincipalId");
    let service_account = string_field(body, "serviceAccount").is_some();
    let kinds = [user, group, service_account].iter().filter(|k| **k).count();
    (set, kinds == 1)
}

/// The ≥ 2.14 mutator's content-derived name: prefix + lowercase base32 of sha256(subject/role/target), 10
/// characters, so two identical creates collide on the name.
fn deterministic_name(prefix: &str, subjects: &BTreeMap<String, String>, role: &str, target: &str) -> String {
    let subject = ["userPrincipalId", "userId", "groupPrincipalId", "groupId"]
        .iter()
        .find_map(|f| subjects.get(*f))
        .cloned()
        .unwrap_or_default();
    let digest = Sha256::digest(format!("{subject}/{role}/{target}").as_bytes());
    format!("{prefix}{}", base32_lower(&digest).chars().take(10).collect::<String>())
}

fn base32_lower(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut out = String::new();
    let mut buffer: u32 = 0;
    let mut bits = 0;
    for byte in bytes {
        buffer = (buffer << 8) | u32::from(*byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHABET[((buffer >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    out
}

fn create(state: &mut State, call: &Call, scope: Scope) -> Result<Response, ApiError> {
    let body = call.json_object()?;
    let Some(target) = string_field(&body, scope.target_field()) else {
        return Err(ApiError::missing_required(scope.target_field()));
    };
    let Some(role) = string_field(&body, "roleTemplateId") else {
        return Err(ApiError::missing_required("roleTemplateId"));
    };
    let root = scope.field_root();
    let (subjects, exactly_one) = subjects(&body);
    if !exactly_one {
        return Err(denied(
            scope,
            &format!(
                "{root}: Forbidden: binding must target only a user [userName]/[userPrincipalName] OR a group \
                 [groupName]/[groupPrincipalName] OR a [serviceAccount]"
            ),
        ));
    }
    let Some(template) = state.role_templates.get(&role) else {
        return Err(denied(
            scope,
            &invalid_value(
                &format!("{root}.roleTemplateName"),
                &role,
                "the referenced role template was not found",
            ),
        ));
    };
    if template.locked {
        let display = template.display_name.clone().unwrap_or_else(|| template.id.clone());
        return Err(denied(
            scope,
            &format!("{root}.roleTemplate: Forbidden: referenced role '{display}' is locked and cannot be assigned"),
        ));
    }
    if template.context != scope.context() {
        return Err(denied(
            scope,
            &format!(
                "{root}.roleTemplate.context: Unsupported value: \"{}\": supported values: \"{}\"",
                template.context,
                scope.context()
            ),
        ));
    }
    let namespace = match scope {
        Scope::Project => project_namespace(state, &target)?,
        Scope::Cluster => {
            if !state.clusters.contains_key(&target) {
                return Err(denied(
                    scope,
                    &invalid_value(
                        &format!("{root}.clusterName"),
                        &target,
                        &format!("specified cluster {target} not found"),
                    ),
                ));
            }
            target.clone()
        }
    };
    let policy = state.duplicate_bindings;
    let name = match (string_field(&body, "name"), policy) {
        (Some(name), _) => name,
        (None, DuplicateBindingPolicy::Reject) => deterministic_name(scope.prefix(), &subjects, &role, &target),
        (None, DuplicateBindingPolicy::Accept) => loop {
            let candidate = generate_name(scope.prefix(), 5);
            if !scope.store(state).contains_key(&format!("{namespace}:{candidate}")) {
                break candidate;
            }
        },
    };
    if policy == DuplicateBindingPolicy::Reject
        && scope
            .store(state)
            .values()
            .any(|b| b.namespace == namespace && b.name != name && b.target == target && b.duplicates(&role, &subjects))
    {
        return Err(ApiError::webhook(
            409,
            "Conflict",
            scope.webhook(),
            &format!("duplicate {} not allowed", scope.short()),
        ));
    }
    let id = format!("{namespace}:{name}");
    if scope.store(state).contains_key(&id) {
        return Err(ApiError::already_exists(
            &format!("{}.management.cattle.io", scope.collection()),
            &name,
        ));
    }
    let binding = Binding {
        target,
        namespace,
        name,
        role_template_id: role,
        subjects,
        labels: string_map_field(&body, "labels"),
        annotations: string_map_field(&body, "annotations"),
        created: Utc::now(),
        uuid: random_uuid(),
        creator_id: call.user.clone(),
    };
    let rendered = render(scope, &binding, &call.base);
    scope.store_mut(state).insert(id, binding);
    Ok(json_response(201, &rendered))
}

/// The backing namespace of the project a PRTB names, after the webhook's checks on `projectId`.
fn project_namespace(state: &State, project_id: &str) -> Result<String, ApiError> {
    let root = Scope::Project.field_root();
    let path = format!("{root}.projectName");
    let Some((cluster, project)) = project_id
        .split_once(':')
        .filter(|(c, p)| !c.is_empty() && !p.is_empty())
    else {
        return Err(denied(
            Scope::Project,
            &invalid_value(
                &path,
                project_id,
                "projectName must be of the form cluster.metadata.name:project.metadata.name, and both must refer to an existing object",
            ),
        ));
    };
    if !state.clusters.contains_key(cluster) {
        return Err(denied(
            Scope::Project,
            &invalid_value(&path, project_id, &format!("specified cluster {cluster} not found")),
        ));
    }
    match state.projects.get(project_id) {
        Some(found) => Ok(found.backing_namespace.clone()),
        None => Err(denied(
            Scope::Project,
            &invalid_value(
                &path,
                project_id,
                &format!("specified project {project} not found in {cluster}"),
            ),
        )),
    }
}

fn update(state: &mut State, call: &Call, scope: Scope, id: &str) -> Result<Response, ApiError> {
    let body = call.json_object()?;
    let current = find(state, scope, id)?.clone();
    let root = scope.field_root();
    let immutable = |field: &str, value: &str| {
        denied(
            scope,
            &invalid_value(&format!("{root}.{field}"), value, "field is immutable"),
        )
    };
    if let Some(role) = string_field(&body, "roleTemplateId")
        && role != current.role_template_id
    {
        return Err(immutable("roleTemplateName", &role));
    }
    if let Some(target) = string_field(&body, scope.target_field())
        && target != current.target
    {
        let field = if scope == Scope::Project {
            "projectName"
        } else {
            "clusterName"
        };
        return Err(immutable(field, &target));
    }
    for (field, go_name) in [
        ("userId", "userName"),
        ("userPrincipalId", "userPrincipalName"),
        ("groupId", "groupName"),
        ("groupPrincipalId", "groupPrincipalName"),
    ] {
        if let (Some(old), Some(new)) = (current.subjects.get(field), string_field(&body, field))
            && *old != new
        {
            return Err(immutable(go_name, &new));
        }
    }
    let labels = merge_protected(&current.labels, body.get("labels"));
    let annotations = merge_protected(&current.annotations, body.get("annotations"));
    let Some(binding) = scope.store_mut(state).get_mut(id) else {
        return Err(find(state, scope, id)
            .err()
            .unwrap_or_else(|| ApiError::not_found(id.to_string())));
    };
    binding.labels = labels;
    binding.annotations = annotations;
    let binding = binding.clone();
    Ok(json_response(200, &render(scope, &binding, &call.base)))
}

/// Handles `/v3/clusters[/<id>]` (read-only here).
pub fn serve_clusters(state: &State, call: &Call, id: Option<&str>) -> Result<Response, ApiError> {
    let render_cluster = |cluster: &super::store::Cluster| {
        let self_link = format!("{}/v3/clusters/{}", call.base, cluster.id);
        let mut out = Common {
            id: &cluster.id,
            type_name: "cluster",
            name: &cluster.name,
            created: rfc3339(&cluster.created),
            created_ts: cluster.created.timestamp_millis(),
            creator_id: "user-admin",
            uuid: &cluster.uuid,
            labels: json!({}),
            annotations: json!({}),
            self_link: self_link.clone(),
        }
        .render();
        out.insert("state".into(), json!("active"));
        out.insert("transitioning".into(), json!("no"));
        out.insert(
            "links".into(),
            json!({"self": self_link, "namespaces": format!("{self_link}/namespaces")}),
        );
        Value::Object(out)
    };
    match (call.method.as_str(), id) {
        ("GET", None) => {
            let items = state.clusters.values().map(render_cluster).collect();
            Ok(collection(
                call,
                "cluster",
                "clusters",
                &["id", "name", "state", "uuid", "created"],
                false,
                items,
            ))
        }
        ("GET", Some(id)) => state
            .clusters
            .get(id)
            .map(|c| json_response(200, &render_cluster(c)))
            .ok_or_else(|| ApiError::not_found(format!("clusters.management.cattle.io \"{id}\" not found"))),
        (method, _) => Err(ApiError::method_not_allowed(method)),
    }
}

/// Handles `/v3/roletemplates[/<id>]` (read-only).
pub fn serve_role_templates(state: &State, call: &Call, id: Option<&str>) -> Result<Response, ApiError> {
    let render_template = |template: &super::store::RoleTemplateSeed| {
        let self_link = format!("{}/v3/roletemplates/{}", call.base, template.id);
        json!({
            "id": template.id,
            "type": "roleTemplate",
            "baseType": "roleTemplate",
            "name": template.display_name.clone().unwrap_or_else(|| template.id.clone()),
            "context": template.context,
            "locked": template.locked,
            "builtin": true,
            "links": {"self": self_link},
        })
    };
    match (call.method.as_str(), id) {
        ("GET", None) => {
            let items = state.role_templates.values().map(render_template).collect();
            Ok(collection(
                call,
                "roleTemplate",
                "roletemplates",
                &["id", "name", "context", "locked"],
                false,
                items,
            ))
        }
        ("GET", Some(id)) => state
            .role_templates
            .get(id)
            .map(|t| json_response(200, &render_template(t)))
            .ok_or_else(|| ApiError::not_found(format!("roletemplates.management.cattle.io \"{id}\" not found"))),
        (method, _) => Err(ApiError::method_not_allowed(method)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base32_matches_the_standard_alphabet_lowercased() {
        // RFC 4648 test vector: BASE32("foobar") = "MZXW6YTBOI======".
        assert_eq!(base32_lower(b"foobar"), "mzxw6ytboi");
    }

    #[test]
    fn deterministic_names_depend_on_subject_role_and_target_only() {
        let subjects = BTreeMap::from([("groupPrincipalId".to_string(), "keycloakoidc_group://g".to_string())]);
        let a = deterministic_name("prtb-", &subjects, "project-member", "local:p-abcde");
        let b = deterministic_name("prtb-", &subjects, "project-member", "local:p-abcde");
        let c = deterministic_name("prtb-", &subjects, "project-owner", "local:p-abcde");
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.len(), "prtb-".len() + 10);
    }
}
