//! Field paths as Go's `field.Path` prints them: `spec.items[0].name`, `data[tls.crt]`, no leading dot.
//!
//! Paths are plain strings so that building one costs a single allocation and they compare and print
//! trivially; these helpers only keep the joining rules in one place.

/// `parent.name` (or `name` at the root): a struct field.
pub fn child(parent: &str, name: &str) -> String {
    join(parent, name)
}

/// `parent[i]`: a list item.
pub fn index(parent: &str, i: usize) -> String {
    format!("{parent}[{i}]")
}

/// `parent[key]`: a map entry (labels, `data`, `additionalProperties`).
pub fn key(parent: &str, key: &str) -> String {
    format!("{parent}[{key}]")
}

/// Joins a dotted suffix to a prefix, dropping the dot when either side is empty.
pub fn join(prefix: &str, suffix: &str) -> String {
    match (prefix.is_empty(), suffix.is_empty()) {
        (true, _) => suffix.to_string(),
        (_, true) => prefix.to_string(),
        _ if suffix.starts_with('[') => format!("{prefix}{suffix}"),
        _ => format!("{prefix}.{suffix}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_print_like_go_field_paths() {
        assert_eq!(child("", "spec"), "spec");
        assert_eq!(child("spec", "size"), "spec.size");
        assert_eq!(index("spec.items", 2), "spec.items[2]");
        assert_eq!(key("data", "tls.crt"), "data[tls.crt]");
        assert_eq!(join("status", "[0]"), "status[0]");
        assert_eq!(join("status", ""), "status");
    }
}
