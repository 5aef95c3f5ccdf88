//! The create-only APIs of authentication and authorization: TokenRequest (`kubectl create token`),
//! SelfSubjectAccessReview / SubjectAccessReview / LocalSubjectAccessReview (`kubectl auth can-i`),
//! SelfSubjectRulesReview (`kubectl auth can-i --list`), SelfSubjectReview (`kubectl auth whoami`) and
//! TokenReview. Nothing is stored: each answers with the request plus its `status`.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};

use super::super::http::json_value;
use super::super::meta;
use super::super::protobuf;
use super::super::resources::GroupResource;
use super::super::server::{Shared, Target};
use super::super::status::{ApiError, Cause};
use super::{Access, Attributes, ResourceAttributes, UserInfo};

/// The audience kube-apiserver gives tokens when the request names none.
const DEFAULT_AUDIENCE: &str = "https://kubernetes.default.svc.cluster.local";

fn invalid(group: &str, kind: &str, name: &str, field: &str, message: &str) -> ApiError {
    ApiError::invalid(
        group,
        kind,
        name,
        vec![Cause {
            reason: "FieldValueInvalid".into(),
            message: message.into(),
            field: field.into(),
        }],
    )
}

/// Decodes a request body of `group`/`kind` (JSON, or protobuf as kubectl's typed clients send it).
pub fn decode_body(headers: &HeaderMap, group: &str, kind: &str, body: &[u8]) -> Result<Value, ApiError> {
    if super::super::request::content_type(headers) == protobuf::CONTENT_TYPE {
        return protobuf::decode(group, kind, body);
    }
    if body.is_empty() {
        return Ok(json!({}));
    }
    parse_body(body, kind, "v1")
}

fn parse_body(body: &[u8], kind: &str, version: &str) -> Result<Value, ApiError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: {e}"
        ))
    })?;
    if !value.is_object() {
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: expected an object"
        )));
    }
    Ok(value)
}

/// `POST …/serviceaccounts/<name>/token`.
pub fn token_request(shared: &Shared, target: &Target, headers: &HeaderMap, body: &[u8]) -> Result<Response, ApiError> {
    let namespace = target.namespace_key().to_string();
    let name = target.name.clone().unwrap_or_default();
    let sa = shared
        .store
        .read(|r| r.get(&GroupResource::new("", "serviceaccounts"), &namespace, &name))
        .ok_or_else(|| ApiError::not_found(&GroupResource::new("", "serviceaccounts"), &name))?;
    let mut request = decode_body(headers, "authentication.k8s.io", "TokenRequest", body)?;
    let group = "authentication.k8s.io";
    for (field, wanted, what) in [("name", &name, "name"), ("namespace", &namespace, "namespace")] {
        let given = request
            .pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !given.is_empty() && given != wanted.as_str() {
            return Err(invalid(
                group,
                "TokenRequest",
                &name,
                &format!("metadata.{field}"),
                &format!("Invalid value: {given:?}: must match the service account {what} if specified"),
            ));
        }
    }
    let seconds = request
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(3600);
    if seconds < 600 {
        return Err(invalid(
            group,
            "TokenRequest",
            "",
            "spec.expirationSeconds",
            &format!("Invalid value: {seconds}: may not specify a duration less than 10 minutes"),
        ));
    }
    let audiences = request
        .pointer("/spec/audiences")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .cloned()
        .unwrap_or_else(|| vec![json!(DEFAULT_AUDIENCE)]);
    let lifetime = Duration::from_secs(u64::try_from(seconds).unwrap_or(3600));
    let (token, expires) = shared
        .authn
        .mint_service_account(&namespace, &name, meta::uid(&sa), lifetime);
    let expiry = jiff::Timestamp::try_from(expires)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    request["apiVersion"] = json!("authentication.k8s.io/v1");
    request["kind"] = json!("TokenRequest");
    request["metadata"] = json!({"name": name, "namespace": namespace, "creationTimestamp": null});
    request["spec"]["audiences"] = Value::Array(audiences);
    request["spec"]["expirationSeconds"] = json!(seconds);
    if request["spec"].get("boundObjectRef").is_none() {
        request["spec"]["boundObjectRef"] = Value::Null;
    }
    request["status"] = json!({"token": token, "expirationTimestamp": expiry});
    Ok(json_value(201, &request, &[]))
}

fn resource_attributes(spec: &Value) -> ResourceAttributes {
    let field = |key: &str| spec.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    ResourceAttributes {
        verb: field("verb"),
        group: field("group"),
        resource: field("resource"),
        subresource: field("subresource"),
        namespace: field("namespace"),
        name: field("name"),
    }
}

fn review_attributes(kind: &str, spec: &Value) -> Result<Attributes, ApiError> {
    let resource = spec.get("resourceAttributes").filter(|v| !v.is_null());
    let non_resource = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
    let group = "authorization.k8s.io";
    match (resource, non_resource) {
        (Some(r), None) => Ok(Attributes::Resource(resource_attributes(r))),
        (None, Some(n)) => Ok(Attributes::NonResource {
            verb: n.get("verb").and_then(Value::as_str).unwrap_or_default().to_string(),
            path: n.get("path").and_then(Value::as_str).unwrap_or_default().to_string(),
        }),
        (Some(_), Some(n)) => Err(invalid(
            group,
            kind,
            "",
            "spec.nonResourceAttributes",
            &format!("Invalid value: {n}: cannot be specified in combination with resourceAttributes"),
        )),
        (None, None) => Err(invalid(
            group,
            kind,
            "",
            "spec.resourceAttributes",
            "Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
    }
}

fn user_from_spec(spec: &Value) -> UserInfo {
    let extra: BTreeMap<String, Vec<String>> = spec
        .get("extra")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), meta::string_list(Some(v)))).collect())
        .unwrap_or_default();
    UserInfo {
        name: spec.get("user").and_then(Value::as_str).unwrap_or_default().to_string(),
        uid: spec.get("uid").and_then(Value::as_str).unwrap_or_default().to_string(),
        groups: meta::string_list(spec.get("groups")),
        extra,
    }
}

