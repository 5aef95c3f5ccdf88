//! One NebariApp reconcile, in order: validate, TLS, routing, auth, prune, status.
//!
//! Each step records its condition; a failing step still lets the status be written (so users see why) and
//! the error then drives the retry backoff. Nothing here polls: watches on the app's children, its namespace,
//! its Service, its Certificate and the Secrets it names bring the next reconcile.

use std::sync::Arc;

use crds::nebari::{AuthConfig, AuthProvider, NebariApp, ResourceReference};
use crds::thirdparty::cert_manager::Certificate;
use crds::thirdparty::envoy_gateway::SecurityPolicy;
use framework::children::ChildSet;
use framework::conditions::ConditionUpdate;
use framework::events::Severity;
use framework::runner::{Context, Outcome};
use gateway_api::httproutes::HttpRoute;
use k8s_openapi::api::core::v1::{Namespace, Secret, Service};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde_json::json;

use super::auth_hash::auth_config_hash;
use super::error::NebariAppError;
use super::keycloak_sync::{self, ProvisionedClients};
use super::naming::AppNames;
use super::oidc_secret::{OidcSecretData, oidc_secret};
use super::rbac::{secret_reader_binding, secret_reader_role};
use super::route::{Attachment, main_route, public_route};
use super::security_policy::{ClientCredentials, security_policy};
use super::status::{self, AUTH_READY, ROUTING_READY, StatusBuilder, TLS_READY};
use super::tls::{self, TlsPlan};
use super::{FORCE_REPROVISION_ANNOTATION, NebariAppController, OPT_IN_LABEL};

/// Reconciles one NebariApp.
pub async fn reconcile(
    controller: &NebariAppController,
    app: Arc<NebariApp>,
    ctx: &Context,
) -> Result<Outcome, NebariAppError> {
    let Some(app) = fresh(&app, ctx).await? else {
        return Ok(Outcome::Done);
    };
    let namespace = app.namespace().unwrap_or_default();
    let names = AppNames::new(&namespace, &app.name_any());
    let mut status = status::begin(&app, controller.clock.now());
    status.status.hostname = Some(app.spec.hostname.clone());

    if let Some(blocked) = validate(&app, &namespace, ctx).await? {
        // A namespaced install cannot watch Namespace objects (that needs a cluster-wide grant), so an app waiting
        // for its namespace's opt-in label looks again after a while instead of being woken by the label.
        let outcome = if blocked.reason == NAMESPACE_NOT_OPTED_IN && !ctx.namespaces.is_all() {
            Outcome::RequeueAfter(OPT_IN_RECHECK)
        } else {
            Outcome::Done
        };
        status.finish_with(blocked);
        return finish(controller, &app, ctx, status, Ok(outcome)).await;
    }

    let settings = &controller.settings;
    let plan = TlsPlan::for_app(&app, settings);
    let mut children = controller.child_set(ctx, &app)?;
    let gateway_name = settings.gateway_name(app.spec.gateway).to_string();
    status.status.gateway_ref = app.spec.routing.as_ref().map(|_| crds::nebari::GatewayReference {
        name: gateway_name.clone(),
        namespace: settings.gateway_namespace.clone(),
    });

    let outcome = async {
        let section = reconcile_tls(controller, &app, &names, &plan, &mut children, &mut status, ctx).await?;
        // Auth before routing, and fail closed: while authentication is required at the gateway but no
        // SecurityPolicy can be built (client Secret missing, Keycloak down), the routes are not exposed unless
        // the policy from an earlier pass still protects them — which is then kept, not pruned.
        let auth = reconcile_auth(controller, &app, &names, &plan, &mut children, &mut status, ctx).await;
        let enforced = app
            .spec
            .auth
            .as_ref()
            .is_some_and(|a| a.enabled && a.enforce_at_gateway);
        let protected = auth.as_ref().is_ok_and(|pass| pass.policy_applied);
        if !enforced || protected || keep_existing_policy(&app, &names, &mut children, ctx).await? {
            let routed = reconcile_routing(
                controller,
                &app,
                &names,
                &plan,
                section,
                &mut children,
                &mut status,
                ctx,
            )
            .await;
            if let Err(error) = routed {
                if app.spec.routing.is_some() {
                    status.set(ConditionUpdate::failed(
                        ROUTING_READY,
                        error.condition_reason(),
                        framework::sanitize::sanitize(&error.to_string()),
                    ));
                }
                return Err(error);
            }
        } else if app.spec.routing.is_some() {
            status.set(ConditionUpdate::failed(
                ROUTING_READY,
                "WaitingForAuth",
                "the HTTPRoute is withheld until the OIDC client is ready, so the app is never exposed without \
                 the authentication it asks for",
            ));
        }
        prune(controller, &namespace, &mut children).await?;
        auth.map(|pass| pass.next)
    }
    .await;

    // Root causes first: a withheld route (RoutingReady) is a consequence of auth not being ready.
    let mut applicable = Vec::new();
    if app.spec.auth.as_ref().is_some_and(|a| a.enabled) {
        applicable.push(AUTH_READY);
    }
    if app.spec.routing.is_some() {
        applicable.extend([TLS_READY, ROUTING_READY]);
    }
    status.status.service_discovery = Some(super::discovery::service_discovery(&app, plan.is_tls()));
    status.derive_ready(&applicable, None);
    finish(controller, &app, ctx, status, outcome).await
}

