//! Names of everything a NebariApp produces, as nebari-operator named them (so a running system is taken over
//! in place), shortened with a stable hash only when a name would exceed Kubernetes' limits.
//!
//! Objects in the shared gateway namespace (the listener, the Certificate and its Secret) join the app's name and
//! namespace, which is ambiguous as soon as either contains a `-`: app `a-b` in `c` and app `a` in `b-c` would
//! both be `tls-a-b-c`. Those names keep the original form only when neither part contains a `-` (then the form
//! is unambiguous); otherwise a hash of `<namespace>/<app>` is appended. An original name has exactly the two
//! separators of its template, a hashed one at least one more, so the two forms never meet.

use framework::names::{DNS1123_LABEL_MAX, DNS1123_SUBDOMAIN_MAX, truncate_with_hash};

/// Object names derived from one NebariApp.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppNames {
    /// The NebariApp's name.
    pub app: String,
    /// The NebariApp's namespace.
    pub namespace: String,
}

impl AppNames {
    /// Names for the app `name` in `namespace`.
    pub fn new(namespace: &str, name: &str) -> Self {
        Self {
            app: name.to_string(),
            namespace: namespace.to_string(),
        }
    }

    fn subdomain(&self, name: String) -> String {
        truncate_with_hash(&name, DNS1123_SUBDOMAIN_MAX)
    }

    /// `<app>-<ns>`, made injective when ambiguous (see the module documentation).
    fn app_and_namespace(&self) -> String {
        self.unambiguous(format!("{}-{}", self.app, self.namespace))
    }

    /// `joined` (a name joining the app's and namespace's names with `-`), suffixed with a hash of both when the
    /// join is ambiguous.
    fn unambiguous(&self, joined: String) -> String {
        if self.app.contains('-') || self.namespace.contains('-') {
            format!("{joined}-{}", framework::names::short_hash(&self.owner()))
        } else {
            joined
        }
    }

    /// The listener name nebari-operator used, `tls-<app>-<ns>`: ambiguous for names with a `-`, so a listener
    /// of that name is withdrawn only when it serves this app's hostname (hostnames are exclusive per namespace).
    pub fn legacy_listener(&self) -> String {
        truncate_with_hash(&format!("tls-{}-{}", self.app, self.namespace), DNS1123_LABEL_MAX)
    }

    /// The main HTTPRoute: `<app>-route`.
    pub fn route(&self) -> String {
        self.subdomain(format!("{}-route", self.app))
    }

    /// The unauthenticated HTTPRoute: `<app>-public-route`.
    pub fn public_route(&self) -> String {
        self.subdomain(format!("{}-public-route", self.app))
    }

    /// The SecurityPolicy: `<app>-security`.
    pub fn security_policy(&self) -> String {
        self.subdomain(format!("{}-security", self.app))
    }

    /// The Certificate in the gateway namespace: `<app>-<ns>-cert`.
    pub fn certificate(&self) -> String {
        self.subdomain(format!("{}-cert", self.app_and_namespace()))
    }

    /// The certificate's Secret in the gateway namespace: `<app>-<ns>-tls`.
    pub fn tls_secret(&self) -> String {
        self.subdomain(format!("{}-tls", self.app_and_namespace()))
    }

    /// The per-app Gateway listener: `tls-<app>-<ns>` (listener names are DNS-1123 labels: at most 63 chars, no
    /// dots). A dotted app name has its dots turned into `-`, which makes the join ambiguous, so it is hashed.
    pub fn listener(&self) -> String {
        let joined = if self.app.contains('.') {
            format!(
                "{}-{}-{}",
                self.app.replace('.', "-"),
                self.namespace,
                framework::names::short_hash(&self.owner())
            )
        } else {
            self.app_and_namespace()
        };
        truncate_with_hash(&format!("tls-{joined}"), DNS1123_LABEL_MAX)
    }

    /// The OIDC client Secret: `<app>-oidc-client`.
    pub fn oidc_secret(&self) -> String {
        self.subdomain(format!("{}-oidc-client", self.app))
    }

    /// The Role and RoleBinding letting the app's ServiceAccount read its OIDC Secret.
    pub fn secret_reader(&self) -> String {
        self.subdomain(format!("{}-oidc-secret-reader", self.app))
    }

    /// The confidential Keycloak client: `<ns>-<app>`.
    pub fn keycloak_client(&self) -> String {
        format!("{}-{}", self.namespace, self.app)
    }

