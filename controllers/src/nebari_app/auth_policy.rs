//! What a tenant may ask of Keycloak through a NebariApp. The operator provisions with the realm admin's
//! credentials, so an app could otherwise shape realm-signed tokens at will: a hard-coded `groups` claim, another
//! app's audience, a realm client scope carrying powerful mappers. The platform lists what is allowed
//! (`--keycloak-allowed-mapper-types`, `--keycloak-allowed-client-scopes`); the defaults are what the samples use.
//! Checked before any Keycloak write, so a refused app changes nothing in the realm.

use crds::nebari::AuthConfig;

use super::keycloak_groups::{self, GroupPattern};
use super::naming::AppNames;
use super::security_policy::{GATEWAY_GROUP_MAPPER, GATEWAY_GROUPS_CLAIM, GROUPS_CLAIM, scopes};

/// Mapper types an app may put on its client by default: group membership, a user attribute, and an audience
/// naming one of the app's own clients.
pub const DEFAULT_MAPPER_TYPES: &[&str] = &[GROUP_MEMBERSHIP_MAPPER, USER_ATTRIBUTE_MAPPER, AUDIENCE_MAPPER];
/// Realm client scopes an app may request by default: the standard OIDC scopes plus `groups`.
pub const DEFAULT_CLIENT_SCOPES: &[&str] = &[
    "openid",
    "profile",
    "email",
    "address",
    "phone",
    "offline_access",
    "roles",
    "web-origins",
    "acr",
    "basic",
    "groups",
];
const GROUP_MEMBERSHIP_MAPPER: &str = "oidc-group-membership-mapper";
const USER_ATTRIBUTE_MAPPER: &str = "oidc-usermodel-attribute-mapper";
const AUDIENCE_MAPPER: &str = "oidc-audience-mapper";
/// Claims no mapper an app configures may write, whatever its type: the token's own envelope (audience,
/// issuer, subject, lifetimes, session), Keycloak's role claims, identity, and the claim the gateway admits
/// `auth.groups` by. Written by a mapper they would forge whom or what a token is for.
const RESERVED_CLAIMS: &[&str] = &[
    "aud",
    "azp",
    "iss",
    "sub",
    "exp",
    "iat",
    "nbf",
    "jti",
    "typ",
    "sid",
    "nonce",
    "auth_time",
    "session_state",
    "scope",
    "acr",
    "realm_access",
    "resource_access",
    "preferred_username",
    "email",
    "email_verified",
    GATEWAY_GROUPS_CLAIM,
];

/// The platform's limits on what an app may provision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeycloakPolicy {
    /// Protocol mapper types an app may configure.
    pub mapper_types: Vec<String>,
    /// Client scopes an app may request.
    pub client_scopes: Vec<String>,
    /// Whether a client without an owner under one of an app's derived ids is adopted (only needed to take over
    /// the replaced operator's clients).
    pub adopt_unowned_clients: bool,
    /// Existing groups an app may add members to besides its own (`--keycloak-group-policy`).
    pub group_patterns: Vec<GroupPattern>,
}

impl Default for KeycloakPolicy {
    fn default() -> Self {
        Self {
            mapper_types: DEFAULT_MAPPER_TYPES.iter().map(|s| s.to_string()).collect(),
            client_scopes: DEFAULT_CLIENT_SCOPES.iter().map(|s| s.to_string()).collect(),
            adopt_unowned_clients: false,
            group_patterns: Vec::new(),
        }
    }
}

/// Why the policy refuses an app's auth configuration: a condition reason and a message for the tenant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// `ProtocolMapperNotAllowed` or `ClientScopeNotAllowed`.
    pub reason: &'static str,
    /// What was refused and what is allowed.
    pub message: String,
    /// The platform flag that would allow it, when one would (`manager takeover-check` shows it).
    pub remedy: Option<String>,
}