/// The app as the API server has it now. The watch cache can lag behind this controller's own last write (the
/// status with `authConfigHash`, the removal of the force annotation), and acting on that stale copy would
/// provision Keycloak a second time and rewrite the status; one read per reconcile prevents both. `None` when
/// the app is gone or being deleted (the deletion's own event runs the cleanup).
async fn fresh(app: &NebariApp, ctx: &Context) -> Result<Option<NebariApp>, NebariAppError> {
    let api: Api<NebariApp> = Api::namespaced(ctx.client.clone(), &app.namespace().unwrap_or_default());
    let current = framework::live::reread(&api, app)
        .await
        .map_err(|e| NebariAppError::api("reading the NebariApp", e))?;
    Ok(current.filter(|a| a.metadata.deletion_timestamp.is_none()))
}

/// The reason of an app whose namespace lacks the opt-in label.
const NAMESPACE_NOT_OPTED_IN: &str = "NamespaceNotOptedIn";
/// How often an app in a namespaced install looks again for its namespace's opt-in label.
const OPT_IN_RECHECK: std::time::Duration = std::time::Duration::from_secs(30);

/// Checks what must hold before anything is created: the namespace opted in, the Service with its port.
async fn validate(app: &NebariApp, namespace: &str, ctx: &Context) -> Result<Option<ConditionUpdate>, NebariAppError> {
    let namespaces: Api<Namespace> = Api::all(ctx.client.clone());
    let ns = namespaces
        .get_opt(namespace)
        .await
        .map_err(|e| NebariAppError::api("reading the namespace", e))?;
    let opted_in = ns
        .as_ref()
        .and_then(|n| n.labels().get(OPT_IN_LABEL))
        .is_some_and(|v| v == "true");
    if !opted_in {
        return Ok(Some(ConditionUpdate::failed(
            "Ready",
            NAMESPACE_NOT_OPTED_IN,
            format!("namespace {namespace} is not managed: label it {OPT_IN_LABEL}=true"),
        )));
    }
    let service_namespace = app
        .spec
        .service
        .namespace
        .clone()
        .unwrap_or_else(|| namespace.to_string());
    let services: Api<Service> = Api::namespaced(ctx.client.clone(), &service_namespace);
    let service = services
        .get_opt(&app.spec.service.name)
        .await
        .map_err(|e| NebariAppError::api("reading the backend Service", e))?;
    let Some(service) = service else {
        return Ok(Some(ConditionUpdate::failed(
            "Ready",
            "ServiceNotFound",
            format!("Service {service_namespace}/{} does not exist", app.spec.service.name),
        )));
    };
    let port = app.spec.service.port;
    let has_port = service
        .spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .is_some_and(|ports| ports.iter().any(|p| p.port == port));
    if !has_port {
        return Ok(Some(ConditionUpdate::failed(
            "Ready",
            "ServicePortNotFound",
            format!(
                "Service {service_namespace}/{} has no port {port}",
                app.spec.service.name
            ),
        )));
    }
    Ok(None)
}

