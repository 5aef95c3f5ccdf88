//! Admin credentials and where they come from. Controllers pass a [`CredentialsProvider`] that reads them
//! (e.g. from a Secret) at use time, so rotated credentials take effect without a restart; a fixed set can be
//! passed per call instead.

use std::fmt;

use futures::future::BoxFuture;
use secrecy::{ExposeSecret, SecretString};

use super::error::KeycloakError;

/// The public client Keycloak provides for admin logins with a password.
pub const ADMIN_CLI: &str = "admin-cli";

/// How to obtain an admin token.
#[derive(Clone)]
pub enum Credentials {
    /// Password grant for an admin user, normally through the public `admin-cli` client.
    Password {
        /// The admin's username.
        username: String,
        /// The admin's password.
        password: SecretString,
        /// The client to log in through (`admin-cli`).
        client_id: String,
        /// The secret, when that client is confidential.
        client_secret: Option<SecretString>,
    },
    /// Client-credentials grant for a confidential client with a service account holding admin roles.
    ClientCredentials {
        /// The `clientId` of the administrating client.
        client_id: String,
        /// The secret that client authenticates with.
        client_secret: SecretString,
    },
}

impl Credentials {
    /// An admin user logging in through `admin-cli`.
    pub fn admin_password(username: impl Into<String>, password: SecretString) -> Self {
        Credentials::Password {
            username: username.into(),
            password,
            client_id: ADMIN_CLI.into(),
            client_secret: None,
        }
    }

    /// A service-account client.
    pub fn client_credentials(client_id: impl Into<String>, client_secret: SecretString) -> Self {
        Credentials::ClientCredentials {
            client_id: client_id.into(),
            client_secret,
        }
    }

    /// The client the token is requested for.
    pub fn client_id(&self) -> &str {
        match self {
            Credentials::Password { client_id, .. } | Credentials::ClientCredentials { client_id, .. } => client_id,
        }
    }

    /// A fingerprint for the token cache: a hash over everything that identifies the login, secrets included,
    /// so a rotated password or secret forces a new login.
    pub(crate) fn fingerprint(&self, base_url: &str, token_realm: &str) -> String {
        match self {
            Credentials::Password {
                username,
                password,
                client_id,
                client_secret,
            } => framework::http::credential_fingerprint(&[
                base_url,
                token_realm,
                "password",
                client_id,
                username,
                password.expose_secret(),
                client_secret.as_ref().map_or("", |s| s.expose_secret()),
            ]),
            Credentials::ClientCredentials {
                client_id,
                client_secret,
            } => framework::http::credential_fingerprint(&[
                base_url,
                token_realm,
                "client_credentials",
                client_id,
                client_secret.expose_secret(),
            ]),
        }
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credentials::Password {
                username, client_id, ..
            } => f
                .debug_struct("Password")
                .field("username", username)
                .field("client_id", client_id)
                .finish_non_exhaustive(),
            Credentials::ClientCredentials { client_id, .. } => f
                .debug_struct("ClientCredentials")
                .field("client_id", client_id)
                .finish_non_exhaustive(),
        }
    }
}

/// Supplies the current admin credentials each time the client needs to log in or check its cached token.
pub trait CredentialsProvider: Send + Sync {
    /// The credentials to use now; fail with [`KeycloakError::CredentialsUnavailable`] when they cannot be read.
    fn credentials(&self) -> BoxFuture<'_, Result<Credentials, KeycloakError>>;
}

/// A provider that always returns the same credentials (tests, static configuration).
#[derive(Clone, Debug)]
pub struct StaticCredentials(pub Credentials);

impl CredentialsProvider for StaticCredentials {
    fn credentials(&self) -> BoxFuture<'_, Result<Credentials, KeycloakError>> {
        Box::pin(async move { Ok(self.0.clone()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_change_with_any_part_of_the_login() {
        let a = Credentials::admin_password("admin", SecretString::from("one"));
        let b = Credentials::admin_password("admin", SecretString::from("two"));
        let base = "http://kc";
        assert_eq!(a.fingerprint(base, "master"), a.clone().fingerprint(base, "master"));
        assert_ne!(
            a.fingerprint(base, "master"),
            b.fingerprint(base, "master"),
            "rotated password"
        );
        assert_ne!(
            a.fingerprint(base, "master"),
            a.fingerprint("http://other", "master"),
            "other server"
        );
        assert_ne!(
            a.fingerprint(base, "master"),
            a.fingerprint(base, "nebari"),
            "other token realm"
        );
        let c = Credentials::client_credentials("admin", SecretString::from("one"));
        assert_ne!(
            a.fingerprint(base, "master"),
            c.fingerprint(base, "master"),
            "other grant"
        );
    }

    #[test]
    fn debug_output_never_shows_secrets() {
        let password = Credentials::admin_password("admin", SecretString::from("hunter2-secret"));
        let client = Credentials::client_credentials("svc", SecretString::from("s3cr3t-value"));
        let shown = format!("{password:?} {client:?}");
        assert!(
            !shown.contains("hunter2-secret") && !shown.contains("s3cr3t-value"),
            "{shown}"
        );
        assert!(shown.contains("admin") && shown.contains("svc"));
    }
}
