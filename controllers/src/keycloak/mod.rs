//! The Keycloak admin client shared by NebariApp (clients, secrets, scopes, mappers, groups, token exchange v1
//! and v2, server info)
//! and ManagedRancherProject (parent and child groups, memberships, user lookups).
//!
//! Built on [`framework::http`]: timeouts, retries of idempotent calls, `external_api_*` metrics and sanitized
//! errors. The admin token (password grant through `admin-cli`, or client credentials) is cached per
//! credential fingerprint until shortly before it expires; credentials come from a [`CredentialsProvider`] at
//! use time, so rotating them needs no restart. Every listing pages with explicit `first`/`max`, creates are
//! create-or-get (a 409 is resolved by looking up again), group names are checked against Keycloak's
//! 255-character limit before sending, and a 401 on an admin call drops the token and retries once.
//!
//! ```no_run
//! # async fn demo() -> Result<(), controllers::keycloak::KeycloakError> {
//! use std::sync::Arc;
//! use controllers::keycloak::{Credentials, KeycloakClient, KeycloakConfig, StaticCredentials};
//! use secrecy::SecretString;
//!
//! let credentials = Credentials::admin_password("admin", SecretString::from("changeme"));
//! let keycloak = KeycloakClient::new(
//!     KeycloakConfig::new("http://keycloak:8080/auth"),
//!     Arc::new(StaticCredentials(credentials)),
//!     None,
//! )?;
//! let realm = keycloak.realm("nebari");
//! let parent = realm.ensure_top_level_group("c_local", &Default::default()).await?;
//! realm.ensure_child_group(&parent.value.id, "c_local_admins", &Default::default()).await?;
//! # Ok(())
//! # }
//! ```

mod client;
mod clients;
mod connection;
mod credentials;
mod error;
mod groups;
mod mappers;
mod scopes;
mod secret_credentials;
mod server_info;
mod standard_token_exchange;
mod token;
mod token_exchange;
mod types;
mod users;

pub use client::{KeycloakClient, KeycloakConfig, RealmClient};
pub use clients::{
    ClientSpec, ClientUpdate, DEVICE_GRANT_ATTRIBUTE, PKCE_METHOD_ATTRIBUTE, POST_LOGOUT_REDIRECT_URIS_ATTRIBUTE,
};
pub use connection::KeycloakConnection;
pub use credentials::{ADMIN_CLI, Credentials, CredentialsProvider, StaticCredentials};
pub use error::{ErrorKind, KeycloakError, TLS_VERIFICATION_FAILED};
pub use groups::{MAX_GROUP_NAME_CHARS, check_group_name};
pub use mappers::MapperChange;
pub use scopes::{ClientScopeSpec, DefaultScopeSync};
pub use secret_credentials::SecretCredentials;
pub use server_info::{STANDARD_TOKEN_EXCHANGE_FEATURE, ServerInfo};
pub use standard_token_exchange::{PEERS_ATTRIBUTE, STANDARD_TOKEN_EXCHANGE_ATTRIBUTE, audience_mapper_name};
pub use token_exchange::{
    FGAP_V1_FEATURE, REALM_MANAGEMENT_CLIENT, TOKEN_EXCHANGE_SCOPE, TokenExchangeGrant, TokenExchangeRequester,
};
pub use types::{
    AuthzPolicy, AuthzScope, Client, ClientScope, Ensured, Group, ManagementPermissions, ProtocolMapper, ScopeRef, User,
};
pub use users::{UserRef, UserResolution};
