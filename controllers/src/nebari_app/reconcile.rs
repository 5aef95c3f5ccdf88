//! One NebariApp reconcile: a [`Pass`] runs the steps in order, each defined in the file named after what it
//! produces:
//!
//! 1. prerequisites (`prerequisites.rs`): the namespace opted in, the backend Service with its port; then the
//!    hostname (`hostname.rs`): allowed in the namespace and not claimed by another namespace's app (a refused
//!    app has everything that served its traffic withdrawn);
//! 2. TLS (`tls.rs`): the Certificate or the user's Secret, and the app's listener on its Gateway;
//! 3. auth (`auth.rs`): the OIDC client (provisioned in Keycloak or named by `clientSecretRef`), its Secret, the
//!    Secret's reader RBAC and the SecurityPolicy;
//! 4. routes (`route.rs`): the HTTPRoutes, exposed only when the authentication the app asks for is in place;
//! 5. prune: children of every declared kind this pass did not produce;
//! 6. status (`status.rs`): Ready from the conditions that apply, published once.
//!
//! Auth runs before routing so the routes can fail closed. Each step records its condition; a failing step
//! still lets the status be written (so users see why) and its error then drives the retry backoff. Nothing
//! here polls: watches on the app's children, its namespace, its Service, its Certificate and the Secrets it
//! names bring the next reconcile.

use std::sync::Arc;

use crds::nebari::NebariApp;
use framework::children::ChildSet;
use framework::error::kube_error;
use framework::runner::{Context, Outcome};
use kube::ResourceExt;
use kube::api::Api;

use super::NebariAppController;
use super::error::NebariAppError;
use super::naming::AppNames;
use super::status::{self, StatusBuilder};
use super::tls_plan::TlsPlan;

/// Reconciles one NebariApp.
pub async fn reconcile(
    controller: &NebariAppController,
    app: Arc<NebariApp>,
    ctx: &Context,
) -> Result<Outcome, NebariAppError> {
    let Some(app) = fresh(&app, ctx).await? else {
        return Ok(Outcome::Done);
    };
    let mut pass = Pass::new(controller, ctx, &app)?;
    if let Some(blocked) = pass.prerequisites().await? {
        let next = pass.recheck_after(&blocked);
        pass.status.finish_with(blocked);
        return pass.publish(Ok(next)).await;
    }
    if let Some(refused) = pass.hostname_claim().await? {
        let next = pass.refuse_hostname(refused).await;
        return pass.publish(next).await;
    }
    pass.status.status.hostname = Some(app.spec.hostname.clone());
    let outcome = pass.steps().await;
    pass.derive_ready();
    pass.publish(outcome).await
}

/// The app as the API server has it now. The watch cache can lag behind this controller's own last write (the
/// status with `authConfigHash`, the removal of the force annotation), and acting on that stale copy would
/// provision Keycloak a second time and rewrite the status; one read per reconcile prevents both. `None` when
/// the app is gone or being deleted (the deletion's own event runs the cleanup).
async fn fresh(app: &NebariApp, ctx: &Context) -> Result<Option<NebariApp>, NebariAppError> {
    let api: Api<NebariApp> = Api::namespaced(ctx.client.clone(), &app.namespace().unwrap_or_default());
    let current = framework::live::reread(&api, app)
        .await
        .map_err(kube_error("reading the NebariApp"))?;
    Ok(current.filter(|a| a.metadata.deletion_timestamp.is_none()))
}

/// Everything one reconcile of one app works with, and what it has produced so far.
pub struct Pass<'a> {
    /// The controller (settings, Keycloak client, clock).
    pub controller: &'a NebariAppController,
    /// The runner's services.
    pub ctx: &'a Context,
    /// The app, as stored now.
    pub app: &'a NebariApp,
    /// The names of everything the app owns.
    pub names: AppNames,
    /// How the app's traffic is secured.
    pub plan: TlsPlan,
    /// The children produced so far.
    pub children: ChildSet,
    /// The status assembled so far.
    pub status: StatusBuilder,
    /// The app as this pass's own writes to it left it (the provisioning marker, the force annotation's
    /// removal): the status is written onto that copy, whose resourceVersion the API server now has, instead of
    /// being refused as stale and written a second time.
    pub stored: Option<NebariApp>,
}

impl<'a> Pass<'a> {
    fn new(controller: &'a NebariAppController, ctx: &'a Context, app: &'a NebariApp) -> Result<Self, NebariAppError> {
        let names = AppNames::new(&app.namespace().unwrap_or_default(), &app.name_any());
        let status = status::begin(app, controller.clock.now());
        Ok(Self {
            controller,
            ctx,
            app,
            names,
            plan: TlsPlan::for_app(app, &controller.settings),
            children: controller.child_set(ctx, app)?,
            status,
            stored: None,
        })
    }

    /// Steps 2 to 5; the first error that stops the sequence, or what the auth step asks for next.
    async fn steps(&mut self) -> Result<Outcome, NebariAppError> {
        self.status.status.gateway_ref = self.gateway_reference();
        let section = self.tls().await?;
        let auth = self.auth().await;
        let protected = auth.as_ref().is_ok_and(|auth| auth.policy_applied);
        let refused = auth.as_ref().is_ok_and(|auth| auth.refused);
        self.routes(section, protected, refused).await?;
        let pruned = self.children.prune().await?;
        if pruned.contains(&format!("Certificate/{}", self.names.certificate())) {
            let gateway_ns = &self.controller.settings.gateway_namespace;
            let owner = framework::children::owner_id(self.app);
            super::tls::release_issued_secret(&self.ctx.client, gateway_ns, &self.names, &owner).await?;
        }
        auth.map(|auth| auth.next)
    }

    /// The landing page's view of the app, and Ready from the conditions that apply.
    fn derive_ready(&mut self) {
        let health_checks = self.controller.settings.health_checks.enabled;
        self.status.status.service_discovery = Some(Box::new(super::discovery::service_discovery(
            self.app,
            self.plan.is_tls(),
            health_checks,
        )));
        self.status.derive_ready(&status::applicable(&self.app.spec), None);
    }

    /// Publishes the status (events on transitions, a write only on change) and returns the pass's outcome.
    async fn publish(self, outcome: Result<Outcome, NebariAppError>) -> Result<Outcome, NebariAppError> {
        let stored = self.stored.as_ref().unwrap_or(self.app);
        framework::status::publish(self.controller, self.ctx, stored, self.status)
            .await
            .map_err(kube_error("writing the status"))?;
        outcome
    }
}