    /// The SPA Keycloak client: the override, or `<ns>-<app>-spa`.
    pub fn keycloak_spa_client(&self, override_id: Option<&str>) -> String {
        match override_id {
            Some(id) if !id.is_empty() => id.to_string(),
            _ => format!("{}-{}-spa", self.namespace, self.app),
        }
    }

    /// The device-flow Keycloak client: `<ns>-<app>-device`.
    pub fn keycloak_device_client(&self) -> String {
        format!("{}-{}-device", self.namespace, self.app)
    }

    /// The app as recorded on its Keycloak clients: `<ns>/<app>` (see `keycloak_sync::OWNER_ATTRIBUTE`).
    pub fn owner(&self) -> String {
        format!("{}/{}", self.namespace, self.app)
    }

    /// The Keycloak client ids derived from the app's own name (confidential, default SPA, device flow): the only
    /// ids under which a client without an owner is adopted (one made by the replaced operator).
    pub fn derived_client_ids(&self) -> [String; 3] {
        [
            self.keycloak_client(),
            self.keycloak_spa_client(None),
            self.keycloak_device_client(),
        ]
    }

    /// The field manager that owns this app's listener on the shared Gateway: the controller's own
    /// (`controller_manager`) suffixed with the app, so each app's listener is an independently owned item of the
    /// `listeners` list-map.
    pub fn listener_field_manager(&self, controller_manager: &str) -> String {
        truncate_with_hash(
            &self.unambiguous(format!("{controller_manager}-{}-{}", self.namespace, self.app)),
            128,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_the_original_operator() {
        let n = AppNames::new("data", "jupyter");
        assert_eq!(n.route(), "jupyter-route");
        assert_eq!(n.public_route(), "jupyter-public-route");
        assert_eq!(n.security_policy(), "jupyter-security");
        assert_eq!(n.certificate(), "jupyter-data-cert");
        assert_eq!(n.tls_secret(), "jupyter-data-tls");
        assert_eq!(n.listener(), "tls-jupyter-data");
        assert_eq!(n.oidc_secret(), "jupyter-oidc-client");
        assert_eq!(n.secret_reader(), "jupyter-oidc-secret-reader");
        assert_eq!(n.keycloak_client(), "data-jupyter");
        assert_eq!(n.keycloak_spa_client(None), "data-jupyter-spa");
        assert_eq!(n.keycloak_spa_client(Some("custom")), "custom");
        assert_eq!(n.keycloak_device_client(), "data-jupyter-device");
    }

    #[test]
    fn gateway_namespace_names_are_injective() {
        let first = AppNames::new("c", "a-b");
        let second = AppNames::new("b-c", "a");
        assert_eq!(
            first.legacy_listener(),
            second.legacy_listener(),
            "the original form collides"
        );
        assert_ne!(first.listener(), second.listener());
        assert_ne!(first.certificate(), second.certificate());
        assert_ne!(first.tls_secret(), second.tls_secret());
        assert!(first.listener().starts_with("tls-a-b-c-"), "{}", first.listener());
        let plain = AppNames::new("data", "jupyter");
        assert_eq!(
            plain.listener(),
            plain.legacy_listener(),
            "unambiguous names keep the original form"
        );
        assert_eq!(plain.listener().matches('-').count(), 2);
        assert!(first.listener().matches('-').count() > 2);
        assert_ne!(first.listener_field_manager("m"), second.listener_field_manager("m"));
        assert_eq!(plain.listener_field_manager("m"), "m-data-jupyter");
    }

    #[test]
    fn a_dotted_app_gets_a_listener_name_without_dots() {
        // Found by the property tests (controllers/tests/properties.rs): `tls-a.a-a` is no listener name.
        let listener = AppNames::new("a", "a.a").listener();
        framework::names::check_dns1123_label(&listener).expect("listener name is a DNS label");
        assert!(listener.starts_with("tls-a-a-a-"), "{listener}");
        assert_ne!(listener, AppNames::new("a", "a-a").listener());
    }

    #[test]
    fn long_listener_names_stay_valid_labels() {
        let n = AppNames::new(&"n".repeat(40), &"a".repeat(40));
        let listener = n.listener();
        assert!(listener.len() <= 63);
        framework::names::check_dns1123_label(&listener).expect("listener name is a DNS label");
        assert_eq!(
            listener,
            AppNames::new(&"n".repeat(40), &"a".repeat(40)).listener(),
            "stable"
        );
    }
}
