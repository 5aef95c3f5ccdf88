//! The Envoy Gateway SecurityPolicy `<app>-security` that runs the OIDC flow at the gateway for the main route.

use crds::nebari::{AuthConfig, AuthProvider, HeaderMatchType, NebariApp};
use crds::thirdparty::envoy_gateway::{
    DenyRedirect, DenyRedirectHeaderMatch, Oidc, OidcProvider, PolicyTargetReference, SecretObjectReference,
    SecurityPolicy, SecurityPolicySpec,
};
use kube::api::ObjectMeta;

use super::naming::AppNames;
use super::settings::NebariAppSettings;

/// Default OIDC scopes when the spec names none.
pub const DEFAULT_SCOPES: [&str; 3] = ["openid", "profile", "email"];
/// Default callback path (Envoy Gateway's).
pub const DEFAULT_REDIRECT_PATH: &str = "/oauth2/callback";

/// Where the client credentials the policy uses come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientCredentials {
    /// The OIDC client id.
    pub client_id: String,
    /// The Secret (in the app's namespace) with key `client-secret`.
    pub secret_name: String,
}

/// The scopes to request.
pub fn scopes(auth: &AuthConfig) -> Vec<String> {
    match auth.scopes.as_ref() {
        Some(s) if !s.is_empty() => s.clone(),
        _ => DEFAULT_SCOPES.iter().map(|s| s.to_string()).collect(),
    }
}

/// The absolute redirect URL: the app's hostname with `auth.redirectURI` (default `/oauth2/callback`), over
/// https when TLS is on and http when it is off (the original always used https).
pub fn redirect_url(app: &NebariApp, auth: &AuthConfig, tls: bool) -> String {
    let path = auth
        .redirect_uri
        .as_deref()
        .filter(|p| !p.is_empty())
        .unwrap_or(DEFAULT_REDIRECT_PATH);
    let path = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    };
    let scheme = if tls { "https" } else { "http" };
    format!("{scheme}://{}{path}", app.spec.hostname)
}

/// Builds the SecurityPolicy for `app` (auth enabled and enforced at the gateway).
pub fn security_policy(
    app: &NebariApp,
    auth: &AuthConfig,
    names: &AppNames,
    settings: &NebariAppSettings,
    credentials: &ClientCredentials,
    tls: bool,
) -> SecurityPolicy {
    let provider = match auth.provider {
        AuthProvider::Keycloak => {
            let internal = settings.internal_issuer();
            let external = settings.external_issuer();
            OidcProvider {
                issuer: internal.clone(),
                token_endpoint: Some(format!("{internal}/protocol/openid-connect/token")),
                authorization_endpoint: external.as_ref().map(|e| format!("{e}/protocol/openid-connect/auth")),
                end_session_endpoint: external.as_ref().map(|e| format!("{e}/protocol/openid-connect/logout")),
            }
        }
        AuthProvider::GenericOidc => OidcProvider {
            issuer: auth.issuer_url.clone().unwrap_or_default(),
            ..Default::default()
        },
    };
    let deny_redirect = auth
        .deny_redirect
        .as_ref()
        .filter(|d| !d.is_empty())
        .map(|headers| DenyRedirect {
            headers: headers
                .iter()
                .map(|h| DenyRedirectHeaderMatch {
                    name: h.name.clone(),
                    match_type: match h.match_type {
                        HeaderMatchType::Exact => "Exact",
                        HeaderMatchType::Prefix => "Prefix",
                        HeaderMatchType::Suffix => "Suffix",
                        HeaderMatchType::RegularExpression => "RegularExpression",
                    }
                    .to_string(),
                    value: h.value.clone(),
                })
                .collect(),
        });
    SecurityPolicy {
        metadata: ObjectMeta {
            name: Some(names.security_policy()),
            namespace: Some(names.namespace.clone()),
            ..Default::default()
        },
        spec: SecurityPolicySpec {
            target_refs: Some(vec![PolicyTargetReference {
                group: "gateway.networking.k8s.io".to_string(),
                kind: "HTTPRoute".to_string(),
                name: names.route(),
            }]),
            oidc: Some(Oidc {
                provider,
                client_id: credentials.client_id.clone(),
                client_secret: SecretObjectReference {
                    group: String::new(),
                    kind: "Secret".to_string(),
                    name: credentials.secret_name.clone(),
                    namespace: Some(names.namespace.clone()),
                },
                redirect_url: Some(redirect_url(app, auth, tls)),
                logout_path: Some("/logout".to_string()),
                scopes: Some(scopes(auth)),
                forward_access_token: auth.forward_access_token,
                deny_redirect,
            }),
        },
    }
}
