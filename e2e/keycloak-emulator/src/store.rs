//! Everything one emulator knows: its realms and the tokens issued so far, created from the configuration and
//! extended by seeds.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::config::{ClientSeed, EmulatorConfig, GroupSeed, UserSeed};
use super::ids::new_id;
use super::model::{Authz, ClientScope, ClientSettings, ProtocolMapper, REALM_MANAGEMENT, Realm, openid_connect};
use super::realm::NewUser;
use super::wire::ApiError;

/// How a built-in scope reaches clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Attach {
    /// A realm default scope: new clients get it as a default scope.
    Default,
    /// A realm optional scope: new clients get it as an optional scope.
    Optional,
    /// Attached as a default scope to clients with a service account only (`service_account`, Keycloak 26.1+).
    ServiceAccounts,
}

/// The OIDC client scopes every realm of Keycloak 26 starts with, and how each reaches clients.
const BUILTIN_SCOPES: &[(&str, Attach)] = &[
    ("acr", Attach::Default),
    ("address", Attach::Optional),
    ("basic", Attach::Default),
    ("email", Attach::Default),
    ("microprofile-jwt", Attach::Optional),
    ("offline_access", Attach::Optional),
    ("organization", Attach::Optional),
    ("phone", Attach::Optional),
    ("profile", Attach::Default),
    ("roles", Attach::Default),
    ("service_account", Attach::ServiceAccounts),
    ("web-origins", Attach::Default),
];

/// The name of the scope Keycloak attaches to clients with a service account.
pub const SERVICE_ACCOUNT_SCOPE: &str = "service_account";

/// The mappers of the `service_account` scope: the client's id, host and address from the user session notes.
fn service_account_mappers() -> Vec<ProtocolMapper> {
    [
        ("Client ID", "client_id", "client_id"),
        ("Client Host", "clientHost", "clientHost"),
        ("Client IP Address", "clientAddress", "clientAddress"),
    ]
    .into_iter()
    .map(|(name, note, claim)| ProtocolMapper {
        id: Some(new_id()),
        name: name.into(),
        protocol: openid_connect(),
        protocol_mapper: "oidc-usersessionmodel-note-mapper".into(),
        consent_required: false,
        config: BTreeMap::from([
            ("user.session.note".to_string(), note.to_string()),
            ("claim.name".to_string(), claim.to_string()),
            ("jsonType.label".to_string(), "String".to_string()),
            ("id.token.claim".to_string(), "true".to_string()),
            ("access.token.claim".to_string(), "true".to_string()),
            ("introspection.token.claim".to_string(), "true".to_string()),
        ]),
    })
    .collect()
}

/// Everything the emulator knows.
#[derive(Debug)]
pub struct Store {
    /// Realms by name.
    pub realms: BTreeMap<String, Realm>,
    /// Access tokens by their text.
    pub tokens: HashMap<String, IssuedToken>,
    /// Refresh tokens by their text.
    pub refresh_tokens: HashMap<String, IssuedToken>,
    /// Whether `admin-fine-grained-authz:v1` (and `token-exchange`) are on.
    pub fgap_v1: bool,
    /// Whether standard token exchange (`token-exchange-standard:v2`, on by default in 26.2+) is on.
    pub standard_token_exchange: bool,
    /// Lifetime of new realms' access tokens.
    realm_access_token_lifespan: Duration,
    /// Lifetime of refresh tokens.
    refresh_token_lifespan: Duration,
}

/// Who a token was issued to, and until when it is good.
#[derive(Clone, Debug)]
pub struct IssuedToken {
    /// The realm that issued it.
    pub realm: String,
    /// The internal id of the client it was issued to.
    pub client: String,
    /// The user (or service-account user) it acts for.
    pub user: String,
    /// When it stops being accepted.
    pub expires_at: Instant,
}

impl Store {
    /// The state an emulator starts with: `master` (admin user, `admin-cli`), the configured realms and seeds.
    pub fn new(config: &EmulatorConfig, now_millis: u64) -> Result<Self, ApiError> {
        let mut store = Store {
            realms: BTreeMap::new(),
            tokens: HashMap::new(),
            refresh_tokens: HashMap::new(),
            fgap_v1: config.fine_grained_authz_v1,
            standard_token_exchange: true,
            realm_access_token_lifespan: config.realm_access_token_lifespan,
            refresh_token_lifespan: config.refresh_token_lifespan,
        };
        store.add_realm("master");
        if let Some(master) = store.realms.get_mut("master") {
            master.access_token_lifespan = config.master_access_token_lifespan;
        }
        for realm in &config.realms {
            store.add_realm(realm);
        }
        let admin = UserSeed::new("master", &config.admin_username)
            .password(&config.admin_password)
            .role("admin");
        store.seed_user(&admin, now_millis)?;
        for group in &config.groups {
            store.seed_group(group)?;
        }
        for user in &config.users {
            store.seed_user(user, now_millis)?;
        }
        for client in &config.clients {
            store.seed_client(client, now_millis)?;
        }
        Ok(store)
    }

