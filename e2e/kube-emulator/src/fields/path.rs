//! Path elements: the steps of a field path, with structured-merge-diff's total order, their `fieldsV1` key
//! form (`f:name`, `k:{…}`, `v:…`, `i:n`) and their conflict-message form (`.name`, `[k=v]`, `[=v]`, `[n]`).

use std::cmp::Ordering;

use serde_json::Value;

use super::gojson;

/// One step into an object.
#[derive(Clone, Debug)]
pub enum PathElement {
    /// A struct field or a map key (`f:<name>`).
    Field(String),
    /// An item of a list of type map, named by all its key fields, sorted by field name (`k:{…}`).
    Key(Vec<(String, Value)>),
    /// An item of a list of type set, named by its value (`v:<json>`).
    Value(Value),
    /// A list position (`i:<n>`); decoded but never produced, because atomic lists are never split.
    Index(usize),
}

/// A path from the root of an object.
pub type Path = Vec<PathElement>;

impl PathElement {
    /// The `fieldsV1` key of this element, e.g. `f:data` or `k:{"name":"nginx"}`.
    pub fn to_fields_v1_key(&self) -> String {
        let mut out = String::new();
        match self {
            PathElement::Field(name) => {
                out.push_str("f:");
                out.push_str(name);
            }
            PathElement::Key(fields) => {
                out.push_str("k:{");
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    gojson::write_string(&mut out, name);
                    out.push(':');
                    gojson::write_value(&mut out, value);
                }
                out.push('}');
            }
            PathElement::Value(value) => {
                out.push_str("v:");
                gojson::write_value(&mut out, value);
            }
            PathElement::Index(index) => {
                out.push_str("i:");
                out.push_str(&index.to_string());
            }
        }
        out
    }

    /// Parses a `fieldsV1` key. `Ok(None)` is an element of a kind this version does not know, which the
    /// server drops silently (as structured-merge-diff does).
    pub fn from_fields_v1_key(key: &str) -> Result<Option<PathElement>, String> {
        let Some((kind, rest)) = key.split_once(':') else {
            return Ok(None);
        };
        match kind {
            "f" => Ok(Some(PathElement::Field(rest.to_string()))),
            "v" => serde_json::from_str(rest)
                .map(|v| Some(PathElement::Value(v)))
                .map_err(|e| format!("parsing JSON: {e}")),
            "k" => {
                let parsed: Value = serde_json::from_str(rest).map_err(|e| format!("parsing JSON: {e}"))?;
                let Value::Object(map) = parsed else {
                    return Err(format!("expected a JSON object, got {rest}"));
                };
                let mut fields: Vec<(String, Value)> = map.into_iter().collect();
                fields.sort_by(|a, b| a.0.cmp(&b.0));
                Ok(Some(PathElement::Key(fields)))
            }
            "i" => rest
                .parse::<usize>()
                .map(|i| Some(PathElement::Index(i)))
                .map_err(|e| format!("parsing index: {e}")),
            _ => Ok(None),
        }
    }

    /// The element as conflict messages print it: `.name`, `[name="nginx"]`, `[="a"]` or `[0]`.
    pub fn display(&self) -> String {
        match self {
            PathElement::Field(name) => format!(".{name}"),
            PathElement::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(name, value)| format!("{name}={}", value_display(value)))
                    .collect();
                format!("[{}]", parts.join(","))
            }
            PathElement::Value(value) => format!("[={}]", value_display(value)),
            PathElement::Index(index) => format!("[{index}]"),
        }
    }

    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }
}

/// A whole path as conflict messages print it, e.g. `.spec.ports[port=80,protocol="TCP"]`.
pub fn path_display(path: &[PathElement]) -> String {
    path.iter().map(PathElement::display).collect()
}

/// A value as structured-merge-diff's `value.ToString` prints it: strings quoted Go-style, numbers bare.
fn value_display(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => gojson::go_quote(s),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(value_display).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{k}={}", value_display(&map[k.as_str()])))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
    }
}

