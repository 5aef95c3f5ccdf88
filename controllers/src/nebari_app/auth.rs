//! Step 3, auth: the app's OIDC client and what uses it. The client is provisioned in Keycloak (skipped while
//! [`auth_hash::may_reuse_clients`] holds) or named by `clientSecretRef`; the client Secret, a Role and
//! RoleBinding letting the app's ServiceAccount read it, and, when auth is enforced at the gateway, the
//! SecurityPolicy follow. Produces `AuthReady`; an app without auth has its provisioned clients removed.

use crds::nebari::{AuthConfig, AuthProvider, NebariApp, ResourceReference};
use framework::conditions::ConditionUpdate;
use framework::error::kube_error;
use framework::events::Severity;
use framework::runner::Outcome;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde_json::json;

use super::FORCE_REPROVISION_ANNOTATION;
use super::acceptance::{self, Verdict};
use super::auth_hash::{self, auth_config_hash};
use super::error::NebariAppError;
use super::keycloak_sync::{self, Previous, ProvisionedClients};
use super::oidc_secret::{OidcSecretData, oidc_secret};
use super::rbac::{secret_reader_binding, secret_reader_role};
use super::reconcile::Pass;
use super::security_policy::{ClientCredentials, security_policy};
use super::status::AUTH_READY;

/// What `status.authConfigHash` holds between the first Keycloak write and the status that records the clients:
/// it matches no real hash (so the next pass provisions again) but says that clients may exist.
pub const PROVISIONING_MARKER: &str = "provisioning";

/// What the auth step achieved.
pub struct AuthOutcome {
    /// What the step asks for next.
    pub next: Outcome,
    /// Whether the SecurityPolicy was applied in this pass.
    pub policy_applied: bool,
    /// Whether the spec asks for protection the gateway cannot give: the routes are withheld even where an
    /// earlier, looser SecurityPolicy still exists (it would serve the app without what the spec now requires).
    pub refused: bool,
}

impl AuthOutcome {
    fn unprotected() -> Self {
        Self {
            next: Outcome::Done,
            policy_applied: false,
            refused: false,
        }
    }

    fn refused() -> Self {
        Self {
            refused: true,
            ..Self::unprotected()
        }
    }
}

/// What looking for the client's credentials found.
enum ClientState {
    /// The credentials the gateway (or the app) uses.
    Ready(ClientCredentials),
    /// A condition says what is missing; a watch announces the fix (the app, or its `clientSecretRef` Secret,
    /// watched by metadata in `mod.rs`).
    Missing,
}

