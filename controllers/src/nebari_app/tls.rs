//! Step 2, TLS: which listener an app's routes use, the cert-manager Certificate for its hostname (or the
//! user's own Secret), and the app's own HTTPS listener on its Gateway (`listener.rs`). Produces `TLSReady`.

use std::collections::BTreeMap;

use crds::nebari::NebariApp;
use crds::thirdparty::cert_manager::{Certificate, CertificateSpec, IssuerRef, SecretTemplate};
use framework::children::ChildError;
use framework::conditions::ConditionUpdate;
use framework::error::kube_error;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta};

use super::acceptance::{self, Verdict};
use super::error::NebariAppError;
use super::listener::{ListenerOutcome, ListenerWriter};
use super::naming::AppNames;
use super::reconcile::Pass;
use super::status::TLS_READY;
use super::tls_plan::TlsPlan;

/// Annotation on a TLS Secret of the gateway namespace naming the namespaces whose apps may serve it
/// (comma-separated, or `*` for all). A Secret without it serves no app.
pub const ALLOWED_NAMESPACES_ANNOTATION: &str = "nebari.dev/allowed-namespaces";

/// Labels that map a Certificate in the gateway namespace back to its NebariApp.
pub const APP_NAME_LABEL: &str = "nebari.dev/nebariapp-name";
/// See [`APP_NAME_LABEL`].
pub const APP_NAMESPACE_LABEL: &str = "nebari.dev/nebariapp-namespace";

/// The annotation cert-manager puts on each Secret it issues, naming the Certificate it was issued for.
pub const CERTIFICATE_NAME_ANNOTATION: &str = "cert-manager.io/certificate-name";

/// Deletes the Secret cert-manager issued for the app's Certificate, once that Certificate is gone (the app was
/// deleted, or its TLS turned off). cert-manager leaves issued Secrets behind unless it runs with
/// `--enable-certificate-owner-ref`, so without this the private key of a certificate nobody serves would stay in
/// the gateway namespace for good. Only a Secret cert-manager issued for this very Certificate is deleted (read
/// by metadata only; the delete is guarded by its uid).
pub async fn release_issued_secret(
    client: &kube::Client,
    gateway_ns: &str,
    names: &AppNames,
    owner: &str,
) -> Result<(), framework::error::KubeError> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), gateway_ns);
    let name = names.tls_secret();
    let Some(secret) = secrets
        .get_metadata_opt(&name)
        .await
        .map_err(kube_error("reading the issued TLS Secret"))?
    else {
        return Ok(());
    };
    let annotation = |key: &str| secret.metadata.annotations.as_ref().and_then(|a| a.get(key)).cloned();
    // Issued for a Certificate of this name is not enough: a platform certificate may have the same name (a
    // namespace `gateway` with an app `nebari` maps onto `nebari-gateway-cert`). Only a Secret issued from this
    // app's own Certificate carries the app as its owner (the Certificate's secretTemplate).
    if annotation(CERTIFICATE_NAME_ANNOTATION) != Some(names.certificate())
        || annotation(super::OWNER_ANNOTATION).as_deref() != Some(owner)
    {
        return Ok(());
    }
    let guarded = kube::api::DeleteParams {
        preconditions: secret.metadata.uid.map(|uid| kube::api::Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..kube::api::DeleteParams::background()
    };
    match secrets.delete(&name, &guarded).await {
        Ok(_) => {
            framework::changes::record(format!("deleted the issued TLS Secret {name}"));
            Ok(())
        }
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => Ok(()),
        Err(error) => Err(framework::error::KubeError::new(
            "deleting the issued TLS Secret",
            error,
        )),
    }
}

/// The Certificate `<app>-<ns>-cert` in the gateway namespace, for the app's hostname.
pub fn certificate(app: &NebariApp, names: &AppNames, issuer: &str, gateway_namespace: &str) -> Certificate {
    let labels = BTreeMap::from([
        (APP_NAME_LABEL.to_string(), framework::names::label_value(&names.app)),
        (
            APP_NAMESPACE_LABEL.to_string(),
            framework::names::label_value(&names.namespace),
        ),
    ]);
    Certificate {
        metadata: ObjectMeta {
            name: Some(names.certificate()),
            namespace: Some(gateway_namespace.to_string()),
            labels: Some(labels),
            ..Default::default()
        },
        spec: CertificateSpec {
            secret_name: Some(names.tls_secret()),
            dns_names: Some(vec![app.spec.hostname.clone()]),
            issuer_ref: Some(IssuerRef {
                name: issuer.to_string(),
                kind: Some("ClusterIssuer".to_string()),
                group: Some("cert-manager.io".to_string()),
            }),
            // The issued Secret names its app, so releasing it never touches a Secret someone else's
            // certificate of the same name wrote.
            secret_template: Some(SecretTemplate {
                annotations: Some(BTreeMap::from([(
                    super::OWNER_ANNOTATION.to_string(),
                    framework::children::owner_id(app),
                )])),
                labels: None,
            }),
        },
        status: None,
    }
}