impl Ord for PathElement {
    /// structured-merge-diff's order: fields, then keys, then values, then indexes.
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.as_bytes().cmp(b.as_bytes()),
            (PathElement::Key(a), PathElement::Key(b)) => compare_key_fields(a, b),
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

/// Key field lists compare field by field: name first, then value; a shorter list sorts first.
fn compare_key_fields(a: &[(String, Value)], b: &[(String, Value)]) -> Ordering {
    for ((an, av), (bn, bv)) in a.iter().zip(b.iter()) {
        let by_name = an.as_bytes().cmp(bn.as_bytes());
        if by_name != Ordering::Equal {
            return by_name;
        }
        let by_value = compare_values(av, bv);
        if by_value != Ordering::Equal {
            return by_value;
        }
    }
    a.len().cmp(&b.len())
}

/// structured-merge-diff's total order on values: numbers (compared numerically) < strings < booleans <
/// lists < maps < null.
pub fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y),
        (Value::String(x), Value::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (l, r) in x.iter().zip(y.iter()) {
                let c = compare_values(l, r);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                match (x.get(key.as_str()), y.get(key.as_str())) {
                    (None, _) => return Ordering::Greater,
                    (_, None) => return Ordering::Less,
                    (Some(l), Some(r)) => {
                        let c = compare_values(l, r);
                        if c != Ordering::Equal {
                            return c;
                        }
                    }
                }
            }
            Ordering::Equal
        }
        (Value::Null, Value::Null) => Ordering::Equal,
        _ => rank(a).cmp(&rank(b)),
    }
}

fn compare_numbers(a: &serde_json::Number, b: &serde_json::Number) -> Ordering {
    let as_int = |n: &serde_json::Number| n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from));
    match (as_int(a), as_int(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => {
            let x = a.as_f64().unwrap_or(0.0);
            let y = b.as_f64().unwrap_or(0.0);
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
    }
}

/// Deep equality with numbers compared by value (`1` equals `1.0`), as structured-merge-diff compares.
pub fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y) == Ordering::Equal,
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(l, r)| values_equal(l, r)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| values_equal(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(fields: &[(&str, Value)]) -> PathElement {
        PathElement::Key(fields.iter().map(|(n, v)| (n.to_string(), v.clone())).collect())
    }

    #[test]
    fn elements_order_fields_keys_values_indexes() {
        let mut elements = [
            PathElement::Index(0),
            PathElement::Value(json!("a")),
            key(&[("name", json!("x"))]),
            PathElement::Field("b".into()),
            PathElement::Field("a".into()),
        ];
        elements.sort();
        let keys: Vec<String> = elements.iter().map(PathElement::to_fields_v1_key).collect();
        assert_eq!(keys, vec!["f:a", "f:b", r#"k:{"name":"x"}"#, r#"v:"a""#, "i:0"]);
    }

    #[test]
    fn numbers_sort_numerically_before_strings_and_bools() {
        let mut values = vec![json!(true), json!("80"), json!(443), json!(80), json!(null), json!(1.5)];
        values.sort_by(compare_values);
        assert_eq!(
            values,
            vec![json!(1.5), json!(80), json!(443), json!("80"), json!(true), json!(null)]
        );
        assert_eq!(
            key(&[("containerPort", json!(80)), ("protocol", json!("TCP"))])
                .cmp(&key(&[("containerPort", json!(443)), ("protocol", json!("TCP"))])),
            Ordering::Less
        );
    }

    #[test]
    fn keys_round_trip_through_fields_v1_form() {
        let element = key(&[("containerPort", json!(80)), ("protocol", json!("TCP"))]);
        let text = element.to_fields_v1_key();
        assert_eq!(text, r#"k:{"containerPort":80,"protocol":"TCP"}"#);
        let parsed = PathElement::from_fields_v1_key(r#"k:{"protocol":"TCP","containerPort":80}"#)
            .unwrap()
            .unwrap();
        assert_eq!(parsed, element);
        assert_eq!(PathElement::from_fields_v1_key("x:whatever").unwrap(), None);
        assert!(PathElement::from_fields_v1_key("k:[1]").is_err());
    }

    #[test]
    fn paths_display_like_conflict_messages() {
        let path = vec![
            PathElement::Field("spec".into()),
            PathElement::Field("ports".into()),
            key(&[("port", json!(80)), ("protocol", json!("TCP"))]),
        ];
        assert_eq!(path_display(&path), r#".spec.ports[port=80,protocol="TCP"]"#);
        let set_item = vec![PathElement::Field("finalizers".into()), PathElement::Value(json!("a"))];
        assert_eq!(path_display(&set_item), r#".finalizers[="a"]"#);
    }

    #[test]
    fn numeric_equality_ignores_representation() {
        assert!(values_equal(&json!({"a": [1]}), &json!({"a": [1.0]})));
        assert!(!values_equal(&json!({"a": 1}), &json!({"a": 2})));
    }
}
