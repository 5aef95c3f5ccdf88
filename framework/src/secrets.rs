//! Secrets the operator reads at use time (credentials, passwords, client secrets): where one is, and the
//! text under one of its keys.

use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::Api;

/// Where a Secret is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretRef {
    /// The namespace it lives in.
    pub namespace: String,
    /// The Secret's name within it.
    pub name: String,
}

impl SecretRef {
    /// A reference to `namespace/name`.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        SecretRef {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// Reads the Secret; `None` when it does not exist.
    pub async fn get(&self, client: &Client) -> Result<Option<Secret>, kube::Error> {
        Api::<Secret>::namespaced(client.clone(), &self.namespace)
            .get_opt(&self.name)
            .await
    }
}

impl std::fmt::Display for SecretRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// Why a Secret's key could not be read as text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The Secret has no such key.
    #[error("has no such key")]
    Missing,
    /// The value is not UTF-8 text.
    #[error("is not text")]
    NotText,
}

/// The text under `key` of a Secret: from `data`, else from `stringData` (a Secret as a client wrote it, before
/// the API server folded it into `data`).
pub fn value(secret: &Secret, key: &str) -> Result<String, KeyError> {
    if let Some(bytes) = secret.data.as_ref().and_then(|d| d.get(key)) {
        return String::from_utf8(bytes.0.clone()).map_err(|_| KeyError::NotText);
    }
    secret
        .string_data
        .as_ref()
        .and_then(|d| d.get(key))
        .cloned()
        .ok_or(KeyError::Missing)
}

/// The text under `key` of a Secret; `None` when the key is missing or not text.
pub fn text(secret: &Secret, key: &str) -> Option<String> {
    value(secret, key).ok()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::ByteString;

    use super::*;

    #[test]
    fn keys_are_read_as_text_from_data_then_string_data() {
        let secret = Secret {
            data: Some(BTreeMap::from([
                ("ok".to_string(), ByteString(b"s3cret".to_vec())),
                ("binary".to_string(), ByteString(vec![0xff, 0xfe])),
            ])),
            string_data: Some(BTreeMap::from([
                ("ok".to_string(), "shadowed".to_string()),
                ("written".to_string(), "plain".to_string()),
            ])),
            ..Secret::default()
        };
        assert_eq!(text(&secret, "ok").as_deref(), Some("s3cret"), "data wins");
        assert_eq!(text(&secret, "written").as_deref(), Some("plain"));
        assert_eq!(value(&secret, "binary"), Err(KeyError::NotText));
        assert_eq!(value(&secret, "missing"), Err(KeyError::Missing));
        assert_eq!(text(&secret, "binary"), None);
    }
}