/// TLS: the Certificate (or the user's Secret) and the app's listener on the target Gateway; returns the
/// listener section the routes attach to.
async fn reconcile_tls(
    controller: &NebariAppController,
    app: &NebariApp,
    names: &AppNames,
    plan: &TlsPlan,
    children: &mut ChildSet,
    status: &mut StatusBuilder,
    ctx: &Context,
) -> Result<String, NebariAppError> {
    let settings = &controller.settings;
    let gateway_ns = settings.gateway_namespace.as_str();
    let target_gateway = settings.gateway_name(app.spec.gateway).to_string();
    let listeners = super::listener::ListenerWriter::new(ctx, names);

    // The app's listener lives on at most one Gateway: withdraw it from every Gateway that is not the target.
    for gateway in [&settings.public_gateway, &settings.internal_gateway] {
        if !plan.has_own_listener() || *gateway != target_gateway {
            listeners.withdraw(gateway, gateway_ns).await?;
        }
    }

    match plan {
        TlsPlan::Disabled => {
            if app.spec.routing.is_some() {
                status.set(ConditionUpdate::ok(
                    TLS_READY,
                    "TLSDisabled",
                    "TLS is disabled; routes use the HTTP listener",
                ));
            } else {
                // TLS only applies to operator routing: drop what an earlier pass with routing reported.
                status.remove(TLS_READY);
            }
            Ok(settings.http_section.clone())
        }
        TlsPlan::SharedListener => {
            status.set(ConditionUpdate::ok(
                TLS_READY,
                "SharedGatewayListener",
                format!(
                    "no ClusterIssuer is configured; routes use the Gateway's shared {} listener",
                    settings.https_section
                ),
            ));
            Ok(settings.https_section.clone())
        }
        TlsPlan::Issued { issuer } => {
            let cert = children.apply(tls::certificate(app, names, issuer, gateway_ns)).await?;
            let secret = names.tls_secret();
            match listeners.ensure(app, &target_gateway, gateway_ns, &secret).await? {
                super::listener::ListenerOutcome::Conflict(message) => {
                    status.set(ConditionUpdate::failed(TLS_READY, "GatewayListenerConflict", message));
                    return Ok(settings.https_section.clone());
                }
                super::listener::ListenerOutcome::GatewayMissing => {
                    status.set(ConditionUpdate::failed(
                        TLS_READY,
                        "GatewayNotFound",
                        format!("Gateway {gateway_ns}/{target_gateway} does not exist"),
                    ));
                    return Ok(settings.https_section.clone());
                }
                super::listener::ListenerOutcome::Ready => {}
            }
            match cert.readiness() {
                Ok(()) => status.set(ConditionUpdate::ok(
                    TLS_READY,
                    "TLSConfigured",
                    "certificate issued and listener configured",
                )),
                Err((reason, message)) => status.set(ConditionUpdate::failed(
                    TLS_READY,
                    "CertificateNotReady",
                    format!(
                        "certificate {} is not ready yet{}",
                        names.certificate(),
                        describe(&reason, &message)
                    ),
                )),
            }
            Ok(names.listener())
        }
        TlsPlan::UserSecret { secret } => {
            let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), gateway_ns);
            let user_secret = secrets
                .get_opt(secret)
                .await
                .map_err(|e| NebariAppError::api("reading the TLS Secret", e))?;
            match listeners.ensure(app, &target_gateway, gateway_ns, secret).await? {
                super::listener::ListenerOutcome::Conflict(message) => {
                    status.set(ConditionUpdate::failed(TLS_READY, "GatewayListenerConflict", message));
                    return Ok(settings.https_section.clone());
                }
                super::listener::ListenerOutcome::GatewayMissing => {
                    status.set(ConditionUpdate::failed(
                        TLS_READY,
                        "GatewayNotFound",
                        format!("Gateway {gateway_ns}/{target_gateway} does not exist"),
                    ));
                    return Ok(settings.https_section.clone());
                }
                super::listener::ListenerOutcome::Ready => {}
            }
            status.set(super::listener::user_secret_condition(
                user_secret.as_ref(),
                gateway_ns,
                secret,
            ));
            Ok(names.listener())
        }
    }
}

fn describe(reason: &str, message: &str) -> String {
    match (reason.is_empty(), message.is_empty()) {
        (true, true) => String::new(),
        (false, true) => format!(" ({reason})"),
        (_, false) => format!(": {message}"),
    }
}

