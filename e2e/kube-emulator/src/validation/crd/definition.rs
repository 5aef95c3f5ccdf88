//! Validation and defaulting of CustomResourceDefinition objects (apiextensions
//! `validation.ValidateCustomResourceDefinition`): the mistakes a user hits —
//! `metadata.name` not `<plural>.<group>`, a group without a dot, missing names, no or several storage
//! versions, no served version, a non-structural schema (fields or items without `type`, arrays without
//! `items`), patterns and CEL rules that do not compile, `uniqueItems`, properties mixed with
//! additionalProperties.

use serde_json::{Value, json};

use super::super::go_format::{BadValue, quote};
use super::super::path;
use super::super::{FieldError, names, object_meta};
use super::schema::SchemaNode;

/// Fills what kube-apiserver defaults on a CRD: `names.singular` (lower-cased kind), `names.listKind`
/// (`<Kind>List`) and `conversion.strategy: None`.
pub fn default_crd(crd: &mut Value) {
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
        if names.get("singular").and_then(Value::as_str).is_none_or(str::is_empty) {
            names.insert("singular".into(), json!(kind.to_lowercase()));
        }
        if names.get("listKind").and_then(Value::as_str).is_none_or(str::is_empty) && !kind.is_empty() {
            names.insert("listKind".into(), json!(format!("{kind}List")));
        }
    }
    if !spec.get("conversion").is_some_and(Value::is_object) {
        spec.insert("conversion".into(), json!({"strategy": "None"}));
    }
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Validates a CRD on create (after [`default_crd`]).
pub fn validate_crd(crd: &Value) -> Vec<FieldError> {
    let required_name = format!("{}.{}", text(crd, "/spec/names/plural"), text(crd, "/spec/group"));
    let name_fn = |name: &str, prefix: bool| {
        let mut problems = names::name_is_dns_subdomain(name, prefix);
        if name != required_name {
            problems.push("must be spec.names.plural+\".\"+spec.group".to_string());
        }
        problems
    };
    let mut errs = object_meta::validate_object_meta(crd, false, &name_fn);
    errs.extend(validate_spec(crd));
    errs
}

/// Validates a CRD update: everything [`validate_crd`] checks, plus `spec.group` and `spec.scope`
/// immutability.
pub fn validate_crd_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = object_meta::validate_object_meta_update(new, old);
    errs.extend(validate_crd(new));
    for key in ["group", "scope"] {
        let (n, o) = (text(new, &format!("/spec/{key}")), text(old, &format!("/spec/{key}")));
        if n != o {
            errs.push(FieldError::invalid(path::child("spec", key), n, "field is immutable"));
        }
    }
    errs
}

fn validate_spec(crd: &Value) -> Vec<FieldError> {
    let spec = &crd["spec"];
    let mut errs = Vec::new();
    let group = text(crd, "/spec/group");
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    } else {
        let problems = names::is_dns1123_subdomain(group);
        if !problems.is_empty() {
            errs.push(FieldError::invalid("spec.group", group, &problems.join(",")));
        } else if !group.contains('.') {
            errs.push(FieldError::invalid(
                "spec.group",
                group,
                "should be a domain with at least one dot",
            ));
        }
    }
    let scope = text(crd, "/spec/scope");
    if scope.is_empty() {
        errs.push(FieldError::required("spec.scope", ""));
    } else if scope != "Cluster" && scope != "Namespaced" {
        errs.push(FieldError::not_supported(
            "spec.scope",
            scope,
            &["Cluster", "Namespaced"],
        ));
    }
    errs.extend(validate_versions(spec));
    errs.extend(validate_names(&spec["names"]));
    errs
}

fn validate_names(names_value: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let field = |key: &str| names_value.get(key).and_then(Value::as_str).unwrap_or("");
    for key in ["plural", "singular", "kind", "listKind"] {
        if field(key).is_empty() {
            errs.push(FieldError::required(path::child("spec.names", key), ""));
        }
    }
    for key in ["plural", "singular"] {
        let value = field(key);
        let problems = names::is_dns1035_label(value);
        if !value.is_empty() && !problems.is_empty() {
            errs.push(FieldError::invalid(
                path::child("spec.names", key),
                value,
                &problems.join(","),
            ));
        }
    }
    for key in ["kind", "listKind"] {
        let value = field(key);
        let problems = names::is_dns1035_label(&value.to_lowercase());
        if !value.is_empty() && !problems.is_empty() {
            errs.push(FieldError::invalid(
                path::child("spec.names", key),
                value,
                &format!(
                    "may have mixed case, but should otherwise match: {}",
                    problems.join(",")
                ),
            ));
        }
    }
    if !field("kind").is_empty() && field("kind") == field("listKind") {
        errs.push(FieldError::invalid(
            "spec.names.listKind",
            field("listKind"),
            "kind and listKind may not be the same",
        ));
    }
    for key in ["shortNames", "categories"] {
        for (i, entry) in names_value
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let value = entry.as_str().unwrap_or("");
            let problems = names::is_dns1035_label(value);
            if !problems.is_empty() {
                errs.push(FieldError::invalid(
                    path::index(&path::child("spec.names", key), i),
                    value,
                    &problems.join(","),
                ));
            }
        }
    }
    errs
}

