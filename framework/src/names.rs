//! Kubernetes name rules and safe derivation of names from user input.
//!
//! Child objects are named after their owner (`<app>-route`, `ac-<service>-<id>-secret`). When such a derived
//! name would break the DNS-1123 limits, [`truncate_with_hash`] shortens it deterministically and appends a short
//! hash of the full name, so two long owners never collide and the same owner always gets the same name.

use sha2::{Digest, Sha256};

/// Longest DNS-1123 label (namespace names, label values, most resource names used as host parts).
pub const DNS1123_LABEL_MAX: usize = 63;
/// Longest DNS-1123 subdomain (most object names).
pub const DNS1123_SUBDOMAIN_MAX: usize = 253;
/// Longest label value.
pub const LABEL_VALUE_MAX: usize = 63;
/// Number of hex characters of the hash suffix appended by [`truncate_with_hash`].
const HASH_SUFFIX_LEN: usize = 8;

/// Why a string is not a valid DNS-1123 name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The name is empty.
    #[error("must not be empty")]
    Empty,
    /// The name is longer than the limit.
    #[error("must be no more than {max} characters")]
    TooLong {
        /// The limit that was exceeded.
        max: usize,
    },
    /// The name contains characters or a shape DNS-1123 does not allow.
    #[error(
        "must consist of lower case alphanumeric characters{extra}, and must start and end with an alphanumeric character"
    )]
    Malformed {
        /// The extra characters allowed besides alphanumerics, for the message.
        extra: &'static str,
    },
}

fn is_label_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'
}

