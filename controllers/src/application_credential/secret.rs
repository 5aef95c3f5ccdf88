//! The immutable Secrets holding application credentials: their names, their shape, and which old ones to
//! release.
//!
//! Each credential gets its own Secret `ac-<service>-<first 5 of the credential id>-secret`, never rewritten
//! (consumers may still read an older one while they move to the new one). The protection finalizer keeps the
//! current and the previous Secret from being deleted; older Secrets are released and deleted once their
//! credential has expired, unless a consumer still holds them with its own finalizer.

use std::collections::BTreeMap;

use crds::keystone::KeystoneApplicationCredential;
use framework::names;
use jiff::Timestamp;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;
use kube::api::PartialObjectMeta;
use secrecy::{ExposeSecret, SecretString};

/// Finalizer on every credential Secret; removed when the Secret may go.
pub const PROTECTION_FINALIZER: &str = "openstack.org/ac-secret-protection";
/// Label on every credential Secret.
pub const LABEL_APPLICATION_CREDENTIALS: &str = "application-credentials";
/// Label naming the service a credential Secret is for.
pub const LABEL_SERVICE: &str = "application-credential-service";
/// Data key of the credential id.
pub const KEY_AC_ID: &str = "AC_ID";
/// Data key of the credential secret.
pub const KEY_AC_SECRET: &str = "AC_SECRET";
/// Annotation recording when the credential in the Secret expires (what pruning reads).
pub const ANNOTATION_EXPIRES_AT: &str = "keystone.openstack.org/ac-expires-at";
/// Finalizers of this shape belong to consumers of a credential Secret (e.g. `openstack.org/nova-ac-consumer`).
const CONSUMER_FINALIZER_PREFIX: &str = "openstack.org/";
const CONSUMER_FINALIZER_SUFFIX: &str = "-ac-consumer";

/// Number of characters of the credential id in the Secret name.
const ID_PREFIX_LEN: usize = 5;

/// The label value naming `service` (shortened with a hash when the service name is too long for a label).
pub fn service_label(service: &str) -> String {
    names::label_value(service)
}

/// The label selector finding every credential Secret of `service`.
pub fn selector(service: &str) -> String {
    format!("{LABEL_SERVICE}={}", service_label(service))
}

/// `ac-<service>-<first 5 of id>-secret`, with the service part shortened when the name would exceed 253
/// characters.
pub fn secret_name(service: &str, ac_id: &str) -> String {
    let id_prefix: String = ac_id.chars().take(ID_PREFIX_LEN).collect::<String>().to_lowercase();
    let suffix = format!("-{id_prefix}-secret");
    let budget = names::DNS1123_SUBDOMAIN_MAX - "ac-".len() - suffix.len();
    format!("ac-{}{suffix}", names::truncate_with_hash(service, budget))
}

/// The Secret holding one credential: immutable, protected, owned by the KeystoneApplicationCredential.
pub fn build(
    owner: &KeystoneApplicationCredential,
    service: &str,
    ac_id: &str,
    ac_secret: &SecretString,
    expires_at: Timestamp,
) -> Secret {
    let labels = BTreeMap::from([
        (LABEL_APPLICATION_CREDENTIALS.to_string(), "true".to_string()),
        (LABEL_SERVICE.to_string(), service_label(service)),
    ]);
    let annotations = BTreeMap::from([(ANNOTATION_EXPIRES_AT.to_string(), expires_at.to_string())]);
    let data = BTreeMap::from([
        (KEY_AC_ID.to_string(), ByteString(ac_id.as_bytes().to_vec())),
        (
            KEY_AC_SECRET.to_string(),
            ByteString(ac_secret.expose_secret().as_bytes().to_vec()),
        ),
    ]);
    Secret {
        metadata: ObjectMeta {
            name: Some(secret_name(service, ac_id)),
            namespace: owner.meta().namespace.clone(),
            labels: Some(labels),
            annotations: Some(annotations),
            finalizers: Some(vec![PROTECTION_FINALIZER.to_string()]),
            owner_references: owner_reference(owner).map(|r| vec![r]),
            ..ObjectMeta::default()
        },
        immutable: Some(true),
        type_: Some("Opaque".to_string()),
        data: Some(data),
        ..Secret::default()
    }
}

