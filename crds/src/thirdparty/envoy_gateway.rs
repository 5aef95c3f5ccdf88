//! Envoy Gateway `SecurityPolicy` (`gateway.envoyproxy.io/v1alpha1`): OIDC enforced at the gateway.

use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// The fields of a SecurityPolicy spec the operator sets.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "gateway.envoyproxy.io",
    version = "v1alpha1",
    kind = "SecurityPolicy",
    plural = "securitypolicies",
    namespaced,
    status = "SecurityPolicyStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct SecurityPolicySpec {
    /// The routes (or gateways) the policy applies to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_refs: Option<Vec<PolicyTargetReference>>,
    /// OpenID Connect settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oidc: Option<Oidc>,
    /// JWT verification: the providers whose tokens authorization rules may match on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwt: Option<Jwt>,
    /// Who may pass: rules on the verified JWT's claims.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<Authorization>,
}

/// What Envoy Gateway reports about a policy: per ancestor (the Gateway of a targeted route), Gateway API
/// conditions such as `Accepted`. Kept as JSON: the operator only reads it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct SecurityPolicyStatus {
    /// One entry per ancestor, with `ancestorRef`, `controllerName` and `conditions`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ancestors: Vec<serde_json::Value>,
}

/// JWT authentication settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Jwt {
    /// The token issuers to verify against.
    pub providers: Vec<JwtProvider>,
}

/// One JWT issuer.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct JwtProvider {
    /// Name that authorization rules refer to.
    pub name: String,
    /// Where the issuer's signing keys are published.
    #[serde(rename = "remoteJWKS")]
    pub remote_jwks: RemoteJwks,
    /// The audiences a token must name one of (unchecked when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audiences: Option<Vec<String>>,
}

/// A JWKS URL.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct RemoteJwks {
    /// The JWKS URI.
    pub uri: String,
}

/// Authorization rules; the first matching rule decides, else the default action.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Authorization {
    /// `Allow` or `Deny` when no rule matches.
    pub default_action: String,
    /// The rules, in order.
    pub rules: Vec<AuthorizationRule>,
}

/// One authorization rule.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct AuthorizationRule {
    /// A name for the rule (shown in Envoy's stats).
    pub name: String,
    /// `Allow` or `Deny`.
    pub action: String,
    /// Whom the rule matches.
    pub principal: Principal,
}

/// A rule's principal: here, claims of a verified JWT.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Principal {
    /// JWT claims to match.
    pub jwt: JwtPrincipal,
}

/// Claims of one provider's JWT; the rule matches when every claim matches.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct JwtPrincipal {
    /// The provider (see [`JwtProvider::name`]).
    pub provider: String,
    /// The claims.
    pub claims: Vec<JwtClaim>,
}

/// A claim matches when it holds any of `values` (1 to 16 of them).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct JwtClaim {
    /// The claim name.
    pub name: String,
    /// `String` or `StringArray`.
    pub value_type: String,
    /// The accepted values.
    pub values: Vec<String>,
}

/// A reference to the object a policy attaches to.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PolicyTargetReference {
    /// API group of the target, `gateway.networking.k8s.io`.
    pub group: String,
    /// Kind of the target, `HTTPRoute`.
    pub kind: String,
    /// Name of the target.
    pub name: String,
}

/// The OIDC filter configuration.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Oidc {
    /// The identity provider.
    pub provider: OidcProvider,
    /// The client id registered at the provider.
    #[serde(rename = "clientID")]
    pub client_id: String,
    /// The Secret holding the client secret (key `client-secret`).
    pub client_secret: SecretObjectReference,
    /// Where the provider redirects back after login.
    #[serde(default, rename = "redirectURL", skip_serializing_if = "Option::is_none")]
    pub redirect_url: Option<String>,
    /// The path that logs the user out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logout_path: Option<String>,
    /// Scopes requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
    /// Forward the access token upstream as a bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_access_token: Option<bool>,
    /// Requests that get 401 instead of a redirect to the provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny_redirect: Option<DenyRedirect>,
    /// Requests carrying a bearer token skip the login flow and are judged by the JWT filter alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_through_auth_header: Option<bool>,
}

/// The identity provider endpoints.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OidcProvider {
    /// The issuer URL (discovery is read from it).
    pub issuer: String,
    /// Overrides the authorization endpoint (browser-facing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_endpoint: Option<String>,
    /// Overrides the token endpoint (gateway-facing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
    /// Overrides the end-session endpoint (browser-facing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_session_endpoint: Option<String>,
}

/// Where the OIDC client secret is: a Secret, possibly in another namespace (Gateway API's
/// `SecretObjectReference`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct SecretObjectReference {
    /// Always `""` (core group).
    pub group: String,
    /// Always `Secret`.
    pub kind: String,
    /// Secret name.
    pub name: String,
    /// Secret namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// Header rules that suppress the redirect to the provider.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct DenyRedirect {
    /// Matching headers.
    pub headers: Vec<DenyRedirectHeaderMatch>,
}

/// One header rule.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct DenyRedirectHeaderMatch {
    /// Header name.
    pub name: String,
    /// Exact, Prefix, Suffix or RegularExpression.
    #[serde(rename = "type")]
    pub match_type: String,
    /// Value to match.
    pub value: String,
}
