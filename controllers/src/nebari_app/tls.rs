//! TLS for a NebariApp: which listener its routes use, the cert-manager Certificate for its hostname, and its
//! own HTTPS listener on the shared Gateway.
//!
//! The listener is written by server-side apply under a field manager of its own per app. The Gateway's
//! `spec.listeners` is a list-map keyed by `name`, so each app owns exactly its item: other tools' listeners are
//! never rewritten, and applying an empty list under the app's manager removes only the app's listener.

use std::collections::BTreeMap;

use crds::nebari::NebariApp;
use crds::thirdparty::cert_manager::{Certificate, CertificateSpec, IssuerRef};
use kube::api::ObjectMeta;
use serde_json::{Value, json};

use super::naming::AppNames;
use super::settings::NebariAppSettings;

/// Labels that map a Certificate in the gateway namespace back to its NebariApp.
pub const APP_NAME_LABEL: &str = "nebari.dev/nebariapp-name";
/// See [`APP_NAME_LABEL`].
pub const APP_NAMESPACE_LABEL: &str = "nebari.dev/nebariapp-namespace";

/// How an app's traffic is secured, decided from its spec and the manager's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TlsPlan {
    /// No operator routing, or `routing.tls.enabled: false`: routes use the shared HTTP listener.
    Disabled,
    /// No issuer configured and no Secret given: routes use the Gateway's shared HTTPS listener.
    SharedListener,
    /// A Certificate from the ClusterIssuer and a per-app listener using its Secret.
    Issued {
        /// The ClusterIssuer.
        issuer: String,
    },
    /// A per-app listener using a Secret the user put in the gateway namespace.
    UserSecret {
        /// The Secret's name.
        secret: String,
    },
}

impl TlsPlan {
    /// Decides the plan for `app`.
    pub fn for_app(app: &NebariApp, settings: &NebariAppSettings) -> Self {
        let Some(routing) = app.spec.routing.as_ref() else {
            return TlsPlan::Disabled;
        };
        match routing.tls.as_ref() {
            Some(tls) if !tls.enabled => TlsPlan::Disabled,
            Some(tls) if tls.secret_name.is_some() => TlsPlan::UserSecret {
                secret: tls.secret_name.clone().unwrap_or_default(),
            },
            _ if settings.cluster_issuer.is_empty() => TlsPlan::SharedListener,
            _ => TlsPlan::Issued {
                issuer: settings.cluster_issuer.clone(),
            },
        }
    }

    /// Whether the app gets a listener of its own.
    pub fn has_own_listener(&self) -> bool {
        matches!(self, TlsPlan::Issued { .. } | TlsPlan::UserSecret { .. })
    }

    /// Whether traffic is encrypted.
    pub fn is_tls(&self) -> bool {
        !matches!(self, TlsPlan::Disabled)
    }

    /// The Secret the per-app listener serves, if any.
    pub fn listener_secret(&self, names: &AppNames) -> Option<String> {
        match self {
            TlsPlan::Issued { .. } => Some(names.tls_secret()),
            TlsPlan::UserSecret { secret } => Some(secret.clone()),
            _ => None,
        }
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
        },
        status: None,
    }
}

/// The listener the app owns on the shared Gateway: HTTPS on 443 for its hostname, terminating with `secret`,
/// accepting routes only from the app's namespace.
pub fn listener(app: &NebariApp, names: &AppNames, secret: &str, gateway_namespace: &str) -> Value {
    json!({
        "name": names.listener(),
        "hostname": app.spec.hostname,
        "port": 443,
        "protocol": "HTTPS",
        "tls": {
            "mode": "Terminate",
            "certificateRefs": [{"group": "", "kind": "Secret", "name": secret, "namespace": gateway_namespace}],
        },
        "allowedRoutes": {
            "namespaces": {
                "from": "Selector",
                "selector": {"matchLabels": {"kubernetes.io/metadata.name": names.namespace}},
            },
        },
    })
}

