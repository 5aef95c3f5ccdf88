//! One reconcile of a ManagedRancherProject: a [`Pass`] runs the seed's steps in order, each defined in the file
//! named after what it produces:
//!
//! 1. the Rancher project (`project.rs`): the recorded id, else adopted (when safe) or created by name; name,
//!    description and annotations synced (a rename included);
//! 2. its quota and namespace default quota (`quotas.rs`);
//! 3. the Keycloak parent group and one group per binding group name under it (`groups.rs`);
//! 4. the project (and cluster) role template bindings to `keycloakoidc_group://<group>` (`bindings.rs`);
//! 5. the members of each group, identifiers resolved to Keycloak ids first, unknown users pending
//!    (`members.rs`);
//! 6. what bindings no longer in the spec made: their Rancher bindings, their groups or the members managed in
//!    them (`removal.rs`);
//! 7. the status (`status.rs`), written only when it changed (a write refused as stale is rebased onto the
//!    stored object, see the controller's `StatusPolicy`), events for what changed, and the next drift check.
//!
//! Keycloak steps do not wait for Rancher ones (access is granted by group membership; revoking it must not
//! depend on Rancher being up), and a failed step only stops the steps that need its result. Every failure is
//! shown on its condition; the pass then fails so the runner retries with backoff, otherwise it asks to run again
//! after the jittered resync interval (Rancher and Keycloak cannot be watched).
//!
//! A pass with nothing to do reads the project, its bindings, the parent and binding groups and their members,
//! and writes nothing.

use std::collections::BTreeSet;
use std::sync::Arc;

use crds::rancher::{ManagedRancherProject, ManagedRancherProjectStatus};
use framework::ReconcileError;
use framework::conditions::{ConditionUpdate, Status};
use framework::error::kube_error;
use framework::events::Severity;
use framework::runner::{Context, Outcome};
use jiff::Timestamp;
use kube::Resource;

use super::RancherProjectController as Controller;
use super::cluster_scope;
use super::desired::{self, Desired, Scope, Translation};
use super::error::MrpError;
use super::found::Done;
use super::status;

/// Jitter of the drift resync (±10 %), so objects created together do not poll together forever.
const RESYNC_JITTER: f64 = 0.1;

/// Reconciles one ManagedRancherProject.
pub async fn reconcile(
    controller: &Controller,
    mrp: Arc<ManagedRancherProject>,
    ctx: &Context,
) -> Result<Outcome, MrpError> {
    // Before any external write: a pass that cannot see the other objects must not decide about shared ones.
    let all = controller.peers.all(&ctx.client, &ctx.namespaces).await?;
    let mut pass = Pass::new(controller, &mrp, &all);
    if let Err(refusal) = controller
        .settings
        .policy
        .check(&mrp.spec.cluster_id, &pass.plan.desired)
    {
        pass.refuse(refusal);
        return pass.publish(ctx).await;
    }
    pass.project().await;
    pass.quota().await;
    pass.groups().await;
    pass.bindings().await;
    pass.members().await;
    pass.remove_unwanted().await;
    pass.report_contested();
    pass.publish(ctx).await
}

/// One reconcile of one object: what it works from, what it reports, and what it has done so far.
pub struct Pass<'a> {
    /// What the pass works from.
    pub plan: Plan<'a>,
    /// Conditions, failures and notes for the status and the events.
    pub report: Report,
    /// What the steps found and made.
    pub done: Done,
}

/// What a pass works from, fixed when it starts.
pub struct Plan<'a> {
    /// The controller (clients, settings, clock).
    pub controller: &'a Controller,
    /// The object.
    pub mrp: &'a ManagedRancherProject,
    /// Its status as the pass read it.
    pub previous: ManagedRancherProjectStatus,
    /// Every other ManagedRancherProject (for what they share).
    pub others: Vec<Arc<ManagedRancherProject>>,
    /// The groups and bindings the spec asks for (cluster groups with the members other objects add).
    pub desired: Desired,
    /// The spec's quotas in Rancher's terms.
    pub translation: Translation,
    /// When the pass started (whole seconds).
    pub now: Timestamp,
    /// Groups the spec names that another object claimed first (left out of `desired`).
    pub contested: BTreeSet<String>,
}

/// What one pass found out, gathered for the status and the events.
#[derive(Default)]
pub struct Report {
    conditions: Vec<ConditionUpdate>,
    errors: Vec<MrpError>,
    notes: Vec<(&'static str, String)>,
}

impl Report {
    /// Records a condition unless the step already reported one (a failure is never overwritten).
    pub fn record(&mut self, update: ConditionUpdate) {
        if !self.conditions.iter().any(|c| c.type_ == update.type_) {
            self.conditions.push(update);
        }
    }

    /// Records a condition that holds.
    pub fn ok(&mut self, type_: &str, reason: &str, message: impl Into<String>) {
        self.record(ConditionUpdate::ok(type_, reason, message));
    }

    /// Records a condition waiting for an earlier step.
    pub fn wait(&mut self, type_: &str, message: &str) {
        self.record(ConditionUpdate::unknown(type_, "Waiting", message));
    }