/// Routing: the main route, and the public route only while there are public paths behind enforced auth.
#[allow(clippy::too_many_arguments)]
async fn reconcile_routing(
    controller: &NebariAppController,
    app: &NebariApp,
    names: &AppNames,
    plan: &TlsPlan,
    section: String,
    children: &mut ChildSet,
    status: &mut StatusBuilder,
    ctx: &Context,
) -> Result<(), NebariAppError> {
    let Some(routing) = app.spec.routing.as_ref() else {
        status.set_quietly(ConditionUpdate::failed(
            ROUTING_READY,
            "RoutingNotConfigured",
            "spec.routing is not set; routing is managed outside the operator",
        ));
        return Ok(());
    };
    let attachment = Attachment {
        gateway: controller.settings.gateway_name(app.spec.gateway).to_string(),
        namespace: controller.settings.gateway_namespace.clone(),
        section,
        tls: plan.is_tls(),
    };
    children.apply(main_route(app, names.route(), &attachment)).await?;
    let auth_enforced = app
        .spec
        .auth
        .as_ref()
        .is_some_and(|a| a.enabled && a.enforce_at_gateway);
    let has_public = routing.public_routes.as_ref().is_some_and(|r| !r.is_empty());
    if has_public && auth_enforced {
        if let Some(route) = public_route(app, names.public_route(), &attachment) {
            children.apply(route).await?;
        }
    } else if has_public {
        ctx.events
            .publish(
                &app.object_ref(&()),
                Severity::Warning,
                "PublicRoutesIgnored",
                "Reconcile",
                "routing.publicRoutes only applies when auth is enabled and enforced at the gateway; every path is already public",
            )
            .await;
    }
    status.set(ConditionUpdate::ok(
        ROUTING_READY,
        "HTTPRouteReady",
        format!("HTTPRoute {} routes {}", names.route(), app.spec.hostname),
    ));
    Ok(())
}

/// Auth: the OIDC client (provisioned in Keycloak, or named by clientSecretRef), its Secret and reader RBAC, and
/// the SecurityPolicy when enforced at the gateway.
/// What the auth step achieved.
struct AuthPass {
    /// What the step asks for next.
    next: Outcome,
    /// Whether the SecurityPolicy was applied in this pass.
    policy_applied: bool,
}

impl AuthPass {
    fn unprotected(next: Outcome) -> Self {
        Self {
            next,
            policy_applied: false,
        }
    }
}

/// Keeps the SecurityPolicy an earlier pass applied (so pruning cannot strip protection from live routes) and
/// tells whether there is one.
async fn keep_existing_policy(
    app: &NebariApp,
    names: &AppNames,
    children: &mut ChildSet,
    ctx: &Context,
) -> Result<bool, NebariAppError> {
    let api: Api<SecurityPolicy> = Api::namespaced(ctx.client.clone(), &names.namespace);
    let existing = api
        .get_opt(&names.security_policy())
        .await
        .map_err(|e| NebariAppError::api("reading the SecurityPolicy", e))?;
    let ours = existing.as_ref().is_some_and(|policy| {
        policy
            .owner_references()
            .iter()
            .any(|owner| Some(&owner.uid) == app.metadata.uid.as_ref())
    });
    if ours {
        children.keep::<SecurityPolicy>(&names.namespace, &names.security_policy());
    }
    Ok(ours)
}

async fn reconcile_auth(
    controller: &NebariAppController,
    app: &NebariApp,
    names: &AppNames,
    plan: &TlsPlan,
    children: &mut ChildSet,
    status: &mut StatusBuilder,
    ctx: &Context,
) -> Result<AuthPass, NebariAppError> {
    let Some(auth) = app.spec.auth.as_ref().filter(|a| a.enabled) else {
        status.status.client_secret_ref = None;
        forget_provisioned_clients(controller, app, names, status).await?;
        status.set_quietly(ConditionUpdate::failed(
            AUTH_READY,
            "AuthDisabled",
            "authentication is not enabled",
        ));
        return Ok(AuthPass::unprotected(Outcome::Done));
    };
    let credentials = match client_credentials(controller, app, auth, names, plan, children, status, ctx).await {
        Ok(credentials) => credentials,
        Err(error) => {
            status.set(ConditionUpdate::failed(
                AUTH_READY,
                error.condition_reason(),
                framework::sanitize::sanitize(&error.to_string()),
            ));
            return Err(error);
        }
    };
    let credentials = match credentials {
        ClientState::Ready(credentials) => credentials,
        ClientState::Missing => return Ok(AuthPass::unprotected(Outcome::Done)),
    };
    let policy_applied = auth.enforce_at_gateway && app.spec.routing.is_some();
    if policy_applied {
        children
            .apply(security_policy(
                app,
                auth,
                names,
                &controller.settings,
                &credentials,
                plan.is_tls(),
            ))
            .await?;
    }
    status.status.client_secret_ref = Some(ResourceReference {
        name: credentials.secret_name.clone(),
        namespace: app.namespace(),
    });
    status.set(ConditionUpdate::ok(
        AUTH_READY,
        "AuthConfigured",
        match (auth.enforce_at_gateway, app.spec.routing.is_some()) {
            (true, true) => "OIDC client ready and enforced at the gateway".to_string(),
            (true, false) => {
                "OIDC client ready; no routing is managed, so nothing is enforced at the gateway".to_string()
            }
            (false, _) => "OIDC client ready; the application handles the OIDC flow itself".to_string(),
        },
    ));
    Ok(AuthPass {
        next: Outcome::Done,
        policy_applied,
    })
}

