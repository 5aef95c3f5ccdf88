//! The Envoy Gateway SecurityPolicy `<app>-security` that runs the OIDC flow at the gateway for the main route.

use crds::nebari::{AuthConfig, AuthProvider, HeaderMatchType, NebariApp};
use crds::thirdparty::envoy_gateway::{
    Authorization, AuthorizationRule, DenyRedirect, DenyRedirectHeaderMatch, Jwt, JwtClaim, JwtPrincipal, JwtProvider,
    Oidc, OidcProvider, PolicyTargetReference, Principal, RemoteJwks, SecretObjectReference, SecurityPolicy,
    SecurityPolicySpec,
};
use kube::api::ObjectMeta;

use super::naming::AppNames;
use super::settings::NebariAppSettings;

/// Default OIDC scopes when the spec names none.
pub const DEFAULT_SCOPES: [&str; 3] = ["openid", "profile", "email"];
/// The JWT provider authorization rules refer to: the realm, whose keys verify the forwarded access token.
pub const JWT_PROVIDER: &str = "keycloak";
/// The claim the app's default groups mapper writes (plain group names, for the app to read).
pub const GROUPS_CLAIM: &str = "groups";
/// The claim the gateway admits `auth.groups` by: full group paths, written only by the operator's own mapper
/// into access tokens. Matching one unambiguous form means a group whose name reads like another group's path,
/// or a subgroup of the same name elsewhere in the realm, never passes for it.
pub const GATEWAY_GROUPS_CLAIM: &str = "nebari_gateway_groups";
/// The name of the operator's mapper on the app's client that writes [`GATEWAY_GROUPS_CLAIM`].
pub const GATEWAY_GROUP_MAPPER: &str = "nebari-gateway-groups";
/// Envoy Gateway accepts at most this many values per claim in one rule.
const MAX_CLAIM_VALUES: usize = 16;
/// The path that signs a person out at the gateway (the policy's `logoutPath`).
pub const LOGOUT_PATH: &str = "/logout";
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

/// The callback path: `auth.redirectURI` (default `/oauth2/callback`), always starting with `/`.
pub fn callback_path(auth: &AuthConfig) -> String {
    let path = auth
        .redirect_uri
        .as_deref()
        .filter(|p| !p.is_empty())
        .unwrap_or(DEFAULT_REDIRECT_PATH);
    if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    }
}

/// The absolute redirect URL: the app's hostname with the [`callback_path`], over https when TLS is on and http
/// when it is off (the original always used https).
pub fn redirect_url(app: &NebariApp, auth: &AuthConfig, tls: bool) -> String {
    let scheme = if tls { "https" } else { "http" };
    format!("{scheme}://{}{}", app.spec.hostname, callback_path(auth))
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
    let groups: Vec<String> = auth.groups.iter().flatten().cloned().collect();
    let exchange = token_exchange_at_gateway(auth);
    // The gateway verifies the access token itself when it checks groups or admits peers' exchanged tokens.
    let checks_tokens = !groups.is_empty() || exchange;
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
                logout_path: Some(LOGOUT_PATH.to_string()),
                scopes: Some(scopes(auth)),
                // The JWT filter reads the access token from the Authorization header the OIDC filter sets.
                forward_access_token: if checks_tokens {
                    Some(true)
                } else {
                    auth.forward_access_token
                },
                deny_redirect,
                // A peer's service calls with the token it exchanged for this app's audience; no login for it.
                pass_through_auth_header: exchange.then_some(true),
            }),
            jwt: checks_tokens.then(|| Jwt {
                providers: vec![JwtProvider {
                    name: JWT_PROVIDER.to_string(),
                    remote_jwks: RemoteJwks {
                        uri: format!("{}/protocol/openid-connect/certs", settings.internal_issuer()),
                    },
                    // Only tokens addressed to this app: its own sessions' (the audience mapper on its client) and
                    // the ones its peers exchanged for it. Another client's token for the same person is refused.
                    audiences: exchange.then(|| vec![credentials.client_id.clone()]),
                }],
            }),
            authorization: (!groups.is_empty()).then(|| group_authorization(&groups)),
        },
        status: None,
    }
}

