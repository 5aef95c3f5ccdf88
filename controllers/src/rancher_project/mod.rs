//! The ManagedRancherProject controller (`waldur.io/v1alpha1`): a drop-in replacement for the Python
//! `rancher-keycloak-operator`. For each object it keeps a Rancher project (created, or adopted when safe), its
//! quota, Keycloak groups under a shared parent group, role template bindings granting those groups Rancher
//! roles, and the groups' members in line with the spec; on deletion it removes what it made.
//!
//! `reconcile.rs` is the sequence of steps; each step lives in the file named after what it produces: the
//! project (`project.rs`), its quota (`quotas.rs`), the Keycloak groups (`groups.rs`), the Rancher bindings and
//! what the spec asks for (`bindings.rs`), memberships (`members.rs`), the removal of bindings that left the spec
//! (`removal.rs`) and the status (`status.rs`); what is shared with other objects of the same cluster is
//! `cluster_scope.rs`. Deletion is `deletion.rs`.
//!
//! Rancher and Keycloak cannot be watched: besides changes to the object itself, a jittered resync
//! (`--rancher-resync-interval-seconds`) repairs drift (a group, binding or membership changed behind the
//! operator's back) and adds users who have appeared in Keycloak since.

pub mod bindings;
pub mod cluster_scope;
pub mod deletion;
pub mod desired;
pub mod error;
pub mod found;
pub mod groups;
pub mod members;
pub mod orphans;
pub mod policy;
pub mod project;
pub mod quotas;
pub mod reconcile;
pub mod removal;
pub mod settings;
pub mod status;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use std::sync::Arc;

use crds::rancher::ManagedRancherProject;
use framework::clock::{Clock, SystemClock};
use framework::finalizer::FinalizerSpec;
use framework::runner::{Context, Outcome, Reconciler, Running, Runtime, Scope, StartError};
use framework::triggers::Triggers;

use crate::keycloak::RealmClient;
use crate::rancher::RancherClient;
use cluster_scope::Peers;
use error::MrpError;
pub use settings::RancherProjectSettings;

/// The controller's name (`--controllers`, metrics, events).
pub const NAME: &str = "managedrancherproject";
/// Our finalizer on ManagedRancherProjects.
pub const FINALIZER: &str = "waldur.io/managed-rancher-project";
/// The finalizer kopf (the original operator's framework) put on objects with a delete handler; taken over.
pub const KOPF_FINALIZER: &str = "kopf.zalando.org/KopfFinalizerMarker";

/// The controller: its settings, clients and the caches of all objects (for what they share).
pub struct RancherProjectController {
    /// Manager settings.
    pub settings: RancherProjectSettings,
    /// The Rancher client (`None` when the manager has no Rancher URL).
    pub rancher: Option<RancherClient>,
    /// The Keycloak realm the groups live in (`None` when the manager has no Keycloak URL).
    pub keycloak: Option<RealmClient>,
    /// The clock (for condition times and the persistence of failures).
    pub clock: Arc<dyn Clock>,
    /// The cache of every namespace's ManagedRancherProjects (for what they share), when the controller has one.
    pub peers: Peers,
    /// The sweep of Keycloak groups whose object is gone.
    pub orphan_groups: orphans::GroupSweep,
}

impl RancherProjectController {
    /// Builds the controller from its settings.
    pub fn new(
        settings: RancherProjectSettings,
        kube: kube::Client,
        metrics: Option<framework::metrics::Metrics>,
    ) -> Result<Self, StartError> {
        let invalid = |message: String| StartError {
            controller: NAME,
            message,
        };
        let metrics_for_sweep = metrics.clone();
        let rancher = settings
            .rancher
            .as_ref()
            .map(|rancher| rancher.client(kube.clone(), metrics.clone()))
            .transpose()
            .map_err(|e| invalid(format!("--rancher-url: {e}")))?;
        let keycloak = settings
            .keycloak
            .as_ref()
            .map(|keycloak| keycloak.realm_client(kube, metrics))
            .transpose()
            .map_err(|e| invalid(format!("--rancher-keycloak-url: {e}")))?;
        if rancher.is_none() {
            tracing::warn!("no --rancher-url: ManagedRancherProjects will report RancherNotConfigured");
        }
        let orphan_groups = orphans::GroupSweep::new(metrics_for_sweep.as_ref()).map_err(|e| invalid(e.to_string()))?;
        Ok(Self {
            settings,
            rancher,
            keycloak,
            clock: Arc::new(SystemClock),
            peers: Peers::default(),
            orphan_groups,
        })
    }
}

impl Reconciler for RancherProjectController {
    type Resource = ManagedRancherProject;
    type Error = MrpError;

    fn name(&self) -> &'static str {
        NAME
    }

    fn ready_condition(obj: &Self::Resource) -> Option<Condition> {
        framework::status::ready_condition::<Self>(obj)
    }

    fn finalizer(&self) -> Option<FinalizerSpec> {
        Some(FinalizerSpec {
            name: FINALIZER,
            legacy: &[KOPF_FINALIZER],
        })
    }

    fn watches(&self, triggers: Triggers<Self::Resource>, scope: &Scope) -> Triggers<Self::Resource> {
        // No other kind drives these objects; the cache is kept to see what other projects share.
        self.peers.register(triggers.store(), scope.namespace());
        triggers
    }

    async fn reconcile(&self, obj: Arc<Self::Resource>, ctx: &Context) -> Result<Outcome, Self::Error> {
        reconcile::reconcile(self, obj, ctx).await
    }

    async fn cleanup(&self, obj: Arc<Self::Resource>, ctx: &Context) -> Result<(), Self::Error> {
        deletion::cleanup(self, obj, ctx).await
    }
}

/// Starts the controller with its settings.
pub fn start(runtime: &Runtime, settings: RancherProjectSettings) -> Result<Running, StartError> {
    let controller = Arc::new(RancherProjectController::new(
        settings,
        runtime.client.clone(),
        Some(runtime.metrics.clone()),
    )?);
    let namespaces = framework::namespaces::WatchedNamespaces::new(runtime.defaults.namespaces.clone());
    runtime.spawn_global_work(orphans::run(
        controller.clone(),
        runtime.client.clone(),
        namespaces,
        runtime.shutdown.clone(),
    ));
    Ok(framework::runner::start(controller, runtime))
}
