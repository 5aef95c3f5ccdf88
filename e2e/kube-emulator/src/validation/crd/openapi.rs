//! OpenAPI value validation of a custom resource (kube-openapi's schema validator as apiextensions maps its
//! results to field errors), with CRDValidationRatcheting on update.
//!
//! Per node, in kube-openapi's order: type; `anyOf`/`oneOf`/`allOf`/`not`; string bounds and pattern
//! (first failure only); format; number bounds; list items then list bounds; `enum`; object bounds (which
//! stop the walk of that object), additional properties, declared properties, then `required`.
//! Paths are kube-openapi's: dotted, map keys dotted too (`spec.labels.key`), list items `[i]`.
//! On update, a node whose old value (correlated by property key or list-map key) is equal is skipped.

use serde_json::Value;

use super::super::go_format::{BadValue, float, quote};
use super::super::path;
use super::super::{FieldError, NIL_PATH};
use super::correlate;
use super::schema::{Additional, Format, JsonType, SchemaNode};

/// Validates `value` at `at` against `node`; `old` is the correlated old value on update.
pub fn validate(value: &Value, node: &SchemaNode, at: &str, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    if old.is_some_and(|o| o == value) {
        return;
    }
    if let Some(e) = check_type(value, node, at) {
        errs.push(e);
    }
    if value.is_null() {
        check_enum(value, node, at, errs);
        return;
    }
    check_junctors(value, node, at, errs);
    if let Value::String(s) = value {
        if let Some(e) = check_string(s, node, at) {
            errs.push(e);
        }
        if let Some(e) = check_format(s, node, at) {
            errs.push(e);
        }
    }
    if value.is_number() {
        check_number(value, node, at, errs);
    }
    if let Value::Array(items) = value {
        if let Some(item_schema) = node.items.as_deref() {
            for (i, item) in items.iter().enumerate() {
                let old_item = old.and_then(|o| correlate::list_item(node, o, item));
                validate(item, item_schema, &path::index(at, i), old_item, errs);
            }
        }
        check_list_bounds(items, node, at, errs);
    }
    check_enum(value, node, at, errs);
    if let Value::Object(map) = value {
        let count = map.len() as u64;
        if let Some(min) = node.min_properties.filter(|m| count < *m) {
            errs.push(FieldError::invalid(
                at,
                count as i64,
                &format!("{at} in body should have at least {min} properties"),
            ));
            return;
        }
        if let Some(max) = node.max_properties.filter(|m| count > *m) {
            errs.push(FieldError::too_many(at, Some(count as i64), max as i64));
            return;
        }
        if let Additional::Schema(additional) = &node.additional {
            for (key, child) in map.iter().filter(|(k, _)| !node.properties.contains_key(*k)) {
                let old_child = old.and_then(|o| o.get(key));
                validate(child, additional, &path::child(at, key), old_child, errs);
            }
        }
        for (name, prop) in &node.properties {
            if let Some(child) = map.get(name) {
                let old_child = old.and_then(|o| o.get(name));
                validate(child, prop, &path::child(at, name), old_child, errs);
            }
        }
        for name in &node.required {
            if !map.contains_key(name) {
                errs.push(FieldError::required(path::child(at, name), ""));
            }
        }
    }
}

/// The JSON type of a value as kube-openapi names it.
fn actual_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_integral(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0 && f.is_finite()),
        _ => false,
    }
}

fn check_type(value: &Value, node: &SchemaNode, at: &str) -> Option<FieldError> {
    let expected = if node.int_or_string {
        "integer,string"
    } else if node.ty.is_some() {
        node.type_name.as_str()
    } else {
        return None;
    };
    let ok = match value {
        Value::Null => node.nullable,
        Value::String(_) => node.int_or_string || node.ty == Some(JsonType::String),
        Value::Bool(_) => node.ty == Some(JsonType::Boolean),
        Value::Number(_) if node.ty == Some(JsonType::Number) => true,
        Value::Number(_) => (node.int_or_string || node.ty == Some(JsonType::Integer)) && is_integral(value),
        Value::Array(_) => node.ty == Some(JsonType::Array),
        Value::Object(_) => node.ty == Some(JsonType::Object),
    };
    if ok {
        return None;
    }
    let actual = actual_type(value);
    Some(FieldError::type_invalid(
        at,
        actual,
        &format!("{at} in body must be of type {expected}: {}", quote(actual)),
    ))
}

fn check_string(s: &str, node: &SchemaNode, at: &str) -> Option<FieldError> {
    let length = s.chars().count() as u64;
    if let Some(max) = node.max_length.filter(|m| length > *m) {
        return Some(FieldError::too_long(at, max as i64));
    }
    if let Some(min) = node.min_length.filter(|m| length < *m) {
        return Some(FieldError::invalid(
            at,
            s,
            &format!("{at} in body should be at least {min} chars long"),
        ));
    }
    if let Some((pattern, re)) = &node.pattern
        && !re.is_match(s)
    {
        return Some(FieldError::invalid(
            at,
            s,
            &format!("{at} in body should match '{pattern}'"),
        ));
    }
    None
}

