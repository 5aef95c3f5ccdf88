//! GET and LIST: single objects, paged lists with continue tokens, resourceVersion semantics, selectors,
//! and Table or metadata-only (`partial.rs`) output.

use std::sync::Arc;

use axum::response::Response;
use base64::Engine;
use serde_json::{Map, Value, json};

use super::convert;
use super::http::{json_bytes, json_value};
use super::partial;
use super::request::{Output, Query};
use super::resources::ResourceDef;
use super::selectors::{FieldSelector, LabelSelector};
use super::server::{Shared, Target};
use super::status::{ApiError, Cause};
use super::store::ObjectKey;
use super::table::{self, IncludeObject};

/// `GET` of one object (or its `/status`).
pub fn get(shared: &Shared, target: &Target, query: &Query, output: Output) -> Result<Response, ApiError> {
    let name = target.name.as_deref().unwrap_or("");
    let stored = shared
        .store
        .read(|r| r.get(&target.gr(), target.namespace_key(), name))
        .ok_or_else(|| ApiError::not_found(&target.gr(), name))?;
    match output {
        Output::Table => {
            let out = convert::to_output(&target.def, &target.version, &stored);
            let include = IncludeObject::parse(query.get("includeObject")).map_err(ApiError::bad_request)?;
            let mut meta = Map::new();
            meta.insert("resourceVersion".into(), json!(super::meta::resource_version(&out)));
            let table = table::build(&target.def, &target.version, &[Arc::new(out)], meta, include, true);
            Ok(json_value(200, &table, &[]))
        }
        Output::Metadata { list: false, version } => Ok(json_bytes(200, partial::object_bytes(&stored, version), &[])),
        Output::Metadata { list: true, .. } => Err(partial::form_mismatch(&target.def, true)),
        Output::Object => Ok(json_value(
            200,
            &convert::to_output(&target.def, &target.version, &stored),
            &[],
        )),
    }
}

/// Parsed and validated list parameters.
pub struct ListParams {
    /// Label selector.
    pub labels: LabelSelector,
    /// Field selector.
    pub fields: FieldSelector,
}

/// Parses and checks `labelSelector` and `fieldSelector` for a resource.
pub fn selectors(target: &Target, query: &Query) -> Result<ListParams, ApiError> {
    let labels = LabelSelector::parse(query.get("labelSelector").unwrap_or(""))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let fields = FieldSelector::parse(query.get("fieldSelector").unwrap_or(""))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    fields
        .check_supported(&target.def, &target.version)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok(ListParams { labels, fields })
}

/// Whether an object passes both selectors (after conversion to the served form).
pub fn selected(params: &ListParams, obj: &Value) -> bool {
    params.labels.matches(&super::meta::labels(obj)) && params.fields.matches(obj)
}

fn list_options_invalid(field: &str, reason: &str, message: &str) -> ApiError {
    let cause = Cause {
        reason: reason.into(),
        message: message.into(),
        field: field.into(),
    };
    ApiError::invalid("meta.k8s.io", "ListOptions", "", vec![cause])
}

fn encode_continue(rv: u64, key: &ObjectKey, namespaced: bool) -> String {
    let start = if namespaced {
        format!("{}/{}\u{0}", key.0, key.1)
    } else {
        format!("{}\u{0}", key.1)
    };
    let token = json!({"v":"meta.k8s.io/v1","rv": rv,"start": start});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(&token).unwrap_or_default())
}

fn decode_continue(token: &str, namespaced: bool) -> Result<(u64, ObjectKey), ApiError> {
    let bad = |why: &str| ApiError::bad_request(format!("invalid continue token: {why}"));
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|e| bad(&e.to_string()))?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| bad(&e.to_string()))?;
    if value.get("v").and_then(Value::as_str) != Some("meta.k8s.io/v1") {
        return Err(bad(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ));
    }
    let rv = value
        .get("rv")
        .and_then(Value::as_u64)
        .ok_or_else(|| bad("missing resourceVersion"))?;
    let start = value
        .get("start")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("missing start"))?;
    let start = start.trim_end_matches('\u{0}');
    let key = if namespaced {
        let (ns, name) = start.split_once('/').ok_or_else(|| bad("continue key is not valid"))?;
        (ns.to_string(), name.to_string())
    } else {
        (String::new(), start.to_string())
    };
    Ok((rv, key))
}