/// Go's `%#v` of the versions list cannot be reproduced (it prints pointers); this stands in for it with
/// the fields that matter to the messages.
fn go_versions(versions: &[Value]) -> BadValue {
    let items: Vec<String> = versions
        .iter()
        .map(|v| {
            format!(
                "apiextensions.CustomResourceDefinitionVersion{{Name:{}, Served:{}, Storage:{}}}",
                quote(v["name"].as_str().unwrap_or("")),
                v["served"].as_bool().unwrap_or(false),
                v["storage"].as_bool().unwrap_or(false)
            )
        })
        .collect();
    BadValue::raw(format!(
        "[]apiextensions.CustomResourceDefinitionVersion{{{}}}",
        items.join(", ")
    ))
}

fn validate_versions(spec: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let versions: &[Value] = spec["versions"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let mut seen = std::collections::HashSet::new();
    let mut unique = true;
    for (i, version) in versions.iter().enumerate() {
        let at = path::index("spec.versions", i);
        let name = version["name"].as_str().unwrap_or("");
        unique &= seen.insert(name);
        let problems = names::is_dns1035_label(name);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(path::child(&at, "name"), name, &problems.join(",")));
        }
        let schema_at = path::child(&at, "schema.openAPIV3Schema");
        match version.pointer("/schema/openAPIV3Schema") {
            Some(schema) => errs.extend(validate_schema(schema, &schema_at)),
            None => errs.push(FieldError::required(schema_at, "schemas are required")),
        }
    }
    if !unique {
        errs.push(FieldError::invalid(
            "spec.versions",
            go_versions(versions),
            "must contain unique version names",
        ));
    }
    if versions.iter().filter(|v| v["storage"].as_bool() == Some(true)).count() != 1 {
        errs.push(FieldError::invalid(
            "spec.versions",
            go_versions(versions),
            "must have exactly one version marked as storage version",
        ));
    }
    if !versions.iter().any(|v| v["served"].as_bool() == Some(true)) {
        errs.push(FieldError::invalid(
            "spec.versions",
            go_versions(versions),
            "must have at least one version marked as served",
        ));
    }
    errs
}

/// The schema checks of one version: OpenAPI restrictions, structural invariants (sorted by text, as Go
/// sorts them) and compilation of patterns and CEL rules.
fn validate_schema(schema: &Value, at: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    openapi_restrictions(schema, at, &mut errs);
    let mut structural = Vec::new();
    structural_invariants(schema, Level::Root, at, &mut structural);
    structural.sort_by_key(ToString::to_string);
    errs.extend(structural);
    if let Err(problems) = SchemaNode::compile(schema) {
        errs.extend(problems.into_iter().map(|p| p.prefixed(at)));
    }
    errs
}