/// Whether the gateway admits tokens other apps exchanged for this one's audience: token exchange on, with a
/// Keycloak client the operator provisions (its id is the audience the peers ask for).
pub fn token_exchange_at_gateway(auth: &AuthConfig) -> bool {
    auth.enforce_at_gateway
        && auth.provider == AuthProvider::Keycloak
        && auth.provision_client
        && auth.token_exchange.as_ref().is_some_and(|t| t.enabled)
}

/// Rules admitting members of any of the top-level `groups` (the token's [`GATEWAY_GROUPS_CLAIM`] holds the
/// group's path, `/<name>`), denying everyone else.
pub fn group_authorization(groups: &[String]) -> Authorization {
    let values: Vec<String> = groups.iter().map(|group| format!("/{group}")).collect();
    let rules = values
        .chunks(MAX_CLAIM_VALUES)
        .enumerate()
        .map(|(index, chunk)| AuthorizationRule {
            name: format!("allow-groups-{index}"),
            action: "Allow".to_string(),
            principal: Principal {
                jwt: JwtPrincipal {
                    provider: JWT_PROVIDER.to_string(),
                    claims: vec![JwtClaim {
                        name: GATEWAY_GROUPS_CLAIM.to_string(),
                        value_type: "StringArray".to_string(),
                        values: chunk.to_vec(),
                    }],
                },
            },
        })
        .collect();
    Authorization {
        default_action: "Deny".to_string(),
        rules,
    }
}

#[cfg(test)]
mod tests {

    use serde_json::{Value, json};

    use super::*;

    fn app() -> NebariApp {
        crate::nebari_app::example_app(None)
    }

    fn auth(value: Value) -> AuthConfig {
        serde_json::from_value(value).expect("auth config")
    }

    fn policy(auth: &AuthConfig, settings: &NebariAppSettings, tls: bool) -> Value {
        let credentials = ClientCredentials {
            client_id: "team-web-client".into(),
            secret_name: "web-oidc-client".into(),
        };
        let built = security_policy(&app(), auth, &AppNames::new("team", "web"), settings, &credentials, tls);
        serde_json::to_value(built).expect("json")
    }

    #[test]
    fn the_policy_protects_the_main_route_with_the_client_secret_of_the_app_namespace() {
        let value = policy(&auth(json!({"enabled": true})), &NebariAppSettings::example(), true);
        assert_eq!(value["metadata"]["name"], "web-security");
        assert_eq!(value["metadata"]["namespace"], "team");
        assert_eq!(
            value["spec"]["targetRefs"],
            json!([{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "web-route"}])
        );
        let oidc = &value["spec"]["oidc"];
        assert_eq!(oidc["clientID"], "team-web-client");
        assert_eq!(oidc["clientSecret"]["name"], "web-oidc-client");
        assert_eq!(oidc["clientSecret"]["namespace"], "team");
        assert_eq!(oidc["redirectURL"], "https://web.example.com/oauth2/callback");
        assert_eq!(
            oidc["scopes"],
            json!(["openid", "profile", "email"]),
            "defaults when none are named"
        );
    }

    #[test]
    fn listed_groups_are_enforced_on_the_verified_token_and_everyone_else_denied() {
        let open = policy(&auth(json!({"enabled": true})), &NebariAppSettings::example(), true);
        assert!(open["spec"].get("authorization").is_none(), "no groups, no rules");
        let groups: Vec<String> = (0..18).map(|i| format!("g{i}")).collect();
        let value = policy(
            &auth(json!({"enabled": true, "groups": groups})),
            &NebariAppSettings::example(),
            true,
        );
        let spec = &value["spec"];
        assert_eq!(spec["oidc"]["forwardAccessToken"], true);
        assert_eq!(
            spec["jwt"]["providers"][0]["remoteJWKS"]["uri"],
            "http://keycloak.keycloak.svc:8080/realms/nebari/protocol/openid-connect/certs"
        );
        assert_eq!(spec["authorization"]["defaultAction"], "Deny");
        let rules = spec["authorization"]["rules"].as_array().expect("rules");
        assert_eq!(rules.len(), 2, "18 values, at most 16 per rule");
        let claim = &rules[0]["principal"]["jwt"]["claims"][0];
        assert_eq!(claim["name"], GATEWAY_GROUPS_CLAIM);
        assert_eq!(claim["valueType"], "StringArray");
        assert_eq!(claim["values"][0], "/g0", "one form only: the group's path");
        assert_eq!(claim["values"][1], "/g1");
        assert_eq!(rules[0]["principal"]["jwt"]["provider"], "keycloak");
    }