fn is_alnum(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// Checks a DNS-1123 label: lower-case alphanumerics and `-`, alphanumeric at both ends, at most 63 characters.
pub fn check_dns1123_label(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.len() > DNS1123_LABEL_MAX {
        return Err(NameError::TooLong { max: DNS1123_LABEL_MAX });
    }
    let malformed = NameError::Malformed { extra: " or '-'" };
    if !name.chars().all(is_label_char) {
        return Err(malformed);
    }
    match (name.chars().next(), name.chars().last()) {
        (Some(first), Some(last)) if is_alnum(first) && is_alnum(last) => Ok(()),
        _ => Err(malformed),
    }
}

/// Checks a DNS-1123 subdomain: dot-separated labels, at most 253 characters.
pub fn check_dns1123_subdomain(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.len() > DNS1123_SUBDOMAIN_MAX {
        return Err(NameError::TooLong {
            max: DNS1123_SUBDOMAIN_MAX,
        });
    }
    let malformed = NameError::Malformed { extra: ", '-' or '.'" };
    for part in name.split('.') {
        match check_dns1123_label(part) {
            Ok(()) => {}
            Err(NameError::TooLong { .. }) => {}
            Err(_) => return Err(malformed),
        }
    }
    Ok(())
}

/// Checks a label value: empty, or at most 63 alphanumerics, `-`, `_`, `.` starting and ending alphanumeric.
pub fn check_label_value(value: &str) -> Result<(), NameError> {
    if value.is_empty() {
        return Ok(());
    }
    if value.len() > LABEL_VALUE_MAX {
        return Err(NameError::TooLong { max: LABEL_VALUE_MAX });
    }
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    let malformed = NameError::Malformed {
        extra: ", '-', '_' or '.'",
    };
    if !value.chars().all(ok_char) {
        return Err(malformed);
    }
    match (value.chars().next(), value.chars().last()) {
        (Some(first), Some(last)) if first.is_ascii_alphanumeric() && last.is_ascii_alphanumeric() => Ok(()),
        _ => Err(malformed),
    }
}

/// A short, stable hex digest of `input`, for name suffixes and change detection.
pub fn short_hash(input: &str) -> String {
    let digest = Sha256::digest(input.as_bytes());
    hex::encode(digest)[..HASH_SUFFIX_LEN].to_string()
}

/// Returns `name` unchanged when it fits in `max` characters; otherwise a prefix of it, trimmed of trailing
/// separators, joined by `-` to a hash of the whole name, exactly `max` characters or fewer.
///
/// The result stays a valid DNS-1123 label or subdomain whenever `name` was valid apart from its length.
pub fn truncate_with_hash(name: &str, max: usize) -> String {
    if name.len() <= max {
        return name.to_string();
    }
    let hash = short_hash(name);
    let keep = max.saturating_sub(HASH_SUFFIX_LEN + 1);
    // Names are ASCII here; cut on a char boundary anyway so odd input never panics.
    let mut cut = keep.min(name.len());
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let prefix = name[..cut].trim_end_matches(['-', '.', '_']);
    if prefix.is_empty() {
        hash
    } else {
        format!("{prefix}-{hash}")
    }
}

/// Makes a valid label value out of arbitrary text: invalid characters become `-`, the ends are trimmed to
/// alphanumerics and the result is shortened with a hash suffix to at most 63 characters.
pub fn label_value(text: &str) -> String {
    let replaced: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let trimmed = replaced.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    let shortened = truncate_with_hash(trimmed, LABEL_VALUE_MAX);
    shortened.trim_matches(|c: char| !c.is_ascii_alphanumeric()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_accept_valid_and_reject_invalid_names() {
        assert!(check_dns1123_label("my-app-1").is_ok());
        assert_eq!(check_dns1123_label(""), Err(NameError::Empty));
        assert!(check_dns1123_label("-app").is_err());
        assert!(check_dns1123_label("app-").is_err());
        assert!(check_dns1123_label("App").is_err());
        assert!(check_dns1123_label("a.b").is_err());
        assert_eq!(
            check_dns1123_label(&"a".repeat(64)),
            Err(NameError::TooLong { max: 63 })
        );
        assert!(check_dns1123_label(&"a".repeat(63)).is_ok());
    }

    #[test]
    fn subdomains_allow_dots_between_labels() {
        assert!(check_dns1123_subdomain("example.com").is_ok());
        assert!(check_dns1123_subdomain("a..b").is_err());
        assert!(check_dns1123_subdomain(".a").is_err());
        assert!(check_dns1123_subdomain(&"a".repeat(254)).is_err());
    }

    #[test]
    fn label_values_may_be_empty_and_use_underscores() {
        assert!(check_label_value("").is_ok());
        assert!(check_label_value("My_Value.1").is_ok());
        assert!(check_label_value("_x").is_err());
        assert!(check_label_value(&"x".repeat(64)).is_err());
    }

    #[test]
    fn short_names_are_left_alone() {
        assert_eq!(truncate_with_hash("short", 63), "short");
    }

    #[test]
    fn truncated_names_are_valid_stable_distinct_and_within_limits() {
        let long_a = format!("{}-route", "a".repeat(80));
        let long_b = format!("{}-route", "a".repeat(81));
        let a1 = truncate_with_hash(&long_a, 63);
        let a2 = truncate_with_hash(&long_a, 63);
        let b = truncate_with_hash(&long_b, 63);
        assert_eq!(a1, a2, "the same input must give the same name");
        assert_ne!(a1, b, "different inputs must not collide");
        for name in [&a1, &b] {
            assert!(name.len() <= 63, "{name} is too long");
            check_dns1123_label(name).expect("truncated name must stay a DNS-1123 label");
        }
    }

    #[test]
    fn truncation_never_leaves_a_trailing_separator_before_the_hash() {
        let name = format!("{}-{}", "a".repeat(53), "b".repeat(20));
        let out = truncate_with_hash(&name, 63);
        assert!(!out.contains("--"), "{out}");
        check_dns1123_label(&out).expect("valid label");
    }

    #[test]
    fn label_value_sanitizes_arbitrary_text() {
        assert_eq!(label_value("ns/app"), "ns-app");
        let long = label_value(&"x".repeat(100));
        assert!(long.len() <= 63);
        check_label_value(&long).expect("valid label value");
        assert_eq!(label_value("--a--"), "a");
    }
}
