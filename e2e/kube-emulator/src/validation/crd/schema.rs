//! A CRD version's `openAPIV3Schema` compiled once into a tree that pruning, defaulting, OpenAPI checks,
//! list-type checks and CEL walk on every write: regexes compiled, CEL programs compiled per rule-carrying
//! node, and flags saying which subtrees need each pass at all.

use std::collections::BTreeMap;

use regex::Regex;
use serde_json::{Map, Value};

use super::super::FieldError;
use super::super::path;

/// A JSON type named by `type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonType {
    /// `object`
    Object,
    /// `array`
    Array,
    /// `string`
    String,
    /// `integer`
    Integer,
    /// `number`
    Number,
    /// `boolean`
    Boolean,
}

impl JsonType {
    fn parse(name: &str) -> Option<Self> {
        match name {
            "object" => Some(JsonType::Object),
            "array" => Some(JsonType::Array),
            "string" => Some(JsonType::String),
            "integer" => Some(JsonType::Integer),
            "number" => Some(JsonType::Number),
            "boolean" => Some(JsonType::Boolean),
            _ => None,
        }
    }
}

/// `x-kubernetes-list-type`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ListType {
    /// `atomic`, or unset.
    #[default]
    Atomic,
    /// `set`: items unique as whole values.
    Set,
    /// `map`: items unique by the `x-kubernetes-list-map-keys` fields.
    Map(Vec<String>),
}

/// `additionalProperties`.
#[derive(Debug, Default)]
pub enum Additional {
    /// Absent or `false`: undeclared keys are unknown fields.
    #[default]
    None,
    /// `true`: any key, values without a schema.
    Any,
    /// A schema for every undeclared key's value.
    Schema(Box<SchemaNode>),
}

/// A numeric bound: the limit and whether it is exclusive.
#[derive(Clone, Copy, Debug)]
pub struct Bound {
    /// The limit.
    pub limit: f64,
    /// `exclusiveMaximum` / `exclusiveMinimum`.
    pub exclusive: bool,
}

/// A string `format` that is cheap to check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `date-time` (RFC 3339).
    DateTime,
    /// `date` (`2006-01-02`).
    Date,
    /// `byte` (standard base64).
    Byte,
    /// `uuid`, `uuid3`, `uuid4`, `uuid5`.
    Uuid,
    /// `ipv4`.
    Ipv4,
    /// `ipv6`.
    Ipv6,
    /// `cidr`.
    Cidr,
    /// `duration` (Go durations plus `d`/`w`).
    Duration,
}

/// One `x-kubernetes-validations` entry as written in the schema.
#[derive(Clone, Debug)]
pub struct RuleDef {
    /// The CEL expression.
    pub rule: String,
    /// `message`.
    pub message: String,
    /// Whether a `messageExpression` is set.
    pub has_message_expression: bool,
    /// `reason` (`FieldValueForbidden`, ...).
    pub reason: Option<String>,
    /// `fieldPath` (`.mode`), as written.
    pub field_path: String,
    /// Whether the rule reads `oldSelf` (a transition rule).
    pub uses_old_self: bool,
}

/// The CEL rules declared on one schema node, compiled by kube-cel against the node's own subtree (with
/// the rules of descendant nodes removed, since those are evaluated at their own nodes).
#[derive(Debug)]
pub struct NodeRules {
    /// The programs.
    pub compiled: kube_cel::CompiledSchema,
    /// The rules in declaration order, matching kube-cel's evaluation order.
    pub rules: Vec<RuleDef>,
}

