//! `/k8s/clusters/<id>/api/v1/namespaces`: plain Kubernetes namespaces through Rancher's proxy, with
//! Kubernetes `Status` errors. Project membership is the `field.cattle.io/projectId` annotation; the label
//! Rancher derives from it is kept in step.

use std::collections::BTreeMap;

use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::{Value, json};

use super::norman::{ApiError, json_response};
use super::request::Call;
use super::store::{Namespace, State, random_uuid, rfc3339, sync_project_label};

/// Handles the namespace paths of the Kubernetes proxy.
pub fn serve(state: &mut State, call: &Call, cluster: &str, name: Option<&str>) -> Response {
    if !state.clusters.contains_key(cluster) {
        return ApiError::not_found(format!("clusters.management.cattle.io \"{cluster}\" not found")).into_response();
    }
    match (call.method.as_str(), name) {
        ("GET", None) => list(state, call, cluster),
        ("POST", None) => create(state, call, cluster),
        ("GET", Some(name)) => match state.namespaces.get(&key(cluster, name)) {
            Some(namespace) => json_response(200, &render(namespace)),
            None => not_found(name),
        },
        ("PUT", Some(name)) => replace(state, call, cluster, name),
        ("PATCH", Some(name)) => patch(state, call, cluster, name),
        ("DELETE", Some(name)) => match state.namespaces.remove(&key(cluster, name)) {
            Some(namespace) => {
                let mut rendered = render(&namespace);
                rendered["status"]["phase"] = json!("Terminating");
                json_response(200, &rendered)
            }
            None => not_found(name),
        },
        (method, _) => status(
            405,
            "MethodNotAllowed",
            &format!("the server does not allow this method on the requested resource ({method})"),
            None,
        ),
    }
}

fn key(cluster: &str, name: &str) -> (String, String) {
    (cluster.to_string(), name.to_string())
}

/// A `metav1.Status` failure.
fn status(code: u16, reason: &str, message: &str, name: Option<&str>) -> Response {
    let mut body = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    });
    if let Some(name) = name {
        body["details"] = json!({"name": name, "kind": "namespaces"});
    }
    json_response(code, &body)
}

fn not_found(name: &str) -> Response {
    status(404, "NotFound", &format!("namespaces \"{name}\" not found"), Some(name))
}

/// A namespace as Kubernetes renders it.
pub fn render(namespace: &Namespace) -> Value {
    let mut metadata = json!({
        "name": namespace.name,
        "uid": namespace.uuid,
        "resourceVersion": namespace.resource_version.to_string(),
        "creationTimestamp": rfc3339(&namespace.created),
    });
    if !namespace.labels.is_empty() {
        metadata["labels"] = json!(namespace.labels);
    }
    if !namespace.annotations.is_empty() {
        metadata["annotations"] = json!(namespace.annotations);
    }
    json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": metadata,
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    })
}

fn list(state: &State, call: &Call, cluster: &str) -> Response {
    let selector = call.param("labelSelector").map(parse_selector).unwrap_or_default();
    let items: Vec<Value> = state
        .namespaces
        .values()
        .filter(|ns| ns.cluster_id == cluster && selector.iter().all(|r| r.matches(&ns.labels)))
        .map(render)
        .collect();
    let resource_version = state
        .namespaces
        .values()
        .map(|ns| ns.resource_version)
        .max()
        .unwrap_or(1);
    json_response(
        200,
        &json!({
            "apiVersion": "v1",
            "kind": "NamespaceList",
            "metadata": {"resourceVersion": resource_version.to_string()},
            "items": items,
        }),
    )
}

/// One label selector requirement.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::NotEquals(k, v) => labels.get(k) != Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::NotExists(k) => !labels.contains_key(k),
        }
    }
}

/// Parses `a=b,c!=d,e,!f,g in (x,y),h notin (z)`.
fn parse_selector(text: &str) -> Vec<Requirement> {
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut current = String::new();
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current);
    let values = |list: &str| -> Vec<String> {
        list.trim()
            .trim_start_matches('(')
            .trim_end_matches(')')
            .split(',')
            .map(|v| v.trim().to_string())
            .collect()
    };
    parts
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .map(|part| {
            if let Some((k, v)) = part.split_once("!=") {
                Requirement::NotEquals(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                Requirement::Equals(k.trim().into(), v.trim().into())
            } else if let Some((k, v)) = part.split_once(" notin ") {
                Requirement::NotIn(k.trim().into(), values(v))
            } else if let Some((k, v)) = part.split_once(" in ") {
                Requirement::In(k.trim().into(), values(v))
            } else if let Some(k) = part.strip_prefix('!') {
                Requirement::NotExists(k.trim().into())
            } else {
                Requirement::Exists(part.into())
            }
        })
        .collect()
}