impl Pass<'_> {
    /// Puts the app's TLS in place; returns the listener section its routes attach to.
    pub async fn tls(&mut self) -> Result<String, NebariAppError> {
        let settings = &self.controller.settings;
        let gateway_ns = settings.gateway_namespace.as_str();
        let target_gateway = settings.gateway_name(self.app.spec.gateway);
        let listeners = ListenerWriter::new(self.ctx, &self.names, &self.controller.seen.gateways);

        // The app's listener lives on at most one Gateway: withdraw it from every Gateway that is not the target.
        for gateway in [&settings.public_gateway, &settings.internal_gateway] {
            if !self.plan.has_own_listener() || gateway != target_gateway {
                listeners
                    .withdraw(Some(&self.app.spec.hostname), gateway, gateway_ns)
                    .await?;
            }
        }

        match &self.plan {
            TlsPlan::Disabled => {
                if self.app.spec.routing.is_some() {
                    self.status.set(ConditionUpdate::ok(
                        TLS_READY,
                        "TLSDisabled",
                        "TLS is disabled; routes use the HTTP listener",
                    ));
                } else {
                    // TLS only applies to operator routing: drop what an earlier pass with routing reported.
                    self.status.remove(TLS_READY);
                }
                Ok(settings.http_section.clone())
            }
            TlsPlan::SharedListener => {
                self.status.set(ConditionUpdate::ok(
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
                let cert = match self
                    .children
                    .apply(certificate(self.app, &self.names, issuer, gateway_ns))
                    .await
                {
                    Ok(cert) => cert,
                    Err(ChildError::OwnedByAnother { kind, name }) => {
                        // Never serve another app's certificate: fall back to the shared listener.
                        listeners
                            .withdraw(Some(&self.app.spec.hostname), target_gateway, gateway_ns)
                            .await?;
                        self.status.set(ConditionUpdate::failed(
                            TLS_READY,
                            "NameConflict",
                            format!(
                                "{kind} {gateway_ns}/{name} belongs to another owner; routes use the Gateway's \
                                 shared {} listener",
                                settings.https_section
                            ),
                        ));
                        return Ok(settings.https_section.clone());
                    }
                    Err(error) => return Err(error.into()),
                };
                let outcome = listeners
                    .ensure(
                        self.app,
                        target_gateway,
                        gateway_ns,
                        &self.names.tls_secret(),
                        settings.listeners_per_namespace,
                    )
                    .await?;
                let verdict = match listener_verdict(outcome, gateway_ns, target_gateway) {
                    Ok(verdict) => verdict,
                    Err(problem) => {
                        self.status.set(problem);
                        return Ok(settings.https_section.clone());
                    }
                };
                self.status
                    .set(verdict.condition(certificate_condition(&cert, &self.names), acceptance::PENDING_LISTENER));
                Ok(self.names.listener())
            }
            TlsPlan::UserSecret { secret } => {
                let secrets: Api<Secret> = Api::namespaced(self.ctx.client.clone(), gateway_ns);
                let user_secret = secrets
                    .get_opt(secret)
                    .await
                    .map_err(kube_error("reading the TLS Secret"))?;
                if let Some(refused) = user_secret
                    .as_ref()
                    .and_then(|s| secret_refusal(s, &self.names.namespace))
                {
                    // Never let a tenant serve a Secret of the gateway namespace that was not meant for it (the
                    // platform's wildcard certificate, say): withdraw the listener, use the shared one.
                    listeners
                        .withdraw(Some(&self.app.spec.hostname), target_gateway, gateway_ns)
                        .await?;
                    self.status.set(refused);
                    return Ok(settings.https_section.clone());
                }
                let outcome = listeners
                    .ensure(
                        self.app,
                        target_gateway,
                        gateway_ns,
                        secret,
                        settings.listeners_per_namespace,
                    )
                    .await?;
                let verdict = match listener_verdict(outcome, gateway_ns, target_gateway) {
                    Ok(verdict) => verdict,
                    Err(problem) => {
                        self.status.set(problem);
                        return Ok(settings.https_section.clone());
                    }
                };
                self.status.set(verdict.condition(
                    user_secret_condition(user_secret.as_ref(), gateway_ns, secret),
                    acceptance::PENDING_LISTENER,
                ));
                Ok(self.names.listener())
            }
        }
    }
}

/// What the Gateway says about the app's listener once it is in place, or `TLSReady` when it could not be put in
/// place (the routes then use the shared listener).
fn listener_verdict(outcome: ListenerOutcome, gateway_ns: &str, gateway: &str) -> Result<Verdict, ConditionUpdate> {
    match outcome {
        ListenerOutcome::Ready(verdict) => Ok(verdict),
        ListenerOutcome::Conflict(message) => {
            Err(ConditionUpdate::failed(TLS_READY, "GatewayListenerConflict", message))
        }
        ListenerOutcome::GatewayFull(message) => Err(ConditionUpdate::failed(TLS_READY, "GatewayFull", message)),
        ListenerOutcome::QuotaReached(message) => {
            Err(ConditionUpdate::failed(TLS_READY, "ListenerQuotaReached", message))
        }
        ListenerOutcome::GatewayMissing => Err(ConditionUpdate::failed(
            TLS_READY,
            "GatewayNotFound",
            format!("Gateway {gateway_ns}/{gateway} does not exist"),
        )),
    }
}

/// `TLSReady`'s reason while cert-manager issues the app's certificate: expected, so announced as a Normal event.
pub const CERTIFICATE_NOT_READY: &str = "CertificateNotReady";

/// `TLSReady` from the issued Certificate's readiness; an issuance cert-manager reports as failed has its own
/// reason (announced as a Warning), distinct from one still under way.
fn certificate_condition(cert: &Certificate, names: &AppNames) -> ConditionUpdate {
    if let Some(failure) = cert.issuance_failure() {
        return ConditionUpdate::failed(
            TLS_READY,
            "CertificateIssuanceFailed",
            format!(
                "cert-manager failed to issue certificate {}: {failure}",
                names.certificate()
            ),
        );
    }
    match cert.readiness() {
        Ok(()) => ConditionUpdate::ok(TLS_READY, "TLSConfigured", "certificate issued and listener configured"),
        Err((reason, message)) => {
            let detail = match (reason.is_empty(), message.is_empty()) {
                (true, true) => String::new(),
                (false, true) => format!(" ({reason})"),
                (_, false) => format!(": {message}"),
            };
            ConditionUpdate::failed(
                TLS_READY,
                CERTIFICATE_NOT_READY,
                format!("certificate {} is not ready yet{detail}", names.certificate()),
            )
        }
    }
}

/// `TLSReady` refusing a user-named Secret that does not opt in for the app's namespace, or `None` when it does.
pub fn secret_refusal(secret: &Secret, namespace: &str) -> Option<ConditionUpdate> {
    let allowed = secret
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ALLOWED_NAMESPACES_ANNOTATION))
        .is_some_and(|list| list.split(',').map(str::trim).any(|n| n == "*" || n == namespace));
    (!allowed).then(|| {
        ConditionUpdate::failed(
            TLS_READY,
            "TLSSecretNotAllowed",
            format!(
                "TLS Secret {}/{} is not offered to namespace {namespace}: a platform admin must annotate it \
                 {ALLOWED_NAMESPACES_ANNOTATION}={namespace}; routes use the Gateway's shared listener",
                secret.metadata.namespace.as_deref().unwrap_or_default(),
                secret.metadata.name.as_deref().unwrap_or_default(),
            ),
        )
    })
}

