//! The emulator's data: realms with their users, group trees, memberships, clients, client scopes and the
//! authorization objects of fine-grained admin permissions.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The scopes of fine-grained client permissions (v1), in the order Keycloak lists them.
pub const CLIENT_PERMISSION_SCOPES: &[&str] = &[
    "view",
    "manage",
    "configure",
    "map-roles",
    "map-roles-client-scope",
    "map-roles-composite",
    "token-exchange",
];

/// Name of the client that holds a realm's admin permissions.
pub const REALM_MANAGEMENT: &str = "realm-management";

/// One realm.
#[derive(Debug)]
pub struct Realm {
    /// Internal id.
    pub id: String,
    /// Name (`realm` in representations).
    pub name: String,
    /// Lifetime of access tokens issued here.
    pub access_token_lifespan: Duration,
    /// Lifetime of refresh tokens issued here.
    pub refresh_token_lifespan: Duration,
    /// Users by id.
    pub users: BTreeMap<String, User>,
    /// Groups by id (the tree is held by `parent_id`).
    pub groups: BTreeMap<String, Group>,
    /// Direct memberships as (user id, group id).
    pub memberships: BTreeSet<(String, String)>,
    /// Clients by internal id.
    pub clients: BTreeMap<String, Client>,
    /// Client scopes by id.
    pub client_scopes: BTreeMap<String, ClientScope>,
    /// Ids of the scopes new clients get as default scopes.
    pub default_default_scopes: Vec<String>,
    /// Ids of the scopes new clients get as optional scopes.
    pub default_optional_scopes: Vec<String>,
    /// The resource server of the `realm-management` client (fine-grained admin permissions).
    pub authz: Authz,
}

/// A user account.
#[derive(Clone, Debug)]
pub struct User {
    /// Id.
    pub id: String,
    /// Lower-cased username.
    pub username: String,
    /// Lower-cased email.
    pub email: Option<String>,
    /// First name.
    pub first_name: Option<String>,
    /// Last name.
    pub last_name: Option<String>,
    /// Whether the account may log in.
    pub enabled: bool,
    /// Whether the email is verified.
    pub email_verified: bool,
    /// Creation time in epoch milliseconds.
    pub created_timestamp: u64,
    /// Custom attributes.
    pub attributes: BTreeMap<String, Vec<String>>,
    /// Password for the password grant.
    pub password: Option<String>,
    /// Admin roles (see `UserSeed::roles`).
    pub roles: BTreeSet<String>,
    /// For a service-account user, the internal id of its client.
    pub service_account_client: Option<String>,
}

/// A group; the tree is formed by `parent_id`.
#[derive(Clone, Debug)]
pub struct Group {
    /// Id.
    pub id: String,
    /// Name, unique among its siblings (case-sensitive).
    pub name: String,
    /// Parent group id; `None` at the top level.
    pub parent_id: Option<String>,
    /// Description (Keycloak 26).
    pub description: Option<String>,
    /// Attributes.
    pub attributes: BTreeMap<String, Vec<String>>,
}

/// The settings of a client as they appear in its representation, in Keycloak's key order.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientSettings {
    /// The public identifier.
    pub client_id: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Root URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_url: Option<String>,
    /// Admin URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_url: Option<String>,
    /// Base URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Legacy flag, always false.
    pub surrogate_auth_required: bool,
    /// Whether the client may be used.
    pub enabled: bool,
    /// Console display flag.
    pub always_display_in_console: bool,
    /// `client-secret` for confidential clients.
    pub client_authenticator_type: String,
    /// The secret of a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// Allowed redirect URIs.
    pub redirect_uris: Vec<String>,
    /// Allowed CORS origins.
    pub web_origins: Vec<String>,
    /// Not-before policy.
    pub not_before: i64,
    /// Bearer-only (like `realm-management`).
    pub bearer_only: bool,
    /// Consent screen.
    pub consent_required: bool,
    /// Authorization-code flow.
    pub standard_flow_enabled: bool,
    /// Implicit flow.
    pub implicit_flow_enabled: bool,
    /// Password grant.
    pub direct_access_grants_enabled: bool,
    /// Client-credentials grant.
    pub service_accounts_enabled: bool,
    /// Public (no secret) client.
    pub public_client: bool,
    /// Front-channel logout.
    pub frontchannel_logout: bool,
    /// `openid-connect`.
    pub protocol: String,
    /// String attributes (PKCE, device grant, post-logout redirect URIs…).
    pub attributes: BTreeMap<String, String>,
    /// Flow overrides.
    pub authentication_flow_binding_overrides: BTreeMap<String, String>,
    /// Full scope allowed.
    pub full_scope_allowed: bool,
    /// Node re-registration timeout.
    pub node_re_registration_timeout: i64,
}