/// `GET` of a collection.
pub fn list(shared: &Shared, target: &Target, query: &Query, output: Output) -> Result<Response, ApiError> {
    let params = selectors(target, query)?;
    let rv_param = query.get("resourceVersion").filter(|s| !s.is_empty());
    let rv_match = query.get("resourceVersionMatch").filter(|s| !s.is_empty());
    let continue_token = query.get("continue").filter(|s| !s.is_empty());
    if query.has("sendInitialEvents") {
        return Err(list_options_invalid(
            "sendInitialEvents",
            "FieldValueForbidden",
            "Forbidden: sendInitialEvents is forbidden for list",
        ));
    }
    if let Some(m) = rv_match {
        if rv_param.is_none() {
            return Err(list_options_invalid(
                "resourceVersionMatch",
                "FieldValueForbidden",
                "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if continue_token.is_some() {
            return Err(list_options_invalid(
                "resourceVersionMatch",
                "FieldValueForbidden",
                "Forbidden: resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if m != "Exact" && m != "NotOlderThan" {
            return Err(list_options_invalid(
                "resourceVersionMatch",
                "FieldValueNotSupported",
                &format!("Unsupported value: \"{m}\": supported values: \"Exact\", \"NotOlderThan\", \"\""),
            ));
        }
        if m == "Exact" && rv_param == Some("0") {
            return Err(list_options_invalid(
                "resourceVersionMatch",
                "FieldValueForbidden",
                "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
    }
    if continue_token.is_some() && rv_param.is_some_and(|rv| rv != "0") {
        return Err(ApiError::bad_request(
            "specifying resource version is not allowed when using continue",
        ));
    }
    let requested_rv: Option<u64> = match rv_param {
        Some(rv) => Some(
            rv.parse()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv}")))?,
        ),
        None => None,
    };
    let limit: usize = match query.get("limit").filter(|s| !s.is_empty()) {
        Some(l) => l
            .parse::<i64>()
            .map_err(|_| ApiError::bad_request(format!("invalid limit: {l}")))?
            .max(0) as usize,
        None => 0,
    };
    let limit = if requested_rv == Some(0) { 0 } else { limit };
    let namespaced = target.def.namespaced;
    let start = continue_token.map(|t| decode_continue(t, namespaced)).transpose()?;

    let gr = target.gr();
    let convert_needed = convert::needs_conversion(&target.def, &target.version);
    let filtering = !params.labels.is_empty() || !params.fields.is_empty();
    let mut items: Vec<Arc<Value>> = Vec::new();
    let mut last_key: Option<ObjectKey> = None;
    let mut more = false;
    // One pass under the lock: collect up to `limit` matches, then note whether anything else matches.
    let (current_rv, compacted, remaining) = shared.store.read(|r| {
        let after = start.as_ref().map(|(_, key)| key);
        let remaining = r.scan(&gr, target.namespace.as_deref(), after, |key, obj| {
            let served = if convert_needed {
                Arc::new(convert::to_output(&target.def, &target.version, obj))
            } else {
                obj.clone()
            };
            if filtering && !selected(&params, &served) {
                return true;
            }
            if limit > 0 && items.len() == limit {
                more = true;
                return false;
            }
            items.push(served);
            last_key = Some(key.clone());
            true
        });
        (r.rv(), r.compacted_rv(), remaining)
    });
    if let Some(rv) = requested_rv
        && rv > current_rv
    {
        return Err(ApiError::too_large_resource_version(rv, current_rv));
    }
    if rv_match == Some("Exact") && requested_rv.is_some_and(|rv| rv < compacted || rv != current_rv) {
        return Err(ApiError::expired(
            "The resourceVersion for the provided list is too old.",
        ));
    }
    if let Some((token_rv, _)) = &start
        && *token_rv < compacted
    {
        return Err(ApiError::expired(
            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
        ));
    }
    let list_rv = start.as_ref().map_or(current_rv, |(rv, _)| *rv);
    let mut meta = Map::new();
    meta.insert("resourceVersion".into(), json!(list_rv.to_string()));
    let mut continue_value = String::new();
    if more && let Some(key) = &last_key {
        continue_value = encode_continue(list_rv, key, namespaced);
        meta.insert("continue".into(), json!(continue_value));
        if !filtering {
            // The object that stopped the scan is one of the remaining ones.
            meta.insert("remainingItemCount".into(), json!(remaining + 1));
        }
    }
    match output {
        Output::Table => {
            let include = IncludeObject::parse(query.get("includeObject")).map_err(ApiError::bad_request)?;
            let table = table::build(&target.def, &target.version, &items, meta, include, true);
            Ok(json_value(200, &table, &[]))
        }
        Output::Metadata { list: true, version } => Ok(json_bytes(
            200,
            partial::list_bytes(items.iter().map(|item| &**item), &meta, version),
            &[],
        )),
        Output::Metadata { list: false, .. } => Err(partial::form_mismatch(&target.def, false)),
        Output::Object => Ok(json_bytes(
            200,
            list_body(&target.def, &target.version, &items, &meta, &continue_value),
            &[],
        )),
    }
}

/// Serializes a list: custom resources as unstructured (sorted keys, items with kind, `continue` always
/// present); built-ins as typed lists (Go field order, items without kind/apiVersion).
pub fn list_body(
    def: &ResourceDef,
    version: &str,
    items: &[Arc<Value>],
    meta: &Map<String, Value>,
    continue_value: &str,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(items.len() * 512 + 256);
    let api_version = def.api_version(version);
    let list_kind = &def.list_kind;
    if def.is_custom() {
        let mut meta = meta.clone();
        meta.insert("continue".into(), json!(continue_value));
        out.extend_from_slice(format!("{{\"apiVersion\":{},\"items\":[", json!(api_version)).as_bytes());
        write_items(&mut out, items, false);
        out.extend_from_slice(format!("],\"kind\":{},\"metadata\":", json!(list_kind)).as_bytes());
        out.extend_from_slice(&serde_json::to_vec(&meta).unwrap_or_default());
        out.push(b'}');
    } else {
        let mut ordered = Vec::new();
        if let Some(rv) = meta.get("resourceVersion") {
            ordered.push(format!("\"resourceVersion\":{rv}"));
        }
        if let Some(c) = meta.get("continue") {
            ordered.push(format!("\"continue\":{c}"));
        }
        if let Some(n) = meta.get("remainingItemCount") {
            ordered.push(format!("\"remainingItemCount\":{n}"));
        }
        out.extend_from_slice(
            format!(
                "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{{{}}},\"items\":[",
                json!(list_kind),
                json!(api_version),
                ordered.join(",")
            )
            .as_bytes(),
        );
        write_items(&mut out, items, true);
        out.extend_from_slice(b"]}");
    }
    out
}

fn write_items(out: &mut Vec<u8>, items: &[Arc<Value>], strip_type: bool) {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if strip_type && let Value::Object(map) = &**item {
            // Typed list items carry no kind/apiVersion; write the object without them, no copy.
            out.push(b'{');
            let mut first = true;
            for (k, v) in map {
                if k == "kind" || k == "apiVersion" {
                    continue;
                }
                if !first {
                    out.push(b',');
                }
                first = false;
                let _ = serde_json::to_writer(&mut *out, k);
                out.push(b':');
                let _ = serde_json::to_writer(&mut *out, v);
            }
            out.push(b'}');
        } else {
            let _ = serde_json::to_writer(&mut *out, &**item);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip() {
        let key = ("default".to_string(), "g1".to_string());
        let token = encode_continue(12, &key, true);
        assert_eq!(decode_continue(&token, true).unwrap(), (12, key));
        assert!(decode_continue("!!!", true).is_err());
    }
}