/// The controller ownerReference to `owner`, blocking its foreground deletion until the Secret is gone.
pub fn owner_reference(owner: &KeystoneApplicationCredential) -> Option<OwnerReference> {
    let mut reference = owner.controller_owner_ref(&())?;
    reference.block_owner_deletion = Some(true);
    Some(reference)
}

/// The credential id stored in a Secret, if any.
pub fn stored_id(secret: &Secret) -> Option<String> {
    framework::secrets::text(secret, KEY_AC_ID)
}

/// Whether a Secret (by its metadata) is one of a credential's: a credential Secret or a creation record, both
/// labelled with their service.
pub fn is_credential_secret(secret: &PartialObjectMeta<Secret>) -> bool {
    secret
        .metadata
        .labels
        .as_ref()
        .is_some_and(|labels| labels.contains_key(LABEL_SERVICE))
}

/// Drops from a watched Secret's metadata what no pass reads: every label but the service label and every
/// annotation but the expiry (a `kubectl apply`'d Secret carries its content in an annotation).
pub fn strip_cached(secret: &mut PartialObjectMeta<Secret>) {
    if let Some(labels) = secret.metadata.labels.as_mut() {
        labels.retain(|key, _| key == LABEL_SERVICE);
    }
    if let Some(annotations) = secret.metadata.annotations.as_mut() {
        annotations.retain(|key, _| key == ANNOTATION_EXPIRES_AT);
    }
}

/// Whether the object is owned by the credential with `owner_uid`.
pub fn is_owned_by(meta: &ObjectMeta, owner_uid: &str) -> bool {
    meta.owner_references.iter().flatten().any(|r| r.uid == owner_uid)
}

/// What to do with the credential Secrets that are neither current nor previous.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Housekeeping {
    /// Secrets whose protection finalizer is removed (then deleted when in `delete`).
    pub release: Vec<String>,
    /// Secrets deleted (their credential expired and no consumer holds them).
    pub delete: Vec<String>,
    /// The next time an old Secret's credential expires (a timed wake-up to prune it).
    pub next_expiry: Option<Timestamp>,
}

/// Decides which old credential Secrets to release and delete.
///
/// The current and previous Secrets are never touched. An older Secret is released and deleted once its
/// credential expired (a consumer finalizer keeps it, released but not deleted); one already being deleted by
/// someone else is released at once. Secrets without an expiry annotation (made by the replaced operator) are
/// left alone.
pub fn housekeeping(
    secrets: &[PartialObjectMeta<Secret>],
    current: Option<&str>,
    previous: Option<&str>,
    now: Timestamp,
) -> Housekeeping {
    let mut plan = Housekeeping::default();
    for secret in secrets {
        let meta = &secret.metadata;
        let Some(name) = meta.name.as_deref() else { continue };
        if Some(name) == current || Some(name) == previous {
            continue;
        }
        let finalizers = meta.finalizers.as_deref().unwrap_or_default();
        let protected = finalizers.iter().any(|f| f == PROTECTION_FINALIZER);
        let held_by_consumer = finalizers.iter().any(|f| is_consumer_finalizer(f));
        let terminating = meta.deletion_timestamp.is_some();
        let expires_at = meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANNOTATION_EXPIRES_AT))
            .and_then(|v| v.parse::<Timestamp>().ok());
        let expired = expires_at.is_some_and(|at| at <= now);
        if terminating || expired {
            if protected {
                plan.release.push(name.to_string());
            }
            if expired && !terminating && !held_by_consumer {
                plan.delete.push(name.to_string());
            }
        } else if let Some(at) = expires_at {
            plan.next_expiry = Some(plan.next_expiry.map_or(at, |next: Timestamp| next.min(at)));
        }
    }
    plan
}