    /// Creates a realm with Keycloak's built-in scopes and clients (`admin-cli`, `realm-management`); no-op if
    /// it exists.
    pub fn add_realm(&mut self, name: &str) {
        if self.realms.contains_key(name) {
            return;
        }
        let mut realm = Realm {
            id: new_id(),
            name: name.into(),
            access_token_lifespan: self.realm_access_token_lifespan,
            refresh_token_lifespan: self.refresh_token_lifespan,
            users: BTreeMap::new(),
            groups: BTreeMap::new(),
            memberships: BTreeSet::new(),
            clients: BTreeMap::new(),
            client_scopes: BTreeMap::new(),
            default_default_scopes: Vec::new(),
            default_optional_scopes: Vec::new(),
            authz: Authz::default(),
        };
        for (scope, attach) in BUILTIN_SCOPES {
            let id = new_id();
            let hidden = matches!(
                *scope,
                "acr" | "basic" | "roles" | "web-origins" | SERVICE_ACCOUNT_SCOPE
            );
            let include = if hidden { "false" } else { "true" };
            let consent = if *scope == SERVICE_ACCOUNT_SCOPE {
                "false"
            } else {
                "true"
            };
            let protocol_mappers = if *scope == SERVICE_ACCOUNT_SCOPE {
                service_account_mappers()
            } else {
                Vec::new()
            };
            realm.client_scopes.insert(
                id.clone(),
                ClientScope {
                    id: id.clone(),
                    name: (*scope).into(),
                    description: None,
                    protocol: openid_connect(),
                    attributes: BTreeMap::from([
                        ("include.in.token.scope".to_string(), include.to_string()),
                        ("display.on.consent.screen".to_string(), consent.to_string()),
                    ]),
                    protocol_mappers,
                },
            );
            match attach {
                Attach::Default => realm.default_default_scopes.push(id),
                Attach::Optional => realm.default_optional_scopes.push(id),
                Attach::ServiceAccounts => {}
            }
        }
        let mut admin_cli = ClientSettings::defaults("admin-cli");
        admin_cli.public_client = true;
        admin_cli.standard_flow_enabled = false;
        admin_cli.direct_access_grants_enabled = true;
        realm.insert_client(new_id(), admin_cli, Vec::new());
        let mut management = ClientSettings::defaults(REALM_MANAGEMENT);
        management.bearer_only = true;
        management.standard_flow_enabled = false;
        realm.insert_client(new_id(), management, Vec::new());
        self.realms.insert(name.into(), realm);
    }

    /// A realm by name, or Keycloak's admin 404 `Realm not found.`.
    pub fn realm_mut(&mut self, name: &str) -> Result<&mut Realm, ApiError> {
        self.realms
            .get_mut(name)
            .ok_or_else(|| ApiError::not_found("Realm not found."))
    }

    /// Creates a user from a seed, with its memberships (missing groups are created); returns its id.
    pub fn seed_user(&mut self, seed: &UserSeed, now_millis: u64) -> Result<String, ApiError> {
        let realm = self.realm_mut(&seed.realm)?;
        let id = realm.add_user(
            NewUser {
                username: seed.username.clone(),
                email: seed.email.clone(),
                first_name: seed.first_name.clone(),
                last_name: seed.last_name.clone(),
                enabled: !seed.disabled,
                attributes: seed.attributes.clone(),
            },
            now_millis,
        )?;
        if let Some(user) = realm.users.get_mut(&id) {
            user.password = seed.password.clone();
            user.roles = seed.roles.iter().cloned().collect();
        }
        for path in &seed.groups {
            let group = realm.ensure_group_path(path, &BTreeMap::new())?;
            realm.memberships.insert((id.clone(), group));
        }
        Ok(id)
    }

    /// Creates the groups of a path that do not exist yet; returns the id of the last one.
    pub fn seed_group(&mut self, seed: &GroupSeed) -> Result<String, ApiError> {
        self.realm_mut(&seed.realm)?
            .ensure_group_path(&seed.path, &seed.attributes)
    }

    /// Creates a client from a seed; returns its internal id.
    pub fn seed_client(&mut self, seed: &ClientSeed, now_millis: u64) -> Result<String, ApiError> {
        let realm = self.realm_mut(&seed.realm)?;
        let mut request = serde_json::json!({
            "clientId": seed.client_id,
            "publicClient": seed.public_client,
            "directAccessGrantsEnabled": seed.direct_access_grants,
            "serviceAccountsEnabled": seed.service_accounts,
            "redirectUris": seed.redirect_uris,
            "attributes": seed.attributes,
        });
        if let Some(secret) = &seed.secret {
            request["secret"] = Value::String(secret.clone());
        }
        let id = realm.create_client(&request, now_millis)?;
        if let Some(user) = realm
            .users
            .values_mut()
            .find(|u| u.service_account_client.as_deref() == Some(&id))
        {
            user.roles = seed.service_account_roles.iter().cloned().collect();
        }
        Ok(id)
    }
}
