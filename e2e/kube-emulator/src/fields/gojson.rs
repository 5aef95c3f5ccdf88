//! JSON text written the way Go's `encoding/json` (and jsoniter's standard-library mode) writes it.
//!
//! kube-apiserver builds several strings with Go's encoder: the `k:`/`v:` path elements inside `fieldsV1`,
//! the manager identifiers it sorts by, and the `last-applied-configuration` annotation. Go escapes `<`, `>`
//! and `&`, sorts map keys and formats floats differently from `serde_json`, so these strings are written
//! here to stay byte-identical.

use serde_json::Value;

/// Appends `s` as a JSON string literal with Go's escaping (HTML-safe, U+2028/U+2029 escaped).
pub(crate) fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => push_unicode_escape(out, c),
            c if (c as u32) < 0x20 => push_unicode_escape(out, c),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn push_unicode_escape(out: &mut String, c: char) {
    out.push_str(&format!("\\u{:04x}", c as u32));
}

/// Appends `value` as compact JSON with Go's rules: object keys sorted bytewise, Go string escaping and
/// Go float formatting.
pub(crate) fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, &map[key.as_str()]);
            }
            out.push('}');
        }
    }
}

/// `value` as Go-encoded compact JSON.
pub(crate) fn to_string(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

/// Writes a number the way Go writes an unstructured number: integers as integers, integral floats without
/// a fraction, and the exponent form (`1e+21`, `1e-7`) outside `[1e-6, 1e21)`.
fn write_number(out: &mut String, n: &serde_json::Number) {
    if n.is_i64() || n.is_u64() {
        out.push_str(&n.to_string());
        return;
    }
    let Some(f) = n.as_f64() else {
        out.push_str(&n.to_string());
        return;
    };
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Rust writes `1e21` / `1e-7`; Go writes `1e+21` / `1e-07` trimmed to `1e-7`.
        let text = format!("{f:e}");
        match text.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => {
                out.push_str(mantissa);
                out.push_str("e+");
                out.push_str(exp);
            }
            _ => out.push_str(&text),
        }
    } else {
        // Rust's `Display` for f64 is the shortest round-trip form without an exponent, like Go's 'f' -1.
        out.push_str(&format!("{f}"));
    }
}

/// Go's `%q` of a string: double-quoted, with Go escapes for quotes, backslashes and unprintable characters.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if is_go_printable(c) => out.push(c),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) <= 0xffff => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// An approximation of Go's `unicode.IsPrint`: graphic characters and the ASCII space, but no other spaces,
/// controls or invisible format characters.
pub(crate) fn is_go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    !matches!(c,
        '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}'
        | '\u{fff9}'..='\u{fffb}')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_are_html_escaped_like_go() {
        assert_eq!(to_string(&json!("a<b>&\"c\\\n")), r#""a\u003cb\u003e\u0026\"c\\\n""#);
        assert_eq!(to_string(&json!("\u{1}")), r#""\u0001""#);
    }

    #[test]
    fn objects_have_sorted_keys() {
        let value: Value = serde_json::from_str(r#"{"b":1,"a":{"d":true,"c":null}}"#).unwrap();
        assert_eq!(to_string(&value), r#"{"a":{"c":null,"d":true},"b":1}"#);
    }

    #[test]
    fn floats_follow_go_formatting() {
        assert_eq!(to_string(&json!(1.5)), "1.5");
        assert_eq!(to_string(&json!(2.0)), "2");
        assert_eq!(to_string(&json!(1e21)), "1e+21");
        assert_eq!(to_string(&json!(1e-7)), "1e-7");
    }

    #[test]
    fn go_quote_matches_percent_q() {
        assert_eq!(go_quote("alice"), "\"alice\"");
        assert_eq!(go_quote("a\"b"), "\"a\\\"b\"");
        assert_eq!(go_quote("tab\there"), "\"tab\\there\"");
        assert_eq!(go_quote("héllo"), "\"héllo\"");
    }
}
