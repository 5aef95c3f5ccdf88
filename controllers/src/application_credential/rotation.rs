//! When a credential must be replaced, and its schedule: pure functions of the spec, the status, the current
//! Secret and the time.

use crds::keystone::{KeystoneApplicationCredentialSpec, KeystoneApplicationCredentialStatus};
use jiff::{SignedDuration, Timestamp};
use sha2::{Digest, Sha256};

use super::error::AcError;

/// Seconds in a day: credential lifetimes are whole days of 24 hours (Keystone has no calendar).
const SECONDS_PER_DAY: i64 = 86_400;

/// Why a new credential is minted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RotationReason {
    /// There is no credential yet.
    Initial,
    /// Roles, access rules or `unrestricted` changed since the credential was created.
    SecurityFieldsChanged,
    /// The Secret holding the current credential is gone or being deleted.
    SecretMissing,
    /// The grace period before expiry has started on the schedule the operator published.
    Due,
    /// `status.expiresAt` was moved by hand (the documented way to rotate now): it lies before the credential's
    /// creation, or the rotation time the operator published has not come yet.
    Manual,
}

impl RotationReason {
    /// Words for events and logs.
    pub fn describe(self) -> &'static str {
        match self {
            RotationReason::Initial => "no credential yet",
            RotationReason::SecurityFieldsChanged => "roles, access rules or unrestricted changed",
            RotationReason::SecretMissing => "the Secret of the current credential is missing",
            RotationReason::Due => "the rotation time was reached",
            RotationReason::Manual => "status.expiresAt was moved into the past",
        }
    }

    /// The `reason` label of `keystone_application_credentials_created_total`; a `gracePeriodDays` change that
    /// makes the credential due at once counts as a spec change.
    pub fn metric_label(self, spec_changed: bool) -> &'static str {
        match self {
            RotationReason::Initial => "initial",
            RotationReason::SecurityFieldsChanged => "spec_change",
            RotationReason::SecretMissing => "secret_lost",
            RotationReason::Due | RotationReason::Manual if spec_changed => "spec_change",
            RotationReason::Due => "expiry",
            RotationReason::Manual => "manual",
        }
    }

    /// Whether this replaces an existing credential (a rotation) rather than creating the first one.
    pub fn is_rotation(self) -> bool {
        self != RotationReason::Initial
    }
}

/// Whether the Secret named in `status.secretName` exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecretPresence {
    /// It exists and is not being deleted.
    Present,
    /// It does not exist, or it is being deleted.
    Missing,
}

/// Checks what the CRD's schema enforces, for objects stored before that validation existed: a grace period
/// not shorter than the lifetime would rotate in a loop.
pub fn validate(spec: &KeystoneApplicationCredentialSpec) -> Result<(), AcError> {
    if spec.expiration_days < 2 {
        return Err(AcError::InvalidSpec("expirationDays must be at least 2".into()));
    }
    if spec.grace_period_days < 1 {
        return Err(AcError::InvalidSpec("gracePeriodDays must be at least 1".into()));
    }
    if spec.grace_period_days >= spec.expiration_days {
        return Err(AcError::InvalidSpec(
            "gracePeriodDays must be smaller than expirationDays".into(),
        ));
    }
    if spec.roles.is_empty() || spec.roles.iter().any(|r| r.trim().is_empty()) {
        return Err(AcError::InvalidSpec(
            "roles must name at least one role, and no empty role".into(),
        ));
    }
    Ok(())
}

/// A hash of the fields that shape the credential's permissions (roles, access rules, unrestricted).
///
/// Order and duplicates do not matter (Keystone treats roles and rules as sets), so reordering the spec does not
/// rotate; any real change does.
pub fn security_hash(spec: &KeystoneApplicationCredentialSpec) -> String {
    let mut roles: Vec<&str> = spec.roles.iter().map(String::as_str).collect();
    roles.sort_unstable();
    roles.dedup();
    let mut rules: Vec<(&str, &str, &str)> = spec
        .access_rules
        .iter()
        .flatten()
        .map(|r| (r.service.as_str(), r.path.as_str(), r.method.as_str()))
        .collect();
    rules.sort_unstable();
    rules.dedup();
    let canonical = serde_json::json!({"roles": roles, "accessRules": rules, "unrestricted": spec.unrestricted});
    format!(
        "sha256:{}",
        hex::encode(&Sha256::digest(canonical.to_string().as_bytes())[..16])
    )
}

