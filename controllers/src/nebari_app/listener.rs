//! The app's own listener on a shared Gateway, owned by server-side apply under a per-app field manager.
//!
//! Applying `{spec: {listeners: [ours]}}` makes the app's manager own exactly its item of the list-map; applying
//! an empty list withdraws it without touching any other listener (another app's, or Argo CD's). A listener
//! made by the replaced operator (written with a whole-Gateway update, so owned by another manager) is taken
//! over by the forced apply and, if withdrawing leaves it behind, removed by a JSON patch that tests its name
//! first.

use crds::nebari::NebariApp;
use framework::runner::Context;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use super::error::NebariAppError;
use super::naming::AppNames;
use super::tls;
use framework::conditions::ConditionUpdate;

/// What ensuring the listener found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenerOutcome {
    /// The listener is in place.
    Ready,
    /// The Gateway refused it: same port, protocol and hostname as another listener.
    Conflict(String),
    /// The Gateway does not exist (the operator never creates shared Gateways).
    GatewayMissing,
}

/// Writes and withdraws one app's listener.
pub struct ListenerWriter<'a> {
    ctx: &'a Context,
    names: &'a AppNames,
}

fn gateway_api(ctx: &Context, namespace: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("gateway.networking.k8s.io", "v1", "Gateway"),
        "gateways",
    );
    Api::namespaced_with(ctx.client.clone(), namespace, &resource)
}

impl<'a> ListenerWriter<'a> {
    /// A writer for the app named by `names`.
    pub fn new(ctx: &'a Context, names: &'a AppNames) -> Self {
        Self { ctx, names }
    }

    async fn live_gateway(&self, gateway: &str, namespace: &str) -> Result<Option<Value>, NebariAppError> {
        let live = gateway_api(self.ctx, namespace)
            .get_opt(gateway)
            .await
            .map_err(|e| NebariAppError::api(format!("reading Gateway {namespace}/{gateway}"), e))?;
        Ok(live.map(|g| serde_json::to_value(g).unwrap_or(Value::Null)))
    }

    /// Puts the app's listener on `gateway`, serving `secret`. Writes nothing when it is already as desired.
    pub async fn ensure(
        &self,
        app: &NebariApp,
        gateway: &str,
        namespace: &str,
        secret: &str,
    ) -> Result<ListenerOutcome, NebariAppError> {
        let Some(live) = self.live_gateway(gateway, namespace).await? else {
            return Ok(ListenerOutcome::GatewayMissing);
        };
        let desired = tls::listener(app, self.names, secret, namespace);
        if let Some((_, current)) = tls::find_listener(&live, &self.names.listener())
            && framework::children::is_subset(&desired, current)
        {
            return Ok(ListenerOutcome::Ready);
        }
        let body = tls::gateway_apply_body(gateway, namespace, vec![desired]);
        let params = PatchParams::apply(&self.names.listener_field_manager(&self.ctx.field_manager)).force();
        match gateway_api(self.ctx, namespace)
            .patch(gateway, &params, &Patch::Apply(&body))
            .await
        {
            Ok(_) => Ok(ListenerOutcome::Ready),
            Err(error) if tls::is_listener_conflict(&error) => Ok(ListenerOutcome::Conflict(format!(
                "listener {} on Gateway {namespace}/{gateway} conflicts with another listener for {} (same port, \
                 protocol and hostname)",
                self.names.listener(),
                app.spec.hostname
            ))),
            Err(error) => Err(NebariAppError::api(
                format!("adding the listener to Gateway {namespace}/{gateway}"),
                error,
            )),
        }
    }

    /// Removes the app's listener from `gateway` if it is there. Writes nothing when it is not.
    pub async fn withdraw(&self, gateway: &str, namespace: &str) -> Result<(), NebariAppError> {
        let listener = self.names.listener();
        let Some(live) = self.live_gateway(gateway, namespace).await? else {
            return Ok(());
        };
        if tls::find_listener(&live, &listener).is_none() {
            return Ok(());
        }
        let api = gateway_api(self.ctx, namespace);
        let body = tls::gateway_apply_body(gateway, namespace, Vec::new());
        let params = PatchParams::apply(&self.names.listener_field_manager(&self.ctx.field_manager)).force();
        api.patch(gateway, &params, &Patch::Apply(&body)).await.map_err(|e| {
            NebariAppError::api(
                format!("withdrawing the listener from Gateway {namespace}/{gateway}"),
                e,
            )
        })?;
        // A listener another manager also owns (the replaced operator's whole-Gateway update) survives the
        // withdrawal: remove that item explicitly, guarded by a test of its name.
        let Some(after) = self.live_gateway(gateway, namespace).await? else {
            return Ok(());
        };
        if let Some((index, _)) = tls::find_listener(&after, &listener) {
            let patch: json_patch::Patch = serde_json::from_value(json!([
                {"op": "test", "path": format!("/spec/listeners/{index}/name"), "value": listener},
                {"op": "remove", "path": format!("/spec/listeners/{index}")},
            ]))
            .map_err(|e| NebariAppError::Invalid(format!("building the listener removal patch: {e}")))?;
            api.patch(gateway, &PatchParams::default(), &Patch::<()>::Json(patch))
                .await
                .map_err(|e| {
                    NebariAppError::api(format!("removing the listener from Gateway {namespace}/{gateway}"), e)
                })?;
        }
        Ok(())
    }
}

/// TLSReady for a user-provided Secret: it must exist, be of type `kubernetes.io/tls` and hold a certificate
/// and key.
pub fn user_secret_condition(secret: Option<&Secret>, namespace: &str, name: &str) -> ConditionUpdate {
    const TLS_READY: &str = super::status::TLS_READY;
    let Some(secret) = secret else {
        return ConditionUpdate::failed(
            TLS_READY,
            "UserProvidedSecretNotFound",
            format!("TLS Secret {namespace}/{name} does not exist"),
        );
    };
    if secret.type_.as_deref() != Some("kubernetes.io/tls") {
        return ConditionUpdate::failed(
            TLS_READY,
            "UserProvidedSecretInvalidType",
            format!("TLS Secret {namespace}/{name} must have type kubernetes.io/tls"),
        );
    }
    let data = secret.data.as_ref();
    let present = |key: &str| data.and_then(|d| d.get(key)).is_some_and(|v| !v.0.is_empty());
    if !present("tls.crt") || !present("tls.key") {
        return ConditionUpdate::failed(
            TLS_READY,
            "UserProvidedSecretInvalid",
            format!("TLS Secret {namespace}/{name} must hold non-empty tls.crt and tls.key"),
        );
    }
    ConditionUpdate::ok(
        TLS_READY,
        "UserProvidedSecretReady",
        format!("serving TLS Secret {namespace}/{name}"),
    )
}
