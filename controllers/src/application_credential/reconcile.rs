//! One reconcile of a KeystoneApplicationCredential, as an ordered list of steps:
//!
//! 1. check the spec (objects stored before the CRD's validation existed);
//! 2. find Keystone (the namespace's KeystoneAPI, or the configured URL);
//! 3. find the credential's Secrets (from the Secret watch) and decide whether a new credential is needed;
//! 4. if so, re-read the object (never rotate on a stale copy) and mint the credential exactly once;
//! 5. write the status (only when it changed), announce a rotation, drop the creation record;
//! 6. release and prune old Secrets whose credential expired;
//! 7. wake up exactly when the next rotation or pruning is due.
//!
//! A no-op pass costs no request: KeystoneAPIs and the credential's Secrets come from the watches. A
//! blocked step is reported on its condition; Kubernetes-side causes wait for the watches, Keystone failures
//! are retried with backoff.

use std::sync::Arc;
use std::time::Duration;

use crds::keystone::{KeystoneApplicationCredential, service_name};
use framework::ReconcileError;
use framework::conditions::ConditionUpdate;
use framework::error::{KubeError, kube_error};
use framework::events::Severity;
use framework::finalizer::{self, FinalizerSpec};
use framework::runner::{Context, Outcome};
use framework::status::Published;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, ListParams, PartialObjectMeta};
use kube::{Resource, ResourceExt};

use super::ApplicationCredentialController as Controller;
use super::credential::{self, Minter};
use super::endpoint::{self, Resolved};
use super::error::{AcError, Affects};
use super::rotation::{self, RotationReason, SecretPresence};
use super::secret::{self, PROTECTION_FINALIZER};
use super::status::{self, CREDENTIAL_READY, KEYSTONE_API_READY, NewCredential};

/// The longest timed wake-up requested; later rotations are reached by re-arming (timers this long are also a
/// cheap safety net).
const MAX_REQUEUE: Duration = Duration::from_secs(24 * 60 * 60);

/// The protection finalizer, as the framework's finalizer helpers describe it.
pub const PROTECTION: FinalizerSpec = FinalizerSpec {
    name: PROTECTION_FINALIZER,
    legacy: &[],
};