/// One node of a compiled structural schema.
#[derive(Debug, Default)]
pub struct SchemaNode {
    /// The declared type, if any.
    pub ty: Option<JsonType>,
    /// `type` as written (`""` when unset), which CEL errors print as the bad value.
    pub type_name: String,
    /// `nullable: true`.
    pub nullable: bool,
    /// `x-kubernetes-int-or-string: true`.
    pub int_or_string: bool,
    /// `x-kubernetes-preserve-unknown-fields: true`.
    pub preserve_unknown_fields: bool,
    /// `x-kubernetes-embedded-resource: true`.
    pub embedded_resource: bool,
    /// Declared properties.
    pub properties: BTreeMap<String, SchemaNode>,
    /// `additionalProperties`.
    pub additional: Additional,
    /// `items`.
    pub items: Option<Box<SchemaNode>>,
    /// `default`.
    pub default: Option<Value>,
    /// `x-kubernetes-list-type` / `x-kubernetes-list-map-keys`.
    pub list_type: ListType,
    /// `required`.
    pub required: Vec<String>,
    /// `enum`.
    pub enum_values: Vec<Value>,
    /// `pattern`, as written and compiled.
    pub pattern: Option<(String, Regex)>,
    /// `maximum` / `exclusiveMaximum`.
    pub maximum: Option<Bound>,
    /// `minimum` / `exclusiveMinimum`.
    pub minimum: Option<Bound>,
    /// `multipleOf`.
    pub multiple_of: Option<f64>,
    /// `maxLength`.
    pub max_length: Option<u64>,
    /// `minLength`.
    pub min_length: Option<u64>,
    /// `maxItems`.
    pub max_items: Option<u64>,
    /// `minItems`.
    pub min_items: Option<u64>,
    /// `maxProperties`.
    pub max_properties: Option<u64>,
    /// `minProperties`.
    pub min_properties: Option<u64>,
    /// `uniqueItems: true`.
    pub unique_items: bool,
    /// A checked `format`.
    pub format: Option<Format>,
    /// `allOf` branches (value validations only).
    pub all_of: Vec<SchemaNode>,
    /// `anyOf` branches.
    pub any_of: Vec<SchemaNode>,
    /// `oneOf` branches.
    pub one_of: Vec<SchemaNode>,
    /// `not`.
    pub not: Option<Box<SchemaNode>>,
    /// CEL rules on this node.
    pub rules: Option<NodeRules>,
    /// Whether this node or a descendant carries CEL rules.
    pub has_rules_below: bool,
    /// Whether this node or a descendant declares a default.
    pub has_defaults_below: bool,
    /// Whether this node or a descendant is a set or map list.
    pub has_list_types_below: bool,
    /// Whether this node or a descendant is an embedded resource.
    pub has_embedded_below: bool,
}

impl SchemaNode {
    /// Compiles `schema`. Problems that make the schema unusable (a pattern that is not a regex, a CEL
    /// rule that does not compile) are returned as field errors with paths relative to the schema root
    /// (`properties[spec].pattern`).
    pub fn compile(schema: &Value) -> Result<SchemaNode, Vec<FieldError>> {
        let mut problems = Vec::new();
        let node = compile_node(schema, "", true, &mut problems);
        if problems.is_empty() { Ok(node) } else { Err(problems) }
    }

    /// The schema of the value under key `name` of an object: a declared property or the
    /// `additionalProperties` schema.
    pub fn child(&self, name: &str) -> Option<&SchemaNode> {
        self.properties.get(name).or(match &self.additional {
            Additional::Schema(s) => Some(s),
            _ => None,
        })
    }
}

fn as_u64(schema: &Map<String, Value>, key: &str) -> Option<u64> {
    schema.get(key).and_then(|v| {
        v.as_u64()
            .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
    })
}

fn as_bool(schema: &Map<String, Value>, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool) == Some(true)
}

fn format_of(name: &str) -> Option<Format> {
    match name {
        "date-time" | "datetime" => Some(Format::DateTime),
        "date" => Some(Format::Date),
        "byte" => Some(Format::Byte),
        "uuid" | "uuid3" | "uuid4" | "uuid5" => Some(Format::Uuid),
        "ipv4" => Some(Format::Ipv4),
        "ipv6" => Some(Format::Ipv6),
        "cidr" => Some(Format::Cidr),
        "duration" => Some(Format::Duration),
        // Other formats (email, hostname, uri, ...) are not checked by the emulator.
        _ => None,
    }
}

