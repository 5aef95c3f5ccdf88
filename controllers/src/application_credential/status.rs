//! The status the controller publishes: the current credential and its schedule, and three conditions.
//!
//! Builders here are pure; the status is published through `framework::status`, whose resourceVersion
//! precondition refuses a status computed from a stale copy (the informer lagging behind our own last write, or
//! a concurrent manual `expiresAt` patch) instead of overwriting newer data; the reconcile then runs again on
//! the fresh object.

use crds::keystone::{KeystoneApplicationCredential, KeystoneApplicationCredentialStatus};
use framework::conditions::{self, ConditionUpdate};
use framework::status::{OnConflict, StatusPolicy, StatusUpdate};
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use super::{ApplicationCredentialController, rotation};

/// Condition: where Keystone is, and whether it can be used.
pub const KEYSTONE_API_READY: &str = "KeystoneAPIReady";
/// Condition: the credential exists, is stored in its Secret and is not overdue.
pub const CREDENTIAL_READY: &str = "KeystoneApplicationCredentialReady";

/// A credential minted by this reconcile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewCredential {
    /// Its id in Keystone.
    pub id: String,
    /// The Secret holding it.
    pub secret_name: String,
    /// When it was created (the operator's clock).
    pub created_at: Timestamp,
    /// When it expires (Keystone's answer).
    pub expires_at: Timestamp,
    /// The permissions hash it was made for.
    pub security_hash: String,
    /// Whether this call made it in Keystone (`false`: an interrupted creation — this process's or another's —
    /// was found done), so each credential is counted once across restarts and replicas.
    pub minted_here: bool,
}

/// Whole seconds: what the API stores for timestamps, so what we compare against.
pub fn to_seconds(at: Timestamp) -> Timestamp {
    Timestamp::from_second(at.as_second()).unwrap_or(at)
}

/// Records a new credential: the old Secret becomes the previous one, and `lastRotated` is set when it replaced
/// a credential.
pub fn record_new_credential(
    status: &mut KeystoneApplicationCredentialStatus,
    new: &NewCredential,
    rotated: bool,
    now: Timestamp,
) {
    if let Some(old) = status
        .secret_name
        .take()
        .filter(|old| !old.is_empty() && *old != new.secret_name)
    {
        status.previous_secret_name = Some(old);
    }
    status.ac_id = Some(new.id.clone());
    status.secret_name = Some(new.secret_name.clone());
    status.created_at = Some(Time(to_seconds(new.created_at)));
    status.expires_at = Some(Time(to_seconds(new.expires_at)));
    status.security_hash = Some(new.security_hash.clone());
    if rotated {
        status.last_rotated = Some(Time(to_seconds(now)));
    }
}

/// Keeps `rotationEligibleAt` equal to `expiresAt - gracePeriodDays` (the grace period may have been edited).
pub fn refresh_schedule(status: &mut KeystoneApplicationCredentialStatus, grace_period_days: i64) {
    status.rotation_eligible_at = status
        .expires_at
        .as_ref()
        .map(|expires| Time(to_seconds(rotation::rotation_eligible_at(expires.0, grace_period_days))));
}

/// The status being assembled during one reconcile.
pub type StatusBuilder = StatusUpdate<KeystoneApplicationCredentialStatus>;

/// Starts assembling `ac`'s status.
pub fn begin(ac: &KeystoneApplicationCredential, now: Timestamp) -> StatusBuilder {
    StatusUpdate::new::<ApplicationCredentialController>(ac, now)
}

/// The status is a function of the spec, the credential's creation record and Keystone's answers: a pass whose
/// write is refused recomputes it from the newer object (a credential minted meanwhile is recorded then, through
/// its creation record), so conflicts are dropped.
impl StatusPolicy for ApplicationCredentialController {
    type Resource = KeystoneApplicationCredential;
    type Status = KeystoneApplicationCredentialStatus;
    const ON_CONFLICT: OnConflict = OnConflict::Drop;

    fn conditions(status: &KeystoneApplicationCredentialStatus) -> &[Condition] {
        &status.conditions
    }

    fn conditions_mut(status: &mut KeystoneApplicationCredentialStatus) -> &mut Vec<Condition> {
        &mut status.conditions
    }

    fn observed_generation(status: &mut KeystoneApplicationCredentialStatus) -> &mut Option<i64> {
        &mut status.observed_generation
    }
}

/// Sets the sub-conditions given (`None` leaves one as it is, or Unknown when it was never set) and derives
/// `Ready` from them.
pub fn set_conditions(
    update: &mut StatusBuilder,
    keystone_api: Option<ConditionUpdate>,
    credential: Option<ConditionUpdate>,
) {
    for (type_, condition) in [(KEYSTONE_API_READY, keystone_api), (CREDENTIAL_READY, credential)] {
        let condition = match condition {
            Some(condition) => condition,
            None => match conditions::get(update.conditions(), type_) {
                Some(_) => continue,
                None => ConditionUpdate::unknown(type_, "Pending", "waiting for the previous step"),
            },
        };
        update.set(condition);
    }
    let message = ready_message(&update.status);
    update.derive_ready(&[KEYSTONE_API_READY, CREDENTIAL_READY], Some(message));
}

fn ready_message(status: &KeystoneApplicationCredentialStatus) -> String {
    format!(
        "application credential {} is ready in Secret {}",
        status.ac_id.as_deref().unwrap_or_default(),
        status.secret_name.as_deref().unwrap_or_default()
    )
}

