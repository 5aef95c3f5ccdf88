//! The status the controller publishes: the current credential and its schedule, and three conditions.
//!
//! Builders here are pure. [`write`] applies the status server-side only when it differs from the object's, with
//! the object's resourceVersion as a precondition: a status computed from a stale copy (the informer lagging
//! behind our own last write, or a concurrent manual `expiresAt` patch) is refused with 409 instead of
//! overwriting newer data, and the reconcile runs again on the fresh object.

use crds::keystone::{KeystoneApplicationCredential, KeystoneApplicationCredentialStatus};
use framework::conditions::{self, ConditionUpdate, READY, Status};
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde_json::json;

use super::rotation;

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

/// Sets the sub-conditions given (`None` leaves one as it is, or Unknown when it was never set), derives `Ready`
/// from them, keeps `Ready` first in the list (older consumers read `conditions[0]`), and records the generation.
pub fn set_conditions(
    status: &mut KeystoneApplicationCredentialStatus,
    generation: Option<i64>,
    now: Timestamp,
    keystone_api: Option<ConditionUpdate>,
    credential: Option<ConditionUpdate>,
) {
    let now = to_seconds(now);
    for (type_, update) in [(KEYSTONE_API_READY, keystone_api), (CREDENTIAL_READY, credential)] {
        let update = match update {
            Some(update) => update,
            None => match conditions::get(&status.conditions, type_) {
                Some(_) => continue,
                None => ConditionUpdate::unknown(type_, "Pending", "waiting for the previous step"),
            },
        };
        conditions::set(&mut status.conditions, update, generation, now);
    }
    let mut ready = conditions::aggregate_ready(&status.conditions, &[KEYSTONE_API_READY, CREDENTIAL_READY]);
    if ready.status == Status::True {
        ready = ConditionUpdate::ok(READY, "Ready", ready_message(status));
    }
    conditions::set(&mut status.conditions, ready, generation, now);
    if let Some(index) = status.conditions.iter().position(|c| c.type_ == READY)
        && index != 0
    {
        let ready = status.conditions.remove(index);
        status.conditions.insert(0, ready);
    }
    status.observed_generation = generation;
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

/// Applies `desired` as the status of `obj` unless it already has it; returns the updated object when written.
///
/// The apply carries `obj`'s resourceVersion, so it fails with 409 if the object changed since it was read.
pub async fn write(
    api: &Api<KeystoneApplicationCredential>,
    obj: &KeystoneApplicationCredential,
    desired: &KeystoneApplicationCredentialStatus,
    field_manager: &str,
) -> Result<Option<KeystoneApplicationCredential>, kube::Error> {
    let current = serde_json::to_value(obj.status.clone().unwrap_or_default()).map_err(kube::Error::SerdeError)?;
    let wanted = serde_json::to_value(desired).map_err(kube::Error::SerdeError)?;
    if current == wanted {
        return Ok(None);
    }
    let body = json!({
        "apiVersion": KeystoneApplicationCredential::api_version(&()),
        "kind": KeystoneApplicationCredential::kind(&()),
        "metadata": {"name": obj.name_any(), "resourceVersion": obj.resource_version()},
        "status": wanted,
    });
    let updated = api
        .patch_status(
            &obj.name_any(),
            &PatchParams::apply(field_manager).force(),
            &Patch::Apply(&body),
        )
        .await?;
    Ok(Some(updated))
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn ready_is_first_and_follows_the_sub_conditions() {
        let mut status = KeystoneApplicationCredentialStatus::default();
        record_new_credential(
            &mut status,
            &new("7b23d", "ac-barbican-7b23d-secret"),
            false,
            t("2025-05-29T09:02:28Z"),
        );
        let now = t("2025-05-29T09:02:30Z");
        let credential = credential_ready(&status);
        set_conditions(
            &mut status,
            Some(1),
            now,
            Some(ConditionUpdate::ok(KEYSTONE_API_READY, "KeystoneAPIReady", "ok")),
            Some(credential),
        );
        assert_eq!(status.conditions[0].type_, READY);
        assert_eq!(status.conditions[0].status, "True");
        assert_eq!(status.conditions.len(), 3);
        assert_eq!(status.observed_generation, Some(1));

        let later = t("2025-05-29T10:00:00Z");
        set_conditions(
            &mut status,
            Some(1),
            later,
            Some(ConditionUpdate::failed(
                KEYSTONE_API_READY,
                "KeystoneAPINotFound",
                "no KeystoneAPI",
            )),
            None,
        );
        assert_eq!(status.conditions[0].status, "False");
        assert_eq!(status.conditions[0].reason, "KeystoneAPINotFound");
        let credential = conditions::get(&status.conditions, CREDENTIAL_READY).expect("kept");
        assert_eq!(credential.status, "True", "an untouched sub-condition keeps its value");
    }

    #[test]
    fn unchanged_conditions_keep_their_transition_time() {
        let mut status = KeystoneApplicationCredentialStatus::default();
        let api_ok = || Some(ConditionUpdate::ok(KEYSTONE_API_READY, "KeystoneAPIReady", "ok"));
        set_conditions(&mut status, Some(1), t("2025-01-01T00:00:00Z"), api_ok(), None);
        let before = status.clone();
        set_conditions(&mut status, Some(1), t("2025-01-02T00:00:00Z"), api_ok(), None);
        assert_eq!(
            before, status,
            "a repeated reconcile changes nothing, so nothing is written"
        );
    }
}