fn check_format(s: &str, node: &SchemaNode, at: &str) -> Option<FieldError> {
    let format = node.format?;
    let (ok, name) = match format {
        Format::DateTime => (chrono::DateTime::parse_from_rfc3339(s).is_ok(), "date-time"),
        Format::Date => (chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok(), "date"),
        Format::Byte => {
            use base64::Engine;
            (base64::engine::general_purpose::STANDARD.decode(s).is_ok(), "byte")
        }
        Format::Uuid => (is_uuid(s), "uuid"),
        Format::Ipv4 => (s.parse::<std::net::Ipv4Addr>().is_ok(), "ipv4"),
        Format::Ipv6 => (s.parse::<std::net::Ipv6Addr>().is_ok(), "ipv6"),
        Format::Cidr => (is_cidr(s), "cidr"),
        Format::Duration => (is_duration(s), "duration"),
    };
    if ok {
        None
    } else {
        Some(FieldError::type_invalid(
            at,
            s,
            &format!("{at} in body must be of type {name}: {}", quote(s)),
        ))
    }
}

fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else { return false };
    match ip.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => bits <= 32,
        Ok(std::net::IpAddr::V6(_)) => bits <= 128,
        Err(_) => false,
    }
}

/// strfmt's duration: one or more `<number><unit>` with Go units plus `d` and `w`, optionally signed.
fn is_duration(s: &str) -> bool {
    let body = s.strip_prefix(['-', '+']).unwrap_or(s);
    if body == "0" {
        return true;
    }
    let mut rest = body;
    let mut parts = 0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if digits == 0 {
            return false;
        }
        rest = &rest[digits..];
        let unit_len = ["ns", "us", "µs", "ms", "s", "m", "h", "d", "w"]
            .iter()
            .filter(|u| rest.starts_with(**u))
            .map(|u| u.len())
            .max()
            .unwrap_or(0);
        if unit_len == 0 {
            return false;
        }
        rest = &rest[unit_len..];
        parts += 1;
    }
    parts > 0
}

fn check_number(value: &Value, node: &SchemaNode, at: &str, errs: &mut Vec<FieldError>) {
    let Some(n) = value.as_f64() else { return };
    if let Some(factor) = node.multiple_of.filter(|f| *f != 0.0) {
        let mult = if factor < 1.0 { 1.0 / factor * n } else { n / factor };
        if !is_json_integer(mult) {
            errs.push(FieldError::invalid(
                at,
                value,
                &format!("{at} in body should be a multiple of {}", float(factor)),
            ));
        }
    }
    if let Some(min) = node.minimum {
        let below = if min.exclusive { n <= min.limit } else { n < min.limit };
        if below {
            let relation = if min.exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            errs.push(FieldError::invalid(
                at,
                value,
                &format!("{at} in body should be {relation} {}", float(min.limit)),
            ));
        }
    }
    if let Some(max) = node.maximum {
        let above = if max.exclusive { n >= max.limit } else { n > max.limit };
        if above {
            let relation = if max.exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            errs.push(FieldError::invalid(
                at,
                value,
                &format!("{at} in body should be {relation} {}", float(max.limit)),
            ));
        }
    }
}

/// go-openapi's `IsFloat64AJSONInteger`, with its relative tolerance of 1e-9.
fn is_json_integer(f: f64) -> bool {
    if !f.is_finite() {
        return false;
    }
    let g = f.trunc();
    if f == g {
        return true;
    }
    let diff = (f - g).abs();
    diff / (f.abs() + g.abs()).min(f64::MAX) < 1e-9
}

fn check_list_bounds(items: &[Value], node: &SchemaNode, at: &str, errs: &mut Vec<FieldError>) {
    let count = items.len() as u64;
    if let Some(min) = node.min_items.filter(|m| count < *m) {
        errs.push(FieldError::invalid(
            at,
            count as i64,
            &format!("{at} in body should have at least {min} items"),
        ));
    }
    if let Some(max) = node.max_items.filter(|m| count > *m) {
        errs.push(FieldError::too_many(at, Some(count as i64), max as i64));
    }
    if node.unique_items && items.iter().enumerate().any(|(i, a)| items[..i].contains(a)) {
        errs.push(FieldError::invalid(
            at,
            BadValue::null(),
            &format!("{at} in body shouldn't contain duplicates"),
        ));
    }
}

/// JSON equality with numbers compared by value (`1` equals `1.0`), as Go's unstructured comparison sees
/// enum members decoded from the CRD.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

