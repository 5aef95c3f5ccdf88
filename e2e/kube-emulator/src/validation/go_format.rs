//! Go's rendering of the "bad value" in a field error (`field.Error.ErrorBody`).
//!
//! kube-apiserver prints ints, floats and bools with `%v`, strings with `%q`, a nil value as `"null"`, and
//! maps, slices and unsigned ints with `%#v` (`map[string]interface {}{"a":1}`, `[]interface {}{"a"}`, `0x0`).
//! Values decoded from JSON are the unstructured Go types (`int64`, `float64`, `string`, `bool`, `nil`,
//! `map[string]interface{}`, `[]interface{}`), so a [`serde_json::Value`] maps onto them one to one.

use serde_json::Value;

/// A bad value already rendered as Go renders it in a field error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadValue(String);

impl BadValue {
    /// The rendered text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A nil value, which Go prints as the quoted string `"null"`.
    pub fn null() -> Self {
        BadValue(quote("null"))
    }

    /// An unsigned integer, printed with `%#v` (`0x0`), as the store does for a missing resourceVersion.
    #[cfg(test)]
    pub fn uint(value: u64) -> Self {
        BadValue(format!("{value:#x}"))
    }

    /// A `[]string`, printed with `%#v`: `[]string{"a", "b"}`.
    pub fn string_slice<S: AsRef<str>>(values: &[S]) -> Self {
        let items: Vec<String> = values.iter().map(|s| quote(s.as_ref())).collect();
        BadValue(format!("[]string{{{}}}", items.join(", ")))
    }

    /// A value rendered by the caller, for Go structs whose `%#v` form has no JSON counterpart.
    pub fn raw(rendered: impl Into<String>) -> Self {
        BadValue(rendered.into())
    }
}

impl From<&Value> for BadValue {
    fn from(value: &Value) -> Self {
        BadValue(match value {
            Value::Null => quote("null"),
            Value::Bool(b) => b.to_string(),
            Value::Number(_) => number(value),
            Value::String(s) => quote(s),
            Value::Array(_) | Value::Object(_) => sharp_v(value),
        })
    }
}

impl From<&str> for BadValue {
    fn from(value: &str) -> Self {
        BadValue(quote(value))
    }
}

impl From<&String> for BadValue {
    fn from(value: &String) -> Self {
        BadValue(quote(value))
    }
}

impl From<String> for BadValue {
    fn from(value: String) -> Self {
        BadValue(quote(&value))
    }
}

impl From<i64> for BadValue {
    fn from(value: i64) -> Self {
        BadValue(value.to_string())
    }
}

impl From<i32> for BadValue {
    fn from(value: i32) -> Self {
        BadValue(value.to_string())
    }
}

impl From<bool> for BadValue {
    fn from(value: bool) -> Self {
        BadValue(value.to_string())
    }
}

impl From<f64> for BadValue {
    fn from(value: f64) -> Self {
        BadValue(float(value))
    }
}

/// Go's `strconv.Quote` (`%q`): double quotes, backslash escapes for quotes, backslashes and control
/// characters; printable non-ASCII characters are kept as they are.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => {
                if (c as u32) <= 0xffff {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON number as Go prints the unstructured value with `%v`: integers exactly, other numbers as
/// `float64` in Go's shortest `%g` form.
pub fn number(value: &Value) -> String {
    match value {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.to_string()
            } else if let Some(u) = n.as_u64() {
                // Larger than int64: Go's JSON decoding into interface{} gives float64 here.
                float(u as f64)
            } else {
                float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        other => other.to_string(),
    }
}

/// A `float64` as Go's `%v` prints it: the shortest digits that round-trip, switching to `%e` form (with a
/// two-digit exponent) when the decimal exponent is below -4 or at least 6, so `123456`, `1e+06`,
/// `1.234567e+06`, `1e-05`.
pub fn float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".to_string()
        } else {
            "-Inf".to_string()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".to_string()
        } else {
            "0".to_string()
        };
    }
    // Rust's `{:e}` gives the shortest round-trip digits, e.g. "-1.234567e6" or "5e-7".
    let sci = format!("{f:e}");
    let (mantissa, exp) = match sci.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (sci.as_str(), 0),
    };
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if negative { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        let (head, tail) = digits.split_at(1);
        let frac = if tail.is_empty() {
            String::new()
        } else {
            format!(".{tail}")
        };
        let exp_sign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{head}{frac}e{exp_sign}{:02}", exp.abs());
    }
    if exp < 0 {
        let zeros = "0".repeat(usize::try_from(-exp - 1).unwrap_or(0));
        return format!("{sign}0.{zeros}{digits}");
    }
    let int_len = usize::try_from(exp + 1).unwrap_or(1);
    if digits.len() <= int_len {
        format!("{sign}{digits}{}", "0".repeat(int_len - digits.len()))
    } else {
        let (int_part, frac_part) = digits.split_at(int_len);
        format!("{sign}{int_part}.{frac_part}")
    }
}