/// When a credential created at `now` expires.
pub fn expires_at(now: Timestamp, expiration_days: i64) -> Result<Timestamp, AcError> {
    expiration_days
        .checked_mul(SECONDS_PER_DAY)
        .and_then(|secs| now.checked_add(SignedDuration::from_secs(secs)).ok())
        .ok_or_else(|| AcError::InvalidSpec(format!("expirationDays {expiration_days} is too large")))
}

/// When a credential expiring at `expires_at` becomes eligible for rotation: `gracePeriodDays` before it expires.
pub fn rotation_eligible_at(expires_at: Timestamp, grace_period_days: i64) -> Timestamp {
    grace_period_days
        .checked_mul(SECONDS_PER_DAY)
        .and_then(|secs| expires_at.checked_sub(SignedDuration::from_secs(secs)).ok())
        .unwrap_or(Timestamp::MIN)
}

/// Whether a new credential is needed now, and why (`None`: the current one stays).
///
/// A change of `expirationDays` alone does not rotate: it applies to the next credential.
pub fn rotation_needed(
    spec: &KeystoneApplicationCredentialSpec,
    status: Option<&KeystoneApplicationCredentialStatus>,
    current_secret: SecretPresence,
    now: Timestamp,
) -> Option<RotationReason> {
    let Some(status) = status.filter(|s| s.ac_id.as_deref().is_some_and(|id| !id.is_empty())) else {
        return Some(RotationReason::Initial);
    };
    if status.security_hash.as_deref() != Some(security_hash(spec).as_str()) {
        return Some(RotationReason::SecurityFieldsChanged);
    }
    if status.secret_name.as_deref().is_none_or(str::is_empty) || current_secret == SecretPresence::Missing {
        return Some(RotationReason::SecretMissing);
    }
    match &status.expires_at {
        Some(expires_at) if now < rotation_eligible_at(expires_at.0, spec.grace_period_days) => None,
        Some(expires_at) if moved_by_hand(status, expires_at.0, now) => Some(RotationReason::Manual),
        _ => Some(RotationReason::Due),
    }
}

/// Whether a due `expires_at` was set by someone else than the operator: no credential it mints expires before
/// it was created, and the rotation time it published last is still ahead.
fn moved_by_hand(status: &KeystoneApplicationCredentialStatus, expires_at: Timestamp, now: Timestamp) -> bool {
    let before_creation = status
        .created_at
        .as_ref()
        .is_some_and(|created| expires_at <= created.0);
    let published_ahead = status
        .rotation_eligible_at
        .as_ref()
        .is_some_and(|eligible| now < eligible.0);
    before_creation || published_ahead
}