fn string_map(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

fn invalid(name: &str, field: &str, detail: &str) -> Response {
    let mut response = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": format!("Namespace \"{name}\" is invalid: {field}: {detail}"),
        "reason": "Invalid",
        "details": {"name": name, "kind": "Namespace", "causes": [{"reason": "FieldValueInvalid", "message": detail, "field": field}]},
        "code": 422,
    });
    if detail.starts_with("Required") {
        response["details"]["causes"][0]["reason"] = json!("FieldValueRequired");
    }
    json_response(422, &response)
}

/// The request body as a JSON object, if it is one.
fn body(call: &Call) -> Option<Value> {
    serde_json::from_slice::<Value>(&call.body)
        .ok()
        .filter(Value::is_object)
}

fn unknown_format() -> Response {
    status(
        400,
        "BadRequest",
        "the body of the request was in an unknown format",
        None,
    )
}

fn create(state: &mut State, call: &Call, cluster: &str) -> Response {
    let Some(object) = body(call) else {
        return unknown_format();
    };
    let metadata = &object["metadata"];
    let name = match (metadata["name"].as_str(), metadata["generateName"].as_str()) {
        (Some(name), _) if !name.is_empty() => name.to_string(),
        (_, Some(prefix)) if !prefix.is_empty() => super::store::generate_name(prefix, 5),
        _ => return invalid("", "metadata.name", "Required value: name or generateName is required"),
    };
    if !valid_name(&name) {
        return invalid(
            &name,
            "metadata.name",
            &format!(
                "Invalid value: \"{name}\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ),
        );
    }
    if state.namespaces.contains_key(&key(cluster, &name)) {
        return status(
            409,
            "AlreadyExists",
            &format!("namespaces \"{name}\" already exists"),
            Some(&name),
        );
    }
    let resource_version = state.next_resource_version();
    let mut namespace = Namespace {
        cluster_id: cluster.to_string(),
        name: name.clone(),
        labels: string_map(metadata.get("labels")),
        annotations: string_map(metadata.get("annotations")),
        created: Utc::now(),
        uuid: random_uuid(),
        resource_version,
    };
    sync_project_label(&mut namespace);
    let rendered = render(&namespace);
    state.namespaces.insert(key(cluster, &name), namespace);
    json_response(201, &rendered)
}

fn store_object(state: &mut State, cluster: &str, name: &str, object: &Value) -> Response {
    let resource_version = state.next_resource_version();
    let Some(namespace) = state.namespaces.get_mut(&key(cluster, name)) else {
        return not_found(name);
    };
    namespace.labels = string_map(object["metadata"].get("labels"));
    namespace.annotations = string_map(object["metadata"].get("annotations"));
    namespace.resource_version = resource_version;
    sync_project_label(namespace);
    json_response(200, &render(namespace))
}

fn conflict(name: &str) -> Response {
    status(
        409,
        "Conflict",
        &format!(
            "Operation cannot be fulfilled on namespaces \"{name}\": the object has been modified; please apply your changes to the latest version and try again"
        ),
        Some(name),
    )
}

fn replace(state: &mut State, call: &Call, cluster: &str, name: &str) -> Response {
    let Some(object) = body(call) else {
        return unknown_format();
    };
    let Some(current) = state.namespaces.get(&key(cluster, name)) else {
        return not_found(name);
    };
    if let Some(expected) = object["metadata"]["resourceVersion"].as_str()
        && expected != current.resource_version.to_string()
    {
        return conflict(name);
    }
    store_object(state, cluster, name, &object)
}

fn patch(state: &mut State, call: &Call, cluster: &str, name: &str) -> Response {
    let Some(current) = state.namespaces.get(&key(cluster, name)) else {
        return not_found(name);
    };
    let mut object = render(current);
    let content_type = call.content_type.as_str();
    if content_type.starts_with("application/json-patch+json") {
        let Ok(operations) = serde_json::from_slice::<json_patch::Patch>(&call.body) else {
            return unknown_format();
        };
        if let Err(error) = json_patch::patch(&mut object, &operations) {
            return status(
                422,
                "Invalid",
                &format!("the server rejected our request due to an error in our request: {error}"),
                None,
            );
        }
    } else {
        let Ok(update) = serde_json::from_slice::<Value>(&call.body) else {
            return unknown_format();
        };
        json_patch::merge(&mut object, &update);
    }
    store_object(state, cluster, name, &object)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_parse_equality_sets_and_existence() {
        let parsed = parse_selector("field.cattle.io/projectId=p-abc,team in (a, b),!legacy");
        assert_eq!(
            parsed,
            vec![
                Requirement::Equals("field.cattle.io/projectId".into(), "p-abc".into()),
                Requirement::In("team".into(), vec!["a".into(), "b".into()]),
                Requirement::NotExists("legacy".into()),
            ]
        );
    }
}
