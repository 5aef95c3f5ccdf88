//! Label selectors (equality- and set-based) and field selectors, parsed from query strings as
//! apimachinery's `labels.Parse` and `fields.ParseSelector` do, and evaluated against stored objects.

use std::collections::BTreeMap;

use serde_json::Value;

use super::resources::{BuiltinKind, ResourceDef};

/// A selector string that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// A label selector syntax error.
    #[error("unable to parse requirement: {0}")]
    Label(String),
    /// A field selector syntax error.
    #[error("invalid selector: '{0}'; can't understand '{1}'")]
    Field(String, String),
    /// A field label the resource does not support.
    /// kube-apiserver 1.36's text (1.32 said `field label not supported: <label>`).
    #[error("\"{0}\" is not a known field selector: only {1}")]
    UnsupportedField(String, String),
}

#[derive(Clone, Debug, PartialEq)]
enum LabelOp {
    Exists,
    NotExists,
    Equals(String),
    NotEquals(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    GreaterThan(i64),
    LessThan(i64),
}

/// A parsed label selector: all requirements must hold.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LabelSelector {
    requirements: Vec<(String, LabelOp)>,
}

impl LabelSelector {
    /// Parses `a=b,c!=d,e in (x,y),!f,g`.
    pub fn parse(text: &str) -> Result<Self, SelectorError> {
        let mut requirements = Vec::new();
        for part in split_top_level(text) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            requirements.push(parse_requirement(part)?);
        }
        Ok(LabelSelector { requirements })
    }

    /// The selector of a `metav1.LabelSelector` object (`matchLabels` and `matchExpressions`).
    pub fn from_object(selector: &Value) -> Self {
        let mut requirements = Vec::new();
        if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
            for (key, value) in labels {
                requirements.push((
                    key.clone(),
                    LabelOp::Equals(value.as_str().unwrap_or_default().to_string()),
                ));
            }
        }
        for expression in selector
            .get("matchExpressions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let key = expression
                .get("key")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let values = super::meta::string_list(expression.get("values"));
            let op = match expression.get("operator").and_then(Value::as_str).unwrap_or_default() {
                "In" => LabelOp::In(values),
                "NotIn" => LabelOp::NotIn(values),
                "Exists" => LabelOp::Exists,
                // DoesNotExist, and anything unknown selects nothing that has the key.
                _ => LabelOp::NotExists,
            };
            requirements.push((key, op));
        }
        LabelSelector { requirements }
    }

    /// Whether the selector selects everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|(key, op)| {
            let value = labels.get(key);
            match op {
                LabelOp::Exists => value.is_some(),
                LabelOp::NotExists => value.is_none(),
                LabelOp::Equals(v) => value == Some(v),
                LabelOp::NotEquals(v) => value != Some(v),
                LabelOp::In(vs) => value.is_some_and(|x| vs.contains(x)),
                LabelOp::NotIn(vs) => value.is_none_or(|x| !vs.contains(x)),
                LabelOp::GreaterThan(n) => value.and_then(|x| x.parse::<i64>().ok()).is_some_and(|x| x > *n),
                LabelOp::LessThan(n) => value.and_then(|x| x.parse::<i64>().ok()).is_some_and(|x| x < *n),
            }
        })
    }
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut current = String::new();
    for c in text.chars() {
        match c {
            '(' => {
                depth += 1;
                current.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            ',' if depth == 0 => parts.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
    }
    parts.push(current);
    parts
}

fn parse_requirement(part: &str) -> Result<(String, LabelOp), SelectorError> {
    let bad = || SelectorError::Label(part.to_string());
    if let Some(key) = part.strip_prefix('!') {
        return Ok((check_key(key.trim(), part)?, LabelOp::NotExists));
    }
    for (token, is_not) in [(" notin ", true), (" in ", false)] {
        if let Some(index) = part.find(token) {
            let key = check_key(part[..index].trim(), part)?;
            let rest = part[index + token.len()..].trim();
            let inner = rest
                .strip_prefix('(')
                .and_then(|r| r.strip_suffix(')'))
                .ok_or_else(bad)?;
            let values: Vec<String> = inner.split(',').map(|v| v.trim().to_string()).collect();
            return Ok((
                key,
                if is_not {
                    LabelOp::NotIn(values)
                } else {
                    LabelOp::In(values)
                },
            ));
        }
    }
    for (token, kind) in [("!=", 0), ("==", 1), ("=", 1), (">", 2), ("<", 3)] {
        if let Some(index) = part.find(token) {
            let key = check_key(part[..index].trim(), part)?;
            let value = part[index + token.len()..].trim().to_string();
            let op = match kind {
                0 => LabelOp::NotEquals(value),
                1 => LabelOp::Equals(value),
                2 => LabelOp::GreaterThan(value.parse().map_err(|_| bad())?),
                _ => LabelOp::LessThan(value.parse().map_err(|_| bad())?),
            };
            return Ok((key, op));
        }
    }
    Ok((check_key(part, part)?, LabelOp::Exists))
}

fn check_key(key: &str, part: &str) -> Result<String, SelectorError> {
    if key.is_empty() || key.contains(char::is_whitespace) || key.contains(['(', ')']) {
        return Err(SelectorError::Label(part.to_string()));
    }
    Ok(key.to_string())
}

/// A parsed field selector: `label=value` / `label!=value` terms, all of which must hold.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FieldSelector {
    terms: Vec<(String, bool, String)>,
}