/// Go's `%#v` of an unstructured value: `map[string]interface {}{"a":1, "b":"x"}` (keys sorted),
/// `[]interface {}{"a", 1}`; nested nil values print as `interface {}(nil)`.
pub fn sharp_v(value: &Value) -> String {
    match value {
        Value::Null => "interface {}(nil)".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(_) => number(value),
        Value::String(s) => quote(s),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(sharp_v).collect();
            format!("[]interface {{}}{{{}}}", parts.join(", "))
        }
        Value::Object(map) => {
            // serde_json's map iterates in key order, which is also the order Go's fmt prints map keys in.
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let parts: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}:{}", quote(k), sharp_v(v)))
                .collect();
            format!("map[string]interface {{}}{{{}}}", parts.join(", "))
        }
    }
}

/// Go's `time.Time.String()` of an RFC 3339 timestamp in UTC (`2024-01-02 03:04:05 +0000 UTC`, fractional
/// seconds without trailing zeros), the form `metav1.Time` values take in field errors. Text that is not a
/// timestamp is returned quoted.
pub fn time_string(rfc3339: &str) -> String {
    match chrono::DateTime::parse_from_rfc3339(rfc3339) {
        Ok(t) => {
            let utc = t.with_timezone(&chrono::Utc);
            let nanos = utc.timestamp_subsec_nanos();
            let frac = if nanos == 0 {
                String::new()
            } else {
                format!(".{nanos:09}").trim_end_matches('0').to_string()
            };
            format!("{}{frac} +0000 UTC", utc.format("%Y-%m-%d %H:%M:%S"))
        }
        Err(_) => quote(rfc3339),
    }
}

/// The zero `time.Time` as Go prints it.
pub const ZERO_TIME: &str = "0001-01-01 00:00:00 +0000 UTC";

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn scalars_use_percent_v_and_strings_percent_q() {
        assert_eq!(BadValue::from(&json!(11)).as_str(), "11");
        assert_eq!(BadValue::from(&json!(-3)).as_str(), "-3");
        assert_eq!(BadValue::from(&json!(true)).as_str(), "true");
        assert_eq!(BadValue::from(&json!("medium")).as_str(), "\"medium\"");
        assert_eq!(BadValue::from(&json!(null)).as_str(), "\"null\"");
        assert_eq!(
            BadValue::from(&json!("a\"b\\c\nd\u{1}é")).as_str(),
            "\"a\\\"b\\\\c\\nd\\x01é\""
        );
    }

    #[test]
    fn floats_use_go_shortest_g() {
        assert_eq!(float(1.5), "1.5");
        assert_eq!(float(1.0), "1");
        assert_eq!(float(100.0), "100");
        assert_eq!(float(123_456.0), "123456");
        assert_eq!(float(1_000_000.0), "1e+06");
        assert_eq!(float(1_234_567.0), "1.234567e+06");
        assert_eq!(float(0.0001), "0.0001");
        assert_eq!(float(0.00001), "1e-05");
        assert_eq!(float(-2.25), "-2.25");
        assert_eq!(float(1e21), "1e+21");
        assert_eq!(BadValue::from(&json!(2.0)).as_str(), "2");
    }

    #[test]
    fn compound_values_use_sharp_v() {
        assert_eq!(BadValue::from(&json!(["a"])).as_str(), "[]interface {}{\"a\"}");
        assert_eq!(
            BadValue::from(&json!({"name": "a", "n": 1, "x": null, "l": [true]})).as_str(),
            "map[string]interface {}{\"l\":[]interface {}{true}, \"n\":1, \"name\":\"a\", \"x\":interface {}(nil)}"
        );
        assert_eq!(BadValue::uint(0).as_str(), "0x0");
        assert_eq!(
            time_string("2024-01-02T03:04:05.120000Z"),
            "2024-01-02 03:04:05.12 +0000 UTC"
        );
        assert_eq!(
            BadValue::string_slice(&["orphan", "foregroundDeletion"]).as_str(),
            "[]string{\"orphan\", \"foregroundDeletion\"}"
        );
    }
}