fn answer(mut request: Value, api_version: &str, kind: &str, status: Value) -> Response {
    request["apiVersion"] = json!(api_version);
    request["kind"] = json!(kind);
    let namespace = request
        .pointer("/metadata/namespace")
        .cloned()
        .filter(|v| v.as_str().is_some_and(|s| !s.is_empty()));
    request["metadata"] = json!({"creationTimestamp": null});
    if let Some(namespace) = namespace {
        request["metadata"]["namespace"] = namespace;
    }
    request["status"] = status;
    json_value(201, &request, &[])
}

fn access_status(access: &Access, user: &UserInfo, attributes: &Attributes) -> Value {
    let verdict = access.rbac.authorize(user, attributes);
    let mut status = json!({"allowed": verdict.allowed});
    if !verdict.reason.is_empty() {
        status["reason"] = json!(verdict.reason);
    }
    status
}

/// Answers a create on one of the review resources.
pub fn review(
    shared: &Shared,
    access: &Access,
    target: &Target,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    let kind = target.def.kind.as_str();
    let api_version = target.def.api_version(&target.version);
    let request = decode_body(headers, &target.def.group, kind, body)?;
    let spec = request.get("spec").cloned().unwrap_or_else(|| json!({}));
    match kind {
        "SelfSubjectAccessReview" => {
            let attributes = review_attributes(kind, &spec)?;
            let status = access_status(access, &access.user, &attributes);
            Ok(answer(request, &api_version, kind, status))
        }
        "SubjectAccessReview" | "LocalSubjectAccessReview" => {
            let user = user_from_spec(&spec);
            if user.name.is_empty() && user.groups.is_empty() {
                return Err(invalid(
                    "authorization.k8s.io",
                    kind,
                    "",
                    "spec.user",
                    "Invalid value: \"\": at least one of user or group must be specified",
                ));
            }
            let mut attributes = review_attributes(kind, &spec)?;
            if kind == "LocalSubjectAccessReview" {
                let Attributes::Resource(r) = &mut attributes else {
                    return Err(invalid(
                        "authorization.k8s.io",
                        kind,
                        "",
                        "spec.nonResourceAttributes",
                        "Invalid value: \"\": disallowed on this kind of request",
                    ));
                };
                let namespace = target.namespace_key().to_string();
                if !r.namespace.is_empty() && r.namespace != namespace {
                    return Err(invalid(
                        "authorization.k8s.io",
                        kind,
                        "",
                        "spec.resourceAttributes.namespace",
                        &format!("Invalid value: {:?}: must match metadata.namespace", r.namespace),
                    ));
                }
                r.namespace = namespace;
            }
            let status = access_status(access, &user, &attributes);
            Ok(answer(request, &api_version, kind, status))
        }
        "SelfSubjectRulesReview" => {
            let namespace = spec.get("namespace").and_then(Value::as_str).unwrap_or_default();
            if namespace.is_empty() {
                return Err(ApiError::bad_request("no namespace on request"));
            }
            let (rules, errors) = if access.user.is_master() {
                let cluster_admin = access.rbac.referenced_rules("ClusterRole", "cluster-admin", "");
                (cluster_admin.unwrap_or_default(), Vec::new())
            } else {
                access.rbac.rules_for(&access.user, namespace)
            };
            let resource_rules: Vec<Value> = rules
                .iter()
                .filter(|r| !r.resources.is_empty())
                .map(|r| {
                    let mut v = json!({"verbs": r.verbs, "apiGroups": r.api_groups, "resources": r.resources});
                    if !r.resource_names.is_empty() {
                        v["resourceNames"] = json!(r.resource_names);
                    }
                    v
                })
                .collect();
            let non_resource_rules: Vec<Value> = rules
                .iter()
                .filter(|r| !r.non_resource_urls.is_empty())
                .map(|r| json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls}))
                .collect();
            let mut status = json!({
                "resourceRules": resource_rules,
                "nonResourceRules": non_resource_rules,
                "incomplete": false,
            });
            if !errors.is_empty() {
                status["evaluationError"] = json!(errors.join(", "));
            }
            Ok(answer(request, &api_version, kind, status))
        }
        "SelfSubjectReview" => {
            let status = json!({"userInfo": user_json(&access.user)});
            Ok(answer(request, &api_version, kind, status))
        }
        "TokenReview" => {
            let token = spec.get("token").and_then(Value::as_str).unwrap_or_default();
            let mut headers = HeaderMap::new();
            let status = match axum::http::HeaderValue::from_str(&format!("Bearer {token}")) {
                Ok(value) => {
                    headers.insert("authorization", value);
                    match shared.authn.authenticate(&shared.store, &headers) {
                        Ok(user) => json!({"authenticated": true, "user": user_json(&user)}),
                        Err(_) => json!({"user": {}, "error": "invalid bearer token"}),
                    }
                }
                Err(_) => json!({"user": {}, "error": "invalid bearer token"}),
            };
            Ok(answer(request, &api_version, kind, status))
        }
        _ => Err(ApiError::method_not_allowed(&target.gr(), "create")),
    }
}

fn user_json(user: &UserInfo) -> Value {
    let mut value = json!({"username": user.name, "groups": user.groups});
    if !user.uid.is_empty() {
        value["uid"] = json!(user.uid);
    }
    if !user.extra.is_empty() {
        value["extra"] = json!(user.extra);
    }
    value
}
