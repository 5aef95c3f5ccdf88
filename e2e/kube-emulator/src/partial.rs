//! Metadata-only answers: `meta.k8s.io` `PartialObjectMetadata` and `PartialObjectMetadataList`, served when the
//! Accept header asks for `as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1` (kube-rs's
//! `Api<PartialObjectMeta<K>>`, `list_metadata`, `watch_metadata`, `metadata_watcher` and `Controller::owns`;
//! client-go's metadata informers).
//!
//! This follows apimachinery (`k8s.io/apiserver/pkg/endpoints/handlers`:
//! `asPartialObjectMetadata[List]` and `transformResponseObject` in `response.go`, `watchEmbeddedEncoder` in
//! `watch.go`):
//!
//! - an object is `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{…}}` carrying the
//!   object's whole `metadata` (labels, annotations, ownerReferences, finalizers, managedFields) and nothing else;
//! - a list is `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion",
//!   "continue","remainingItemCount"},"items":[…]}` (an empty `continue` omitted), each item with its kind and
//!   apiVersion. An empty list has `"items":null`: apimachinery builds the list from a nil slice and the field
//!   has no `omitempty` (kube-rs and client-go read it as empty);
//! - `Content-Type` stays `application/json`: `WriteObjectNegotiated` reports the serializer's media type, without
//!   the `as`/`g`/`v` parameters, as for Tables;
//! - the object form of a list, or the list form of one object, is a 406 NotAcceptable
//!   (`you requested PartialObjectMetadata, but the requested object is a list (*core.SecretList)`) reported after
//!   the request ran — a write is done by then;
//! - `Status` bodies (errors, deletions answered with a Status) are never transformed;
//! - in a watch every event object is transformed, bookmarks included; ERROR events keep their plain Status. A
//!   watch asking for `PartialObjectMetadataList` is answered 200 and ends without an event: the per-event
//!   transform fails for every object (kube-apiserver 1.36, seen by the conformance suite; the emulator used to
//!   send full objects).

use axum::body::Body;
use axum::http::header::CONTENT_LENGTH;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use super::resources::ResourceDef;
use super::status::ApiError;

/// The kind of one metadata-only object.
pub const KIND: &str = "PartialObjectMetadata";
/// The kind of a metadata-only list.
pub const LIST_KIND: &str = "PartialObjectMetadataList";

/// `PartialObjectMetadata` of `obj` in `meta.k8s.io/<version>`, in Go's field order.
pub fn object_bytes(obj: &Value, version: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    write_object(&mut out, obj, version);
    out
}

fn write_object(out: &mut Vec<u8>, obj: &Value, version: &str) {
    out.extend_from_slice(
        format!("{{\"kind\":\"{KIND}\",\"apiVersion\":\"meta.k8s.io/{version}\",\"metadata\":").as_bytes(),
    );
    match obj.get("metadata") {
        Some(metadata) => {
            let _ = serde_json::to_writer(&mut *out, metadata);
        }
        None => out.extend_from_slice(b"{}"),
    }
    out.push(b'}');
}

/// `PartialObjectMetadataList` of `items` with the list metadata `meta` (`resourceVersion`, `continue`,
/// `remainingItemCount`; an empty `continue` is left out).
pub fn list_bytes<'a>(items: impl IntoIterator<Item = &'a Value>, meta: &Map<String, Value>, version: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(1024);
    let mut list_meta = Vec::new();
    for key in ["resourceVersion", "continue", "remainingItemCount"] {
        match meta.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s.is_empty() => {}
            Some(value) => list_meta.push(format!("{}:{value}", Value::String(key.to_string()))),
        }
    }
    out.extend_from_slice(
        format!(
            "{{\"kind\":\"{LIST_KIND}\",\"apiVersion\":\"meta.k8s.io/{version}\",\"metadata\":{{{}}},\"items\":",
            list_meta.join(",")
        )
        .as_bytes(),
    );
    let mut items = items.into_iter().peekable();
    if items.peek().is_none() {
        out.extend_from_slice(b"null}");
        return out;
    }
    out.push(b'[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_object(&mut out, item, version);
    }
    out.extend_from_slice(b"]}");
    out
}

/// The 406 for asking a list's metadata as one object (`requested_list: false`) or an object's as a list.
pub fn form_mismatch(def: &ResourceDef, requested_list: bool) -> ApiError {
    if def.is_custom() && requested_list {
        // kube-apiserver 1.36 fails this one inside the custom-resource handler rather than refusing it: a
        // plain 500 (seen by the conformance suite on the real apiserver).
        return ApiError::plain(500, "content is not a list");
    }
    // The handler holds the internal type when it transforms: `*core.Secret`, `*rbac.RoleList`, and
    // `*unstructured.Unstructured[List]` for custom resources.
    let served_list = !requested_list;
    let go_type = if def.is_custom() {
        format!("*unstructured.Unstructured{}", if served_list { "List" } else { "" })
    } else {
        let package = match def.group.as_str() {
            "" | "events.k8s.io" => "core",
            group => group.split('.').next().unwrap_or(group),
        };
        let kind = if served_list { &def.list_kind } else { &def.kind };
        format!("*{package}.{kind}")
    };
    let message = if requested_list {
        format!("you requested {LIST_KIND}, but the requested object is not a list ({go_type})")
    } else {
        format!("you requested {KIND}, but the requested object is a list ({go_type})")
    };
    ApiError::not_acceptable(message)
}

/// Turns a write's answer (create, update, patch, delete, deletecollection) into its metadata-only form; error
/// statuses and `Status` bodies pass unchanged.
pub async fn transform_response(response: Response, def: &ResourceDef, list: bool, version: &str) -> Response {
    if !response.status().is_success() {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => bytes,
        Err(error) => return ApiError::internal(&error.to_string()).into_response(),
    };
    let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind == "Status" {
        return Response::from_parts(parts, Body::from(bytes));
    }
    let items = value.get("items").and_then(Value::as_array);
    let is_list = items.is_some() && kind.ends_with("List");
    if is_list != list {
        return form_mismatch(def, list).into_response();
    }
    let body = match items {
        Some(items) if is_list => {
            let empty = Map::new();
            let meta = value.get("metadata").and_then(Value::as_object).unwrap_or(&empty);
            list_bytes(items, meta, version)
        }
        _ => object_bytes(&value, version),
    };
    parts.headers.remove(CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_keep_only_their_metadata_in_go_field_order() {
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "data": {"k": "dg=="},
            "metadata": {"name": "s", "namespace": "ns", "labels": {"a": "b"}}});
        let bytes = object_bytes(&secret, "v1");
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            r#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"labels":{"a":"b"},"name":"s","namespace":"ns"}}"#
        );
    }

    #[test]
    fn lists_carry_list_metadata_and_null_items_when_empty() {
        let mut meta = Map::new();
        meta.insert("resourceVersion".into(), json!("7"));
        meta.insert("continue".into(), json!(""));
        let empty: Vec<Value> = Vec::new();
        assert_eq!(
            String::from_utf8(list_bytes(&empty, &meta, "v1")).unwrap(),
            r#"{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"7"},"items":null}"#
        );
        meta.insert("continue".into(), json!("abc"));
        meta.insert("remainingItemCount".into(), json!(3));
        let items = [json!({"metadata": {"name": "a"}, "data": {}})];
        assert_eq!(
            String::from_utf8(list_bytes(&items, &meta, "v1beta1")).unwrap(),
            r#"{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1beta1","metadata":{"resourceVersion":"7","continue":"abc","remainingItemCount":3},"items":[{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1beta1","metadata":{"name":"a"}}]}"#
        );
    }
}
