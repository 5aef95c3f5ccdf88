//! OpenAPI v3 documents: the `/openapi/v3` index and one document per group-version, enough for kubectl's
//! create/apply/replace to find the `fieldValidation` parameter and validate server-side.
//! Custom resources carry their real `openAPIV3Schema` (with `x-kubernetes-*` extensions) under
//! `components.schemas`.
//!
//! `/openapi/v2` is served as a protobuf document without definitions: kubectl fetches it to validate a
//! `kind: List` on the client side (the only case the server-side check does not cover), finds no schema for
//! the items and leaves them to the server's strict field validation, which every item then passes through.

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::resources::Registry;

/// The content type kube-apiserver answers `/openapi/v2` with (kubectl asks for it as `…spec.v2@v1.0+protobuf`
/// and parses only protobuf).
pub const V2_CONTENT_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// The gnostic `openapi_v2.Document` fields the emulator fills: `swagger` (1) and `info` (2).
#[derive(Clone, PartialEq, prost::Message)]
struct V2Document {
    #[prost(string, tag = "1")]
    swagger: String,
    #[prost(message, optional, tag = "2")]
    info: Option<V2Info>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct V2Info {
    #[prost(string, tag = "1")]
    title: String,
    #[prost(string, tag = "2")]
    version: String,
}

/// The `/openapi/v2` body.
pub fn v2_document() -> Vec<u8> {
    use prost::Message;
    V2Document {
        swagger: "2.0".into(),
        info: Some(V2Info {
            title: "Kubernetes".into(),
            version: "v1.32.0".into(),
        }),
    }
    .encode_to_vec()
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

fn group_versions(registry: &Registry) -> BTreeMap<String, (String, String)> {
    let mut out = BTreeMap::new();
    for def in registry.all() {
        for v in &def.versions {
            out.insert(gv_path(&def.group, &v.name), (def.group.clone(), v.name.clone()));
        }
    }
    out
}

/// The `/openapi/v3` index.
pub fn index(registry: &Registry) -> Value {
    let mut paths = Map::new();
    for (path, (group, version)) in group_versions(registry) {
        let doc = document(registry, &group, &version).unwrap_or(Value::Null);
        let digest = Sha256::digest(serde_json::to_vec(&doc).unwrap_or_default());
        let hash = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(&digest[..16])
            .to_uppercase();
        paths.insert(
            path.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={hash}")}),
        );
    }
    json!({"paths": paths})
}

fn schema_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = if group.is_empty() {
        vec!["io", "k8s", "api", "core"]
    } else {
        group.split('.').rev().collect()
    };
    format!("{}.{}.{}", reversed.join("."), version, kind)
}

/// The document for one group-version, or `None` if it is not served.
pub fn document(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let defs: Vec<_> = registry
        .all()
        .filter(|d| d.group == group && d.version(version).is_some())
        .collect();
    if defs.is_empty() {
        return None;
    }
    let field_validation = json!({"name":"fieldValidation","in":"query","description":"fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields.","schema":{"type":"string","uniqueItems":true}});
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for def in defs {
        let gvk = json!({"group": def.group, "version": version, "kind": def.kind});
        let prefix = format!("/{}", gv_path(&def.group, version));
        let item = if def.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", def.plural)
        } else {
            format!("{prefix}/{}/{{name}}", def.plural)
        };
        let collection = item.trim_end_matches("/{name}").to_string();
        let name = schema_name(&def.group, version, &def.kind);
        let reference = json!({"$ref": format!("#/components/schemas/{name}")});
        let body = json!({"content":{"application/json":{"schema": reference}}});
        let ok = json!({"200":{"description":"OK","content":{"application/json":{"schema": reference}}}});
        paths.insert(
            item,
            json!({
                "get": {"x-kubernetes-action":"get","x-kubernetes-group-version-kind": gvk, "responses": ok},
                "put": {"x-kubernetes-action":"put","x-kubernetes-group-version-kind": gvk, "parameters":[field_validation], "requestBody": body, "responses": ok},
                "patch": {"x-kubernetes-action":"patch","x-kubernetes-group-version-kind": gvk, "parameters":[field_validation], "requestBody": {"content":{"application/merge-patch+json":{"schema":{"type":"object"}},"application/json-patch+json":{"schema":{"type":"object"}},"application/apply-patch+yaml":{"schema":{"type":"object"}}}}, "responses": ok},
                "delete": {"x-kubernetes-action":"delete","x-kubernetes-group-version-kind": gvk, "responses": ok},
            }),
        );
        paths.insert(
            collection,
            json!({
                "get": {"x-kubernetes-action":"list","x-kubernetes-group-version-kind": gvk, "responses": {"200":{"description":"OK"}}},
                "post": {"x-kubernetes-action":"post","x-kubernetes-group-version-kind": gvk, "parameters":[field_validation], "requestBody": body, "responses": ok},
            }),
        );
        let mut schema = def
            .version(version)
            .and_then(|v| v.schema.clone())
            .unwrap_or_else(|| json!({"type":"object","x-kubernetes-preserve-unknown-fields": true}));
        if let Value::Object(map) = &mut schema {
            map.insert("x-kubernetes-group-version-kind".into(), json!([gvk]));
        }
        schemas.insert(name, schema);
    }
    let info_version = "v1.32.2";
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": info_version},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_document_has_a_patch_operation_with_field_validation() {
        let registry = Registry::with_builtins();
        let doc = document(&registry, "", "v1").unwrap();
        let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "ConfigMap");
        assert_eq!(patch["parameters"][0]["name"], "fieldValidation");
        assert!(
            index(&registry)["paths"]["api/v1"]["serverRelativeURL"]
                .as_str()
                .unwrap()
                .starts_with("/openapi/v3/api/v1?hash=")
        );
    }
}