/// `spine` is false inside `allOf`/`anyOf`/`oneOf`/`not`, where CEL rules are not compiled.
fn compile_node(schema: &Value, at: &str, spine: bool, problems: &mut Vec<FieldError>) -> SchemaNode {
    let Some(map) = schema.as_object() else {
        return SchemaNode::default();
    };
    let type_name = map.get("type").and_then(Value::as_str).unwrap_or("").to_string();
    let mut node = SchemaNode {
        ty: JsonType::parse(&type_name),
        type_name,
        nullable: as_bool(map, "nullable"),
        int_or_string: as_bool(map, "x-kubernetes-int-or-string"),
        preserve_unknown_fields: as_bool(map, "x-kubernetes-preserve-unknown-fields"),
        embedded_resource: as_bool(map, "x-kubernetes-embedded-resource"),
        default: map.get("default").cloned(),
        required: map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default(),
        enum_values: map.get("enum").and_then(Value::as_array).cloned().unwrap_or_default(),
        multiple_of: map.get("multipleOf").and_then(Value::as_f64),
        max_length: as_u64(map, "maxLength"),
        min_length: as_u64(map, "minLength"),
        max_items: as_u64(map, "maxItems"),
        min_items: as_u64(map, "minItems"),
        max_properties: as_u64(map, "maxProperties"),
        min_properties: as_u64(map, "minProperties"),
        unique_items: as_bool(map, "uniqueItems"),
        format: map.get("format").and_then(Value::as_str).and_then(format_of),
        ..SchemaNode::default()
    };
    if node.int_or_string {
        // kube-apiserver validates int-or-string as `type: [integer, string]`; CEL prints it as "".
        node.type_name = String::new();
        node.format = None;
    }
    node.maximum = map.get("maximum").and_then(Value::as_f64).map(|limit| Bound {
        limit,
        exclusive: as_bool(map, "exclusiveMaximum"),
    });
    node.minimum = map.get("minimum").and_then(Value::as_f64).map(|limit| Bound {
        limit,
        exclusive: as_bool(map, "exclusiveMinimum"),
    });
    if let Some(pattern) = map.get("pattern").and_then(Value::as_str) {
        match Regex::new(pattern) {
            Ok(re) => node.pattern = Some((pattern.to_string(), re)),
            Err(err) => problems.push(FieldError::invalid(
                path::child(at, "pattern"),
                pattern,
                &format!("must be a valid regular expression, but isn't: {err}"),
            )),
        }
    }
    node.list_type = match map.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => ListType::Set,
        Some("map") => ListType::Map(
            map.get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|k| k.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default(),
        ),
        _ => ListType::Atomic,
    };
    if let Some(properties) = map.get("properties").and_then(Value::as_object) {
        for (name, child) in properties {
            let child_at = path::key(&path::child(at, "properties"), name);
            node.properties
                .insert(name.clone(), compile_node(child, &child_at, spine, problems));
        }
    }
    node.additional = match map.get("additionalProperties") {
        Some(Value::Bool(true)) => Additional::Any,
        Some(child @ Value::Object(_)) => Additional::Schema(Box::new(compile_node(
            child,
            &path::child(at, "additionalProperties"),
            spine,
            problems,
        ))),
        _ => Additional::None,
    };
    if let Some(items) = map.get("items").filter(|i| i.is_object()) {
        node.items = Some(Box::new(compile_node(
            items,
            &path::child(at, "items"),
            spine,
            problems,
        )));
    }
    let branches = |key: &str, problems: &mut Vec<FieldError>| -> Vec<SchemaNode> {
        map.get(key)
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .enumerate()
                    .map(|(i, b)| compile_node(b, &path::index(&path::child(at, key), i), false, problems))
                    .collect()
            })
            .unwrap_or_default()
    };
    node.all_of = branches("allOf", problems);
    node.any_of = if node.int_or_string {
        Vec::new()
    } else {
        branches("anyOf", problems)
    };
    node.one_of = branches("oneOf", problems);
    node.not = map
        .get("not")
        .map(|n| Box::new(compile_node(n, &path::child(at, "not"), false, problems)));
    if spine {
        node.rules = compile_rules(schema, at, problems);
    }
    let children = node
        .properties
        .values()
        .chain(node.items.as_deref())
        .chain(match &node.additional {
            Additional::Schema(s) => Some(s.as_ref()),
            _ => None,
        });
    let (mut rules, mut defaults, mut lists, mut embedded) = (false, false, false, false);
    for child in children {
        rules |= child.has_rules_below;
        defaults |= child.has_defaults_below;
        lists |= child.has_list_types_below;
        embedded |= child.has_embedded_below;
    }
    node.has_rules_below = rules || node.rules.is_some();
    node.has_defaults_below = defaults || node.default.is_some();
    node.has_list_types_below = lists || node.list_type != ListType::Atomic;
    node.has_embedded_below = embedded || node.embedded_resource;
    node
}

