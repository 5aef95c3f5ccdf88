//! The NebariApp status: sub-conditions per feature, Ready as their conjunction, and the reference fields the
//! original declared but never filled.

use crds::nebari::{NebariApp, NebariAppStatus};
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