/// Checks the app's requested scopes, group names and mappers against `policy`.
pub fn check(auth: &AuthConfig, names: &AppNames, policy: &KeycloakPolicy) -> Result<(), Refusal> {
    // A group is named by its top-level name. With `/` a name could read as another group's path (a group
    // literally named `/shop-vip` beside `shop-vip`) and pass as it where groups are matched by name or path.
    if let Some(name) = keycloak_groups::wanted(auth)
        .into_keys()
        .find(|name| name.contains('/'))
    {
        return Err(Refusal {
            reason: "GroupNotAllowed",
            message: format!("group {name:?}: groups are named by their top-level name, without '/'"),
            remedy: None,
        });
    }
    for scope in scopes(auth) {
        if !policy.client_scopes.contains(&scope) {
            return Err(Refusal {
                reason: "ClientScopeNotAllowed",
                message: format!(
                    "client scope {scope} is not allowed; the platform allows: {}",
                    policy.client_scopes.join(", ")
                ),
                remedy: Some(format!("--keycloak-allowed-client-scopes with {scope} added")),
            });
        }
    }
    let own_clients = [
        names.keycloak_client(),
        names.keycloak_spa_client(auth.spa_client.as_ref().and_then(|s| s.client_id.as_deref())),
        names.keycloak_device_client(),
    ];
    let mappers = auth
        .keycloak_config
        .iter()
        .flat_map(|k| k.protocol_mappers.iter().flatten());
    for mapper in mappers {
        let kind = mapper.protocol_mapper.as_str();
        let refuse = |why: String| Refusal {
            reason: "ProtocolMapperNotAllowed",
            message: format!("protocol mapper {}: {why}", mapper.name),
            remedy: None,
        };
        if mapper.name == GATEWAY_GROUP_MAPPER {
            return Err(refuse("the name is the operator's own mapper's".to_string()));
        }
        if !policy.mapper_types.iter().any(|allowed| allowed == kind) {
            return Err(Refusal {
                remedy: Some(format!("--keycloak-allowed-mapper-types with {kind} added")),
                ..refuse(format!(
                    "type {kind} is not allowed; the platform allows: {}",
                    policy.mapper_types.join(", ")
                ))
            });
        }
        let config = |key: &str| mapper.config.as_ref().and_then(|c| c.get(key)).map(String::as_str);
        let claim = config("claim.name").unwrap_or_default();
        let writes = |reserved: &str| claim == reserved || claim.starts_with(&format!("{reserved}."));
        if let Some(reserved) = RESERVED_CLAIMS.iter().find(|reserved| writes(reserved)) {
            return Err(refuse(format!("no mapper may write the claim {reserved}")));
        }
        // Only a group-membership mapper may write `groups`: any other could put a group name into it.
        if kind != GROUP_MEMBERSHIP_MAPPER && writes(GROUPS_CLAIM) {
            return Err(refuse(format!(
                "only a group-membership mapper may write the claim {GROUPS_CLAIM}"
            )));
        }
        if kind == AUDIENCE_MAPPER {
            let client = config("included.client.audience").filter(|c| !c.is_empty());
            let custom = config("included.custom.audience").filter(|c| !c.is_empty());
            let own = |audience: Option<&str>| audience.is_none_or(|a| own_clients.iter().any(|c| c == a));
            if (client.is_none() && custom.is_none()) || !own(client) || !own(custom) {
                return Err(refuse(format!(
                    "an audience may only name this app's own clients ({})",
                    own_clients.join(", ")
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn auth(extra: serde_json::Value) -> AuthConfig {
        let mut base = json!({"enabled": true});
        if let (Some(base), Some(extra)) = (base.as_object_mut(), extra.as_object()) {
            base.extend(extra.clone());
        }
        serde_json::from_value(base).expect("valid auth")
    }

    fn mapper(kind: &str, config: serde_json::Value) -> serde_json::Value {
        json!({"keycloakConfig": {"protocolMappers": [{"name": "m", "protocolMapper": kind, "config": config}]}})
    }

    fn verdict(extra: serde_json::Value) -> Result<(), &'static str> {
        check(&auth(extra), &AppNames::new("team", "web"), &KeycloakPolicy::default()).map_err(|r| r.reason)
    }

    #[test]
    fn the_samples_mappers_and_scopes_pass() {
        assert_eq!(
            verdict(json!({"scopes": ["openid", "profile", "email", "groups"]})),
            Ok(())
        );
        let groups = mapper(
            GROUP_MEMBERSHIP_MAPPER,
            json!({"claim.name": "groups", "full.path": "false"}),
        );
        assert_eq!(verdict(groups), Ok(()));
        let attribute = mapper(
            USER_ATTRIBUTE_MAPPER,
            json!({"user.attribute": "dept", "claim.name": "department"}),
        );
        assert_eq!(verdict(attribute), Ok(()));
        let own = mapper(AUDIENCE_MAPPER, json!({"included.client.audience": "team-web"}));
        assert_eq!(verdict(own), Ok(()));
    }

    #[test]
    fn token_shaping_beyond_the_policy_is_refused() {
        let hardcoded = mapper(
            "oidc-hardcoded-claim-mapper",
            json!({"claim.name": "groups", "claim.value": "admin"}),
        );
        assert_eq!(verdict(hardcoded), Err("ProtocolMapperNotAllowed"));
        let other_audience = mapper(AUDIENCE_MAPPER, json!({"included.client.audience": "other-app"}));
        assert_eq!(verdict(other_audience), Err("ProtocolMapperNotAllowed"));
        let custom = mapper(
            AUDIENCE_MAPPER,
            json!({"included.custom.audience": "https://bank.example.com"}),
        );
        assert_eq!(verdict(custom), Err("ProtocolMapperNotAllowed"));
        let forged = mapper(
            USER_ATTRIBUTE_MAPPER,
            json!({"user.attribute": "x", "claim.name": "groups"}),
        );
        assert_eq!(verdict(forged), Err("ProtocolMapperNotAllowed"));
        assert_eq!(
            verdict(json!({"scopes": ["openid", "admin-scope"]})),
            Err("ClientScopeNotAllowed")
        );
    }

    #[test]
    fn reserved_claims_are_refused_to_every_mapper_type() {
        for claim in [
            "aud",
            "azp",
            "realm_access",
            "resource_access.account",
            GATEWAY_GROUPS_CLAIM,
        ] {
            for kind in [GROUP_MEMBERSHIP_MAPPER, USER_ATTRIBUTE_MAPPER] {
                let config = json!({"claim.name": claim, "user.attribute": "x"});
                assert_eq!(
                    verdict(mapper(kind, config)),
                    Err("ProtocolMapperNotAllowed"),
                    "{kind} writing {claim}"
                );
            }
        }
        let groups = mapper(GROUP_MEMBERSHIP_MAPPER, json!({"claim.name": "groups"}));
        assert_eq!(
            verdict(groups),
            Ok(()),
            "group membership is what the groups claim is for"
        );
        let nested = mapper(GROUP_MEMBERSHIP_MAPPER, json!({"claim.name": "teams.groups"}));
        assert_eq!(verdict(nested), Ok(()));
    }

    #[test]
    fn group_names_with_a_slash_are_refused_wherever_they_are_named() {
        assert_eq!(verdict(json!({"groups": ["/shop-vip"]})), Err("GroupNotAllowed"));
        let members = json!({"keycloakConfig": {"groups": [{"name": "a/b", "members": ["x"]}]}});
        assert_eq!(verdict(members), Err("GroupNotAllowed"));
        assert_eq!(verdict(json!({"groups": ["shop-vip"]})), Ok(()));
    }
}