    /// Records a failure on `type_` (replacing a success reported earlier in the pass, keeping an earlier
    /// failure) and remembers the error.
    pub fn fail(&mut self, type_: &str, error: MrpError) {
        let failed = ConditionUpdate::failed(type_, error.reason(), error.safe_message());
        match self.conditions.iter_mut().find(|c| c.type_ == type_) {
            Some(existing) if existing.status == Status::False => {}
            Some(existing) => *existing = failed,
            None => self.conditions.push(failed),
        }
        tracing::warn!(condition = type_, reason = error.reason(), %error, "reconcile step failed");
        self.errors.push(error);
    }

    /// Records something the pass changed, published as a Normal event.
    pub fn note(&mut self, reason: &'static str, message: String) {
        tracing::info!(reason, "{message}");
        self.notes.push((reason, message));
    }

    /// The conditions recorded so far.
    pub fn take_conditions(&mut self) -> Vec<ConditionUpdate> {
        std::mem::take(&mut self.conditions)
    }

    /// Whether a failure of this pass will not go away by retrying.
    pub fn has_persistent_failure(&self) -> bool {
        self.errors.iter().any(MrpError::is_persistent)
    }
}

impl<'a> Pass<'a> {
    fn new(controller: &'a Controller, mrp: &'a ManagedRancherProject, all: &[Arc<ManagedRancherProject>]) -> Self {
        let others = cluster_scope::others(all, mrp);
        let mut desired = desired::desired(&mrp.spec);
        // A group another object claimed first is not this object's: not created, bound or filled.
        let contested = cluster_scope::contested_groups(&others, mrp, &desired);
        desired.groups.retain(|g| !contested.contains(&g.name));
        for keys in [desired.project.as_mut(), desired.cluster.as_mut()]
            .into_iter()
            .flatten()
        {
            keys.retain(|k| !contested.contains(&k.group));
        }
        for group in desired.groups.iter_mut().filter(|g| g.scope == Scope::Cluster) {
            for member in cluster_scope::cluster_members(&others, &mrp.spec.cluster_id, &group.name) {
                if !group.members.contains(&member) {
                    group.members.push(member);
                }
            }
        }
        Self {
            plan: Plan {
                controller,
                mrp,
                previous: mrp.status.clone().unwrap_or_default(),
                others,
                desired,
                translation: desired::translate(
                    mrp.spec.resource_quotas.as_ref(),
                    controller.settings.namespace_default_quota_percent,
                ),
                contested,
                now: status::to_seconds(controller.clock.now()),
            },
            report: Report::default(),
            done: Done::default(),
        }
    }

    /// Step 7: publishes the notes and the status; fails with the pass's first error, else asks for the next
    /// drift check.
    /// Records the groups another object claimed first (left out of every step).
    fn report_contested(&mut self) {
        if let Some(first) = self.plan.contested.iter().next() {
            let error = MrpError::GroupClaimed(format!(
                "Keycloak group {first} is already bound by another ManagedRancherProject; choose another groupName"
            ));
            self.report.fail(status::KEYCLOAK_GROUPS_READY, error);
        }
    }

    /// Records that the operator's policy refuses the object: nothing is read or written in Rancher or Keycloak.
    fn refuse(&mut self, refusal: String) {
        let waiting = "not managed: the operator's policy refuses this object (see RancherProjectReady)";
        for type_ in status::applicable(self.plan.desired.manages_access()) {
            self.report.wait(type_, waiting);
        }
        self.report
            .fail(status::RANCHER_PROJECT_READY, MrpError::NotAllowed(refusal));
    }

    async fn publish(mut self, ctx: &Context) -> Result<Outcome, MrpError> {
        let plan = &self.plan;
        let mrp = plan.mrp;
        let mut update = status::begin(mrp, plan.now);
        update.status = status::records(mrp, &plan.previous, &plan.desired, std::mem::take(&mut self.done));
        let applicable = status::applicable(plan.desired.manages_access());
        let required = status::required_for_ready(&applicable, plan.controller.keycloak.is_some());
        status::set_conditions(&mut update, self.report.take_conditions(), &applicable, &required);
        let persistent = self.report.has_persistent_failure();
        let error_after = plan.controller.settings.error_after;
        update.status.phase = Some(status::phase(
            &update.status,
            &required,
            persistent,
            plan.now,
            error_after,
        ));
        status::stamp(&plan.previous, &mut update.status, plan.now);
        let object = mrp.object_ref(&());
        for (reason, note) in &self.report.notes {
            ctx.events
                .publish(&object, Severity::Normal, reason, "Reconcile", note)
                .await;
        }
        framework::status::publish(self.plan.controller, ctx, mrp, update)
            .await
            .map_err(kube_error("writing the status"))?;
        match self.report.errors.into_iter().next() {
            Some(error) => Err(error),
            None => Ok(Outcome::RequeueAfter(framework::http::jittered(
                self.plan.controller.settings.resync_interval,
                RESYNC_JITTER,
            ))),
        }
    }
}
