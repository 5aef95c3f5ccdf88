//! Request bodies in the Kubernetes protobuf encoding (`application/vnd.kubernetes.protobuf`).
//!
//! kubectl's typed clients send built-in objects this way (`kubectl create configmap|secret|namespace|
//! serviceaccount|role|rolebinding|clusterrole|clusterrolebinding`). The emulator decodes those kinds into
//! their JSON form; any other protobuf body gets the 415 a server without that codec gives. Message layouts
//! and field numbers follow `k8s.io/api/{core,rbac}/v1/generated.proto` and apimachinery's
//! `meta/v1/generated.proto` and `runtime/generated.proto`.

use std::collections::BTreeMap;

use base64::Engine;
use prost::Message;
use serde_json::{Map, Value, json};

use super::status::ApiError;

/// The content type of protobuf bodies.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// Every body starts with these four bytes, then a `runtime.Unknown`.
const MAGIC: &[u8] = b"k8s\x00";

#[derive(Clone, PartialEq, Message)]
struct TypeMeta {
    #[prost(string, optional, tag = "1")]
    api_version: Option<String>,
    #[prost(string, optional, tag = "2")]
    kind: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct Unknown {
    #[prost(message, optional, tag = "1")]
    type_meta: Option<TypeMeta>,
    #[prost(bytes = "vec", optional, tag = "2")]
    raw: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct Time {
    #[prost(int64, optional, tag = "1")]
    seconds: Option<i64>,
    #[prost(int32, optional, tag = "2")]
    nanos: Option<i32>,
}

#[derive(Clone, PartialEq, Message)]
struct OwnerReference {
    #[prost(string, optional, tag = "1")]
    kind: Option<String>,
    #[prost(string, optional, tag = "3")]
    name: Option<String>,
    #[prost(string, optional, tag = "4")]
    uid: Option<String>,
    #[prost(string, optional, tag = "5")]
    api_version: Option<String>,
    #[prost(bool, optional, tag = "6")]
    controller: Option<bool>,
    #[prost(bool, optional, tag = "7")]
    block_owner_deletion: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
struct ObjectMeta {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(string, optional, tag = "2")]
    generate_name: Option<String>,
    #[prost(string, optional, tag = "3")]
    namespace: Option<String>,
    #[prost(string, optional, tag = "5")]
    uid: Option<String>,
    #[prost(string, optional, tag = "6")]
    resource_version: Option<String>,
    #[prost(int64, optional, tag = "7")]
    generation: Option<i64>,
    #[prost(message, optional, tag = "8")]
    creation_timestamp: Option<Time>,
    #[prost(btree_map = "string, string", tag = "11")]
    labels: BTreeMap<String, String>,
    #[prost(btree_map = "string, string", tag = "12")]
    annotations: BTreeMap<String, String>,
    #[prost(message, repeated, tag = "13")]
    owner_references: Vec<OwnerReference>,
    #[prost(string, repeated, tag = "14")]
    finalizers: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct ConfigMap {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(btree_map = "string, string", tag = "2")]
    data: BTreeMap<String, String>,
    #[prost(btree_map = "string, bytes", tag = "3")]
    binary_data: BTreeMap<String, Vec<u8>>,
    #[prost(bool, optional, tag = "4")]
    immutable: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
struct Secret {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(btree_map = "string, bytes", tag = "2")]
    data: BTreeMap<String, Vec<u8>>,
    #[prost(string, optional, tag = "3")]
    type_: Option<String>,
    #[prost(btree_map = "string, string", tag = "4")]
    string_data: BTreeMap<String, String>,
    #[prost(bool, optional, tag = "5")]
    immutable: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
struct NamespaceSpec {
    #[prost(string, repeated, tag = "1")]
    finalizers: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct Namespace {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<NamespaceSpec>,
}

#[derive(Clone, PartialEq, Message)]
struct ObjectReference {
    #[prost(string, optional, tag = "1")]
    kind: Option<String>,
    #[prost(string, optional, tag = "2")]
    namespace: Option<String>,
    #[prost(string, optional, tag = "3")]
    name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct LocalObjectReference {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct ServiceAccount {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "2")]
    secrets: Vec<ObjectReference>,
    #[prost(message, repeated, tag = "3")]
    image_pull_secrets: Vec<LocalObjectReference>,
    #[prost(bool, optional, tag = "4")]
    automount_service_account_token: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
struct PolicyRule {
    #[prost(string, repeated, tag = "1")]
    verbs: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    api_groups: Vec<String>,
    #[prost(string, repeated, tag = "3")]
    resources: Vec<String>,
    #[prost(string, repeated, tag = "4")]
    resource_names: Vec<String>,
    #[prost(string, repeated, tag = "5")]
    non_resource_urls: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct Role {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "2")]
    rules: Vec<PolicyRule>,
}

#[derive(Clone, PartialEq, Message)]
struct Subject {
    #[prost(string, optional, tag = "1")]
    kind: Option<String>,
    #[prost(string, optional, tag = "2")]
    api_group: Option<String>,
    #[prost(string, optional, tag = "3")]
    name: Option<String>,
    #[prost(string, optional, tag = "4")]
    namespace: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct RoleRef {
    #[prost(string, optional, tag = "1")]
    api_group: Option<String>,
    #[prost(string, optional, tag = "2")]
    kind: Option<String>,
    #[prost(string, optional, tag = "3")]
    name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct RoleBinding {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "2")]
    subjects: Vec<Subject>,
    #[prost(message, optional, tag = "3")]
    role_ref: Option<RoleRef>,
}

/// Builds a JSON object from `(key, value)` pairs, leaving out absent values and empty collections.
#[derive(Clone, PartialEq, Message)]
struct BoundObjectReference {
    #[prost(string, optional, tag = "1")]
    kind: Option<String>,
    #[prost(string, optional, tag = "2")]
    api_version: Option<String>,
    #[prost(string, optional, tag = "3")]
    name: Option<String>,
    #[prost(string, optional, tag = "4")]
    uid: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct TokenRequestSpec {
    #[prost(string, repeated, tag = "1")]
    audiences: Vec<String>,
    #[prost(message, optional, tag = "3")]
    bound_object_ref: Option<BoundObjectReference>,
    #[prost(int64, optional, tag = "4")]
    expiration_seconds: Option<i64>,
}

#[derive(Clone, PartialEq, Message)]
struct TokenRequest {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<TokenRequestSpec>,
}

#[derive(Clone, PartialEq, Message)]
struct ResourceAttributes {
    #[prost(string, optional, tag = "1")]
    namespace: Option<String>,
    #[prost(string, optional, tag = "2")]
    verb: Option<String>,
    #[prost(string, optional, tag = "3")]
    group: Option<String>,
    #[prost(string, optional, tag = "4")]
    version: Option<String>,
    #[prost(string, optional, tag = "5")]
    resource: Option<String>,
    #[prost(string, optional, tag = "6")]
    subresource: Option<String>,
    #[prost(string, optional, tag = "7")]
    name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct NonResourceAttributes {
    #[prost(string, optional, tag = "1")]
    path: Option<String>,
    #[prost(string, optional, tag = "2")]
    verb: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct ExtraValue {
    #[prost(string, repeated, tag = "1")]
    items: Vec<String>,
}

/// The spec of every access review (SelfSubjectAccessReviewSpec uses fields 1 and 2 only).
#[derive(Clone, PartialEq, Message)]
struct AccessReviewSpec {
    #[prost(message, optional, tag = "1")]
    resource_attributes: Option<ResourceAttributes>,
    #[prost(message, optional, tag = "2")]
    non_resource_attributes: Option<NonResourceAttributes>,
    #[prost(string, optional, tag = "3")]
    user: Option<String>,
    #[prost(string, repeated, tag = "4")]
    groups: Vec<String>,
    #[prost(btree_map = "string, message", tag = "5")]
    extra: BTreeMap<String, ExtraValue>,
    #[prost(string, optional, tag = "6")]
    uid: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct AccessReview {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<AccessReviewSpec>,
}

#[derive(Clone, PartialEq, Message)]
struct RulesReviewSpec {
    #[prost(string, optional, tag = "1")]
    namespace: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct RulesReview {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<RulesReviewSpec>,
}

fn opt_string(value: &Option<String>) -> Option<Value> {
    value.clone().map(Value::String)
}

fn object(pairs: Vec<(&str, Option<Value>)>) -> Value {
    let mut map = Map::new();
    for (key, value) in pairs {
        match value {
            None => {}
            Some(Value::Array(items)) if items.is_empty() => {}
            Some(Value::Object(m)) if m.is_empty() => {}
            // Go's `omitempty` drops empty strings from the JSON form.
            Some(Value::String(text)) if text.is_empty() => {}
            Some(v) => {
                map.insert(key.to_string(), v);
            }
        }
    }
    Value::Object(map)
}

fn strings(items: &[String]) -> Option<Value> {
    Some(json!(items))
}

fn string_map(map: &BTreeMap<String, String>) -> Option<Value> {
    Some(json!(map))
}

fn bytes_map(map: &BTreeMap<String, Vec<u8>>) -> Option<Value> {
    let encoded: BTreeMap<&String, String> = map
        .iter()
        .map(|(k, v)| (k, base64::engine::general_purpose::STANDARD.encode(v)))
        .collect();
    Some(json!(encoded))
}

fn time(t: &Option<Time>) -> Option<Value> {
    let t = t.as_ref()?;
    let at = chrono::DateTime::from_timestamp(t.seconds.unwrap_or(0), 0)?;
    Some(json!(at.format("%Y-%m-%dT%H:%M:%SZ").to_string()))
}

fn metadata(m: &Option<ObjectMeta>) -> Option<Value> {
    let m = m.as_ref()?;
    let owners: Vec<Value> = m
        .owner_references
        .iter()
        .map(|o| {
            object(vec![
                ("apiVersion", o.api_version.clone().map(Value::String)),
                ("kind", o.kind.clone().map(Value::String)),
                ("name", o.name.clone().map(Value::String)),
                ("uid", o.uid.clone().map(Value::String)),
                ("controller", o.controller.map(Value::Bool)),
                ("blockOwnerDeletion", o.block_owner_deletion.map(Value::Bool)),
            ])
        })
        .collect();
    Some(object(vec![
        ("name", m.name.clone().map(Value::String)),
        ("generateName", m.generate_name.clone().map(Value::String)),
        ("namespace", m.namespace.clone().map(Value::String)),
        ("uid", m.uid.clone().map(Value::String)),
        (
            "resourceVersion",
            m.resource_version.clone().filter(|s| !s.is_empty()).map(Value::String),
        ),
        ("generation", m.generation.map(|g| json!(g))),
        ("creationTimestamp", time(&m.creation_timestamp)),
        ("labels", string_map(&m.labels)),
        ("annotations", string_map(&m.annotations)),
        ("ownerReferences", Some(Value::Array(owners))),
        ("finalizers", strings(&m.finalizers)),
    ]))
}

fn bad(kind: &str, err: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!("{kind} in version \"v1\" cannot be handled as a {kind}: {err}"))
}

/// Whether a kind's protobuf form can be decoded.
pub fn supports(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        ("", "ConfigMap" | "Secret" | "Namespace" | "ServiceAccount")
            | (
                "rbac.authorization.k8s.io",
                "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding"
            )
            | ("authentication.k8s.io", "TokenRequest" | "SelfSubjectReview")
            | (
                "authorization.k8s.io",
                "SelfSubjectAccessReview"
                    | "SubjectAccessReview"
                    | "LocalSubjectAccessReview"
                    | "SelfSubjectRulesReview"
            )
    )
}

/// Decodes a protobuf body of a built-in kind into its JSON form (with `apiVersion` and `kind`).
pub fn decode(group: &str, kind: &str, body: &[u8]) -> Result<Value, ApiError> {
    let payload = body.strip_prefix(MAGIC).ok_or_else(|| {
        bad(
            kind,
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]",
        )
    })?;
    let unknown = Unknown::decode(payload).map_err(|e| bad(kind, e))?;
    let raw = unknown.raw.unwrap_or_default();
    let api_version = if group.is_empty() {
        "v1".to_string()
    } else {
        format!("{group}/v1")
    };
    let mut value = match (group, kind) {
        ("", "ConfigMap") => {
            let m = ConfigMap::decode(raw.as_slice()).map_err(|e| bad(kind, e))?;
            object(vec![
                ("metadata", metadata(&m.metadata)),
                ("data", string_map(&m.data)),
                ("binaryData", bytes_map(&m.binary_data)),
                ("immutable", m.immutable.map(Value::Bool)),
            ])
        }
        ("", "Secret") => {
            let m = Secret::decode(raw.as_slice()).map_err(|e| bad(kind, e))?;
            object(vec![
                ("metadata", metadata(&m.metadata)),
                ("data", bytes_map(&m.data)),
                ("stringData", string_map(&m.string_data)),
                ("type", m.type_.map(Value::String)),
                ("immutable", m.immutable.map(Value::Bool)),
            ])
        }
        ("", "Namespace") => {
            let m = Namespace::decode(raw.as_slice()).map_err(|e| bad(kind, e))?;
            let spec = m.spec.map(|s| object(vec![("finalizers", strings(&s.finalizers))]));
            object(vec![("metadata", metadata(&m.metadata)), ("spec", spec)])
        }
        ("", "ServiceAccount") => {
            let m = ServiceAccount::decode(raw.as_slice()).map_err(|e| bad(kind, e))?;
            let secrets: Vec<Value> = m
                .secrets
                .iter()
                .map(|r| {
                    object(vec![
                        ("kind", r.kind.clone().map(Value::String)),
                        ("namespace", r.namespace.clone().map(Value::String)),
                        ("name", r.name.clone().map(Value::String)),
                    ])
                })
                .collect();
            let pulls: Vec<Value> = m
                .image_pull_secrets
                .iter()
                .map(|r| object(vec![("name", r.name.clone().map(Value::String))]))
                .collect();
            object(vec![
                ("metadata", metadata(&m.metadata)),
                ("secrets", Some(Value::Array(secrets))),
                ("imagePullSecrets", Some(Value::Array(pulls))),
                (
                    "automountServiceAccountToken",
                    m.automount_service_account_token.map(Value::Bool),
                ),
            ])
        }
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => {
            let m = Role::decode(raw.as_slice()).map_err(|e| bad(kind, e))?;
            let rules: Vec<Value> = m
                .rules
                .iter()
                .map(|r| {
                    object(vec![
                        ("verbs", Some(json!(r.verbs))),
                        ("apiGroups", strings(&r.api_groups)),
                        ("resources", strings(&r.resources)),
                        ("resourceNames", strings(&r.resource_names)),
                        ("nonResourceURLs", strings(&r.non_resource_urls)),
                    ])
                })
                .collect();
            object(vec![
                ("metadata", metadata(&m.metadata)),
                ("rules", Some(Value::Array(rules))),
            ])
        }
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            let m = RoleBinding::decode(raw.as_slice()).map_err(|e| bad(kind, e))?;
            let subjects: Vec<Value> = m
                .subjects
                .iter()
                .map(|s| {
                    object(vec![
                        ("kind", s.kind.clone().map(Value::String)),
                        ("apiGroup", s.api_group.clone().map(Value::String)),
                        ("name", s.name.clone().map(Value::String)),
                        ("namespace", s.namespace.clone().map(Value::String)),
                    ])
                })
                .collect();
            let role_ref = m.role_ref.map(|r| {
                object(vec![
                    ("apiGroup", r.api_group.map(Value::String)),
                    ("kind", r.kind.map(Value::String)),
                    ("name", r.name.map(Value::String)),
                ])
            });
            object(vec![
                ("metadata", metadata(&m.metadata)),
                ("subjects", Some(Value::Array(subjects))),
                ("roleRef", role_ref),
            ])
        }
        ("authentication.k8s.io", "TokenRequest") => {
            let m = TokenRequest::decode(raw.as_slice()).map_err(|e| bad(kind, e))?;
            let spec = m.spec.unwrap_or_default();
            let bound = spec.bound_object_ref.map(|b| {
                object(vec![
                    ("kind", opt_string(&b.kind)),
                    ("apiVersion", opt_string(&b.api_version)),
                    ("name", opt_string(&b.name)),
                    ("uid", opt_string(&b.uid)),
                ])
            });
            let spec = object(vec![
                ("audiences", strings(&spec.audiences)),
                ("expirationSeconds", spec.expiration_seconds.map(|s| json!(s))),
                ("boundObjectRef", bound),
            ]);
            object(vec![("metadata", metadata(&m.metadata)), ("spec", Some(spec))])
        }
        ("authentication.k8s.io", "SelfSubjectReview") => {
            let m = RulesReview::decode(raw.as_slice()).map_err(|e| bad(kind, e))?;
            object(vec![("metadata", metadata(&m.metadata))])
        }
        ("authorization.k8s.io", "SelfSubjectRulesReview") => {
            let m = RulesReview::decode(raw.as_slice()).map_err(|e| bad(kind, e))?;
            let spec = object(vec![("namespace", opt_string(&m.spec.unwrap_or_default().namespace))]);
            object(vec![("metadata", metadata(&m.metadata)), ("spec", Some(spec))])
        }
        ("authorization.k8s.io", _) => {
            let m = AccessReview::decode(raw.as_slice()).map_err(|e| bad(kind, e))?;
            let spec = m.spec.unwrap_or_default();
            let resource = spec.resource_attributes.map(|r| {
                object(vec![
                    ("namespace", opt_string(&r.namespace)),
                    ("verb", opt_string(&r.verb)),
                    ("group", opt_string(&r.group)),
                    ("version", opt_string(&r.version)),
                    ("resource", opt_string(&r.resource)),
                    ("subresource", opt_string(&r.subresource)),
                    ("name", opt_string(&r.name)),
                ])
            });
            let non_resource = spec
                .non_resource_attributes
                .map(|n| object(vec![("path", opt_string(&n.path)), ("verb", opt_string(&n.verb))]));
            let extra: BTreeMap<String, Vec<String>> = spec.extra.into_iter().map(|(k, v)| (k, v.items)).collect();
            let spec = object(vec![
                ("resourceAttributes", resource),
                ("nonResourceAttributes", non_resource),
                ("user", opt_string(&spec.user)),
                ("groups", strings(&spec.groups)),
                ("extra", Some(json!(extra))),
                ("uid", opt_string(&spec.uid)),
            ]);
            object(vec![("metadata", metadata(&m.metadata)), ("spec", Some(spec))])
        }
        _ => {
            return Err(ApiError::unsupported_media_type(&[
                "application/json",
                "application/yaml",
            ]));
        }
    };
    if let Value::Object(map) = &mut value {
        map.insert("apiVersion".into(), json!(api_version));
        map.insert("kind".into(), json!(kind));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(kind: &str, raw: Vec<u8>) -> Vec<u8> {
        let unknown = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some("v1".into()),
                kind: Some(kind.into()),
            }),
            raw: Some(raw),
        };
        let mut body = MAGIC.to_vec();
        body.extend(unknown.encode_to_vec());
        body
    }

    #[test]
    fn a_protobuf_secret_decodes_to_its_json_form() {
        let secret = Secret {
            metadata: Some(ObjectMeta {
                name: Some("creds".into()),
                labels: BTreeMap::from([("a".into(), "b".into())]),
                ..ObjectMeta::default()
            }),
            data: BTreeMap::from([("password".into(), b"s3cret".to_vec())]),
            type_: Some("Opaque".into()),
            ..Secret::default()
        };
        let value = decode("", "Secret", &envelope("Secret", secret.encode_to_vec())).unwrap();
        assert_eq!(
            value,
            json!({"apiVersion":"v1","kind":"Secret","metadata":{"name":"creds","labels":{"a":"b"}},"data":{"password":"czNjcmV0"},"type":"Opaque"})
        );
    }

    #[test]
    fn bodies_without_the_magic_prefix_are_rejected() {
        assert_eq!(decode("", "ConfigMap", b"{}").unwrap_err().code, 400);
    }
}
