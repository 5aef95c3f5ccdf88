//! Secrets the operator reads at use time (credentials, passwords, client secrets): where one is, and the
//! text under one of its keys.

use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::Api;

/// Where a Secret is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretRef {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
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

/// The UTF-8 text under `key` of a Secret's data; `None` when the key is missing or not UTF-8.
pub fn text(secret: &Secret, key: &str) -> Option<String> {
    let bytes = secret.data.as_ref()?.get(key)?;
    String::from_utf8(bytes.0.clone()).ok()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::ByteString;

    use super::*;

    #[test]
    fn text_reads_utf8_keys_only() {
        let secret = Secret {
            data: Some(BTreeMap::from([
                ("ok".to_string(), ByteString(b"s3cret".to_vec())),
                ("binary".to_string(), ByteString(vec![0xff, 0xfe])),
            ])),
            ..Secret::default()
        };
        assert_eq!(text(&secret, "ok").as_deref(), Some("s3cret"));
        assert_eq!(text(&secret, "binary"), None);
        assert_eq!(text(&secret, "missing"), None);
    }
}
