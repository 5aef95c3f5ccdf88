//! The intended credential: the name and secret of the next credential, written to a Secret *before* it is
//! created in Keystone.
//!
//! This is what makes creation exactly-once across crashes. Keystone accepts a client-chosen secret and refuses
//! a second credential with the same name (409), so a creation that was interrupted at any point is resumed
//! with the same name and secret: the create answers 409, the credential is looked up by name, and its secret
//! is the one recorded here. The record also names the credential it replaces and the permissions hash it was
//! made for; a record that no longer matches (the rotation completed, or the spec changed before the create)
//! is discarded and a new one written.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use crds::keystone::KeystoneApplicationCredential;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use rand::Rng;
use secrecy::{ExposeSecret, SecretString};

/// Data key of the credential name.
const KEY_NAME: &str = "AC_NAME";
/// Data key of the credential secret.
const KEY_SECRET: &str = "AC_SECRET";
/// Annotation: the credential id this one replaces (empty for the first credential).
const ANNOTATION_REPLACES: &str = "keystone.openstack.org/ac-replaces";
/// Annotation: the permissions hash the credential is made for.
const ANNOTATION_SECURITY_HASH: &str = "keystone.openstack.org/ac-security-hash";
/// Label marking the record, so people can tell it from credential Secrets.
pub const LABEL_PENDING: &str = "application-credential-pending";

/// Random characters appended to the credential name (Keystone names are unique per user).
const NAME_SUFFIX_LEN: usize = 5;
/// Random bytes of a secret (86 characters in base64url, like the secrets Keystone generates).
const SECRET_BYTES: usize = 64;

/// The next credential to create.
#[derive(Debug)]
pub struct IntendedCredential {
    /// Name in Keystone: `<credential name>-<5 random characters>`.
    pub name: String,
    /// The secret chosen for it, so a retried create makes the same credential.
    pub secret: SecretString,
    /// The id of the credential it replaces (empty for the first one).
    pub replaces: String,
    /// The permissions hash it is made for.
    pub security_hash: String,
}

impl IntendedCredential {
    /// A new intention with a random name suffix and secret.
    pub fn generate(credential_name: &str, replaces: &str, security_hash: &str, rng: &mut impl Rng) -> Self {
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
        let suffix: String = (0..NAME_SUFFIX_LEN)
            .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
            .collect();
        let mut bytes = [0u8; SECRET_BYTES];
        rng.fill(&mut bytes[..]);
        Self {
            name: format!("{credential_name}-{suffix}"),
            secret: SecretString::from(URL_SAFE_NO_PAD.encode(bytes)),
            replaces: replaces.to_string(),
            security_hash: security_hash.to_string(),
        }
    }

    /// Whether this intention is for the rotation at hand: it replaces the current credential and carries the
    /// permissions the spec asks for now.
    pub fn matches(&self, replaces: &str, security_hash: &str) -> bool {
        self.replaces == replaces && self.security_hash == security_hash
    }
}

/// The name of the record of `service`'s next credential.
pub fn record_name(service: &str) -> String {
    let suffix = "-pending-credential";
    let budget = framework::names::DNS1123_SUBDOMAIN_MAX - "ac-".len() - suffix.len();
    format!("ac-{}{suffix}", framework::names::truncate_with_hash(service, budget))
}

/// The record as a Secret owned by the KeystoneApplicationCredential (garbage-collected with it).
pub fn build(owner: &KeystoneApplicationCredential, service: &str, intended: &IntendedCredential) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(record_name(service)),
            namespace: owner.namespace(),
            labels: Some(BTreeMap::from([(
                LABEL_PENDING.to_string(),
                super::secret::service_label(service),
            )])),
            annotations: Some(BTreeMap::from([
                (ANNOTATION_REPLACES.to_string(), intended.replaces.clone()),
                (ANNOTATION_SECURITY_HASH.to_string(), intended.security_hash.clone()),
            ])),
            owner_references: super::secret::owner_reference(owner).map(|r| vec![r]),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".to_string()),
        data: Some(BTreeMap::from([
            (KEY_NAME.to_string(), ByteString(intended.name.as_bytes().to_vec())),
            (
                KEY_SECRET.to_string(),
                ByteString(intended.secret.expose_secret().as_bytes().to_vec()),
            ),
        ])),
        ..Secret::default()
    }
}

/// Reads a record back; `None` when it is not a complete record of ours.
pub fn read(secret: &Secret, owner_uid: &str) -> Option<IntendedCredential> {
    if !super::secret::is_owned_by(&secret.metadata, owner_uid) {
        return None;
    }
    let text = |key: &str| framework::secrets::text(secret, key);
    let annotation = |key: &str| secret.annotations().get(key).cloned();
    Some(IntendedCredential {
        name: text(KEY_NAME).filter(|n| !n.is_empty())?,
        secret: SecretString::from(text(KEY_SECRET).filter(|s| !s.is_empty())?),
        replaces: annotation(ANNOTATION_REPLACES).unwrap_or_default(),
        security_hash: annotation(ANNOTATION_SECURITY_HASH)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use serde_json::json;

    fn owner() -> KeystoneApplicationCredential {
        serde_json::from_value(json!({
            "apiVersion": "keystone.openstack.org/v1beta1", "kind": "KeystoneApplicationCredential",
            "metadata": {"name": "ac-barbican", "namespace": "openstack", "uid": "u-1"},
            "spec": {"secret": "osp-secret", "passwordSelector": "BarbicanPassword", "userName": "barbican",
                     "roles": ["service"]}
        }))
        .expect("credential")
    }

    #[test]
    fn generated_names_follow_keystone_operator_and_secrets_are_long() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let a = IntendedCredential::generate("ac-barbican", "", "sha256:x", &mut rng);
        let b = IntendedCredential::generate("ac-barbican", "", "sha256:x", &mut rng);
        assert!(
            a.name.starts_with("ac-barbican-") && a.name.len() == "ac-barbican-".len() + 5,
            "{}",
            a.name
        );
        assert_ne!(a.name, b.name);
        assert_eq!(a.secret.expose_secret().len(), 86);
        assert_ne!(a.secret.expose_secret(), b.secret.expose_secret());
    }

    #[test]
    fn a_record_round_trips_and_is_ignored_for_another_owner() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let intended = IntendedCredential::generate("ac-barbican", "old-id", "sha256:abc", &mut rng);
        let secret = build(&owner(), "barbican", &intended);
        assert_eq!(secret.metadata.name.as_deref(), Some("ac-barbican-pending-credential"));
        assert!(
            secret
                .metadata
                .labels
                .as_ref()
                .is_some_and(|l| !l.contains_key("application-credentials"))
        );
        let back = read(&secret, "u-1").expect("our record");
        assert_eq!(back.name, intended.name);
        assert_eq!(back.secret.expose_secret(), intended.secret.expose_secret());
        assert!(back.matches("old-id", "sha256:abc"));
        assert!(
            !back.matches("", "sha256:abc"),
            "a record for another rotation does not match"
        );
        assert!(
            !back.matches("old-id", "sha256:def"),
            "a record for other permissions does not match"
        );
        assert!(read(&secret, "u-2").is_none());
    }
}