impl Pass<'_> {
    /// Puts the app's authentication in place.
    pub async fn auth(&mut self) -> Result<AuthOutcome, NebariAppError> {
        let app = self.app;
        let Some(auth) = app.spec.auth.as_ref().filter(|a| a.enabled) else {
            self.status.status.client_secret_ref = None;
            self.forget_provisioned_clients().await?;
            self.status.set_quietly(ConditionUpdate::failed(
                AUTH_READY,
                "AuthDisabled",
                "authentication is not enabled",
            ));
            return Ok(AuthOutcome::unprotected());
        };
        if auth.enforce_at_gateway
            && auth.provider != AuthProvider::Keycloak
            && auth.groups.as_ref().is_some_and(|g| !g.is_empty())
        {
            // The gateway can check groups only in tokens it can verify, with keys it knows where to fetch: the
            // realm's. Exposing the app without the check would let every user of the provider in.
            self.status.set(ConditionUpdate::failed(
                AUTH_READY,
                "GroupsNotEnforceable",
                "auth.groups can only be enforced at the gateway with the keycloak provider; remove auth.groups or \
                 let the application check groups itself (enforceAtGateway: false)",
            ));
            return Ok(AuthOutcome::refused());
        }
        let credentials = match self.client_credentials(auth).await {
            Ok(ClientState::Ready(credentials)) => credentials,
            Ok(ClientState::Missing) => return Ok(AuthOutcome::unprotected()),
            Err(error) => {
                self.status.set(ConditionUpdate::failed(
                    AUTH_READY,
                    error.condition_reason(),
                    framework::sanitize::sanitize(&error.to_string()),
                ));
                return Err(error);
            }
        };
        let routed = app.spec.routing.is_some();
        let policy_applied = auth.enforce_at_gateway && routed;
        let mut verdict = Verdict::Accepted;
        if policy_applied {
            let policy = security_policy(
                app,
                auth,
                &self.names,
                &self.controller.settings,
                &credentials,
                self.plan.is_tls(),
            );
            let observed = self.children.apply_observed(policy).await?;
            verdict = acceptance::policy(&observed.to_json());
        }
        self.status.status.client_secret_ref = Some(ResourceReference {
            name: credentials.secret_name.clone(),
            namespace: app.namespace(),
        });
        let message = match (auth.enforce_at_gateway, routed) {
            (true, true) => "OIDC client ready and enforced at the gateway",
            (true, false) => "OIDC client ready; no routing is managed, so nothing is enforced at the gateway",
            (false, _) => "OIDC client ready; the application handles the OIDC flow itself",
        };
        self.status.set(verdict.condition(
            ConditionUpdate::ok(AUTH_READY, "AuthConfigured", message),
            acceptance::PENDING_POLICY,
        ));
        Ok(AuthOutcome {
            next: Outcome::Done,
            policy_applied,
            refused: false,
        })
    }

    /// The client id and Secret the gateway (or the app) uses.
    async fn client_credentials(&mut self, auth: &AuthConfig) -> Result<ClientState, NebariAppError> {
        let provisioned = auth.provider == AuthProvider::Keycloak
            && auth.provision_client
            && self.controller.settings.keycloak_enabled;
        if provisioned {
            return self.provisioned_credentials(auth).await;
        }
        self.forget_provisioned_clients().await?;
        self.referenced_credentials(auth).await
    }

    /// The credentials in the Secret `clientSecretRef` names (keys `client-id` and `client-secret`).
    async fn referenced_credentials(&mut self, auth: &AuthConfig) -> Result<ClientState, NebariAppError> {
        let Some(secret_name) = auth.client_secret_ref.clone() else {
            self.status.set(ConditionUpdate::failed(
                AUTH_READY,
                "ClientSecretRefRequired",
                "set auth.clientSecretRef to a Secret with client-id and client-secret (client provisioning is off \
                 for this provider)",
            ));
            return Ok(ClientState::Missing);
        };
        let secrets: Api<Secret> = Api::namespaced(self.ctx.client.clone(), &self.names.namespace);
        let secret = secrets
            .get_opt(&secret_name)
            .await
            .map_err(kube_error("reading the client Secret"))?;
        let client_id = secret.as_ref().and_then(|s| framework::secrets::text(s, "client-id"));
        let has_secret = secret
            .as_ref()
            .and_then(|s| s.data.as_ref())
            .is_some_and(|d| d.contains_key("client-secret"));
        match (client_id, has_secret) {
            (Some(client_id), true) => Ok(ClientState::Ready(ClientCredentials { client_id, secret_name })),
            _ => {
                self.status.set(ConditionUpdate::failed(
                    AUTH_READY,
                    "ClientSecretInvalid",
                    format!("Secret {secret_name} must exist and hold the keys client-id and client-secret"),
                ));
                Ok(ClientState::Missing)
            }
        }
    }

    /// The clients provisioned in Keycloak, with their Secret and its reader RBAC. Keycloak is called only when
    /// the configuration's hash changed, a re-provisioning is forced, or the last pass did not finish.
    async fn provisioned_credentials(&mut self, auth: &AuthConfig) -> Result<ClientState, NebariAppError> {
        let app = self.app;
        let ctx = self.ctx;
        let peers = if auth.token_exchange.as_ref().is_some_and(|t| t.enabled) {
            keycloak_sync::token_exchange_peers(&ctx.client, &ctx.namespaces, app).await?
        } else {
            Vec::new()
        };
        let hash = auth_config_hash(app, auth, &self.controller.settings, self.plan.is_tls(), &peers);
        let forced = app
            .annotations()
            .get(FORCE_REPROVISION_ANNOTATION)
            .is_some_and(|v| !v.is_empty());
        let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &self.names.namespace);
        let existing = secrets
            .get_opt(&self.names.oidc_secret())
            .await
            .map_err(kube_error("reading the OIDC Secret"))?;
        let existing = existing.as_ref().and_then(keycloak_sync::secret_data);
        let reuse = auth_hash::may_reuse_clients(
            existing.is_some(),
            forced,
            keycloak_was_ready(self.status.conditions()),
            self.status.status.auth_config_hash.as_deref(),
            &hash,
        );
        let data = match existing {
            Some(data) if reuse => data,
            existing => {
                let previous_spa = existing.and_then(|d| d.spa_client_id);
                self.record_provisioning_intent().await?;
                let (data, groups) = self.provision(auth, &peers, previous_spa.as_deref()).await?;
                self.status.status.auth_config_hash = Some(hash);
                self.status.status.keycloak_groups = groups;
                if forced {
                    self.remove_force_annotation().await?;
                }
                data
            }
        };
        let names = &self.names;
        self.children.ensure(oidc_secret(names, &data)).await?;
        let service_account = app
            .spec
            .service_account_name
            .clone()
            .unwrap_or_else(|| names.app.clone());
        self.children
            .ensure(secret_reader_role(names, &names.oidc_secret()))
            .await?;
        self.children
            .ensure(secret_reader_binding(names, &service_account))
            .await?;
        Ok(ClientState::Ready(ClientCredentials {
            client_id: data.client_id,
            secret_name: names.oidc_secret(),
        }))
    }

    /// Provisions the app's clients and groups in Keycloak and announces it; returns the credentials and the
    /// groups to remember.
    async fn provision(
        &self,
        auth: &AuthConfig,
        peers: &[String],
        previous_spa: Option<&str>,
    ) -> Result<(OidcSecretData, Vec<String>), NebariAppError> {
        let app = self.app;
        let ProvisionedClients {
            client_id,
            client_secret,
            spa_client_id,
            device_client_id,
            warnings,
            groups,
        } = keycloak_sync::provision(
            self.controller,
            app,
            auth,
            &self.names,
            self.plan.is_tls(),
            peers,
            Previous {
                spa: previous_spa,
                groups: &self.status.status.keycloak_groups,
            },
        )
        .await?;
        let reference = app.object_ref(&());
        for warning in warnings {
            self.ctx
                .events
                .publish(&reference, Severity::Warning, "KeycloakWarning", "Provision", &warning)
                .await;
        }
        self.ctx
            .events
            .publish(
                &reference,
                Severity::Normal,
                "Provisioned",
                "Provision",
                &format!("Keycloak client {client_id} provisioned"),
            )
            .await;
        let data = OidcSecretData {
            client_id,
            client_secret,
            issuer_url: self.controller.settings.external_issuer().unwrap_or_default(),
            spa_client_id,
            device_client_id,
        };
        Ok((data, groups))
    }

    /// Once the app no longer has the operator provision its Keycloak clients (auth off, another provider,
    /// `provisionClient: false`), deletes the clients provisioned before (known by `status.authConfigHash`). The
    /// hash is dropped only after the deletion succeeded, so a failed attempt is retried rather than forgotten.
    async fn forget_provisioned_clients(&mut self) -> Result<(), NebariAppError> {
        if self.status.status.auth_config_hash.is_none() {
            return Ok(());
        }
        let app = self.app;
        if let Err(error) = keycloak_sync::delete_clients(self.controller, app, &self.names, app.status.as_ref()).await
        {
            self.status.set(ConditionUpdate::failed(
                AUTH_READY,
                error.condition_reason(),
                framework::sanitize::sanitize(&format!("removing the Keycloak clients: {error}")),
            ));
            return Err(error);
        }
        self.status.status.auth_config_hash = None;
        self.status.status.keycloak_groups.clear();
        Ok(())
    }

    /// Before the first Keycloak write for an app whose stored status records no clients, stores
    /// [`PROVISIONING_MARKER`] as its `authConfigHash`. Clients are recorded only by the status written at the end
    /// of the pass; a crash or a failed status write in between used to leave clients nobody remembered, which
    /// turning auth off or deleting the app then skipped (the chaos run found such orphans). One status write, on
    /// first provisioning only.
    async fn record_provisioning_intent(&mut self) -> Result<(), NebariAppError> {
        let stored = self.app.status.as_ref().and_then(|s| s.auth_config_hash.as_deref());
        if stored.is_some() {
            return Ok(());
        }
        let api: Api<NebariApp> = Api::namespaced(self.ctx.client.clone(), &self.names.namespace);
        let patch = json!({"status": {"authConfigHash": PROVISIONING_MARKER}});
        let params = PatchParams {
            field_manager: Some(self.ctx.field_manager.clone()),
            ..PatchParams::default()
        };
        let stored = api
            .patch_status(&self.app.name_any(), &params, &Patch::Merge(&patch))
            .await
            .inspect_err(|_| self.ctx.own_writes.may_have_written(self.app))
            .map_err(kube_error("recording that Keycloak clients are being provisioned"))?;
        self.ctx.own_writes.wrote(&stored);
        self.stored = Some(stored);
        self.status.status.auth_config_hash = Some(PROVISIONING_MARKER.to_string());
        Ok(())
    }

    async fn remove_force_annotation(&mut self) -> Result<(), NebariAppError> {
        let api: Api<NebariApp> = Api::namespaced(self.ctx.client.clone(), &self.names.namespace);
        let patch = json!({"metadata": {"annotations": {FORCE_REPROVISION_ANNOTATION: null}}});
        let stored = api
            .patch(&self.app.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .inspect_err(|_| self.ctx.own_writes.may_have_written(self.app))
            .map_err(kube_error("removing the force-reprovision annotation"))?;
        self.ctx.own_writes.wrote(&stored);
        self.stored = Some(stored);
        Ok(())
    }
}

/// Whether the last pass finished the Keycloak side: AuthReady True, or held back only by the gateway (pending or
/// refusing the SecurityPolicy), which says nothing about the clients.
fn keycloak_was_ready(conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition]) -> bool {
    framework::conditions::is_true(conditions, AUTH_READY)
        || framework::conditions::get(conditions, AUTH_READY)
            .is_some_and(|c| acceptance::GATEWAY_AUTH_REASONS.contains(&c.reason.as_str()))
}
