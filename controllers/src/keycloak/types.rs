//! The Keycloak representations the client reads, reduced to the fields the controllers use (unknown fields
//! are ignored, so newer servers decode too). Secrets are never part of these types.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The result of a create-or-get: the object, and whether this call created it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ensured<T> {
    /// The object.
    pub value: T,
    /// True when this call created it (false when it existed, including after a 409).
    pub created: bool,
}

/// A Keycloak group (`GroupRepresentation`): members of a group share its roles and, through Rancher's OIDC
/// provider, its Rancher bindings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Group {
    /// The id admin paths use (`/groups/{id}`).
    pub id: String,
    /// Name (unique among its siblings).
    pub name: String,
    /// Path, e.g. `/parent/child`.
    #[serde(default)]
    pub path: String,
    /// Parent id, for subgroups.
    #[serde(default)]
    pub parent_id: Option<String>,
    /// Number of direct children, when Keycloak reports it.
    #[serde(default)]
    pub sub_group_count: Option<u64>,
    /// Attributes (present in full representations).
    #[serde(default)]
    pub attributes: BTreeMap<String, Vec<String>>,
    /// Nested subgroups (only search results carry them).
    #[serde(default)]
    pub sub_groups: Vec<Group>,
}

/// A Keycloak user (`UserRepresentation`), as the lookups that resolve member identifiers return it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct User {
    /// The id admin paths use (`/users/{id}`); what memberships are recorded by.
    pub id: String,
    /// Username (Keycloak stores it lower-cased).
    pub username: String,
    /// Email address; members may be named by it.
    #[serde(default)]
    pub email: Option<String>,
    /// Given name (reported, never matched on).
    #[serde(default)]
    pub first_name: Option<String>,
    /// Family name (reported, never matched on).
    #[serde(default)]
    pub last_name: Option<String>,
    /// Whether the account is enabled.
    #[serde(default)]
    pub enabled: bool,
}

/// A client (its secret is deliberately not decoded; read it with `client_secret`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Client {
    /// Internal id (the `{uuid}` of admin paths).
    pub id: String,
    /// The public `clientId`.
    pub client_id: String,
    /// Display name.
    #[serde(default)]
    pub name: Option<String>,
    /// Whether it may be used.
    #[serde(default)]
    pub enabled: bool,
    /// A public client (no secret).
    #[serde(default)]
    pub public_client: bool,
    /// Only accepts bearer tokens, never starts a login (a legacy client type).
    #[serde(default)]
    pub bearer_only: bool,
    /// Authorization-code flow.
    #[serde(default)]
    pub standard_flow_enabled: bool,
    /// Password grant.
    #[serde(default)]
    pub direct_access_grants_enabled: bool,
    /// Client-credentials grant.
    #[serde(default)]
    pub service_accounts_enabled: bool,
    /// Where a login may redirect back to (exact URIs or `*` patterns).
    #[serde(default)]
    pub redirect_uris: Vec<String>,
    /// Origins allowed to call Keycloak from a browser (CORS).
    #[serde(default)]
    pub web_origins: Vec<String>,
    /// Free-form settings (PKCE method, post-logout redirect URIs, the owner this operator records).
    #[serde(default)]
    pub attributes: BTreeMap<String, String>,
    /// Whether its tokens carry every role the user has (Keycloak's default) rather than only the roles in the
    /// client's scope.
    #[serde(default = "keycloak_default_full_scope")]
    pub full_scope_allowed: bool,
    /// Protocol mappers (Keycloak leaves the key out when there are none).
    #[serde(default)]
    pub protocol_mappers: Vec<ProtocolMapper>,
    /// Names of the default client scopes.
    #[serde(default)]
    pub default_client_scopes: Vec<String>,
}

/// Keycloak's value of `fullScopeAllowed` when a representation leaves it out.
fn keycloak_default_full_scope() -> bool {
    true
}

/// A client scope (`ClientScopeRepresentation`): a named set of claims a client can be given by default.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientScope {
    /// The id admin paths use.
    pub id: String,
    /// The scope name a token request asks for (`groups`, `email`).
    pub name: String,
    /// Shown in the admin console; the operator marks scopes it created.
    #[serde(default)]
    pub description: Option<String>,
    /// `openid-connect` for the scopes this operator uses.
    #[serde(default)]
    pub protocol: Option<String>,
    /// Consent and token settings.
    #[serde(default)]
    pub attributes: BTreeMap<String, String>,
}

/// A client scope attached to a client (`default-client-scopes` rows).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct ScopeRef {
    /// Scope id.
    pub id: String,
    /// Scope name.
    pub name: String,
}

/// A protocol mapper, as read and as written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProtocolMapper {
    /// Id (absent until created).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Name, unique per client; mappers are matched by it.
    pub name: String,
    /// `openid-connect`.
    pub protocol: String,
    /// The mapper type, e.g. `oidc-audience-mapper`.
    pub protocol_mapper: String,
    /// String settings.
    #[serde(default)]
    pub config: BTreeMap<String, String>,
}

impl ProtocolMapper {
    /// An OIDC mapper of `mapper_type` with `config`.
    pub fn oidc(name: &str, mapper_type: &str, config: &[(&str, &str)]) -> Self {
        Self {
            id: None,
            name: name.into(),
            protocol: "openid-connect".into(),
            protocol_mapper: mapper_type.into(),
            config: config.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }
    }

