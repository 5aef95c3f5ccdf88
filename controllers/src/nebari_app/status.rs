//! The NebariApp status: sub-conditions per feature, Ready as their conjunction, and the reference fields the
//! original declared but never filled.

use crds::nebari::{NebariApp, NebariAppSpec, NebariAppStatus};
use framework::status::{OnConflict, StatusPolicy, StatusUpdate};
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use super::NebariAppController;

/// Routing: the HTTPRoutes.
pub const ROUTING_READY: &str = "RoutingReady";
/// TLS: the certificate and the app's listener.
pub const TLS_READY: &str = "TLSReady";
/// Auth: the OIDC client, its Secret and the SecurityPolicy.
pub const AUTH_READY: &str = "AuthReady";

/// The sub-conditions Ready is derived from, root causes first: a withheld route (RoutingReady) is a consequence
/// of auth not being ready, so with both False, Ready shows auth's reason.
pub fn applicable(spec: &NebariAppSpec) -> Vec<&'static str> {
    let mut applicable = Vec::new();
    if spec.auth.as_ref().is_some_and(|a| a.enabled) {
        applicable.push(AUTH_READY);
    }
    if spec.routing.is_some() {
        applicable.extend([TLS_READY, ROUTING_READY]);
    }
    applicable
}

/// The status being assembled during one reconcile.
pub type StatusBuilder = StatusUpdate<NebariAppStatus>;

/// Starts assembling `app`'s status.
pub fn begin(app: &NebariApp, now: Timestamp) -> StatusBuilder {
    StatusUpdate::new::<NebariAppController>(app, now)
}

/// The status is derived from the spec and what the pass found; the only record of the outside world it holds
/// (`authConfigHash`, the clients provisioned) is this pass's own. On a conflict, the pass's status is written
/// onto the stored object.
impl StatusPolicy for NebariAppController {
    type Resource = NebariApp;
    type Status = NebariAppStatus;
    const ON_CONFLICT: OnConflict = OnConflict::Rebase;
    /// A Certificate cert-manager is still issuing is the normal first minute of every app with its own TLS.
    const IN_PROGRESS_REASONS: &'static [&'static str] = &[super::tls::CERTIFICATE_NOT_READY];

    fn conditions(status: &NebariAppStatus) -> &[Condition] {
        &status.conditions
    }

    fn conditions_mut(status: &mut NebariAppStatus) -> &mut Vec<Condition> {
        &mut status.conditions
    }

    fn observed_generation(status: &mut NebariAppStatus) -> &mut Option<i64> {
        &mut status.observed_generation
    }
}

#[cfg(test)]
mod tests {
    use framework::conditions::{ConditionUpdate, READY};
    use serde_json::json;

    use super::*;

    fn app(spec: serde_json::Value) -> NebariApp {
        serde_json::from_value(json!({
            "apiVersion": "reconcilers.nebari.dev/v1", "kind": "NebariApp",
            "metadata": {"name": "web", "namespace": "team", "generation": 3},
            "spec": spec,
        }))
        .expect("valid app")
    }

    #[test]
    fn only_the_features_an_app_uses_count_towards_ready() {
        let plain = app(json!({"hostname": "h", "service": {"name": "s", "port": 80}}));
        assert!(applicable(&plain.spec).is_empty());
        let full = app(
            json!({"hostname": "h", "service": {"name": "s", "port": 80}, "routing": {},
            "auth": {"enabled": true}}),
        );
        assert_eq!(applicable(&full.spec), vec![AUTH_READY, TLS_READY, ROUTING_READY]);
    }

    #[test]
    fn a_route_withheld_for_auth_reports_auth_as_the_cause() {
        let full = app(
            json!({"hostname": "h", "service": {"name": "s", "port": 80}, "routing": {},
            "auth": {"enabled": true}}),
        );
        let mut status = begin(&full, "2026-01-01T00:00:00Z".parse().expect("time"));
        status.set(ConditionUpdate::ok(TLS_READY, "TLSConfigured", "ok"));
        status.set(ConditionUpdate::failed(ROUTING_READY, "WaitingForAuth", "withheld"));
        status.set(ConditionUpdate::failed(
            AUTH_READY,
            "KeycloakUnavailable",
            "Keycloak is down",
        ));
        status.derive_ready(&applicable(&full.spec), None);
        let ready = &status.status.conditions[0];
        assert_eq!(
            (ready.type_.as_str(), ready.reason.as_str()),
            (READY, "KeycloakUnavailable")
        );
        assert_eq!(status.status.observed_generation, Some(3));
    }
}