impl ClientSettings {
    /// What Keycloak stores when a create request carries only `clientId` (reference A4).
    pub fn defaults(client_id: &str) -> Self {
        Self {
            client_id: client_id.into(),
            name: None,
            description: None,
            root_url: None,
            admin_url: None,
            base_url: None,
            surrogate_auth_required: false,
            enabled: true,
            always_display_in_console: false,
            client_authenticator_type: "client-secret".into(),
            secret: None,
            redirect_uris: Vec::new(),
            web_origins: Vec::new(),
            not_before: 0,
            bearer_only: false,
            consent_required: false,
            standard_flow_enabled: true,
            implicit_flow_enabled: false,
            direct_access_grants_enabled: false,
            service_accounts_enabled: false,
            public_client: false,
            frontchannel_logout: true,
            protocol: "openid-connect".into(),
            attributes: BTreeMap::new(),
            authentication_flow_binding_overrides: BTreeMap::new(),
            full_scope_allowed: true,
            node_re_registration_timeout: -1,
        }
    }
}

/// A client and what hangs off it.
#[derive(Clone, Debug)]
pub struct Client {
    /// Internal id (the `{uuid}` of admin paths).
    pub id: String,
    /// The representation fields.
    pub settings: ClientSettings,
    /// Protocol mappers, in creation order.
    pub protocol_mappers: Vec<ProtocolMapper>,
    /// Ids of default client scopes.
    pub default_scopes: Vec<String>,
    /// Ids of optional client scopes.
    pub optional_scopes: Vec<String>,
    /// Fine-grained admin permissions of this client, when enabled.
    pub permissions: Option<ClientPermissions>,
}

/// The authorization objects created when a client's admin permissions are enabled.
#[derive(Clone, Debug)]
pub struct ClientPermissions {
    /// The authz resource `client.resource.<uuid>`.
    pub resource_id: String,
    /// Permission (policy) id per scope name.
    pub scope_permissions: BTreeMap<String, String>,
}

/// A protocol mapper (of a client or a client scope).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProtocolMapper {
    /// Id (absent in create requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Name, unique per client.
    #[serde(default)]
    pub name: String,
    /// `openid-connect`.
    #[serde(default = "openid_connect")]
    pub protocol: String,
    /// The mapper type, e.g. `oidc-audience-mapper`.
    #[serde(default)]
    pub protocol_mapper: String,
    /// Legacy flag.
    #[serde(default)]
    pub consent_required: bool,
    /// String settings.
    #[serde(default)]
    pub config: BTreeMap<String, String>,
}

/// The protocol of every client, scope and mapper the emulator knows.
pub fn openid_connect() -> String {
    "openid-connect".into()
}

/// A client scope.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientScope {
    /// Id.
    #[serde(default)]
    pub id: String,
    /// Name, unique per realm.
    #[serde(default)]
    pub name: String,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `openid-connect`.
    #[serde(default = "openid_connect")]
    pub protocol: String,
    /// Attributes such as `include.in.token.scope`.
    #[serde(default)]
    pub attributes: BTreeMap<String, String>,
    /// Mappers of the scope.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protocol_mappers: Vec<ProtocolMapper>,
}

/// The resource server of `realm-management`: scopes, resources and policies (permissions are policies).
#[derive(Clone, Debug, Default)]
pub struct Authz {
    /// Scopes by id.
    pub scopes: BTreeMap<String, AuthzScope>,
    /// Resources by id.
    pub resources: BTreeMap<String, AuthzResource>,
    /// Policies and permissions by id.
    pub policies: BTreeMap<String, Policy>,
}

/// An authorization scope such as `token-exchange`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AuthzScope {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
}

/// An authorization resource such as `client.resource.<uuid>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthzResource {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
    /// Resource type.
    pub kind: String,
    /// Scope ids.
    pub scopes: Vec<String>,
}

/// A policy (`client`, …) or a permission (`scope`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Id.
    pub id: String,
    /// Name, unique in the resource server.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// `client`, `scope`, ….
    pub kind: String,
    /// `POSITIVE` or `NEGATIVE`.
    pub logic: String,
    /// `UNANIMOUS`, `AFFIRMATIVE` or `CONSENSUS`.
    pub decision_strategy: String,
    /// For client policies: internal ids of the clients.
    pub clients: Vec<String>,
    /// For permissions: resource ids.
    pub resources: Vec<String>,
    /// For permissions: scope ids.
    pub scopes: Vec<String>,
    /// For permissions: the policies they apply.
    pub policies: Vec<String>,
}