/// Reconciles one KeystoneApplicationCredential.
pub async fn reconcile(
    controller: &Controller,
    ac: Arc<KeystoneApplicationCredential>,
    ctx: &Context,
) -> Result<Outcome, AcError> {
    let now = status::to_seconds(controller.clock.now());
    let namespace = ac.namespace().unwrap_or_default();

    if let Err(error) = rotation::validate(&ac.spec) {
        return report(controller, &ac, ctx, error, None, now).await;
    }
    let seen = controller.keystone_apis.list(Some(&namespace));
    let keystone = match endpoint::resolve(&ctx.client, &namespace, controller.fallback_endpoint.as_ref(), seen).await {
        Ok(keystone) => keystone,
        Err(error) => return report(controller, &ac, ctx, error, None, now).await,
    };
    let mut ac = ac;
    let mut secrets = match credential_secrets(controller, ctx, &ac).await {
        Ok(secrets) => secrets,
        Err(error) => return report(controller, &ac, ctx, error, Some(&keystone), now).await,
    };

    let mut minted: Option<(RotationReason, NewCredential)> = None;
    let mut adopted = false;
    if needs_rotation(&ac, &secrets, now).is_some() {
        // The informer may lag behind our own last status write: decide on a fresh copy, so a credential that
        // was just recorded is never minted twice.
        let api: Api<KeystoneApplicationCredential> = Api::namespaced(ctx.client.clone(), &namespace);
        let fresh = framework::live::reread(&api, ac.as_ref())
            .await
            .map_err(kube_error("reading the credential"))?;
        let Some(fresh) = fresh.filter(|f| f.meta().deletion_timestamp.is_none()) else {
            return Ok(Outcome::Done);
        };
        ac = Arc::new(fresh);
        // The watch may lag our own create too: a Secret the fresh status names but the watch has not shown is
        // read before its absence mints a credential.
        if let Err(error) = confirm_current(ctx, &ac, &mut secrets).await {
            return report(controller, &ac, ctx, error, Some(&keystone), now).await;
        }
        if let Some(reason) = needs_rotation(&ac, &secrets, now) {
            let minter = Minter {
                client: &ctx.client,
                keystone: &controller.keystone,
                scope: &controller.scope,
                clock: controller.clock.as_ref(),
                field_manager: &ctx.field_manager,
                cached: &controller.credential_secrets,
            };
            // A credential keystone-operator recorded is taken over, not replaced, when Keystone shows it has the
            // permissions the spec asks for (a rotation would restart every service using it).
            let take_over = reason == RotationReason::SecurityFieldsChanged
                && credential::recorded_elsewhere(ac.status.as_ref())
                && match minter.matches_spec(&ac, &keystone).await {
                    Ok(matches) => matches,
                    Err(error) => return report(controller, &ac, ctx, error, Some(&keystone), now).await,
                };
            if take_over {
                adopted = true;
            } else {
                match minter.mint(&ac, &keystone).await {
                    Ok(new) => {
                        let spec_changed =
                            ac.status.as_ref().and_then(|s| s.observed_generation) != ac.meta().generation;
                        if new.minted_here {
                            let label = reason.metric_label(spec_changed);
                            controller.metrics.created(&namespace, &ac.name_any(), label);
                        }
                        minted = Some((reason, new));
                    }
                    Err(error) => return report(controller, &ac, ctx, error, Some(&keystone), now).await,
                }
            }
        }
    }

    let mut update = status::begin(&ac, now);
    if let Some((reason, new)) = &minted {
        status::record_new_credential(&mut update.status, new, reason.is_rotation(), now);
    }
    if adopted {
        update.status.security_hash = Some(rotation::security_hash(&ac.spec));
    }
    status::refresh_schedule(&mut update.status, ac.spec.grace_period_days);
    let credential_ready = status::credential_ready(&update.status);
    status::set_conditions(
        &mut update,
        Some(ConditionUpdate::ok(
            KEYSTONE_API_READY,
            "KeystoneAPIReady",
            keystone.describe(),
        )),
        Some(credential_ready),
    );
    let desired = update.status.clone();
    match framework::status::publish(controller, ctx, &ac, update).await {
        // The object changed since it was read (a newer copy is on its way and brings another reconcile); a
        // credential minted above is recorded then, through its creation record.
        Ok(Published::Dropped | Published::Gone) => return Ok(Outcome::Done),
        Ok(Published::Written | Published::Unchanged) => {}
        Err(source) => return Err(AcError::from(KubeError::new("writing the status", source))),
    }

    if adopted {
        tracing::info!(credential = ?desired.ac_id, "took over the application credential keystone-operator made");
        let note = format!(
            "Took over application credential {} (Secret {}) without rotating: its permissions match the spec",
            desired.ac_id.as_deref().unwrap_or_default(),
            desired.secret_name.as_deref().unwrap_or_default()
        );
        ctx.events
            .publish(
                &ac.object_ref(&()),
                Severity::Normal,
                "ApplicationCredentialAdopted",
                "Adopt",
                &note,
            )
            .await;
    }
    if let Some((reason, new)) = &minted {
        announce(&ac, ctx, *reason, new, desired.previous_secret_name.as_deref()).await;
        let secrets_api: Api<Secret> = Api::namespaced(ctx.client.clone(), &namespace);
        credential::discard(&secrets_api, service_name(&ac.name_any())).await?;
    }

    let plan = secret::housekeeping(
        &secrets,
        desired.secret_name.as_deref(),
        desired.previous_secret_name.as_deref(),
        now,
    );
    prune(ctx, &namespace, &secrets, &plan).await?;

    let mut wake_up = Outcome::Done;
    if let Some(eligible) = &desired.rotation_eligible_at {
        wake_up = wake_up.sooner(Outcome::requeue_at(eligible.0, now));
    }
    if let Some(expiry) = plan.next_expiry {
        wake_up = wake_up.sooner(Outcome::requeue_at(expiry, now));
    }
    Ok(wake_up.sooner(Outcome::RequeueAfter(MAX_REQUEUE)))
}

/// Whether a new credential is needed, given the live list of the credential's Secrets.
fn needs_rotation(
    ac: &KeystoneApplicationCredential,
    secrets: &[PartialObjectMeta<Secret>],
    now: Timestamp,
) -> Option<RotationReason> {
    let current = ac.status.as_ref().and_then(|s| s.secret_name.as_deref());
    let present = current.is_some_and(|name| {
        secrets
            .iter()
            .any(|s| s.metadata.name.as_deref() == Some(name) && s.metadata.deletion_timestamp.is_none())
    });
    let presence = if present {
        SecretPresence::Present
    } else {
        SecretPresence::Missing
    };
    rotation::rotation_needed(&ac.spec, ac.status.as_ref(), presence, now)
}

/// The credential Secrets of `ac` (metadata only), from the Secret watch once it has listed, else by a list
/// request. Like any informer the watch may lag a write; a lagging view is safe for what it decides here
/// (pruning waits for the next event, and a mint first confirms a missing Secret by [`confirm_current`]).
async fn credential_secrets(
    controller: &Controller,
    ctx: &Context,
    ac: &KeystoneApplicationCredential,
) -> Result<Vec<PartialObjectMeta<Secret>>, AcError> {
    let namespace = ac.namespace().unwrap_or_default();
    let name = ac.name_any();
    let service = service_name(&name);
    let label = secret::service_label(service);
    let uid = ac.uid().unwrap_or_default();
    let belongs = |s: &PartialObjectMeta<Secret>| {
        secret::is_owned_by(&s.metadata, &uid)
            && s.metadata
                .labels
                .as_ref()
                .and_then(|labels| labels.get(secret::LABEL_SERVICE))
                == Some(&label)
    };
    if let Some(cached) = controller.credential_secrets.list(Some(&namespace)) {
        return Ok(cached
            .iter()
            .filter(|s| belongs(s))
            .map(|s| s.as_ref().clone())
            .collect());
    }
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), &namespace);
    let list = api
        .list_metadata(&ListParams::default().labels(&secret::selector(service)))
        .await
        .map_err(kube_error("listing the credential's Secrets"))?;
    Ok(list.items.into_iter().filter(|s| belongs(s)).collect())
}

