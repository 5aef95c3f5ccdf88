//! What the controller publishes to Prometheus besides the framework's reconcile metrics: one counter of the
//! credentials it minted and why, and per-credential gauges of the schedule, so "one credential per rotation"
//! and "nothing overdue" can be checked and alerted on.

use crds::keystone::KeystoneApplicationCredential;
use framework::metrics::{Metrics, ObjectGauge};
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use prometheus::{IntCounterVec, Opts};

/// Metric: when each credential expires (for alerts on credentials that were not rotated in time).
pub const EXPIRY_GAUGE: &str = "keystone_application_credential_expiry_timestamp_seconds";
/// Metric: when each credential becomes due for rotation (`expiresAt` minus `gracePeriodDays`).
pub const ROTATION_GAUGE: &str = "keystone_application_credential_rotation_eligible_timestamp_seconds";
/// Metric: seconds from the scrape until each credential's next rotation (negative while overdue).
pub const UNTIL_ROTATION_GAUGE: &str = "keystone_application_credential_seconds_until_rotation";
/// Metric: application credentials minted in Keystone, by credential and reason.
pub const CREATED_COUNTER: &str = "keystone_application_credentials_created_total";

/// The per-credential gauge families, as `(name, help)`.
pub const OBJECT_GAUGES: &[(&str, &str)] = &[
    (
        EXPIRY_GAUGE,
        "Unix time at which the current application credential expires in Keystone",
    ),
    (
        ROTATION_GAUGE,
        "Unix time from which the current application credential is due for rotation",
    ),
    (
        UNTIL_ROTATION_GAUGE,
        "Seconds until the current application credential is due for rotation (negative: overdue)",
    ),
];

/// The gauge values of one credential at `now` (the scrape's wall-clock time).
pub fn object_gauges(credential: &KeystoneApplicationCredential, now: Timestamp) -> Vec<ObjectGauge> {
    let status = credential.status.as_ref();
    // Whole seconds since the epoch, and differences of them, fit an f64 exactly.
    #[allow(clippy::cast_precision_loss)]
    let seconds = |time: &Time| time.0.as_second() as f64;
    #[allow(clippy::cast_precision_loss)]
    let now = now.as_second() as f64;
    let expiry = status.and_then(|s| s.expires_at.as_ref()).map(seconds);
    let rotation = status.and_then(|s| s.rotation_eligible_at.as_ref()).map(seconds);
    [
        (EXPIRY_GAUGE, expiry),
        (ROTATION_GAUGE, rotation),
        (UNTIL_ROTATION_GAUGE, rotation.map(|at| at - now)),
    ]
    .into_iter()
    .filter_map(|(family, value)| value.map(|value| ObjectGauge { family, value }))
    .collect()
}

/// The counter of minted credentials; inert without a metrics registry (unit tests).
#[derive(Clone, Default)]
pub struct CredentialMetrics {
    created: Option<IntCounterVec>,
}

impl CredentialMetrics {
    /// Registers the counter in `metrics`.
    pub fn new(metrics: Option<&Metrics>) -> Result<Self, prometheus::Error> {
        let Some(metrics) = metrics else {
            return Ok(Self::default());
        };
        let created = metrics.register(IntCounterVec::new(
            Opts::new(
                CREATED_COUNTER,
                "Application credentials created in Keystone, by reason: initial, expiry, spec_change, manual, \
                 secret_lost",
            ),
            &["namespace", "name", "reason"],
        )?)?;
        Ok(Self { created: Some(created) })
    }

    /// Counts one credential minted for `namespace/name` for `reason`.
    pub fn created(&self, namespace: &str, name: &str, reason: &str) {
        if let Some(created) = &self.created {
            created.with_label_values(&[namespace, name, reason]).inc();
        }
    }

    /// Drops the series of a deleted credential, so the counter's cardinality follows the live objects.
    pub fn forget(&self, namespace: &str, name: &str) {
        if let Some(created) = &self.created {
            for reason in ["initial", "expiry", "spec_change", "manual", "secret_lost"] {
                let _ = created.remove_label_values(&[namespace, name, reason]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn seconds_until_rotation_are_counted_from_the_scrape_and_go_negative_when_overdue() {
        let credential: KeystoneApplicationCredential = serde_json::from_value(json!({
            "apiVersion": "keystone.openstack.org/v1beta1", "kind": "KeystoneApplicationCredential",
            "metadata": {"name": "barbican", "namespace": "openstack"},
            "spec": {"secret": "s", "passwordSelector": "Password", "userName": "barbican", "roles": ["service"]},
            "status": {"expiresAt": "2026-01-11T00:00:00Z", "rotationEligibleAt": "2026-01-10T00:00:00Z"},
        }))
        .expect("credential");
        let value = |now: &str, family: &str| {
            object_gauges(&credential, now.parse().expect("time"))
                .into_iter()
                .find(|g| g.family == family)
                .map(|g| g.value)
        };
        assert_eq!(value("2026-01-09T23:00:00Z", UNTIL_ROTATION_GAUGE), Some(3600.0));
        assert_eq!(value("2026-01-10T00:01:00Z", UNTIL_ROTATION_GAUGE), Some(-60.0));
        assert_eq!(value("2026-01-10T00:01:00Z", EXPIRY_GAUGE), Some(1_768_089_600.0));
    }
}