/// Compiles the node's own `x-kubernetes-validations` with kube-cel.
fn compile_rules(schema: &Value, at: &str, problems: &mut Vec<FieldError>) -> Option<NodeRules> {
    let raw_rules = schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .filter(|r| !r.is_empty())?;
    let mut own = schema.clone();
    if let Value::Object(map) = &mut own {
        for key in [
            "properties",
            "additionalProperties",
            "items",
            "allOf",
            "anyOf",
            "oneOf",
            "not",
        ] {
            if let Some(child) = map.get_mut(key) {
                strip_rules(child);
            }
        }
    }
    let compiled = kube_cel::compile_schema(&own);
    let rules_at = path::child(at, "x-kubernetes-validations");
    let mut rules = Vec::with_capacity(raw_rules.len());
    for (i, (raw, result)) in raw_rules.iter().zip(compiled.validations.iter()).enumerate() {
        let text = |key: &str| raw.get(key).and_then(Value::as_str).unwrap_or("").to_string();
        match result {
            Ok(ok) => rules.push(RuleDef {
                rule: text("rule"),
                message: text("message"),
                has_message_expression: !text("messageExpression").is_empty(),
                reason: raw.get("reason").and_then(Value::as_str).map(str::to_string),
                field_path: text("fieldPath"),
                uses_old_self: ok.is_transition_rule,
            }),
            Err(err) => {
                let field = if matches!(err, kube_cel::CompilationError::MessageExpressionParse { .. }) {
                    path::child(&path::index(&rules_at, i), "messageExpression")
                } else {
                    path::child(&path::index(&rules_at, i), "rule")
                };
                problems.push(FieldError::invalid(field, raw, &format!("compilation failed: {err}")));
            }
        }
    }
    Some(NodeRules { compiled, rules })
}

/// Removes every `x-kubernetes-validations` below a schema value.
fn strip_rules(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            map.remove("x-kubernetes-validations");
            for (key, child) in map.iter_mut() {
                // `default`, `enum` and `example` hold data, not schemas.
                if !matches!(key.as_str(), "default" | "enum" | "example") {
                    strip_rules(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_rules),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn compiles_flags_and_rules() {
        let schema = json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "x-kubernetes-validations": [{"rule": "self.a >= oldSelf.a", "message": "no shrink"}],
                    "properties": {
                        "a": {"type": "integer", "default": 1, "x-kubernetes-validations": [{"rule": "self > 0"}]},
                        "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string", "pattern": "^[a-z]+$"}}
                    }
                }
            }
        });
        let node = SchemaNode::compile(&schema).expect("compiles");
        let spec = &node.properties["spec"];
        assert!(node.has_rules_below && node.has_defaults_below && node.has_list_types_below);
        let rules = spec.rules.as_ref().expect("spec has rules");
        assert_eq!(rules.rules.len(), 1);
        assert!(rules.rules[0].uses_old_self);
        assert_eq!(rules.compiled.validations.len(), 1);
        assert!(spec.properties["port"].int_or_string && spec.properties["port"].any_of.is_empty());
        assert_eq!(spec.properties["port"].type_name, "");
        assert_eq!(spec.properties["tags"].list_type, ListType::Set);
    }

    #[test]
    fn bad_patterns_and_rules_are_problems() {
        let schema = json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string", "pattern": "("}},
                "x-kubernetes-validations": [{"rule": "self.x >="}]}}
        });
        let problems = SchemaNode::compile(&schema).expect_err("does not compile");
        let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "properties[spec].properties[x].pattern",
                "properties[spec].x-kubernetes-validations[0].rule"
            ]
        );
        assert!(
            problems[0]
                .message
                .contains("must be a valid regular expression, but isn't: ")
        );
        assert!(problems[1].message.contains("compilation failed: "));
    }
}