fn is_consumer_finalizer(finalizer: &str) -> bool {
    finalizer.starts_with(CONSUMER_FINALIZER_PREFIX) && finalizer.ends_with(CONSUMER_FINALIZER_SUFFIX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
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

    fn t(s: &str) -> Timestamp {
        s.parse().expect("timestamp")
    }

    #[test]
    fn secret_is_named_immutable_protected_labelled_and_owned() {
        let secret = build(
            &owner(),
            "barbican",
            "7b23dbac20bc4f048f937415c84bb329",
            &SecretString::from("s3cr3t"),
            t("2026-05-29T09:02:28Z"),
        );
        let value = serde_json::to_value(&secret).expect("serializes");
        assert_eq!(value["metadata"]["name"], "ac-barbican-7b23d-secret");
        assert_eq!(value["metadata"]["namespace"], "openstack");
        assert_eq!(value["immutable"], true);
        assert_eq!(
            value["metadata"]["finalizers"],
            json!(["openstack.org/ac-secret-protection"])
        );
        assert_eq!(
            value["metadata"]["labels"],
            json!({"application-credentials": "true", "application-credential-service": "barbican"})
        );
        let owner_ref = &value["metadata"]["ownerReferences"][0];
        assert_eq!(owner_ref["kind"], "KeystoneApplicationCredential");
        assert_eq!(owner_ref["apiVersion"], "keystone.openstack.org/v1beta1");
        assert_eq!(owner_ref["name"], "ac-barbican");
        assert_eq!(owner_ref["uid"], "u-1");
        assert_eq!(owner_ref["controller"], true);
        assert_eq!(owner_ref["blockOwnerDeletion"], true);
        assert_eq!(value["data"]["AC_ID"], "N2IyM2RiYWMyMGJjNGYwNDhmOTM3NDE1Yzg0YmIzMjk=");
        assert_eq!(
            value["metadata"]["annotations"][ANNOTATION_EXPIRES_AT],
            "2026-05-29T09:02:28Z"
        );
        assert_eq!(stored_id(&secret).as_deref(), Some("7b23dbac20bc4f048f937415c84bb329"));
    }

    #[test]
    fn long_service_names_still_give_valid_names_and_labels() {
        let service = "s".repeat(300);
        let name = secret_name(&service, "abcdef0123");
        assert!(name.len() <= 253, "{}", name.len());
        assert!(name.ends_with("-abcde-secret"));
        framework::names::check_dns1123_subdomain(&name).expect("valid name");
        framework::names::check_label_value(&service_label(&service)).expect("valid label");
    }

    fn meta(name: &str, expires: Option<&str>, finalizers: &[&str], terminating: bool) -> PartialObjectMeta<Secret> {
        PartialObjectMeta::<Secret> {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                annotations: expires.map(|e| BTreeMap::from([(ANNOTATION_EXPIRES_AT.to_string(), e.to_string())])),
                finalizers: Some(finalizers.iter().map(|f| f.to_string()).collect()),
                deletion_timestamp: terminating.then(|| Time(t("2025-01-01T00:00:00Z"))),
                ..ObjectMeta::default()
            },
            ..PartialObjectMeta::default()
        }
    }

    #[test]
    fn only_expired_older_secrets_are_pruned() {
        let now = t("2025-06-01T00:00:00Z");
        let secrets = vec![
            meta("current", Some("2025-01-01T00:00:00Z"), &[PROTECTION_FINALIZER], false),
            meta("previous", Some("2025-01-01T00:00:00Z"), &[PROTECTION_FINALIZER], false),
            meta("expired", Some("2025-05-01T00:00:00Z"), &[PROTECTION_FINALIZER], false),
            meta(
                "held",
                Some("2025-05-01T00:00:00Z"),
                &[PROTECTION_FINALIZER, "openstack.org/nova-ac-consumer"],
                false,
            ),
            meta("valid", Some("2025-09-01T00:00:00Z"), &[PROTECTION_FINALIZER], false),
            meta("later", Some("2025-12-01T00:00:00Z"), &[PROTECTION_FINALIZER], false),
            meta(
                "deleted-by-user",
                Some("2025-12-01T00:00:00Z"),
                &[PROTECTION_FINALIZER],
                true,
            ),
            meta("legacy", None, &[PROTECTION_FINALIZER], false),
        ];
        let plan = housekeeping(&secrets, Some("current"), Some("previous"), now);
        assert_eq!(plan.release, ["expired", "held", "deleted-by-user"]);
        assert_eq!(plan.delete, ["expired"]);
        assert_eq!(plan.next_expiry, Some(t("2025-09-01T00:00:00Z")));
    }

    #[test]
    fn nothing_to_do_when_only_current_and_previous_exist() {
        let secrets = vec![
            meta("current", Some("2026-01-01T00:00:00Z"), &[PROTECTION_FINALIZER], false),
            meta("previous", Some("2025-09-01T00:00:00Z"), &[PROTECTION_FINALIZER], false),
        ];
        assert_eq!(
            housekeeping(&secrets, Some("current"), Some("previous"), t("2025-06-01T00:00:00Z")),
            Housekeeping::default()
        );
    }
}
