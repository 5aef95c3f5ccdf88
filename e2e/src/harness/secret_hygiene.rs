//! Suite-wide secret hygiene. When a test's emulated cluster goes away, every value it stored under a secret key
//! of a Secret — Keycloak client secrets and admin passwords, Keystone passwords and application-credential
//! secrets, Rancher tokens, TLS private keys — is searched for in what the operator emitted during the test: the
//! manager's logs (text or JSON), every Event, and every other object (status, conditions, annotations). A hit
//! fails the test, naming where it was found but never the value.

use std::collections::BTreeSet;
use std::path::Path;

use base64::Engine;
use serde_json::Value;

/// Key names whose values are secret (compared in lower case, as substrings).
const SECRET_KEY_PARTS: [&str; 5] = ["password", "secret", "token", "key", "credential"];
/// Shorter values are not searched: they match by chance (and a real secret is never this short here).
const MIN_SECRET_LEN: usize = 8;

/// The secret values stored in `secrets` (Secret objects as the API serves them).
pub fn secret_values<'a>(secrets: impl IntoIterator<Item = &'a Value>) -> BTreeSet<String> {
    let mut values = BTreeSet::new();
    for secret in secrets {
        let Some(data) = secret["data"].as_object() else {
            continue;
        };
        for (key, encoded) in data {
            let lower = key.to_ascii_lowercase();
            if !SECRET_KEY_PARTS.iter().any(|part| lower.contains(part)) {
                continue;
            }
            let Some(decoded) = encoded
                .as_str()
                .and_then(|e| base64::engine::general_purpose::STANDARD.decode(e).ok())
                .and_then(|bytes| String::from_utf8(bytes).ok())
            else {
                continue;
            };
            let value = decoded.trim();
            if value.len() >= MIN_SECRET_LEN {
                values.insert(value.to_string());
            }
        }
    }
    values
}

/// Where each of `secrets` shows up in `places` (`(description, text)`), as readable findings.
pub fn leaks(secrets: &BTreeSet<String>, places: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for secret in secrets {
        // JSON escapes some characters (quotes, newlines of a PEM key): look for both forms.
        let escaped = serde_json::to_string(secret).unwrap_or_default();
        let escaped = escaped.trim_matches('"');
        for (place, text) in places {
            if text.contains(secret.as_str()) || text.contains(escaped) {
                let shown: String = secret.chars().take(3).collect();
                found.push(format!(
                    "a secret ({shown}…, {} characters) appears in {place}",
                    secret.len()
                ));
            }
        }
    }
    found
}

/// The manager logs in `dir` (`manager-<n>.log`, as the harness writes them), as places to search.
pub fn manager_logs(dir: &Path) -> Vec<(String, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("manager-") && name.ends_with(".log")
        })
        .filter_map(|e| {
            let text = std::fs::read_to_string(e.path()).ok()?;
            Some((format!("the manager log {}", e.file_name().to_string_lossy()), text))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn secret(data: &[(&str, &str)]) -> Value {
        let data: serde_json::Map<String, Value> = data
            .iter()
            .map(|(k, v)| {
                (
                    (*k).to_string(),
                    json!(base64::engine::general_purpose::STANDARD.encode(v)),
                )
            })
            .collect();
        json!({"kind": "Secret", "data": data})
    }

    #[test]
    fn values_under_secret_keys_are_found_wherever_they_leak() {
        let secrets = [
            secret(&[("client-id", "team-web"), ("client-secret", "Xq7bT2mZ9kLp4RwN")]),
            secret(&[
                ("username", "admin"),
                ("password", "hunter2hunter2"),
                ("AC_SECRET", "short"),
            ]),
        ];
        let values = secret_values(&secrets);
        assert_eq!(
            values,
            BTreeSet::from(["Xq7bT2mZ9kLp4RwN".to_string(), "hunter2hunter2".to_string()]),
            "ids, usernames and values too short to matter are not secrets"
        );
        let places = vec![
            (
                "the log".to_string(),
                "logged in as admin with client team-web".to_string(),
            ),
            (
                "an event".to_string(),
                r#"{"message":"login with hunter2hunter2 failed"}"#.to_string(),
            ),
        ];
        let found = leaks(&values, &places);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("an event") && !found[0].contains("hunter2hunter2"),
            "{found:?}"
        );
    }
}
