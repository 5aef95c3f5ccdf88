//! The cluster's certificate authority: it signs the apiserver's serving certificate and the client
//! certificates of the administrator, the controller manager and the users tests play (`CN` = user name,
//! `O` = group, as kube-apiserver's `--client-ca-file` authentication reads them).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

use base64::Engine;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose, SanType,
};

use super::SubstrateError;

/// The CA's common name; the same name and key rebuild it in another process ([`ClusterCa::load`]).
const CA_NAME: &str = "platform-operator-e2e-cluster-ca";

/// A certificate with its private key, both PEM.
pub struct KeyedCert {
    /// The certificate.
    pub cert_pem: String,
    /// The PKCS#8 private key.
    pub key_pem: String,
}

/// The CA of one substrate.
pub struct ClusterCa {
    cert: rcgen::Certificate,
    key: KeyPair,
}

fn name(common_name: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, common_name);
    name
}

fn ca_params() -> CertificateParams {
    let mut params = CertificateParams::default();
    params.distinguished_name = name(CA_NAME);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params
}

impl ClusterCa {
    /// A new CA with a fresh key.
    pub fn generate() -> Result<Self, SubstrateError> {
        let key = KeyPair::generate()?;
        let cert = ca_params().self_signed(&key)?;
        Ok(ClusterCa { cert, key })
    }

    /// The CA of a running substrate, from its key file. Certificates it issues chain to the CA certificate the
    /// apiserver trusts: same subject, same key.
    pub fn load(key_file: &Path) -> Result<Self, SubstrateError> {
        let pem =
            std::fs::read_to_string(key_file).map_err(SubstrateError::io(format!("read {}", key_file.display())))?;
        let key = KeyPair::from_pem(&pem)?;
        let cert = ca_params().self_signed(&key)?;
        Ok(ClusterCa { cert, key })
    }

    /// The CA certificate, PEM.
    pub fn cert_pem(&self) -> String {
        self.cert.pem()
    }

    /// The CA's private key, PEM.
    pub fn key_pem(&self) -> String {
        self.key.serialize_pem()
    }

    /// A serving certificate for the loopback names (and the in-cluster names of the `kubernetes` Service).
    pub fn issue_serving_cert(&self) -> Result<KeyedCert, SubstrateError> {
        let mut params = CertificateParams::default();
        params.distinguished_name = name("kube-apiserver");
        params.subject_alt_names = vec![
            SanType::DnsName("localhost".try_into()?),
            SanType::DnsName("kubernetes.default.svc".try_into()?),
            SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            SanType::IpAddress(IpAddr::V6(Ipv6Addr::LOCALHOST)),
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        self.sign(params)
    }

    /// A client certificate for `user` in `groups` (at most one group: the certificate library keeps one
    /// `O` attribute; every authenticated user is also in `system:authenticated`).
    pub fn issue_client_cert(&self, user: &str, groups: &[&str]) -> Result<KeyedCert, SubstrateError> {
        if groups.len() > 1 {
            return Err(SubstrateError::Io {
                what: format!("mint a client certificate for {user}"),
                source: std::io::Error::other("at most one group per client certificate"),
            });
        }
        let mut params = CertificateParams::default();
        params.distinguished_name = name(user);
        if let Some(group) = groups.first() {
            params.distinguished_name.push(DnType::OrganizationName, *group);
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        self.sign(params)
    }

    fn sign(&self, params: CertificateParams) -> Result<KeyedCert, SubstrateError> {
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.cert, &self.key)?;
        Ok(KeyedCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// A self-signed CA certificate and key named `common_name`, for an issuer outside the cluster's own PKI (the CA
/// ClusterIssuer cert-manager issues the gateway's certificates from).
pub fn new_ca(common_name: &str) -> Result<KeyedCert, SubstrateError> {
    let key = KeyPair::generate()?;
    let mut params = ca_params();
    params.distinguished_name = name(common_name);
    let cert = params.self_signed(&key)?;
    Ok(KeyedCert {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// A kubeconfig for `server` that trusts `ca_pem` and authenticates with the client certificate `identity`,
/// impersonating `(user, groups)` when given. Written as JSON, which kubectl and kube-rs read as YAML.
pub fn kubeconfig(server: &str, ca_pem: &str, identity: &KeyedCert, impersonate: Option<(&str, &[&str])>) -> String {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let mut user = serde_json::json!({
        "client-certificate-data": b64(&identity.cert_pem),
        "client-key-data": b64(&identity.key_pem),
    });
    if let Some((name, groups)) = impersonate {
        user["as"] = name.into();
        user["as-groups"] = groups.into();
    }
    let config = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "substrate", "cluster": {"server": server, "certificate-authority-data": b64(ca_pem)}}],
        "users": [{"name": "user", "user": user}],
        "contexts": [{"name": "substrate", "context": {"cluster": "substrate", "user": "user"}}],
        "current-context": "substrate",
    });
    serde_json::to_string_pretty(&config).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    /// The chain itself is checked by the real apiserver: tenants' certificates authenticate in the end-to-end
    /// tests on the real control plane.
    fn a_ca_loaded_from_its_key_keeps_the_key_and_issues_client_certificates_of_one_group() {
        let dir = tempfile::tempdir().expect("tempdir");
        let original = ClusterCa::generate().expect("ca");
        let key_file = dir.path().join("ca.key");
        std::fs::write(&key_file, original.key_pem()).expect("write key");
        let loaded = ClusterCa::load(&key_file).expect("load");
        // Same subject and key: the rebuilt certificate names the same issuer and signs with the same key.
        assert_eq!(original.key.public_key_der(), loaded.key.public_key_der());
        let client = loaded.issue_client_cert("alice", &["tenants"]).expect("client cert");
        assert!(client.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(loaded.issue_client_cert("bob", &["a", "b"]).is_err());
    }
}