impl FieldSelector {
    /// Parses `metadata.name=x,status.phase!=Active` (with `\,`, `\=` and `\\` escapes).
    pub fn parse(text: &str) -> Result<Self, SelectorError> {
        let mut terms = Vec::new();
        for raw in split_unescaped(text, ',') {
            if raw.is_empty() {
                continue;
            }
            let (label, negated, value) = if let Some(i) = find_unescaped(&raw, "!=") {
                (raw[..i].to_string(), true, raw[i + 2..].to_string())
            } else if let Some(i) = find_unescaped(&raw, "==") {
                (raw[..i].to_string(), false, raw[i + 2..].to_string())
            } else if let Some(i) = find_unescaped(&raw, "=") {
                (raw[..i].to_string(), false, raw[i + 1..].to_string())
            } else {
                return Err(SelectorError::Field(text.to_string(), raw));
            };
            terms.push((label.trim().to_string(), negated, unescape(&value)));
        }
        Ok(FieldSelector { terms })
    }

    /// This selector with one more `label=value` term.
    pub fn and_equals(mut self, label: &str, value: &str) -> Self {
        self.terms.push((label.to_string(), false, value.to_string()));
        self
    }

    /// Whether nothing is selected on.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The value required for `label` by an equality term, if any.
    pub fn required_value(&self, label: &str) -> Option<&str> {
        self.terms
            .iter()
            .find(|(l, negated, _)| l == label && !negated)
            .map(|(_, _, v)| v.as_str())
    }

    /// Checks that every label is supported by the resource.
    pub fn check_supported(&self, def: &ResourceDef, version: &str) -> Result<(), SelectorError> {
        for (label, _, _) in &self.terms {
            if !is_supported(def, version, label) {
                let known: Vec<String> = supported_fields(def, version)
                    .iter()
                    .map(|f| format!("\"{f}\""))
                    .collect();
                return Err(SelectorError::UnsupportedField(label.clone(), known.join(", ")));
            }
        }
        Ok(())
    }

    /// Whether the object satisfies every term.
    pub fn matches(&self, obj: &Value) -> bool {
        self.terms.iter().all(|(label, negated, want)| {
            let actual = field_value(obj, label);
            (actual == *want) != *negated
        })
    }
}