/// The barbican credential of the samples (a year, rotated half-way), for unit tests.
#[cfg(test)]
pub(crate) fn example_spec() -> KeystoneApplicationCredentialSpec {
    KeystoneApplicationCredentialSpec {
        secret: "osp-secret".into(),
        password_selector: "BarbicanPassword".into(),
        user_name: "barbican".into(),
        expiration_days: 365,
        grace_period_days: 182,
        roles: vec!["service".into()],
        unrestricted: false,
        access_rules: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::keystone::{AccessRule, HttpMethod};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn spec() -> KeystoneApplicationCredentialSpec {
        example_spec()
    }

    fn t(s: &str) -> Timestamp {
        s.parse().expect("timestamp")
    }

    fn current(spec: &KeystoneApplicationCredentialSpec, expires: &str) -> KeystoneApplicationCredentialStatus {
        KeystoneApplicationCredentialStatus {
            ac_id: Some("7b23dbac20bc4f048f937415c84bb329".into()),
            secret_name: Some("ac-barbican-7b23d-secret".into()),
            expires_at: Some(Time(t(expires))),
            security_hash: Some(security_hash(spec)),
            ..Default::default()
        }
    }

    #[test]
    fn first_credential_is_needed_without_an_id() {
        let s = spec();
        assert_eq!(
            rotation_needed(&s, None, SecretPresence::Missing, t("2025-01-01T00:00:00Z")),
            Some(RotationReason::Initial)
        );
        let empty = KeystoneApplicationCredentialStatus::default();
        assert_eq!(
            rotation_needed(&s, Some(&empty), SecretPresence::Missing, t("2025-01-01T00:00:00Z")),
            Some(RotationReason::Initial)
        );
    }

    #[test]
    fn rotation_starts_exactly_at_expiry_minus_grace() {
        let s = spec();
        let status = current(&s, "2026-05-29T09:02:28Z");
        let eligible = rotation_eligible_at(t("2026-05-29T09:02:28Z"), 182);
        assert_eq!(eligible, t("2025-11-28T09:02:28Z"));
        let just_before = eligible - SignedDuration::from_secs(1);
        assert_eq!(
            rotation_needed(&s, Some(&status), SecretPresence::Present, just_before),
            None
        );
        assert_eq!(
            rotation_needed(&s, Some(&status), SecretPresence::Present, eligible),
            Some(RotationReason::Due)
        );
    }

    #[test]
    fn expiry_patched_into_the_past_rotates_as_a_manual_rotation() {
        let s = spec();
        let mut status = current(&s, "2001-05-19T00:00:00Z");
        status.created_at = Some(Time(t("2025-05-01T00:00:00Z")));
        assert_eq!(
            rotation_needed(&s, Some(&status), SecretPresence::Present, t("2025-06-01T00:00:00Z")),
            Some(RotationReason::Manual)
        );
        // Moved to a time after the creation but before the published rotation time: manual too.
        let mut status = current(&s, "2025-06-01T00:00:00Z");
        status.created_at = Some(Time(t("2025-05-01T00:00:00Z")));
        status.rotation_eligible_at = Some(Time(t("2025-10-30T00:00:00Z")));
        assert_eq!(
            rotation_needed(&s, Some(&status), SecretPresence::Present, t("2025-06-01T00:00:00Z")),
            Some(RotationReason::Manual)
        );
        assert_eq!(RotationReason::Manual.metric_label(false), "manual");
        assert_eq!(RotationReason::Manual.metric_label(true), "spec_change");
        assert_eq!(RotationReason::Due.metric_label(false), "expiry");
    }

    #[test]
    fn security_fields_rotate_but_expiration_days_do_not() {
        let s = spec();
        let status = current(&s, "2026-05-29T09:02:28Z");
        let now = t("2025-06-01T00:00:00Z");
        let mut longer = s.clone();
        longer.expiration_days = 730;
        assert_eq!(
            rotation_needed(&longer, Some(&status), SecretPresence::Present, now),
            None
        );
        let mut more_roles = s.clone();
        more_roles.roles.push("reader".into());
        assert_eq!(
            rotation_needed(&more_roles, Some(&status), SecretPresence::Present, now),
            Some(RotationReason::SecurityFieldsChanged)
        );
        let mut ruled = s.clone();
        ruled.access_rules = Some(vec![AccessRule {
            service: "compute".into(),
            path: "/servers".into(),
            method: HttpMethod::Get,
        }]);
        assert_eq!(
            rotation_needed(&ruled, Some(&status), SecretPresence::Present, now),
            Some(RotationReason::SecurityFieldsChanged)
        );
        let mut unrestricted = s.clone();
        unrestricted.unrestricted = true;
        assert_ne!(security_hash(&unrestricted), security_hash(&s));
    }

    #[test]
    fn hash_ignores_order_and_duplicates() {
        let mut a = spec();
        a.roles = vec!["service".into(), "reader".into()];
        let mut b = spec();
        b.roles = vec!["reader".into(), "service".into(), "reader".into()];
        assert_eq!(security_hash(&a), security_hash(&b));
        assert!(security_hash(&a).starts_with("sha256:"));
    }

    #[test]
    fn a_missing_secret_rotates() {
        let s = spec();
        let status = current(&s, "2026-05-29T09:02:28Z");
        assert_eq!(
            rotation_needed(&s, Some(&status), SecretPresence::Missing, t("2025-06-01T00:00:00Z")),
            Some(RotationReason::SecretMissing)
        );
    }

    #[test]
    fn inconsistent_specs_are_refused_before_any_keystone_call() {
        let mut s = spec();
        s.grace_period_days = 365;
        assert!(matches!(validate(&s), Err(AcError::InvalidSpec(_))));
        let mut s = spec();
        s.roles.clear();
        assert!(validate(&s).is_err());
        assert!(validate(&spec()).is_ok());
    }

    #[test]
    fn expiry_is_whole_days_and_overflow_is_an_error() {
        let now = t("2025-05-29T09:02:28Z");
        assert_eq!(expires_at(now, 365).expect("fits"), t("2026-05-29T09:02:28Z"));
        assert!(expires_at(now, i64::MAX).is_err());
    }
}
