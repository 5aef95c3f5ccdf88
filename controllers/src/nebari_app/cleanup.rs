//! Deleting a NebariApp: its Keycloak clients, its listener on the shared Gateway and its Certificate (the rest
//! is owned and garbage-collected). When Keycloak is unreachable the finalizer stays, and a condition and an
//! event say why and how to skip external cleanup.

use std::sync::Arc;

use crds::nebari::NebariApp;
use crds::thirdparty::cert_manager::Certificate;
use framework::conditions::ConditionUpdate;
use framework::error::{KubeError, kube_error};
use framework::events::Severity;
use framework::runner::Context;
use kube::api::{Api, DeleteParams};
use kube::{Resource, ResourceExt};

use super::error::NebariAppError;
use super::listener::ListenerWriter;
use super::naming::AppNames;
use super::status::AUTH_READY;
use super::{NebariAppController, SKIP_EXTERNAL_CLEANUP_ANNOTATION, keycloak_sync};

/// Removes what garbage collection cannot: Keycloak clients, the Gateway listener, the Certificate.
pub async fn cleanup(
    controller: &NebariAppController,
    app: Arc<NebariApp>,
    ctx: &Context,
) -> Result<(), NebariAppError> {
    let namespace = app.namespace().unwrap_or_default();
    let names = AppNames::new(&namespace, &app.name_any());
    let skip_external = app
        .annotations()
        .get(SKIP_EXTERNAL_CLEANUP_ANNOTATION)
        .is_some_and(|v| v == "true");

    if skip_external {
        ctx.events
            .publish(
                &app.object_ref(&()),
                Severity::Warning,
                "ExternalCleanupSkipped",
                "Delete",
                &format!("{SKIP_EXTERNAL_CLEANUP_ANNOTATION} is set: Keycloak clients are left in place"),
            )
            .await;
    } else if let Err(error) = keycloak_sync::delete_clients(controller, &app, &names, app.status.as_ref()).await {
        let message = format!(
            "deletion waits for Keycloak cleanup: {error}; to delete without it, annotate the NebariApp with \
             {SKIP_EXTERNAL_CLEANUP_ANNOTATION}=true"
        );
        ctx.events
            .publish(
                &app.object_ref(&()),
                Severity::Warning,
                "CleanupBlocked",
                "Delete",
                &message,
            )
            .await;
        let mut status = super::status::begin(&app, controller.clock.now());
        status.set(ConditionUpdate::failed(
            AUTH_READY,
            "DeletionBlocked",
            framework::sanitize::sanitize(&message),
        ));
        status.finish_with(ConditionUpdate::failed(
            "Ready",
            "DeletionBlocked",
            framework::sanitize::sanitize(&message),
        ));
        if let Err(write_error) = framework::status::publish(controller, ctx, app.as_ref(), status).await {
            tracing::debug!(%write_error, "could not record the blocked deletion");
        }
        return Err(error);
    }

    let settings = &controller.settings;
    let listeners = ListenerWriter::new(ctx, &names, &controller.seen.gateways);
    let held = app.status.as_ref().and_then(|s| s.hostname.as_deref());
    for gateway in [&settings.public_gateway, &settings.internal_gateway] {
        listeners.withdraw(held, gateway, &settings.gateway_namespace).await?;
    }
    let certificates: Api<Certificate> = Api::namespaced(ctx.client.clone(), &settings.gateway_namespace);
    let owner = framework::children::owner_id(app.as_ref());
    if let Some(cert) = certificates
        .get_opt(&names.certificate())
        .await
        .map_err(kube_error("reading the Certificate"))?
    {
        // Ours: it names this app as its owner, or (the replaced operator's, not yet adopted) it has no owner,
        // carries the operator's managed-by label and the app's namespace label. A platform certificate of the
        // same name is neither, and stays.
        let label = |key: &str| cert.labels().get(key).cloned();
        let ours = match cert.annotations().get(super::OWNER_ANNOTATION) {
            Some(recorded) => *recorded == owner,
            None => {
                label(framework::children::LABEL_MANAGED_BY).as_deref() == Some(super::MANAGED_BY)
                    && label(super::tls::APP_NAMESPACE_LABEL) == Some(framework::names::label_value(&namespace))
            }
        };
        if ours {
            let guarded = DeleteParams {
                preconditions: cert.metadata.uid.clone().map(|uid| kube::api::Preconditions {
                    uid: Some(uid),
                    resource_version: None,
                }),
                ..DeleteParams::background()
            };
            match certificates.delete(&names.certificate(), &guarded).await {
                Ok(_) => framework::changes::record(format!("deleted Certificate {}", names.certificate())),
                Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => {}
                Err(e) => return Err(KubeError::new("deleting the Certificate", e).into()),
            }
        }
    }
    super::tls::release_issued_secret(&ctx.client, &settings.gateway_namespace, &names, &owner).await?;
    ctx.events
        .publish(
            &app.object_ref(&()),
            Severity::Normal,
            "Deleted",
            "Delete",
            "external resources removed",
        )
        .await;
    Ok(())
}