    /// Adds `audience_client_id` to the `aud` claim of access tokens (how a device-flow or peer client's tokens
    /// become acceptable to the confidential client).
    pub fn audience(name: &str, audience_client_id: &str) -> Self {
        Self::oidc(
            name,
            "oidc-audience-mapper",
            &[
                ("included.client.audience", audience_client_id),
                ("id.token.claim", "false"),
                ("access.token.claim", "true"),
                ("introspection.token.claim", "true"),
            ],
        )
    }

    /// Puts the user's groups into the `claim_name` claim of ID, access and userinfo tokens; `full_path`
    /// chooses `/parent/child` over plain names.
    pub fn group_membership(name: &str, claim_name: &str, full_path: bool) -> Self {
        Self::oidc(
            name,
            "oidc-group-membership-mapper",
            &[
                ("claim.name", claim_name),
                ("full.path", if full_path { "true" } else { "false" }),
                ("id.token.claim", "true"),
                ("access.token.claim", "true"),
                ("userinfo.token.claim", "true"),
            ],
        )
    }

    /// Puts the user's group paths (`/parent/child`) into the `claim_name` claim of access tokens only: a claim
    /// for a gateway to authorize by, which the app's ID token and userinfo need not carry.
    pub fn gateway_group_paths(name: &str, claim_name: &str) -> Self {
        Self::oidc(
            name,
            "oidc-group-membership-mapper",
            &[
                ("claim.name", claim_name),
                ("full.path", "true"),
                ("id.token.claim", "false"),
                ("access.token.claim", "true"),
                ("userinfo.token.claim", "false"),
                ("introspection.token.claim", "true"),
            ],
        )
    }

    /// Whether this stored mapper has the effect of `wanted` (type, protocol, and every config entry `wanted`
    /// sets; ids and names aside). Entries `wanted` leaves out are not compared: Keycloak fills in defaults of
    /// its own (e.g. `introspection.token.claim`) on every create and update, so a stored mapper never equals
    /// what was sent.
    pub fn same_settings(&self, wanted: &ProtocolMapper) -> bool {
        self.protocol == wanted.protocol
            && self.protocol_mapper == wanted.protocol_mapper
            && wanted
                .config
                .iter()
                .all(|(key, value)| self.config.get(key) == Some(value))
    }
}

/// A client's fine-grained admin permissions (v1).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagementPermissions {
    /// Whether they are enabled.
    pub enabled: bool,
    /// The authorization resource of the client.
    #[serde(default)]
    pub resource: Option<String>,
    /// Permission id per scope (`view`, `manage`, …, `token-exchange`).
    #[serde(default)]
    pub scope_permissions: BTreeMap<String, String>,
}

/// An authorization scope of `realm-management` (e.g. `token-exchange`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct AuthzScope {
    /// The id permissions refer to it by.
    pub id: String,
    /// The scope's name, e.g. `token-exchange`.
    pub name: String,
}

/// An authorization policy or permission of `realm-management`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthzPolicy {
    /// The id other policies and permissions refer to it by.
    pub id: String,
    /// Unique within `realm-management`; the operator names its policies after the requesting client.
    pub name: String,
    /// `client`, `scope`, ….
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// `POSITIVE` or `NEGATIVE`.
    #[serde(default)]
    pub logic: Option<String>,
    /// `UNANIMOUS`, `AFFIRMATIVE` or `CONSENSUS`.
    #[serde(default)]
    pub decision_strategy: Option<String>,
    /// For client policies read through `policy/client/{id}`: the clients' internal ids.
    #[serde(default)]
    pub clients: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn representations_decode_with_unknown_and_missing_fields() {
        let group: Group = serde_json::from_str(
            r#"{"id":"g","name":"n","path":"/p/n","parentId":"p","subGroupCount":3,"subGroups":[],"access":{"view":true}}"#,
        )
        .expect("group");
        assert_eq!(group.parent_id.as_deref(), Some("p"));
        assert_eq!(group.sub_group_count, Some(3));
        let client: Client =
            serde_json::from_str(r#"{"id":"u","clientId":"app","secret":"s3cr3t","attributes":{"a":"b"}}"#)
                .expect("client");
        assert!(
            client.protocol_mappers.is_empty(),
            "protocolMappers is left out when there are none"
        );
        assert!(!format!("{client:?}").contains("s3cr3t"), "the secret is never decoded");
    }

    #[test]
    fn mapper_builders_match_what_nebari_configures() {
        let groups = ProtocolMapper::group_membership("group-membership", "groups", false);
        assert_eq!(groups.protocol_mapper, "oidc-group-membership-mapper");
        assert_eq!(groups.config.get("full.path").map(String::as_str), Some("false"));
        assert_eq!(
            groups.config.get("userinfo.token.claim").map(String::as_str),
            Some("true")
        );
        let audience = ProtocolMapper::audience("audience-confidential-client", "ns-app");
        assert_eq!(
            audience.config.get("included.client.audience").map(String::as_str),
            Some("ns-app")
        );
        let mut moved = audience.clone();
        moved.id = Some("id".into());
        assert!(audience.same_settings(&moved));
        assert!(!audience.same_settings(&groups));
        // As stored: Keycloak adds defaults of its own; a changed entry the operator sets still counts.
        let mut stored = audience.clone();
        stored.config.insert("userinfo.token.claim".into(), "false".into());
        assert!(
            stored.same_settings(&audience),
            "defaults Keycloak filled in are not a difference"
        );
        stored
            .config
            .insert("included.client.audience".into(), "someone-else".into());
        assert!(!stored.same_settings(&audience));
        let json = serde_json::to_value(&audience).expect("json");
        assert_eq!(json["protocolMapper"], "oidc-audience-mapper");
        assert!(json.get("id").is_none(), "no id in a create body");
    }
}
