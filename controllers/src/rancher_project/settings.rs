//! What the ManagedRancherProject controller is configured with: where Rancher and Keycloak are (credentials
//! in Secrets read at use time), and the policies the original operator hard-wired.

use std::time::Duration;

use super::policy::RancherPolicy;
use crate::keycloak::KeycloakConnection;
use crate::rancher::RancherConnection;

/// Settings of the ManagedRancherProject controller.
#[derive(Debug, Clone)]
pub struct RancherProjectSettings {
    /// Rancher; without it every project reports `RancherNotConfigured`.
    pub rancher: Option<RancherConnection>,
    /// Keycloak for the projects' groups; without it a project with `spec.keycloak.enabled` reports
    /// `KeycloakNotConfigured`.
    pub keycloak: Option<KeycloakConnection>,
    /// How often a project's Rancher and Keycloak state is checked for drift (jittered by ±10 %).
    pub resync_interval: Duration,
    /// Remove every group member the spec does not list, not only those the operator added.
    pub authoritative_membership: bool,
    /// How long a transient failure may last before the phase becomes `Error`.
    pub error_after: Duration,
    /// Percent of the project quota each namespace gets by default (1–100).
    pub namespace_default_quota_percent: u8,
    /// Delete Keycloak groups orphaned by a gone object after `orphan_grace` (`--rancher-delete-orphans`).
    pub delete_orphans: bool,
    /// How long a group stays orphaned before it is deleted.
    pub orphan_grace: Duration,
    /// Time between looks for orphaned groups (`--rancher-orphan-scan-seconds`).
    pub orphan_scan_interval: Duration,
    /// Which clusters, role templates and group names objects may use.
    pub policy: RancherPolicy,
}
