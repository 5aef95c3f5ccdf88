//! User lookups. The operator never creates users: identifiers that match nobody are reported back so the
//! controllers can keep them pending until the person first logs in.

use super::client::RealmClient;
use super::error::KeycloakError;
use super::types::User;

/// How a spec names a user.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UserRef {
    /// The Keycloak user id.
    Id(String),
    /// The username (compared case-insensitively; Keycloak stores it lower-cased).
    Username(String),
    /// The email address (compared case-insensitively).
    Email(String),
    /// A username, or failing that an email address (NebariApp group members).
    UsernameOrEmail(String),
}

impl UserRef {
    /// The identifier as written in the spec.
    pub fn identifier(&self) -> &str {
        match self {
            UserRef::Id(s) | UserRef::Username(s) | UserRef::Email(s) | UserRef::UsernameOrEmail(s) => s,
        }
    }
}

/// The outcome of resolving several identifiers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserResolution {
    /// Identifiers that matched a user, with the user.
    pub found: Vec<(UserRef, User)>,
    /// Identifiers that matched nobody (not an error: the user may not exist yet).
    pub unknown: Vec<UserRef>,
}

impl RealmClient {
    /// The user with exactly this username, if any.
    pub async fn find_user_by_username(&self, username: &str) -> Result<Option<User>, KeycloakError> {
        let query = [
            ("username", username.to_string()),
            ("exact", "true".to_string()),
            ("briefRepresentation", "true".to_string()),
        ];
        let users: Vec<User> = self.get_all("find user", &["users"], &query).await?;
        let wanted = username.to_lowercase();
        Ok(users.into_iter().find(|u| u.username.to_lowercase() == wanted))
    }

    /// The user with exactly this email address, if any.
    pub async fn find_user_by_email(&self, email: &str) -> Result<Option<User>, KeycloakError> {
        let query = [
            ("email", email.to_string()),
            ("exact", "true".to_string()),
            ("briefRepresentation", "true".to_string()),
        ];
        let users: Vec<User> = self.get_all("find user", &["users"], &query).await?;
        let wanted = email.to_lowercase();
        Ok(users
            .into_iter()
            .find(|u| u.email.as_deref().is_some_and(|e| e.to_lowercase() == wanted)))
    }

    /// A user by id; `None` when there is none.
    pub async fn get_user(&self, id: &str) -> Result<Option<User>, KeycloakError> {
        self.get_optional("get user", &["users", id]).await
    }

    /// How many users the realm has.
    pub async fn count_users(&self) -> Result<usize, KeycloakError> {
        self.get_json("count users", &["users", "count"], &[]).await
    }

    /// Every user of the realm (brief representations), read page by page.
    pub async fn list_users(&self) -> Result<Vec<User>, KeycloakError> {
        self.get_all("list users", &["users"], &[("briefRepresentation", "true".to_string())])
            .await
    }

    /// The requests [`RealmClient::list_users`] takes for a realm of `count` users.
    pub fn pages_for(&self, count: usize) -> usize {
        count / self.page_size().max(1) + 1
    }

    /// Looks up one identifier.
    pub async fn find_user(&self, reference: &UserRef) -> Result<Option<User>, KeycloakError> {
        match reference {
            UserRef::Id(id) => self.get_user(id).await,
            UserRef::Username(username) => self.find_user_by_username(username).await,
            UserRef::Email(email) => self.find_user_by_email(email).await,
            UserRef::UsernameOrEmail(identifier) => match self.find_user_by_username(identifier).await? {
                Some(user) => Ok(Some(user)),
                None if identifier.contains('@') => self.find_user_by_email(identifier).await,
                None => Ok(None),
            },
        }
    }

    /// Looks up every identifier; the ones that match nobody are listed in `unknown` (not an error).
    pub async fn resolve_users(&self, references: &[UserRef]) -> Result<UserResolution, KeycloakError> {
        let mut resolution = UserResolution::default();
        for reference in references {
            match self.find_user(reference).await? {
                Some(user) => resolution.found.push((reference.clone(), user)),
                None => resolution.unknown.push(reference.clone()),
            }
        }
        Ok(resolution)
    }
}
