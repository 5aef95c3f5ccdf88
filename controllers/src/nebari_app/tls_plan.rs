//! How an app's traffic is secured, decided once per pass from its spec and the manager's settings, before any
//! step runs: the routes' listener, and whether the app gets a Certificate and a listener of its own.

use crds::nebari::NebariApp;

use super::naming::AppNames;
use super::settings::NebariAppSettings;

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

#[cfg(test)]
mod tests {
    use crds::nebari::{RoutingConfig, RoutingTlsConfig};

    use super::*;

    fn settings(issuer: &str) -> NebariAppSettings {
        let mut s = NebariAppSettings::example();
        s.cluster_issuer = issuer.to_string();
        s
    }

    fn app(routing: Option<RoutingConfig>) -> NebariApp {
        crate::nebari_app::example_app(routing)
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
}
