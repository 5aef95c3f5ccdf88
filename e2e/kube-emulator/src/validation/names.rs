//! The name checks of `k8s.io/apimachinery/pkg/util/validation`: DNS-1123 labels and subdomains, DNS-1035
//! labels, qualified names (label keys, annotation keys, finalizers), label values, config-map keys, port
//! names and path segments.
//!
//! Each returns the list of problem texts, empty when the value is valid, exactly as Go's `IsXxx` functions
//! do; callers wrap each text into a [`FieldError::invalid`](super::FieldError::invalid). The matchers are
//! hand-written equivalents of the Go regexes (printed in the messages), which keeps them allocation-free.

/// Longest DNS-1123 label (namespace names, port names in Services).
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// Longest DNS-1123 subdomain (most object names).
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// Longest name part of a qualified name, and longest label value.
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const CONFIG_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_KEY_ERR: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";

/// `must be no more than N characters`.
pub fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// `must be non-empty`.
pub fn empty_error() -> String {
    "must be non-empty".to_string()
}

/// Go's `RegexError`: the message, the examples (each `'x', ` joined by ` or `, which is where the real
/// double spaces come from) and the regex.
pub fn regex_error(message: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{message} (regex used for validation is '{fmt}')");
    }
    let listed: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{message} (e.g. {}regex used for validation is '{fmt}')",
        listed.join(" or ")
    )
}

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, anchored.
fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&first), Some(&last)) => {
            is_lower_alnum(first) && is_lower_alnum(last) && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
        }
        _ => false,
    }
}

/// `[a-z]([-a-z0-9]*[a-z0-9])?`, anchored.
fn matches_dns1035_label(s: &str) -> bool {
    matches_dns1123_label(s) && s.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
}

/// The DNS-1123 subdomain regex, anchored: dot-separated DNS-1123 labels.
fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, anchored.
fn matches_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `IsDNS1123Label`: namespace names, Service port names.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            // A valid subdomain that is not a valid label; the length was checked above, so it is the dots.
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// `IsDNS1123Subdomain`: most object names, label-key prefixes.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `IsDNS1035Label`: CRD version names.
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1035_label(value) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// `IsQualifiedName`: label keys, annotation keys (lower-cased first), finalizer names: an optional DNS
/// subdomain prefix and `/`, then a name part.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push(format!("prefix part {}", empty_error()));
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_ERR,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push(format!("name part {}", empty_error()));
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(format!("name part {}", max_len_error(QUALIFIED_NAME_MAX_LENGTH)));
    }
    if !matches_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `IsValidLabelValue`: empty, or a qualified-name part of at most 63 characters.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(max_len_error(QUALIFIED_NAME_MAX_LENGTH));
    }
    if !value.is_empty() && !matches_qualified_name_part(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `IsConfigMapKey`: keys of ConfigMap `data`/`binaryData` and Secret `data`.
pub fn is_config_map_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    let valid_chars = !value.is_empty()
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
    if !valid_chars {
        errs.push(regex_error(
            CONFIG_KEY_ERR,
            CONFIG_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    match value {
        "." => errs.push("must not be '.'".to_string()),
        ".." => errs.push("must not be '..'".to_string()),
        v if v.starts_with("..") => errs.push("must not start with '..'".to_string()),
        _ => {}
    }
    errs
}

/// `IsValidPortName`: named ports (IANA_SVC_NAME).
pub fn is_valid_port_name(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push(max_len_error(15));
    }
    if port.is_empty() || !port.bytes().all(|c| is_lower_alnum(c) || c == b'-') {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string());
    }
    if !port.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_string());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".to_string());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen".to_string());
    }
    errs
}

/// `IsValidPortNum`: 1..=65535.
pub fn is_valid_port_num(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) {
        Vec::new()
    } else {
        vec!["must be between 1 and 65535, inclusive".to_string()]
    }
}