fn check_enum(value: &Value, node: &SchemaNode, at: &str, errs: &mut Vec<FieldError>) {
    if node.enum_values.is_empty() || node.enum_values.iter().any(|e| json_equal(e, value)) {
        return;
    }
    let allowed: Vec<String> = node
        .enum_values
        .iter()
        .map(|e| e.as_str().map(str::to_string).unwrap_or_else(|| e.to_string()))
        .collect();
    errs.push(FieldError::not_supported(at, value, &allowed));
}

/// `anyOf`, `oneOf`, `allOf` and `not`: their own failures are reported as apiextensions reports
/// non-validation errors, at the nil path with an empty value.
fn check_junctors(value: &Value, node: &SchemaNode, at: &str, errs: &mut Vec<FieldError>) {
    let run = |branch: &SchemaNode| {
        let mut branch_errs = Vec::new();
        validate(value, branch, at, None, &mut branch_errs);
        branch_errs
    };
    let composite = |text: String| FieldError::invalid(NIL_PATH, "", &text);
    if !node.any_of.is_empty() {
        let results: Vec<Vec<FieldError>> = node.any_of.iter().map(run).collect();
        if !results.iter().any(Vec::is_empty) {
            errs.push(composite(format!(
                "{} must validate at least one schema (anyOf)",
                quote(at)
            )));
            if let Some(best) = results.into_iter().min_by_key(Vec::len) {
                errs.extend(best);
            }
        }
    }
    if !node.one_of.is_empty() {
        let results: Vec<Vec<FieldError>> = node.one_of.iter().map(run).collect();
        let passed = results.iter().filter(|r| r.is_empty()).count();
        if passed == 0 {
            errs.push(composite(format!(
                "{} must validate one and only one schema (oneOf)",
                quote(at)
            )));
            if let Some(best) = results.into_iter().min_by_key(Vec::len) {
                errs.extend(best);
            }
        } else if passed > 1 {
            errs.push(composite(format!(
                "{} must validate one and only one schema (oneOf). Found {passed} valid alternatives",
                quote(at)
            )));
        }
    }
    if !node.all_of.is_empty() {
        let mut validated = 0;
        for branch in &node.all_of {
            let branch_errs = run(branch);
            if branch_errs.is_empty() {
                validated += 1;
            }
            errs.extend(branch_errs);
        }
        if validated != node.all_of.len() {
            let neither = if validated == 0 { "Neither validated" } else { "" };
            errs.push(composite(format!(
                "{} must validate all the schemas (allOf){neither}",
                quote(at)
            )));
        }
    }
    if let Some(not) = node.not.as_deref()
        && run(not).is_empty()
    {
        errs.push(composite(format!("{} must not validate the schema (not)", quote(at))));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(schema: Value, value: Value) -> Vec<String> {
        let node = SchemaNode::compile(&schema).expect("compiles");
        let mut errs = Vec::new();
        validate(&value, &node, "", None, &mut errs);
        errs.iter().map(ToString::to_string).collect()
    }

    fn spec(properties: Value) -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": properties}}})
    }

    #[test]
    fn probed_gizmo_errors() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "required": ["owner"], "properties": {
            "size": {"type": "integer", "maximum": 10},
            "mode": {"type": "string", "enum": ["fast", "slow"]},
            "owner": {"type": "string"}
        }}}});
        let mut got = check(schema, json!({"spec": {"size": 11, "mode": "medium"}}));
        got.sort();
        assert_eq!(
            got,
            vec![
                "spec.mode: Unsupported value: \"medium\": supported values: \"fast\", \"slow\"",
                "spec.owner: Required value",
                "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10",
            ]
        );
    }

    #[test]
    fn type_errors_name_the_actual_json_type() {
        let s = spec(
            json!({"size": {"type": "integer"}, "port": {"x-kubernetes-int-or-string": true}, "n": {"type": "number"}}),
        );
        assert_eq!(
            check(s.clone(), json!({"spec": {"size": "3"}})),
            vec!["spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\""]
        );
        assert_eq!(
            check(s.clone(), json!({"spec": {"size": null}})),
            vec!["spec.size: Invalid value: \"null\": spec.size in body must be of type integer: \"null\""]
        );
        assert_eq!(
            check(s.clone(), json!({"spec": {"port": true}})),
            vec![
                "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\""
            ]
        );
        assert!(check(s.clone(), json!({"spec": {"port": 8080, "size": 3.0, "n": 1}})).is_empty());
        assert!(check(s, json!({"spec": {"port": "http"}})).is_empty());
    }

    #[test]
    fn bounds_texts() {
        let s = spec(json!({
            "name": {"type": "string", "maxLength": 5, "minLength": 3, "pattern": "^[a-z]+$"},
            "low": {"type": "integer", "minimum": 0, "exclusiveMinimum": true},
            "ratio": {"type": "number", "maximum": 1.5, "exclusiveMaximum": true, "multipleOf": 0.5},
            "items": {"type": "array", "minItems": 2, "maxItems": 3, "items": {"type": "string"}},
            "map": {"type": "object", "minProperties": 2, "maxProperties": 3, "additionalProperties": {"type": "string", "maxLength": 1}},
            "five": {"type": "integer", "multipleOf": 5}
        }));
        let errors = |v: Value| check(s.clone(), json!({"spec": v}));
        assert_eq!(
            errors(json!({"name": "toolong"})),
            vec!["spec.name: Too long: may not be more than 5 bytes"]
        );
        assert_eq!(
            errors(json!({"name": "ab"})),
            vec!["spec.name: Invalid value: \"ab\": spec.name in body should be at least 3 chars long"]
        );
        assert_eq!(
            errors(json!({"name": "AB1"})),
            vec!["spec.name: Invalid value: \"AB1\": spec.name in body should match '^[a-z]+$'"]
        );
        assert_eq!(
            errors(json!({"low": 0})),
            vec!["spec.low: Invalid value: 0: spec.low in body should be greater than 0"]
        );
        assert_eq!(
            errors(json!({"ratio": 1.5})),
            vec!["spec.ratio: Invalid value: 1.5: spec.ratio in body should be less than 1.5"]
        );
        assert_eq!(
            errors(json!({"ratio": 0.7})),
            vec!["spec.ratio: Invalid value: 0.7: spec.ratio in body should be a multiple of 0.5"]
        );
        assert_eq!(
            errors(json!({"five": 7})),
            vec!["spec.five: Invalid value: 7: spec.five in body should be a multiple of 5"]
        );
        assert_eq!(
            errors(json!({"items": ["a"]})),
            vec!["spec.items: Invalid value: 1: spec.items in body should have at least 2 items"]
        );
        assert_eq!(
            errors(json!({"items": ["a", "b", "c", "d"]})),
            vec!["spec.items: Too many: 4: must have at most 3 items"]
        );
        assert_eq!(
            errors(json!({"map": {"a": "x"}})),
            vec!["spec.map: Invalid value: 1: spec.map in body should have at least 2 properties"]
        );
        assert_eq!(
            errors(json!({"map": {"a": "1", "b": "2", "c": "3", "d": "4"}})),
            vec!["spec.map: Too many: 4: must have at most 3 items"]
        );
        assert_eq!(
            errors(json!({"map": {"a": "xy", "b": "z"}})),
            vec!["spec.map.a: Too long: may not be more than 1 byte"]
        );
    }

    #[test]
    fn formats_and_unique_items() {
        let s = spec(json!({
            "when": {"type": "string", "format": "date-time"},
            "id": {"type": "string", "format": "uuid"},
            "tags": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}
        }));
        assert_eq!(
            check(s.clone(), json!({"spec": {"when": "yesterday"}})),
            vec!["spec.when: Invalid value: \"yesterday\": spec.when in body must be of type date-time: \"yesterday\""]
        );
        assert!(
            check(
                s.clone(),
                json!({"spec": {"when": "2024-01-02T03:04:05Z", "id": "123e4567-e89b-12d3-a456-426614174000"}})
            )
            .is_empty()
        );
        assert_eq!(
            check(s, json!({"spec": {"tags": ["a", "a"]}})),
            vec!["spec.tags: Invalid value: \"null\": spec.tags in body shouldn't contain duplicates"]
        );
        assert!(is_duration("1h30m") && is_duration("2d") && !is_duration("1x") && !is_duration(""));
    }

    #[test]
    fn ratcheting_skips_unchanged_values_only() {
        let node = SchemaNode::compile(&spec(
            json!({"size": {"type": "integer", "maximum": 10}, "other": {"type": "string"}}),
        ))
        .expect("compiles");
        let old = json!({"spec": {"size": 11, "other": "a"}});
        let mut errs = Vec::new();
        validate(
            &json!({"spec": {"size": 11, "other": "b"}}),
            &node,
            "",
            Some(&old),
            &mut errs,
        );
        assert!(errs.is_empty(), "unchanged invalid size is ratcheted: {errs:?}");
        validate(
            &json!({"spec": {"size": 12, "other": "a"}}),
            &node,
            "",
            Some(&old),
            &mut errs,
        );
        assert_eq!(errs.len(), 1, "a changed invalid value still fails");
    }

    #[test]
    fn any_of_failure_is_a_composite_error() {
        let s = spec(
            json!({"x": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}}),
        );
        assert!(check(s.clone(), json!({"spec": {"x": {"a": "1"}}})).is_empty());
        assert_eq!(
            check(s, json!({"spec": {"x": {}}})),
            vec![
                "<nil>: Invalid value: \"\": \"spec.x\" must validate at least one schema (anyOf)",
                "spec.x.a: Required value"
            ]
        );
    }
}