/// Restrictions of `ValidateCustomResourceDefinitionOpenAPISchema` that users hit.
fn openapi_restrictions(schema: &Value, at: &str, errs: &mut Vec<FieldError>) {
    let Some(map) = schema.as_object() else { return };
    if map.contains_key("$ref") {
        errs.push(FieldError::forbidden(path::child(at, "$ref"), "$ref is not supported"));
    }
    if map.get("uniqueItems").and_then(Value::as_bool) == Some(true) {
        errs.push(FieldError::forbidden(
            path::child(at, "uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    let has_properties = map
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    if has_properties && map.contains_key("additionalProperties") {
        errs.push(FieldError::forbidden(
            path::child(at, "additionalProperties"),
            "additionalProperties and properties are mutual exclusive",
        ));
    }
    for_each_subschema(map, at, |child, child_at| openapi_restrictions(child, child_at, errs));
}

fn for_each_subschema(map: &serde_json::Map<String, Value>, at: &str, mut visit: impl FnMut(&Value, &str)) {
    if let Some(properties) = map.get("properties").and_then(Value::as_object) {
        for (name, child) in properties {
            visit(child, &path::key(&path::child(at, "properties"), name));
        }
    }
    if let Some(items) = map.get("items").filter(|i| i.is_object()) {
        visit(items, &path::child(at, "items"));
    }
    if let Some(additional) = map.get("additionalProperties").filter(|a| a.is_object()) {
        visit(additional, &path::child(at, "additionalProperties"));
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for (i, branch) in map.get(key).and_then(Value::as_array).into_iter().flatten().enumerate() {
            visit(branch, &path::index(&path::child(at, key), i));
        }
    }
    if let Some(not) = map.get("not") {
        visit(not, &path::child(at, "not"));
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// The common cases of `validateStructuralInvariants`: types, items, embedded resources, root metadata.
fn structural_invariants(schema: &Value, level: Level, at: &str, errs: &mut Vec<FieldError>) {
    let Some(map) = schema.as_object() else { return };
    let flag = |key: &str| map.get(key).and_then(Value::as_bool) == Some(true);
    let ty = map.get("type").and_then(Value::as_str).unwrap_or("");
    let (embedded, int_or_string, preserve) = (
        flag("x-kubernetes-embedded-resource"),
        flag("x-kubernetes-int-or-string"),
        flag("x-kubernetes-preserve-unknown-fields"),
    );
    if ty == "array" && !map.contains_key("items") {
        errs.push(FieldError::required(path::child(at, "items"), "must be specified"));
    }
    if let Some(items) = map.get("items") {
        structural_invariants(items, Level::Item, &path::child(at, "items"), errs);
    }
    if let Some(properties) = map.get("properties").and_then(Value::as_object) {
        for (name, child) in properties {
            structural_invariants(
                child,
                Level::Field,
                &path::key(&path::child(at, "properties"), name),
                errs,
            );
        }
    }
    if let Some(additional) = map.get("additionalProperties") {
        if level == Level::Root {
            errs.push(FieldError::forbidden(
                path::child(at, "additionalProperties"),
                "must not be used at the root",
            ));
        }
        if additional.is_object() {
            structural_invariants(additional, Level::Field, &path::child(at, "additionalProperties"), errs);
        }
    }
    if int_or_string && preserve {
        errs.push(FieldError::invalid(
            path::child(at, "x-kubernetes-preserve-unknown-fields"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        errs.push(FieldError::invalid(
            path::child(at, "x-kubernetes-embedded-resource"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        let skip_int_or_string = int_or_string && key == "anyOf";
        for (i, branch) in map.get(key).and_then(Value::as_array).into_iter().flatten().enumerate() {
            if !skip_int_or_string {
                nested_value_validation(branch, &path::index(&path::child(at, key), i), errs);
            }
        }
    }
    if embedded && ty != "object" {
        let field = path::child(at, "type");
        let detail = "must be object if x-kubernetes-embedded-resource is true";
        errs.push(if ty.is_empty() {
            FieldError::required(field, detail)
        } else {
            FieldError::invalid(field, ty, detail)
        });
    } else if ty.is_empty() && !int_or_string && !preserve {
        let detail = match level {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldError::required(path::child(at, "type"), detail));
    }
    if embedded && map.contains_key("additionalProperties") {
        errs.push(FieldError::forbidden(
            path::child(at, "additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if level == Level::Root && !ty.is_empty() && ty != "object" {
        errs.push(FieldError::invalid(
            path::child(at, "type"),
            ty,
            "must be object at the root",
        ));
    }
    let properties = map.get("properties").and_then(Value::as_object);
    if level == Level::Root || embedded {
        for (key, expected) in [("kind", "string"), ("apiVersion", "string"), ("metadata", "object")] {
            if let Some(prop) = properties.and_then(|p| p.get(key)) {
                let prop_type = prop.get("type").and_then(Value::as_str).unwrap_or("");
                if prop_type != expected {
                    errs.push(FieldError::invalid(
                        path::child(&path::key(&path::child(at, "properties"), key), "type"),
                        prop_type,
                        &format!("must be {expected}"),
                    ));
                }
            }
        }
    }
    if level == Level::Root
        && let Some(metadata) = properties.and_then(|p| p.get("metadata")).and_then(Value::as_object)
    {
        let allowed = |k: &str| matches!(k, "type" | "description" | "properties");
        let props_ok = metadata
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(|p| p.keys().all(|k| k == "name" || k == "generateName"));
        if !props_ok || !metadata.keys().all(|k| allowed(k)) {
            errs.push(FieldError::forbidden(
                path::key(&path::child(at, "properties"), "metadata"),
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
    if embedded && !preserve && properties.is_none_or(|p| p.is_empty()) {
        errs.push(FieldError::required(
            path::child(at, "properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// `validateNestedValueValidation`: inside `allOf`/`anyOf`/`oneOf`/`not` only value validations may appear.
fn nested_value_validation(schema: &Value, at: &str, errs: &mut Vec<FieldError>) {
    let Some(map) = schema.as_object() else { return };
    let forbidden: [(&str, &str); 10] = [
        ("type", "must be empty to be structural"),
        ("additionalProperties", "must be undefined to be structural"),
        ("default", "must be undefined to be structural"),
        ("title", "must be empty to be structural"),
        ("description", "must be empty to be structural"),
        ("nullable", "must be false to be structural"),
        ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
        ("x-kubernetes-embedded-resource", "must be false to be structural"),
        ("x-kubernetes-int-or-string", "must be false to be structural"),
        ("x-kubernetes-list-type", "must be undefined to be structural"),
    ];
    for (key, detail) in forbidden {
        let set = match map.get(key) {
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => !s.is_empty(),
            Some(_) => true,
            None => false,
        };
        if set {
            errs.push(FieldError::forbidden(path::child(at, key), detail));
        }
    }
    if let Some(properties) = map.get("properties").and_then(Value::as_object) {
        if properties.contains_key("metadata") {
            errs.push(FieldError::forbidden(
                path::key(&path::child(at, "properties"), "metadata"),
                "must not be specified in a nested context",
            ));
        }
        for (name, child) in properties {
            nested_value_validation(child, &path::key(&path::child(at, "properties"), name), errs);
        }
    }
    if let Some(items) = map.get("items") {
        nested_value_validation(items, &path::child(at, "items"), errs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "gizmos.hidden.example.com"},
            "spec": {
                "group": "hidden.example.com",
                "scope": "Namespaced",
                "names": {"plural": "gizmos", "kind": "Gizmo"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}
                }}}]
            }
        })
    }

    fn texts(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_good_crd_passes_after_defaulting() {
        let mut c = crd();
        default_crd(&mut c);
        assert_eq!(c["spec"]["names"]["singular"], "gizmo");
        assert_eq!(c["spec"]["names"]["listKind"], "GizmoList");
        assert_eq!(c["spec"]["conversion"]["strategy"], "None");
        assert!(validate_crd(&c).is_empty(), "{:?}", texts(&validate_crd(&c)));
    }

    #[test]
    fn name_group_and_versions_mistakes() {
        let mut c = crd();
        default_crd(&mut c);
        c["metadata"]["name"] = json!("gizmo.hidden.example.com");
        c["spec"]["versions"][0]["storage"] = json!(false);
        c["spec"]["versions"][0]["served"] = json!(false);
        let errs = texts(&validate_crd(&c));
        assert_eq!(
            errs,
            vec![
                "metadata.name: Invalid value: \"gizmo.hidden.example.com\": must be spec.names.plural+\".\"+spec.group",
                "spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{apiextensions.CustomResourceDefinitionVersion{Name:\"v1\", Served:false, Storage:false}}: must have exactly one version marked as storage version",
                "spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{apiextensions.CustomResourceDefinitionVersion{Name:\"v1\", Served:false, Storage:false}}: must have at least one version marked as served",
            ]
        );
        let mut dotless = crd();
        default_crd(&mut dotless);
        dotless["spec"]["group"] = json!("example");
        dotless["metadata"]["name"] = json!("gizmos.example");
        assert_eq!(
            texts(&validate_crd(&dotless)),
            vec!["spec.group: Invalid value: \"example\": should be a domain with at least one dot"]
        );
    }

    #[test]
    fn structural_mistakes() {
        let mut c = crd();
        default_crd(&mut c);
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] =
            json!({"properties": {"list": {"type": "array"}, "free": {"x-kubernetes-preserve-unknown-fields": true}}});
        assert_eq!(
            texts(&validate_crd(&c)),
            vec![
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[list].items: Required value: must be specified",
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
            ]
        );
        let mut bad_rule = crd();
        default_crd(&mut bad_rule);
        bad_rule["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] =
            json!([{"rule": "self.size >"}]);
        let errs = validate_crd(&bad_rule);
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].field,
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
        );
    }

    #[test]
    fn group_is_immutable() {
        let mut old = crd();
        default_crd(&mut old);
        old["metadata"]["resourceVersion"] = json!("1");
        let mut new = old.clone();
        new["spec"]["group"] = json!("other.example.com");
        new["metadata"]["name"] = json!("gizmos.other.example.com");
        let errs = texts(&validate_crd_update(&new, &old));
        assert!(
            errs.contains(&"spec.group: Invalid value: \"other.example.com\": field is immutable".to_string()),
            "{errs:#?}"
        );
    }
}