/// The server-side apply body that gives the app's field manager exactly `listeners` on the Gateway (an empty
/// list withdraws the app's listener).
pub fn gateway_apply_body(gateway: &str, gateway_namespace: &str, listeners: Vec<Value>) -> Value {
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": gateway, "namespace": gateway_namespace},
        "spec": {"listeners": listeners},
    })
}

/// Finds a listener by name in a Gateway object.
pub fn find_listener<'a>(gateway: &'a Value, name: &str) -> Option<(usize, &'a Value)> {
    gateway["spec"]["listeners"]
        .as_array()?
        .iter()
        .enumerate()
        .find(|(_, l)| l["name"].as_str() == Some(name))
}

/// Whether an API error says our listener clashes with another one (same port, protocol and hostname).
pub fn is_listener_conflict(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => {
            status.code == 422 && status.message.to_lowercase().contains("must be unique")
                || status.code == 409 && status.message.contains("listeners")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::nebari::{NebariAppSpec, RoutingConfig, RoutingTlsConfig, ServiceReference};

    fn settings(issuer: &str) -> NebariAppSettings {
        let mut s = NebariAppSettings::example();
        s.cluster_issuer = issuer.to_string();
        s
    }

    fn app(routing: Option<RoutingConfig>) -> NebariApp {
        let mut app = NebariApp::new(
            "web",
            NebariAppSpec {
                hostname: "web.example.com".into(),
                service: ServiceReference {
                    name: "web".into(),
                    port: 80,
                    namespace: None,
                },
                routing,
                auth: None,
                gateway: Default::default(),
                service_account_name: None,
                landing_page: None,
            },
        );
        app.metadata.namespace = Some("team".into());
        app
    }

    #[test]
    fn plan_follows_routing_tls_and_issuer() {
        assert_eq!(TlsPlan::for_app(&app(None), &settings("le")), TlsPlan::Disabled);
        let off = RoutingConfig {
            tls: Some(RoutingTlsConfig {
                enabled: false,
                secret_name: None,
            }),
            ..Default::default()
        };
        assert_eq!(TlsPlan::for_app(&app(Some(off)), &settings("le")), TlsPlan::Disabled);
        assert_eq!(
            TlsPlan::for_app(&app(Some(RoutingConfig::default())), &settings("")),
            TlsPlan::SharedListener
        );
        assert_eq!(
            TlsPlan::for_app(&app(Some(RoutingConfig::default())), &settings("le")),
            TlsPlan::Issued { issuer: "le".into() }
        );
        let user = RoutingConfig {
            tls: Some(RoutingTlsConfig {
                enabled: true,
                secret_name: Some("my-cert".into()),
            }),
            ..Default::default()
        };
        assert_eq!(
            TlsPlan::for_app(&app(Some(user)), &settings("le")),
            TlsPlan::UserSecret {
                secret: "my-cert".into()
            }
        );
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
    fn listener_terminates_tls_for_the_app_namespace_only() {
        let a = app(Some(RoutingConfig::default()));
        let names = AppNames::new("team", "web");
        let l = listener(&a, &names, "web-team-tls", "envoy-gateway-system");
        assert_eq!(l["name"], "tls-web-team");
        assert_eq!(l["port"], 443);
        assert_eq!(l["protocol"], "HTTPS");
        assert_eq!(l["tls"]["certificateRefs"][0]["name"], "web-team-tls");
        assert_eq!(
            l["allowedRoutes"]["namespaces"]["selector"]["matchLabels"]["kubernetes.io/metadata.name"],
            "team"
        );
        let body = gateway_apply_body("nebari-gateway", "envoy-gateway-system", vec![l]);
        assert_eq!(body["kind"], "Gateway");
        assert!(
            body["spec"].get("gatewayClassName").is_none(),
            "the apply body must claim only the listener"
        );
        assert!(find_listener(&body, "tls-web-team").is_some());
    }
}