fn split_unescaped(text: &str, sep: char) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut escaped = false;
    for c in text.chars() {
        if escaped {
            current.push('\\');
            current.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            parts.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
    }
    parts.push(current);
    parts
}

fn find_unescaped(text: &str, token: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            i += 2;
            continue;
        }
        if text[i..].starts_with(token) {
            return Some(i);
        }
        i += 1;
    }
    None
}

fn unescape(text: &str) -> String {
    let mut out = String::new();
    let mut escaped = false;
    for c in text.chars() {
        if escaped {
            out.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else {
            out.push(c);
        }
    }
    out
}

const EVENT_FIELDS: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];

fn is_supported(def: &ResourceDef, version: &str, label: &str) -> bool {
    if label == "metadata.name" || label == "metadata.namespace" {
        return true;
    }
    match def.builtin() {
        Some(BuiltinKind::Event) => EVENT_FIELDS.contains(&label),
        Some(BuiltinKind::Namespace) => label == "status.phase",
        Some(BuiltinKind::Secret) => label == "type",
        Some(_) => false,
        None => def
            .version(version)
            .is_some_and(|v| v.selectable_fields.iter().any(|f| f.trim_start_matches('.') == label)),
    }
}

/// The field labels a resource can be selected on, in the order the apiserver lists them in its refusal
/// (checked for a resource with only the metadata fields; the order of the others is the emulator's).
fn supported_fields(def: &ResourceDef, version: &str) -> Vec<String> {
    let mut fields = vec!["metadata.name".to_string(), "metadata.namespace".to_string()];
    match def.builtin() {
        Some(BuiltinKind::Event) => fields.extend(EVENT_FIELDS.iter().map(|f| f.to_string())),
        Some(BuiltinKind::Namespace) => fields.push("status.phase".into()),
        Some(BuiltinKind::Secret) => fields.push("type".into()),
        Some(_) => {}
        None => fields.extend(def.version(version).into_iter().flat_map(|v| {
            v.selectable_fields
                .iter()
                .map(|f| f.trim_start_matches('.').to_string())
        })),
    }
    fields.dedup();
    fields
}

/// The string value of a field label on an object (`""` when missing), as the field-label conversion gives it.
pub fn field_value(obj: &Value, label: &str) -> String {
    if label == "source" {
        return obj
            .pointer("/source/component")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
    }
    let pointer = format!("/{}", label.replace('.', "/"));
    match obj.pointer(&pointer) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn set_based_label_selectors_match_like_apimachinery() {
        let sel = LabelSelector::parse("app in (web, api),tier!=db,!legacy,env").unwrap();
        assert!(sel.matches(&labels(&[("app", "web"), ("env", "prod")])));
        assert!(!sel.matches(&labels(&[("app", "web"), ("env", "prod"), ("legacy", "1")])));
        assert!(!sel.matches(&labels(&[("app", "batch"), ("env", "prod")])));
        assert!(!sel.matches(&labels(&[("app", "api")])));
        let notin = LabelSelector::parse("app notin (web)").unwrap();
        assert!(notin.matches(&labels(&[])));
    }

    #[test]
    fn field_selectors_handle_escapes_and_negation() {
        let sel = FieldSelector::parse(r"metadata.name=a\,b,metadata.namespace!=kube-system").unwrap();
        assert!(sel.matches(&json!({"metadata":{"name":"a,b","namespace":"default"}})));
        assert!(!sel.matches(&json!({"metadata":{"name":"a,b","namespace":"kube-system"}})));
        assert!(FieldSelector::parse("nonsense").is_err());
    }

    #[test]
    fn event_involved_object_fields_resolve() {
        let ev = json!({"involvedObject":{"uid":"u1","kind":"Gizmo"},"source":{"component":"ctl"}});
        assert_eq!(field_value(&ev, "involvedObject.uid"), "u1");
        assert_eq!(field_value(&ev, "source"), "ctl");
        assert_eq!(field_value(&ev, "reason"), "");
    }
}