/// `TLSReady` for a user-named Secret that may serve the app: it must exist, be of type `kubernetes.io/tls` and
/// hold a certificate and key.
pub fn user_secret_condition(secret: Option<&Secret>, namespace: &str, name: &str) -> ConditionUpdate {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crds::nebari::RoutingConfig;
    use k8s_openapi::ByteString;
    use serde_json::json;

    fn app(routing: Option<RoutingConfig>) -> NebariApp {
        crate::nebari_app::example_app(routing)
    }

    #[test]
    fn certificate_covers_the_hostname_and_maps_back_to_the_app() {
        let a = app(Some(RoutingConfig::default()));
        let names = AppNames::new("team", "web");
        let cert = certificate(&a, &names, "letsencrypt", "envoy-gateway-system");
        let value = serde_json::to_value(&cert).expect("json");
        assert_eq!(value["metadata"]["name"], "web-team-cert");
        assert_eq!(value["metadata"]["namespace"], "envoy-gateway-system");
        assert_eq!(value["metadata"]["labels"][APP_NAME_LABEL], "web");
        assert_eq!(value["metadata"]["labels"][APP_NAMESPACE_LABEL], "team");
        assert_eq!(value["spec"]["secretName"], "web-team-tls");
        assert_eq!(value["spec"]["dnsNames"], json!(["web.example.com"]));
        assert_eq!(
            value["spec"]["issuerRef"],
            json!({"name": "letsencrypt", "kind": "ClusterIssuer", "group": "cert-manager.io"})
        );
    }

    #[test]
    fn a_user_secret_must_be_a_complete_tls_secret() {
        let reason = |secret: Option<&Secret>| user_secret_condition(secret, "gw", "my-cert").reason;
        assert_eq!(reason(None), "UserProvidedSecretNotFound");
        let mut secret = Secret {
            type_: Some("Opaque".into()),
            ..Secret::default()
        };
        assert_eq!(reason(Some(&secret)), "UserProvidedSecretInvalidType");
        secret.type_ = Some("kubernetes.io/tls".into());
        secret.data = Some(BTreeMap::from([
            ("tls.crt".to_string(), ByteString(b"cert".to_vec())),
            ("tls.key".to_string(), ByteString(Vec::new())),
        ]));
        assert_eq!(
            reason(Some(&secret)),
            "UserProvidedSecretInvalid",
            "an empty key counts as missing"
        );
        if let Some(data) = secret.data.as_mut() {
            data.insert("tls.key".into(), ByteString(b"key".to_vec()));
        }
        let ready = user_secret_condition(Some(&secret), "gw", "my-cert");
        assert_eq!(
            (ready.reason.as_str(), ready.message.as_str()),
            ("UserProvidedSecretReady", "serving TLS Secret gw/my-cert")
        );
    }

    #[test]
    fn a_gateway_secret_serves_only_the_namespaces_it_names() {
        let mut secret = Secret::default();
        secret.metadata.namespace = Some("gw".into());
        secret.metadata.name = Some("wildcard".into());
        let refused = secret_refusal(&secret, "team").expect("no annotation, no service");
        assert_eq!(refused.reason, "TLSSecretNotAllowed");
        assert!(
            refused
                .message
                .starts_with("TLS Secret gw/wildcard is not offered to namespace team")
        );
        for (list, allowed) in [
            ("team", true),
            ("a, team", true),
            ("*", true),
            ("teams,a", false),
            ("", false),
        ] {
            secret.metadata.annotations = Some(BTreeMap::from([(
                ALLOWED_NAMESPACES_ANNOTATION.to_string(),
                list.to_string(),
            )]));
            assert_eq!(secret_refusal(&secret, "team").is_none(), allowed, "{list:?}");
        }
    }

    #[test]
    fn the_certificate_condition_explains_what_cert_manager_reports() {
        let names = AppNames::new("team", "web");
        let mut cert = certificate(&app(Some(RoutingConfig::default())), &names, "le", "gw");
        let pending = certificate_condition(&cert, &names);
        assert_eq!(pending.reason, "CertificateNotReady");
        assert_eq!(
            pending.message,
            "certificate web-team-cert is not ready yet: cert-manager has not reported on the certificate yet"
        );
        cert.status = serde_json::from_value(json!({"conditions": [{"type": "Ready", "status": "False",
            "reason": "Issuing"}]}))
        .expect("status");
        assert_eq!(
            certificate_condition(&cert, &names).message,
            "certificate web-team-cert is not ready yet (Issuing)"
        );
        cert.status = serde_json::from_value(json!({"conditions": [
            {"type": "Ready", "status": "False", "reason": "DoesNotExist"},
            {"type": "Issuing", "status": "False", "reason": "Failed", "message": "the ACME order was refused"}]}))
        .expect("status");
        let failed = certificate_condition(&cert, &names);
        assert_eq!(failed.reason, "CertificateIssuanceFailed");
        assert_eq!(
            failed.message,
            "cert-manager failed to issue certificate web-team-cert: the ACME order was refused"
        );
        cert.status =
            serde_json::from_value(json!({"conditions": [{"type": "Ready", "status": "True"}]})).expect("status");
        assert_eq!(certificate_condition(&cert, &names).reason, "TLSConfigured");
    }
}
