//! Admin API authentication and authorization: bearer tokens checked against the issued-token table and the
//! emulator clock, and per-operation role checks (reference A0 "Authentication").

use std::collections::BTreeSet;
use std::time::Instant;

use axum::extract::FromRequestParts;
use axum::http::header;
use axum::http::request::Parts;

use super::store::Store;
use super::wire::ApiError;

/// What an admin request carries that matters before routing to a handler.
#[derive(Clone, Debug)]
pub struct AdminRequest {
    /// The bearer token, if the request had one.
    pub bearer: Option<String>,
    /// `http://host[:port]` as the client addressed the server (for absolute `Location` headers).
    pub origin: String,
}

impl<S: Send + Sync> FromRequestParts<S> for AdminRequest {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let bearer = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim().to_string());
        let host = parts
            .headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("localhost");
        Ok(AdminRequest {
            bearer,
            origin: format!("http://{host}"),
        })
    }
}

/// An operation class and the `realm-management` roles that allow it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Read users, groups and memberships.
    ViewUsers,
    /// Change users, groups and memberships.
    ManageUsers,
    /// Read clients, scopes and mappers.
    ViewClients,
    /// Change clients, scopes and mappers.
    ManageClients,
    /// Read realm settings.
    ViewRealm,
    /// Read authorization objects of `realm-management`.
    ViewAuthorization,
    /// Change authorization objects of `realm-management`.
    ManageAuthorization,
}

impl Need {
    fn roles(self) -> &'static [&'static str] {
        match self {
            Need::ViewUsers => &["view-users", "manage-users", "query-users", "query-groups"],
            Need::ManageUsers => &["manage-users"],
            Need::ViewClients => &["view-clients", "manage-clients", "query-clients"],
            Need::ManageClients => &["manage-clients"],
            Need::ViewRealm => &["view-realm", "manage-realm"],
            Need::ViewAuthorization => &["view-authorization", "manage-authorization"],
            Need::ManageAuthorization => &["manage-authorization"],
        }
    }
}

/// The authenticated caller of an admin request.
#[derive(Clone, Debug)]
pub struct Caller {
    /// The realm that issued the token.
    pub token_realm: String,
    /// The caller's admin roles.
    pub roles: BTreeSet<String>,
}

impl Caller {
    /// Identifies the caller from its bearer token: missing, unknown and expired tokens all get the same 401.
    pub fn from_token(store: &Store, bearer: Option<&str>, now: Instant) -> Result<Caller, ApiError> {
        let token = bearer
            .and_then(|b| store.tokens.get(b))
            .ok_or_else(ApiError::unauthorized)?;
        if token.expires_at <= now {
            return Err(ApiError::unauthorized());
        }
        let user = store
            .realms
            .get(&token.realm)
            .and_then(|r| r.users.get(&token.user))
            .filter(|u| u.enabled)
            .ok_or_else(ApiError::unauthorized)?;
        Ok(Caller {
            token_realm: token.realm.clone(),
            roles: user.roles.clone(),
        })
    }

    /// Whether the caller may perform `need` in `realm`: the master `admin` role covers every realm, other roles
    /// only the realm that issued the token.
    pub fn may(&self, realm: &str, need: Need) -> bool {
        if self.token_realm == "master" && self.roles.contains("admin") {
            return true;
        }
        if self.token_realm != realm {
            return false;
        }
        self.roles.contains("realm-admin") || need.roles().iter().any(|r| self.roles.contains(*r))
    }

    /// `may`, as a 403.
    pub fn require(&self, realm: &str, need: Need) -> Result<(), ApiError> {
        if self.may(realm, need) {
            Ok(())
        } else {
            Err(ApiError::forbidden())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(realm: &str, roles: &[&str]) -> Caller {
        Caller {
            token_realm: realm.into(),
            roles: roles.iter().map(|r| r.to_string()).collect(),
        }
    }

    #[test]
    fn master_admin_manages_every_realm() {
        let admin = caller("master", &["admin"]);
        assert!(admin.may("nebari", Need::ManageClients));
        assert!(admin.may("master", Need::ManageAuthorization));
    }

    #[test]
    fn single_roles_allow_only_their_operations_in_their_realm() {
        let viewer = caller("nebari", &["view-users"]);
        assert!(viewer.may("nebari", Need::ViewUsers));
        assert!(!viewer.may("nebari", Need::ManageUsers));
        assert!(!viewer.may("nebari", Need::ViewClients));
        assert!(!viewer.may("other", Need::ViewUsers));
        assert!(caller("nebari", &["realm-admin"]).may("nebari", Need::ManageClients));
    }
}