/// What [`client_credentials`] found.
enum ClientState {
    /// The credentials the gateway (or the app) uses.
    Ready(ClientCredentials),
    /// A condition says what is missing; a watch announces the fix (the app, or its `clientSecretRef` Secret,
    /// watched by metadata in `mod.rs`).
    Missing,
}

/// The client id and Secret the gateway (or the app) uses: provisioned in Keycloak (hash-gated), or taken from
/// `clientSecretRef`.
#[allow(clippy::too_many_arguments)]
async fn client_credentials(
    controller: &NebariAppController,
    app: &NebariApp,
    auth: &AuthConfig,
    names: &AppNames,
    plan: &TlsPlan,
    children: &mut ChildSet,
    status: &mut StatusBuilder,
    ctx: &Context,
) -> Result<ClientState, NebariAppError> {
    let provisioned =
        auth.provider == AuthProvider::Keycloak && auth.provision_client && controller.settings.keycloak_enabled;
    if !provisioned {
        forget_provisioned_clients(controller, app, names, status).await?;
        let Some(secret_name) = auth.client_secret_ref.clone() else {
            status.set(ConditionUpdate::failed(
                AUTH_READY,
                "ClientSecretRefRequired",
                "set auth.clientSecretRef to a Secret with client-id and client-secret (client provisioning is off for this provider)",
            ));
            return Ok(ClientState::Missing);
        };
        let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &names.namespace);
        let secret = secrets
            .get_opt(&secret_name)
            .await
            .map_err(|e| NebariAppError::api("reading the client Secret", e))?;
        let client_id = secret
            .as_ref()
            .and_then(|s| s.data.as_ref())
            .and_then(|d| d.get("client-id"))
            .map(|v| String::from_utf8_lossy(&v.0).into_owned());
        let has_secret = secret
            .as_ref()
            .and_then(|s| s.data.as_ref())
            .is_some_and(|d| d.contains_key("client-secret"));
        return match (client_id, has_secret) {
            (Some(client_id), true) => Ok(ClientState::Ready(ClientCredentials { client_id, secret_name })),
            _ => {
                status.set(ConditionUpdate::failed(
                    AUTH_READY,
                    "ClientSecretInvalid",
                    format!("Secret {secret_name} must exist and hold the keys client-id and client-secret"),
                ));
                Ok(ClientState::Missing)
            }
        };
    }

    let peers = if auth.token_exchange.as_ref().is_some_and(|t| t.enabled) {
        keycloak_sync::token_exchange_peers(&ctx.client, &ctx.namespaces, app).await?
    } else {
        Vec::new()
    };
    let hash = auth_config_hash(app, auth, &controller.settings, plan.is_tls(), &peers);
    let forced = app
        .annotations()
        .get(FORCE_REPROVISION_ANNOTATION)
        .is_some_and(|v| !v.is_empty());
    let auth_was_ready = framework::conditions::is_true(&status.status.conditions, AUTH_READY);
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &names.namespace);
    let existing = secrets
        .get_opt(&names.oidc_secret())
        .await
        .map_err(|e| NebariAppError::api("reading the OIDC Secret", e))?;
    let existing_data = existing.as_ref().and_then(keycloak_sync::secret_data);
    let previous_spa = existing_data.as_ref().and_then(|d| d.spa_client_id.clone());

    let data = match existing_data {
        Some(data) if !forced && auth_was_ready && status.status.auth_config_hash.as_deref() == Some(hash.as_str()) => {
            data
        }
        _ => {
            let ProvisionedClients {
                client_id,
                client_secret,
                spa_client_id,
                device_client_id,
                warnings,
            } = keycloak_sync::provision(
                controller,
                app,
                auth,
                names,
                plan.is_tls(),
                &peers,
                previous_spa.as_deref(),
            )
            .await?;
            for warning in warnings {
                ctx.events
                    .publish(
                        &app.object_ref(&()),
                        Severity::Warning,
                        "KeycloakWarning",
                        "Provision",
                        &warning,
                    )
                    .await;
            }
            status.status.auth_config_hash = Some(hash);
            if forced {
                remove_force_annotation(app, ctx).await?;
            }
            ctx.events
                .publish(
                    &app.object_ref(&()),
                    Severity::Normal,
                    "Provisioned",
                    "Provision",
                    &format!("Keycloak client {client_id} provisioned"),
                )
                .await;
            OidcSecretData {
                client_id,
                client_secret,
                issuer_url: controller.settings.external_issuer().unwrap_or_default(),
                spa_client_id,
                device_client_id,
            }
        }
    };
    children.apply(oidc_secret(names, &data)).await?;
    let service_account = app
        .spec
        .service_account_name
        .clone()
        .unwrap_or_else(|| names.app.clone());
    children.apply(secret_reader_role(names, &names.oidc_secret())).await?;
    children.apply(secret_reader_binding(names, &service_account)).await?;
    Ok(ClientState::Ready(ClientCredentials {
        client_id: data.client_id,
        secret_name: names.oidc_secret(),
    }))
}

