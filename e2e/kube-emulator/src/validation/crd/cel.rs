//! `x-kubernetes-validations` evaluation (apiextensions `schema/cel/validation.go`)
//! through kube-cel, with kube-apiserver's field paths, values, messages and reasons.
//!
//! The walk visits only subtrees that carry rules and skips `null` values. Each rule-carrying node is
//! evaluated with `self` and, on update, `oldSelf` correlated as [`super::correlate`] describes; transition
//! rules are skipped where there is no old value. On update, a failed non-transition rule at an unchanged
//! node becomes a warning instead of an error (CRDValidationRatcheting).

use serde_json::Value;

use super::super::go_format::BadValue;
use super::super::path;
use super::super::{FieldError, Findings};
use super::correlate::{self, Ratchet};
use super::schema::{Additional, NodeRules, RuleDef, SchemaNode};

/// Longest `messageExpression` result kube-apiserver uses.
const MAX_MESSAGE_EXPRESSION_BYTES: usize = 5 * 1024;

/// Evaluates every rule under `value` (at `at`, with correlated `old`) into `out`.
pub fn validate(value: &Value, node: &SchemaNode, at: &str, old: Option<&Value>, ratchet: Ratchet, out: &mut Findings) {
    if !node.has_rules_below || value.is_null() {
        return;
    }
    if let Some(rules) = &node.rules {
        evaluate(rules, node, value, at, old, ratchet, out);
    }
    match value {
        Value::Array(items) => {
            let Some(item_schema) = node.items.as_deref().filter(|s| s.has_rules_below) else {
                return;
            };
            for (i, item) in items.iter().enumerate() {
                let old_item = old.and_then(|o| correlate::list_item(node, o, item));
                validate(
                    item,
                    item_schema,
                    &path::index(at, i),
                    old_item,
                    ratchet.child(item, old_item),
                    out,
                );
            }
        }
        Value::Object(map) => {
            if let Additional::Schema(additional) = &node.additional
                && additional.has_rules_below
            {
                for (key, child) in map {
                    let old_child = old.and_then(|o| o.get(key));
                    validate(
                        child,
                        additional,
                        &path::key(at, key),
                        old_child,
                        ratchet.child(child, old_child),
                        out,
                    );
                }
            }
            for (key, child) in map {
                let Some(prop) = node.properties.get(key).filter(|p| p.has_rules_below) else {
                    continue;
                };
                let old_child = old.and_then(|o| o.get(key));
                let child_ratchet = if at.is_empty() && (key == "apiVersion" || key == "kind") {
                    Ratchet::Off
                } else {
                    ratchet.child(child, old_child)
                };
                validate(child, prop, &path::child(at, key), old_child, child_ratchet, out);
            }
        }
        _ => {}
    }
}

/// `ruleErrorString`: the trimmed message, else the trimmed rule.
fn rule_error_string(rule: &RuleDef) -> &str {
    let message = rule.message.trim();
    if message.is_empty() { rule.rule.trim() } else { message }
}

/// `ruleMessageOrDefault`: the trimmed message, else `failed rule: <rule>`.
fn rule_message_or_default(rule: &RuleDef) -> String {
    let message = rule.message.trim();
    if message.is_empty() {
        format!("failed rule: {}", rule.rule.trim())
    } else {
        message.to_string()
    }
}

/// cel-go's wording of a runtime error, from the Rust `cel` error.
fn runtime_error_text(error: &kube_cel::ValidationError) -> String {
    use kube_cel::cel::ExecutionError;
    let Some(source) = std::error::Error::source(error) else {
        return error.message.clone();
    };
    match source.downcast_ref::<ExecutionError>() {
        Some(ExecutionError::NoSuchKey(key)) => format!("no such key: {key}"),
        Some(ExecutionError::NoSuchOverload) => "no such overload".to_string(),
        Some(ExecutionError::DivisionByZero(_)) => "division by zero".to_string(),
        Some(ExecutionError::RemainderByZero(_)) => "modulus by zero".to_string(),
        Some(ExecutionError::Overflow(..)) => "integer overflow".to_string(),
        Some(ExecutionError::UndeclaredReference(name)) => format!("undeclared reference to '{name}'"),
        _ => {
            let text = source.to_string();
            let mut chars = text.chars();
            match chars.next() {
                Some(first) => first.to_lowercase().chain(chars).collect(),
                None => text,
            }
        }
    }
}