/// Adds to `secrets` the Secret the status of `ac` names when the watch has not shown it yet (read by name).
async fn confirm_current(
    ctx: &Context,
    ac: &KeystoneApplicationCredential,
    secrets: &mut Vec<PartialObjectMeta<Secret>>,
) -> Result<(), AcError> {
    let Some(name) = ac.status.as_ref().and_then(|s| s.secret_name.as_deref()) else {
        return Ok(());
    };
    if secrets.iter().any(|s| s.metadata.name.as_deref() == Some(name)) {
        return Ok(());
    }
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), &ac.namespace().unwrap_or_default());
    let found = api
        .get_metadata_opt(name)
        .await
        .map_err(kube_error(format!("reading Secret {name}")))?;
    let uid = ac.uid().unwrap_or_default();
    secrets.extend(found.filter(|s| secret::is_owned_by(&s.metadata, &uid)));
    Ok(())
}

/// Releases and deletes old Secrets as planned.
async fn prune(
    ctx: &Context,
    namespace: &str,
    secrets: &[PartialObjectMeta<Secret>],
    plan: &secret::Housekeeping,
) -> Result<(), AcError> {
    let api: Api<PartialObjectMeta<Secret>> = Api::namespaced(ctx.client.clone(), namespace);
    for name in &plan.release {
        if let Some(object) = secrets.iter().find(|s| s.metadata.name.as_deref() == Some(name)) {
            finalizer::remove(&api, object, &PROTECTION, &ctx.field_manager)
                .await
                .map_err(kube_error(format!("releasing Secret {name}")))?;
        }
    }
    let secrets_api: Api<Secret> = Api::namespaced(ctx.client.clone(), namespace);
    for name in &plan.delete {
        match secrets_api.delete(name, &DeleteParams::default()).await {
            Ok(_) => framework::changes::record(format!("deleted Secret {name}, whose credential expired")),
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(source) => {
                return Err(AcError::from(KubeError::new(format!("deleting Secret {name}"), source)));
            }
        }
    }
    Ok(())
}

/// The `ApplicationCredentialRotated` event.
async fn announce(
    ac: &KeystoneApplicationCredential,
    ctx: &Context,
    reason: RotationReason,
    new: &NewCredential,
    previous: Option<&str>,
) {
    if !reason.is_rotation() {
        tracing::info!(credential = %new.id, secret = %new.secret_name, "created the first application credential");
        return;
    }
    tracing::info!(credential = %new.id, secret = %new.secret_name, why = reason.describe(), "rotated the application credential");
    let note = format!(
        "Rotated the application credential ({}): new credential {} in Secret {}{}",
        reason.describe(),
        new.id,
        new.secret_name,
        previous
            .map(|p| format!("; previous Secret {p} is kept"))
            .unwrap_or_default()
    );
    ctx.events
        .publish(
            &ac.object_ref(&()),
            Severity::Normal,
            "ApplicationCredentialRotated",
            "Rotate",
            &note,
        )
        .await;
}

/// Shows a failed or blocked step on its condition (a Warning event when it changes); waits for a watch when the cause is
/// a Kubernetes object, otherwise returns the error so the runner retries with backoff.
async fn report(
    controller: &Controller,
    ac: &KeystoneApplicationCredential,
    ctx: &Context,
    error: AcError,
    keystone: Option<&Resolved>,
    now: Timestamp,
) -> Result<Outcome, AcError> {
    let failed = ConditionUpdate::failed(
        match error.affects() {
            Affects::KeystoneApi => KEYSTONE_API_READY,
            Affects::Credential => CREDENTIAL_READY,
        },
        error.reason(),
        framework::sanitize::sanitize(&error.to_string()),
    );
    let mut update = status::begin(ac, now);
    status::refresh_schedule(&mut update.status, ac.spec.grace_period_days);
    let (keystone_api, credential) = match error.affects() {
        Affects::KeystoneApi => (Some(failed), None),
        Affects::Credential => (
            keystone.map(|k| ConditionUpdate::ok(KEYSTONE_API_READY, "KeystoneAPIReady", k.describe())),
            Some(failed),
        ),
    };
    status::set_conditions(&mut update, keystone_api, credential);
    // The failure is announced as the condition's transition; a conflict means the object changed, and that
    // change brings another reconcile.
    if let Err(write_error) = framework::status::publish(controller, ctx, ac, update).await {
        tracing::debug!(%write_error, "could not record the failure in the status");
    }
    if error.waits_for_change() {
        tracing::info!(reason = error.reason(), %error, "waiting for a change");
        Ok(Outcome::Done)
    } else {
        Err(error)
    }
}