/// Once the app no longer has the operator provision its Keycloak clients (auth off, another provider,
/// `provisionClient: false`), deletes the clients provisioned before (known by `status.authConfigHash`). The hash
/// is dropped only after the deletion succeeded, so a failed attempt is retried rather than forgotten.
async fn forget_provisioned_clients(
    controller: &NebariAppController,
    app: &NebariApp,
    names: &AppNames,
    status: &mut StatusBuilder,
) -> Result<(), NebariAppError> {
    if status.status.auth_config_hash.is_none() {
        return Ok(());
    }
    if let Err(error) = keycloak_sync::delete_clients(controller, app, names, app.status.as_ref()).await {
        status.set(ConditionUpdate::failed(
            AUTH_READY,
            error.condition_reason(),
            framework::sanitize::sanitize(&format!("removing the Keycloak clients: {error}")),
        ));
        return Err(error);
    }
    status.status.auth_config_hash = None;
    Ok(())
}

async fn remove_force_annotation(app: &NebariApp, ctx: &Context) -> Result<(), NebariAppError> {
    let api: Api<NebariApp> = Api::namespaced(ctx.client.clone(), &app.namespace().unwrap_or_default());
    let patch = json!({"metadata": {"annotations": {FORCE_REPROVISION_ANNOTATION: null}}});
    api.patch(&app.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| NebariAppError::api("removing the force-reprovision annotation", e))?;
    Ok(())
}

/// Deletes children of this app that the pass did not produce.
async fn prune(
    controller: &NebariAppController,
    namespace: &str,
    children: &mut ChildSet,
) -> Result<(), NebariAppError> {
    children.prune::<HttpRoute>(Some(namespace)).await?;
    children.prune::<SecurityPolicy>(Some(namespace)).await?;
    children.prune::<Secret>(Some(namespace)).await?;
    children.prune::<RoleBinding>(Some(namespace)).await?;
    children.prune::<Role>(Some(namespace)).await?;
    children
        .prune::<Certificate>(Some(&controller.settings.gateway_namespace))
        .await?;
    Ok(())
}

/// Publishes the status (events on transitions, a write only on change) and returns the step outcome.
async fn finish(
    controller: &NebariAppController,
    app: &NebariApp,
    ctx: &Context,
    status: StatusBuilder,
    outcome: Result<Outcome, NebariAppError>,
) -> Result<Outcome, NebariAppError> {
    framework::status::publish(controller, ctx, app, status)
        .await
        .map_err(|e| NebariAppError::api("writing the status", e))?;
    outcome
}
