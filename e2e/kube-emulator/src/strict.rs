//! Strict decoding of request bodies (`fieldValidation`): unknown fields (not declared by the kind's schema)
//! and duplicate fields, reported with kube-apiserver's texts and paths (`spec.template.spec.containers[0].foo`).
//!
//! JSON bodies are walked once, in document order, against the kind's [`Shape`]: the order of the findings
//! is then the order the Go decoder meets them. Unknown fields are dropped from the decoded object, as
//! decoding into a Go struct drops them; a field both unknown and duplicated is reported once, as unknown.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::fields::Shape;

/// What strict decoding found, in document order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Findings {
    /// `unknown field "spec.foo"` / `duplicate field "spec.bar"`.
    pub messages: Vec<String>,
}

impl Findings {
    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The text kube-apiserver embeds in its errors: `strict decoding error: a, b`.
    pub fn error_text(&self) -> String {
        format!("strict decoding error: {}", self.messages.join(", "))
    }
}

fn child_path(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

/// Decodes a JSON object strictly against `shape` (use [`Shape::Untyped`] to find duplicates only). Unknown
/// fields are left out of the returned value.
pub fn decode(shape: &Shape, body: &[u8]) -> Result<(Value, Findings), serde_json::Error> {
    let findings = RefCell::new(Findings::default());
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = Walker {
        shape,
        path: String::new(),
        findings: &findings,
    }
    .deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok((value, findings.into_inner()))
}

/// The unknown fields of an already decoded object (a patched object), in sorted key order, as
/// kube-apiserver reports those it finds after re-encoding a patch result.
pub fn unknown_fields(shape: &Shape, value: &Value) -> Vec<String> {
    let mut found = Vec::new();
    collect_unknown(shape, value, "", &mut found);
    found
}

fn collect_unknown(shape: &Shape, value: &Value, path: &str, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let here = child_path(path, key);
                match shape.field(key) {
                    Some((child_shape, _)) => collect_unknown(child_shape, child, &here, found),
                    None => found.push(format!("unknown field \"{here}\"")),
                }
            }
        }
        Value::Array(items) => {
            if let Shape::List { items: item_shape, .. } = shape {
                for (index, item) in items.iter().enumerate() {
                    collect_unknown(item_shape, item, &format!("{path}[{index}]"), found);
                }
            }
        }
        _ => {}
    }
}

/// Removes the fields `shape` does not declare (what decoding into the Go type does under Ignore and Warn).
pub fn prune_unknown(shape: &Shape, value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|key, _| shape.field(key).is_some());
            for (key, child) in map.iter_mut() {
                if let Some((child_shape, _)) = shape.field(key) {
                    prune_unknown(child_shape, child);
                }
            }
        }
        Value::Array(items) => {
            if let Shape::List { items: item_shape, .. } = shape {
                for item in items {
                    prune_unknown(item_shape, item);
                }
            }
        }
        _ => {}
    }
}

struct Walker<'a> {
    shape: &'a Shape,
    path: String,
    findings: &'a RefCell<Findings>,
}

impl<'de> DeserializeSeed<'de> for Walker<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walker<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let untyped = Shape::Untyped;
        let item_shape = match self.shape {
            Shape::List { items, .. } => items.as_ref(),
            _ => &untyped,
        };
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Walker {
            shape: item_shape,
            path: format!("{}[{}]", self.path, items.len()),
            findings: self.findings,
        })? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        let mut seen: HashSet<String> = HashSet::new();
        let mut unknown: HashSet<String> = HashSet::new();
        while let Some(key) = access.next_key::<String>()? {
            let here = child_path(&self.path, &key);
            let Some((child_shape, _)) = self.shape.field(&key) else {
                access.next_value::<IgnoredAny>()?;
                if unknown.insert(key) {
                    self.findings
                        .borrow_mut()
                        .messages
                        .push(format!("unknown field \"{here}\""));
                }
                continue;
            };
            if !seen.insert(key.clone()) {
                self.findings
                    .borrow_mut()
                    .messages
                    .push(format!("duplicate field \"{here}\""));
            }
            let value = access.next_value_seed(Walker {
                shape: child_shape,
                path: here,
                findings: self.findings,
            })?;
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deployment() -> &'static Shape {
        Shape::builtin("apps", "v1", "Deployment").expect("Deployment shape")
    }

    #[test]
    fn findings_come_in_document_order_with_list_indices() {
        let body = br#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","name":"b","unknownMeta":1},
            "spec":{"unknown1":true,"paused":false,"paused":true,
            "template":{"spec":{"containers":[{"name":"c","unknownNested":1,"image":"i","image":"j"}]}}}}"#;
        let (value, findings) = decode(deployment(), body).expect("valid JSON");
        assert_eq!(
            findings.messages,
            vec![
                "duplicate field \"metadata.name\"",
                "unknown field \"metadata.unknownMeta\"",
                "unknown field \"spec.unknown1\"",
                "duplicate field \"spec.paused\"",
                "unknown field \"spec.template.spec.containers[0].unknownNested\"",
                "duplicate field \"spec.template.spec.containers[0].image\"",
            ]
        );
        assert_eq!(value["metadata"]["name"], "b", "the last duplicate wins");
        assert!(value["spec"].get("unknown1").is_none(), "unknown fields are dropped");
        assert_eq!(value["spec"]["template"]["spec"]["containers"][0]["image"], "j");
    }

    #[test]
    fn untyped_content_reports_duplicates_only() {
        let (value, findings) = decode(&Shape::Untyped, br#"{"a":{"x":1,"x":2},"b":[{"y":1}]}"#).expect("json");
        assert_eq!(findings.messages, vec!["duplicate field \"a.x\""]);
        assert_eq!(value, json!({"a":{"x":2},"b":[{"y":1}]}));
    }

    #[test]
    fn a_patched_object_reports_unknown_fields_in_key_order_and_prunes_them() {
        let mut obj =
            json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"zeta":1,"data":{"k":"v"},"alpha":2});
        let shape = Shape::builtin("", "v1", "ConfigMap").expect("shape");
        assert_eq!(
            unknown_fields(shape, &obj),
            vec!["unknown field \"alpha\"", "unknown field \"zeta\""]
        );
        prune_unknown(shape, &mut obj);
        assert_eq!(
            obj,
            json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}})
        );
    }
}
