//! How an emulator starts: addresses, path prefix, realms, admin credentials, token lifetimes, feature
//! switches, and the users, groups and clients to create at start.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Settings of one emulator instance.
#[derive(Clone, Debug)]
pub struct EmulatorConfig {
    /// Address of the Keycloak listener; port 0 picks a free port.
    pub listen: SocketAddr,
    /// An optional second listener that serves only the test hooks, so a test or the sandbox can bring the
    /// server back after taking it down with connection refusal.
    pub control_listen: Option<SocketAddr>,
    /// Prefix of every Keycloak path (Keycloak's `http-relative-path`, e.g. `/auth`); empty for none.
    pub path_prefix: String,
    /// Username of the master realm's administrator (it holds the `admin` role: every realm, every operation).
    pub admin_username: String,
    /// Password of that administrator.
    pub admin_password: String,
    /// Realms to create besides `master`.
    pub realms: Vec<String>,
    /// Access-token lifetime in the master realm (Keycloak gives admin-cli 60 s there).
    pub master_access_token_lifespan: Duration,
    /// Access-token lifetime in every other realm (Keycloak's default for new realms is 300 s).
    pub realm_access_token_lifespan: Duration,
    /// Refresh-token lifetime (`refresh_expires_in`; Keycloak's SSO idle default is 1800 s).
    pub refresh_token_lifespan: Duration,
    /// Whether the `admin-fine-grained-authz:v1` and `token-exchange` features are on at start (off in 26.x).
    pub fine_grained_authz_v1: bool,
    /// Users to create at start.
    pub users: Vec<UserSeed>,
    /// Groups to create at start.
    pub groups: Vec<GroupSeed>,
    /// Clients to create at start.
    pub clients: Vec<ClientSeed>,
    /// Serve HTTPS with this certificate (from a test CA) instead of plain HTTP.
    pub tls: Option<emulator_kit::tls::ServerCert>,
}

impl Default for EmulatorConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            control_listen: None,
            path_prefix: String::new(),
            admin_username: "admin".into(),
            admin_password: "admin".into(),
            realms: Vec::new(),
            master_access_token_lifespan: Duration::from_secs(60),
            realm_access_token_lifespan: Duration::from_secs(300),
            refresh_token_lifespan: Duration::from_secs(1800),
            fine_grained_authz_v1: false,
            users: Vec::new(),
            groups: Vec::new(),
            clients: Vec::new(),
            tls: None,
        }
    }
}

impl EmulatorConfig {
    /// The defaults plus one realm besides `master`.
    pub fn with_realm(realm: &str) -> Self {
        Self {
            realms: vec![realm.to_string()],
            ..Self::default()
        }
    }
}

/// A user to create (at start or through the hooks).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserSeed {
    /// The realm the user lives in.
    pub realm: String,
    /// Username (stored lower-cased, as Keycloak does).
    pub username: String,
    /// Password for the password grant; `None` means the user cannot log in.
    #[serde(default)]
    pub password: Option<String>,
    /// Email (stored lower-cased).
    #[serde(default)]
    pub email: Option<String>,
    /// First name.
    #[serde(default)]
    pub first_name: Option<String>,
    /// Last name.
    #[serde(default)]
    pub last_name: Option<String>,
    /// Whether the account is disabled (Keycloak's `enabled: false`).
    #[serde(default)]
    pub disabled: bool,
    /// Admin roles: `admin` (master realm: everything), `realm-admin`, or single `realm-management` roles such
    /// as `view-users`, `manage-users`, `view-clients`, `manage-clients`, `manage-authorization`.
    #[serde(default)]
    pub roles: Vec<String>,
    /// Paths of groups (e.g. `/parent/child`) the user is a direct member of; missing groups are created.
    #[serde(default)]
    pub groups: Vec<String>,
    /// Custom attributes.
    #[serde(default)]
    pub attributes: BTreeMap<String, Vec<String>>,
}

impl UserSeed {
    /// A user of `realm` with a username and nothing else.
    pub fn new(realm: &str, username: &str) -> Self {
        Self {
            realm: realm.into(),
            username: username.into(),
            ..Self::default()
        }
    }

    /// Sets the password.
    pub fn password(mut self, password: &str) -> Self {
        self.password = Some(password.into());
        self
    }

    /// Sets the email.
    pub fn email(mut self, email: &str) -> Self {
        self.email = Some(email.into());
        self
    }

    /// Adds an admin role.
    pub fn role(mut self, role: &str) -> Self {
        self.roles.push(role.into());
        self
    }

    /// Adds a direct group membership by path.
    pub fn member_of(mut self, path: &str) -> Self {
        self.groups.push(path.into());
        self
    }

    /// Disables the account.
    pub fn disabled(mut self) -> Self {
        self.disabled = true;
        self
    }
}

/// A group to create by path; missing ancestors are created too.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupSeed {
    /// The realm.
    pub realm: String,
    /// Slash-separated path, e.g. `/c_local/c_local_admins`.
    pub path: String,
    /// Attributes of the last group of the path.
    #[serde(default)]
    pub attributes: BTreeMap<String, Vec<String>>,
}

impl GroupSeed {
    /// A group at `path` in `realm`.
    pub fn new(realm: &str, path: &str) -> Self {
        Self {
            realm: realm.into(),
            path: path.into(),
            attributes: BTreeMap::new(),
        }
    }
}

/// A client to create (at start or through the hooks).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientSeed {
    /// The realm.
    pub realm: String,
    /// The `clientId`.
    pub client_id: String,
    /// A public client (no secret) instead of a confidential one.
    #[serde(default)]
    pub public_client: bool,
    /// The secret of a confidential client; generated when absent.
    #[serde(default)]
    pub secret: Option<String>,
    /// Whether the password grant is allowed.
    #[serde(default)]
    pub direct_access_grants: bool,
    /// Whether the client-credentials grant is allowed (creates `service-account-<clientId>`).
    #[serde(default)]
    pub service_accounts: bool,
    /// Admin roles of the service-account user (see [`UserSeed::roles`]).
    #[serde(default)]
    pub service_account_roles: Vec<String>,
    /// Redirect URIs.
    #[serde(default)]
    pub redirect_uris: Vec<String>,
    /// Attributes.
    #[serde(default)]
    pub attributes: BTreeMap<String, String>,
}

impl ClientSeed {
    /// A confidential client with standard flow only.
    pub fn confidential(realm: &str, client_id: &str) -> Self {
        Self {
            realm: realm.into(),
            client_id: client_id.into(),
            ..Self::default()
        }
    }

    /// A confidential client allowed to use the client-credentials grant with the given admin roles.
    pub fn service_account(realm: &str, client_id: &str, secret: &str, roles: &[&str]) -> Self {
        Self {
            realm: realm.into(),
            client_id: client_id.into(),
            secret: Some(secret.into()),
            service_accounts: true,
            service_account_roles: roles.iter().map(|r| r.to_string()).collect(),
            ..Self::default()
        }
    }
}