/// `IsValidPathSegmentName`: names that can appear in a URL path (RBAC objects use only this).
pub fn is_valid_path_segment_name(name: &str) -> Vec<String> {
    if name == "." || name == ".." {
        return vec![format!("may not be '{name}'")];
    }
    ["/", "%"]
        .iter()
        .filter(|bad| name.contains(**bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

/// `NameIsDNSSubdomain`: the object-name rule of most kinds. With `prefix` (a `generateName`), a trailing
/// `-` is allowed.
pub fn name_is_dns_subdomain(name: &str, prefix: bool) -> Vec<String> {
    is_dns1123_subdomain(&mask_trailing_dash(name, prefix))
}

/// `NameIsDNSLabel` (`ValidateNamespaceName`): names of Namespaces.
pub fn name_is_dns_label(name: &str, prefix: bool) -> Vec<String> {
    is_dns1123_label(&mask_trailing_dash(name, prefix))
}

/// `ValidatePathSegmentName`: names of RBAC objects. With `prefix`, `.`/`..` alone are allowed.
pub fn name_is_path_segment(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        ["/", "%"]
            .iter()
            .filter(|bad| name.contains(**bad))
            .map(|bad| format!("may not contain '{bad}'"))
            .collect()
    } else {
        is_valid_path_segment_name(name)
    }
}

/// A generateName may end in `-`: Go replaces it by `a` before checking.
fn mask_trailing_dash(name: &str, prefix: bool) -> String {
    if prefix && name.len() >= 2 && name.ends_with('-') {
        format!("{}a", &name[..name.len() - 1])
    } else {
        name.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subdomain_message_matches_reference_text() {
        assert_eq!(
            is_dns1123_subdomain("Bad_Name"),
            vec![
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        assert!(is_dns1123_subdomain("a.b-c.d1").is_empty());
        assert!(!is_dns1123_subdomain("a..b").is_empty());
        assert!(!is_dns1123_subdomain("").is_empty());
        assert_eq!(
            is_dns1123_subdomain(&"a".repeat(254))[0],
            "must be no more than 253 characters"
        );
    }

    #[test]
    fn label_message_has_the_real_double_space() {
        assert_eq!(
            is_dns1123_label("Bad"),
            vec![
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
        assert_eq!(is_dns1123_label("a.b"), vec!["must not contain dots"]);
        assert!(is_dns1123_label("team-a").is_empty());
        assert_eq!(
            is_dns1123_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
    }

    #[test]
    fn qualified_names_check_prefix_and_name_parts() {
        assert!(is_qualified_name("app.kubernetes.io/name").is_empty());
        assert!(is_qualified_name("MyName").is_empty());
        assert_eq!(
            is_qualified_name("bad key!"),
            vec![
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            ]
        );
        assert_eq!(
            is_qualified_name(&"a".repeat(64)),
            vec!["name part must be no more than 63 characters"]
        );
        assert!(
            is_qualified_name("Bad_Prefix/x")[0]
                .starts_with("prefix part a lowercase RFC 1123 subdomain must consist of")
        );
        assert_eq!(is_qualified_name("/x"), vec!["prefix part must be non-empty"]);
        assert!(is_qualified_name("a/b/c")[0].starts_with("a qualified name must consist of"));
        assert_eq!(
            is_qualified_name("x/").len(),
            2,
            "empty name part fails the emptiness and the regex checks"
        );
    }

    #[test]
    fn label_values_and_config_keys() {
        assert!(is_valid_label_value("").is_empty());
        assert!(is_valid_label_value("my_value-1.2").is_empty());
        assert_eq!(
            is_valid_label_value("-x"),
            vec![
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
            ]
        );
        assert_eq!(
            is_valid_label_value(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
        assert_eq!(
            is_config_map_key("bad key"),
            vec![
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
            ]
        );
        assert_eq!(is_config_map_key(".."), vec!["must not be '..'"]);
        assert_eq!(is_config_map_key("..x"), vec!["must not start with '..'"]);
        assert!(is_config_map_key("tls.crt").is_empty());
    }

    #[test]
    fn ports_segments_and_generate_name_prefixes() {
        assert!(is_valid_port_name("http").is_empty());
        assert_eq!(is_valid_port_name("80"), vec!["must contain at least one letter (a-z)"]);
        assert_eq!(is_valid_port_num(0), vec!["must be between 1 and 65535, inclusive"]);
        assert_eq!(is_valid_path_segment_name(".."), vec!["may not be '..'"]);
        assert_eq!(
            is_valid_path_segment_name("a/b%"),
            vec!["may not contain '/'", "may not contain '%'"]
        );
        assert!(name_is_dns_subdomain("web-", true).is_empty());
        assert!(!name_is_dns_subdomain("web-", false).is_empty());
        assert!(is_dns1035_label("v1").is_empty());
        assert!(!is_dns1035_label("1v").is_empty());
    }
}
