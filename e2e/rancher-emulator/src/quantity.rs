//! Kubernetes resource quantities, parsed well enough to compare quotas (`400m` < `1`, `1Gi` > `1G`), and the
//! keys of a quota `limit`.

use serde_json::{Map, Value};

/// A quantity as a number of base units (cores, bytes, objects).
pub fn parse(text: &str) -> Option<f64> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let value: f64 = number.parse().ok()?;
    let factor = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0f64.powi(4),
        "Pi" => 1024.0f64.powi(5),
        "Ei" => 1024.0f64.powi(6),
        exponent if exponent.starts_with(['e', 'E']) => 10f64.powi(exponent[1..].parse().ok()?),
        _ => return None,
    };
    Some(value * factor)
}

/// Norman's quota keys with the Kubernetes resource names they stand for.
pub const QUOTA_KEYS: [(&str, &str); 13] = [
    ("configMaps", "configmaps"),
    ("limitsCpu", "limits.cpu"),
    ("limitsMemory", "limits.memory"),
    ("persistentVolumeClaims", "persistentvolumeclaims"),
    ("pods", "pods"),
    ("replicationControllers", "replicationcontrollers"),
    ("requestsCpu", "requests.cpu"),
    ("requestsMemory", "requests.memory"),
    ("requestsStorage", "requests.storage"),
    ("secrets", "secrets"),
    ("services", "services"),
    ("servicesLoadBalancers", "services.loadbalancers"),
    ("servicesNodePorts", "services.nodeports"),
];

/// The field of a quota `limit` holding extended resources by their Kubernetes names (Rancher v2.14+), e.g.
/// `{"requests.nvidia.com/gpu": "4"}`.
pub const EXTENDED: &str = "extended";

/// The entries of a quota `limit` as one map: norman's fixed keys, and the Kubernetes resource names in
/// `extended` (they contain a `.` or `/`, so they never clash with norman's camel-case keys).
pub fn limit_entries(limit: &Map<String, Value>) -> Map<String, Value> {
    let mut entries = Map::new();
    for (key, value) in limit {
        if key == EXTENDED {
            for (name, amount) in value.as_object().into_iter().flatten() {
                entries.insert(name.clone(), amount.clone());
            }
        } else {
            entries.insert(key.clone(), value.clone());
        }
    }
    entries
}

/// The inverse of [`limit_entries`]: keys norman does not know go back under `extended`.
pub fn nest_entries(entries: Map<String, Value>) -> Map<String, Value> {
    let mut limit = Map::new();
    let mut extended = Map::new();
    for (key, value) in entries {
        if QUOTA_KEYS.iter().any(|(k, _)| *k == key) {
            limit.insert(key, value);
        } else {
            extended.insert(key, value);
        }
    }
    if !extended.is_empty() {
        limit.insert(EXTENDED.into(), Value::Object(extended));
    }
    limit
}

/// The Kubernetes resource name of a norman quota key.
pub fn resource_name(key: &str) -> &str {
    QUOTA_KEYS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, r)| *r)
        .unwrap_or(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_decimal_binary_and_milli_suffixes() {
        assert_eq!(parse("400m"), Some(0.4));
        assert_eq!(parse("2"), Some(2.0));
        assert_eq!(parse("1Gi"), Some(1073741824.0));
        assert_eq!(parse("1e3"), Some(1000.0));
        assert_eq!(parse("abc"), None);
        assert_eq!(parse(""), None);
    }
}
