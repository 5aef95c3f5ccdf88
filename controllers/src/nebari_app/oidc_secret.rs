//! The OIDC client Secret `<app>-oidc-client`: what the app (or the gateway) needs to act as the OIDC client.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::ObjectMeta;

use super::naming::AppNames;

/// The credentials and ids written to the Secret. Its `Debug` output hides the client secret.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OidcSecretData {
    /// The confidential client's id.
    pub client_id: String,
    /// The confidential client's secret.
    pub client_secret: String,
    /// The browser-facing issuer URL (empty when none is configured).
    pub issuer_url: String,
    /// The SPA client's id, when provisioned.
    pub spa_client_id: Option<String>,
    /// The device-flow client's id, when provisioned.
    pub device_client_id: Option<String>,
}

impl std::fmt::Debug for OidcSecretData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcSecretData")
            .field("client_id", &self.client_id)
            .field("client_secret", &"[REDACTED]")
            .field("issuer_url", &self.issuer_url)
            .field("spa_client_id", &self.spa_client_id)
            .field("device_client_id", &self.device_client_id)
            .finish()
    }
}

/// Builds the Secret (type Opaque) with keys client-id, client-secret, issuer-url and the optional
/// spa-client-id, device-client-id. The ChildSet adds labels and the ownerReference.
pub fn oidc_secret(names: &AppNames, data: &OidcSecretData) -> Secret {
    let mut map = BTreeMap::from([
        ("client-id".to_string(), ByteString(data.client_id.clone().into_bytes())),
        (
            "client-secret".to_string(),
            ByteString(data.client_secret.clone().into_bytes()),
        ),
        (
            "issuer-url".to_string(),
            ByteString(data.issuer_url.clone().into_bytes()),
        ),
    ]);
    if let Some(id) = &data.spa_client_id {
        map.insert("spa-client-id".to_string(), ByteString(id.clone().into_bytes()));
    }
    if let Some(id) = &data.device_client_id {
        map.insert("device-client-id".to_string(), ByteString(id.clone().into_bytes()));
    }
    Secret {
        metadata: ObjectMeta {
            name: Some(names.oidc_secret()),
            namespace: Some(names.namespace.clone()),
            ..Default::default()
        },
        type_: Some("Opaque".to_string()),
        data: Some(map),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_the_client_secret() {
        let data = OidcSecretData {
            client_id: "ns-app".into(),
            client_secret: "hunter2".into(),
            ..Default::default()
        };
        let printed = format!("{data:?}");
        assert!(!printed.contains("hunter2"), "{printed}");
        assert!(printed.contains("ns-app"));
    }
}