fn evaluate(
    rules: &NodeRules,
    node: &SchemaNode,
    value: &Value,
    at: &str,
    old: Option<&Value>,
    ratchet: Ratchet,
    out: &mut Findings,
) {
    let Err(failures) = kube_cel::validate_compiled(&rules.compiled, value, old) else {
        return;
    };
    let type_value = || BadValue::from(node.type_name.as_str());
    let mut cursor = 0;
    for failure in failures.iter() {
        let Some(offset) = rules.rules[cursor..].iter().position(|r| r.rule == failure.rule) else {
            continue;
        };
        let rule = &rules.rules[cursor + offset];
        cursor += offset + 1;
        match failure.kind {
            kube_cel::ErrorKind::EvaluationError | kube_cel::ErrorKind::UnsupportedReference => {
                let text = runtime_error_text(failure);
                let detail = if text.starts_with("no such overload") {
                    format!(
                        "'{text}': call arguments did not match a supported operator, function or macro signature for rule: {}",
                        rule_error_string(rule)
                    )
                } else {
                    format!("{text} evaluating rule: {}", rule_error_string(rule))
                };
                out.errors.push(FieldError::invalid(at, type_value(), &detail));
            }
            _ => {
                let detail = if rule.has_message_expression {
                    let evaluated = failure.message.trim();
                    if evaluated.is_empty()
                        || evaluated.contains('\n')
                        || evaluated.len() > MAX_MESSAGE_EXPRESSION_BYTES
                    {
                        rule_message_or_default(rule)
                    } else {
                        evaluated.to_string()
                    }
                } else {
                    rule_message_or_default(rule)
                };
                let field = if rule.field_path.is_empty() {
                    at.to_string()
                } else {
                    path::join(at, rule.field_path.trim_start_matches('.'))
                };
                let error = match rule.reason.as_deref() {
                    Some("FieldValueForbidden") => FieldError::forbidden(field, &detail),
                    Some("FieldValueRequired") => FieldError::required(field, &detail),
                    Some("FieldValueDuplicate") => FieldError::duplicate(field, type_value()),
                    _ => FieldError::invalid(field, type_value(), &detail),
                };
                if !rule.uses_old_self && ratchet.should_ratchet() {
                    out.warnings.push(error.to_string());
                } else {
                    out.errors.push(error);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> SchemaNode {
        SchemaNode::compile(&json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "x-kubernetes-validations": [
                        {"rule": "self.size >= self.min"},
                        {"rule": "self.mode != 'medium'", "messageExpression": "'mode ' + self.mode + ' is not allowed'", "fieldPath": ".mode"},
                        {"rule": "self.size <= 100", "message": "  too big  ", "reason": "FieldValueForbidden"},
                        {"rule": "self.size >= oldSelf.size", "message": "cannot shrink"},
                        {"rule": "self.nope > 1", "message": "needs nope"}
                    ],
                    "properties": {
                        "size": {"type": "integer"},
                        "min": {"type": "integer"},
                        "mode": {"type": "string"},
                        "name": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "name is immutable"}]},
                        "items": {"type": "array", "items": {"type": "object", "properties": {"v": {"type": "integer"}},
                            "x-kubernetes-validations": [{"rule": "self.v > 0"}]}}
                    }
                }
            }
        }))
        .expect("compiles")
    }

    fn run(new: Value, old: Option<Value>) -> Findings {
        let node = schema();
        let mut out = Findings::default();
        validate(
            &new,
            &node,
            "",
            old.as_ref(),
            Ratchet::root(&new, old.as_ref()),
            &mut out,
        );
        out
    }

    fn texts(errors: &[FieldError]) -> Vec<String> {
        errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn create_renders_apiserver_texts_and_skips_transition_rules() {
        let out = run(
            json!({"spec": {"size": 101, "min": 200, "mode": "medium", "name": "a", "items": [{"v": 1}, {"v": 0}]}}),
            None,
        );
        assert_eq!(
            texts(&out.errors),
            vec![
                "spec: Invalid value: \"object\": failed rule: self.size >= self.min",
                "spec.mode: Invalid value: \"object\": mode medium is not allowed",
                "spec: Forbidden: too big",
                "spec: Invalid value: \"object\": no such key: nope evaluating rule: needs nope",
                "spec.items[1]: Invalid value: \"object\": failed rule: self.v > 0",
            ]
        );
        assert!(out.warnings.is_empty());
    }

    #[test]
    fn update_evaluates_old_self() {
        let old = json!({"spec": {"size": 5, "min": 1, "mode": "fast", "name": "a", "nope": 2}});
        let out = run(
            json!({"spec": {"size": 4, "min": 1, "mode": "fast", "name": "b", "nope": 2}}),
            Some(old),
        );
        assert_eq!(
            texts(&out.errors),
            vec![
                "spec: Invalid value: \"object\": cannot shrink",
                "spec.name: Invalid value: \"string\": name is immutable",
            ]
        );
    }

    #[test]
    fn unchanged_failures_are_ratcheted_into_warnings() {
        let old = json!({"spec": {"size": 1, "min": 5, "mode": "fast", "nope": 2, "items": [{"v": 0}]}});
        let new = json!({"spec": {"size": 1, "min": 5, "mode": "fast", "nope": 2, "items": [{"v": 0}]}, "status": {}});
        let out = run(new, Some(old));
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        assert_eq!(
            out.warnings,
            vec![
                "spec: Invalid value: \"object\": failed rule: self.size >= self.min",
                "spec.items[0]: Invalid value: \"object\": failed rule: self.v > 0",
            ]
        );
    }
}