/// The `KeystoneApplicationCredentialReady` condition of a healthy credential.
pub fn credential_ready(status: &KeystoneApplicationCredentialStatus) -> ConditionUpdate {
    let when = |t: &Option<Time>| {
        t.as_ref()
            .map(|t| t.0.to_string())
            .unwrap_or_else(|| "an unknown time".into())
    };
    ConditionUpdate::ok(
        CREDENTIAL_READY,
        "ApplicationCredentialReady",
        format!(
            "application credential {} is stored in Secret {}; it expires at {} and will be rotated at {}",
            status.ac_id.as_deref().unwrap_or_default(),
            status.secret_name.as_deref().unwrap_or_default(),
            when(&status.expires_at),
            when(&status.rotation_eligible_at),
        ),
    )
}

#[cfg(test)]
mod tests {
    use framework::conditions::READY;

    use super::*;

    fn t(s: &str) -> Timestamp {
        s.parse().expect("timestamp")
    }

    fn new(id: &str, secret: &str) -> NewCredential {
        NewCredential {
            id: id.into(),
            secret_name: secret.into(),
            created_at: t("2025-05-29T09:02:28.5Z"),
            expires_at: t("2026-05-29T09:02:28.705012Z"),
            security_hash: "sha256:x".into(),
            minted_here: true,
        }
    }

    #[test]
    fn first_credential_sets_times_without_last_rotated() {
        let mut status = KeystoneApplicationCredentialStatus::default();
        record_new_credential(
            &mut status,
            &new("7b23d", "ac-barbican-7b23d-secret"),
            false,
            t("2025-05-29T09:02:28Z"),
        );
        refresh_schedule(&mut status, 182);
        assert_eq!(status.ac_id.as_deref(), Some("7b23d"));
        assert_eq!(status.previous_secret_name, None);
        assert_eq!(status.last_rotated, None);
        assert_eq!(status.expires_at, Some(Time(t("2026-05-29T09:02:28Z"))));
        assert_eq!(status.rotation_eligible_at, Some(Time(t("2025-11-28T09:02:28Z"))));
    }

    #[test]
    fn rotation_keeps_the_previous_secret_and_stamps_last_rotated() {
        let mut status = KeystoneApplicationCredentialStatus::default();
        record_new_credential(
            &mut status,
            &new("aaaaa", "ac-barbican-aaaaa-secret"),
            false,
            t("2025-01-01T00:00:00Z"),
        );
        record_new_credential(
            &mut status,
            &new("bbbbb", "ac-barbican-bbbbb-secret"),
            true,
            t("2025-07-01T00:00:00Z"),
        );
        assert_eq!(status.previous_secret_name.as_deref(), Some("ac-barbican-aaaaa-secret"));
        assert_eq!(status.secret_name.as_deref(), Some("ac-barbican-bbbbb-secret"));
        assert_eq!(status.last_rotated, Some(Time(t("2025-07-01T00:00:00Z"))));
    }

    fn credential_object(status: KeystoneApplicationCredentialStatus) -> KeystoneApplicationCredential {
        let mut ac =
            KeystoneApplicationCredential::new("barbican", crate::application_credential::rotation::example_spec());
        ac.metadata.generation = Some(1);
        ac.status = Some(status);
        ac
    }

    #[test]
    fn ready_is_first_and_follows_the_sub_conditions() {
        let mut status = KeystoneApplicationCredentialStatus::default();
        record_new_credential(
            &mut status,
            &new("7b23d", "ac-barbican-7b23d-secret"),
            false,
            t("2025-05-29T09:02:28Z"),
        );
        let mut update = begin(&credential_object(status), t("2025-05-29T09:02:30Z"));
        let credential = credential_ready(&update.status);
        set_conditions(
            &mut update,
            Some(ConditionUpdate::ok(KEYSTONE_API_READY, "KeystoneAPIReady", "ok")),
            Some(credential),
        );
        let status = update.status;
        assert_eq!(status.conditions[0].type_, READY);
        assert_eq!(status.conditions[0].status, "True");
        assert!(
            status.conditions[0].message.contains("7b23d"),
            "Ready names the credential"
        );
        assert_eq!(status.conditions.len(), 3);
        assert_eq!(status.observed_generation, Some(1));

        let mut update = begin(&credential_object(status), t("2025-05-29T10:00:00Z"));
        set_conditions(
            &mut update,
            Some(ConditionUpdate::failed(
                KEYSTONE_API_READY,
                "KeystoneAPINotFound",
                "no KeystoneAPI",
            )),
            None,
        );
        let status = update.status;
        assert_eq!(status.conditions[0].status, "False");
        assert_eq!(status.conditions[0].reason, "KeystoneAPINotFound");
        let credential = conditions::get(&status.conditions, CREDENTIAL_READY).expect("kept");
        assert_eq!(credential.status, "True", "an untouched sub-condition keeps its value");
    }

    #[test]
    fn unchanged_conditions_keep_their_transition_time() {
        let api_ok = || Some(ConditionUpdate::ok(KEYSTONE_API_READY, "KeystoneAPIReady", "ok"));
        let mut first = begin(
            &credential_object(KeystoneApplicationCredentialStatus::default()),
            t("2025-01-01T00:00:00Z"),
        );
        set_conditions(&mut first, api_ok(), None);
        let mut second = begin(&credential_object(first.status.clone()), t("2025-01-02T00:00:00Z"));
        set_conditions(&mut second, api_ok(), None);
        assert_eq!(
            first.status, second.status,
            "a repeated reconcile changes nothing, so nothing is written"
        );
        assert!(second.transitions().is_empty(), "and announces nothing");
    }
}