    #[test]
    fn a_token_exchange_target_admits_bearer_tokens_addressed_to_it_and_no_others() {
        let value = policy(
            &auth(json!({"enabled": true, "tokenExchange": {"enabled": true}})),
            &NebariAppSettings::example(),
            true,
        );
        let spec = &value["spec"];
        assert_eq!(
            spec["oidc"]["passThroughAuthHeader"], true,
            "a peer's call needs no login"
        );
        assert_eq!(
            spec["oidc"]["forwardAccessToken"], true,
            "sessions' tokens pass the JWT filter too"
        );
        assert_eq!(
            spec["jwt"]["providers"][0]["audiences"],
            json!(["team-web-client"]),
            "only tokens addressed to the app"
        );
        assert!(spec.get("authorization").is_none(), "no groups, no rules");

        for not_at_the_gateway in [
            json!({"enabled": true}),
            json!({"enabled": true, "tokenExchange": {"enabled": false}}),
            json!({"enabled": true, "tokenExchange": {"enabled": true}, "provisionClient": false}),
        ] {
            let value = policy(&auth(not_at_the_gateway.clone()), &NebariAppSettings::example(), true);
            assert!(
                value["spec"]["oidc"].get("passThroughAuthHeader").is_none() && value["spec"].get("jwt").is_none(),
                "{not_at_the_gateway}: {value}"
            );
        }
    }

    #[test]
    fn keycloak_endpoints_split_between_the_gateway_and_the_browser() {
        let mut settings = NebariAppSettings::example();
        settings.keycloak_external_url = Some("https://auth.example.com".into());
        let value = policy(&auth(json!({"enabled": true})), &settings, true);
        let provider = &value["spec"]["oidc"]["provider"];
        let internal = "http://keycloak.keycloak.svc:8080/realms/nebari";
        assert_eq!(provider["issuer"], internal);
        assert_eq!(
            provider["tokenEndpoint"],
            format!("{internal}/protocol/openid-connect/token")
        );
        assert_eq!(
            provider["authorizationEndpoint"],
            "https://auth.example.com/realms/nebari/protocol/openid-connect/auth"
        );
        assert_eq!(
            provider["endSessionEndpoint"],
            "https://auth.example.com/realms/nebari/protocol/openid-connect/logout"
        );
    }

    #[test]
    fn a_generic_provider_uses_its_issuer_and_deny_redirect_headers_carry_over() {
        let generic = auth(json!({
            "enabled": true, "provider": "generic-oidc", "issuerURL": "https://idp.example.com",
            "redirectURI": "cb", "scopes": ["openid"],
            "denyRedirect": [{"name": "X-Requested-With", "type": "Exact", "value": "XMLHttpRequest"}],
        }));
        let value = policy(&generic, &NebariAppSettings::example(), false);
        let oidc = &value["spec"]["oidc"];
        assert_eq!(oidc["provider"], json!({"issuer": "https://idp.example.com"}));
        assert_eq!(
            oidc["redirectURL"], "http://web.example.com/cb",
            "http without TLS, path made absolute"
        );
        assert_eq!(oidc["scopes"], json!(["openid"]));
        assert_eq!(
            oidc["denyRedirect"]["headers"],
            json!([{"name": "X-Requested-With", "type": "Exact", "value": "XMLHttpRequest"}])
        );
    }
}
