//! cert-manager `Certificate` (`cert-manager.io/v1`): the TLS certificate of a NebariApp's hostname.

use std::collections::BTreeMap;

use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// The fields of a Certificate spec the operator sets.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "cert-manager.io",
    version = "v1",
    kind = "Certificate",
    plural = "certificates",
    namespaced,
    status = "CertificateStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct CertificateSpec {
    /// The Secret the signed certificate and key are written to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_name: Option<String>,
    /// DNS names the certificate covers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns_names: Option<Vec<String>>,
    /// The issuer that signs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer_ref: Option<IssuerRef>,
    /// Labels and annotations cert-manager puts on the Secret it writes (and keeps there when they change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_template: Option<SecretTemplate>,
}

/// Metadata for the Secret a Certificate's issuer writes.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct SecretTemplate {
    /// Annotations to set on the Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Labels to set on the Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
}

/// A reference to a cert-manager Issuer or ClusterIssuer.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct IssuerRef {
    /// Issuer name.
    pub name: String,
    /// `Issuer` or `ClusterIssuer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// API group, `cert-manager.io`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

/// The status fields the operator reads.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct CertificateStatus {
    /// cert-manager's conditions; `Ready` tells whether the certificate is issued and current.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<CertificateCondition>>,
}

/// One cert-manager condition.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct CertificateCondition {
    /// Condition type, e.g. `Ready`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Machine-readable reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Certificate {
    /// Whether cert-manager reports the certificate Ready, with its reason and message otherwise.
    pub fn readiness(&self) -> Result<(), (String, String)> {
        let ready = self
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
        match ready {
            Some(c) if c.status == "True" => Ok(()),
            Some(c) => Err((
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )),
            None => Err((
                "Pending".to_string(),
                "cert-manager has not reported on the certificate yet".to_string(),
            )),
        }
    }

    /// cert-manager's message when its last issuance attempt failed (`Issuing` is `False` with reason `Failed`;
    /// it retries with backoff), `None` while issuing or issued.
    pub fn issuance_failure(&self) -> Option<String> {
        self.status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .find(|c| c.type_ == "Issuing" && c.status == "False" && c.reason.as_deref() == Some("Failed"))
            .map(|c| c.message.clone().unwrap_or_else(|| "no message".to_string()))
    }
}
