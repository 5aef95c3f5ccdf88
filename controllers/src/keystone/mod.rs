//! A small client of OpenStack Keystone's identity API v3, for managing a service user's application
//! credentials.
//!
//! The caller names a [`ServiceUser`] (endpoint, user, password, project); the client logs in with a
//! project-scoped password token, caches it per user until shortly before it expires (a changed password or
//! endpoint forces a new login; a token Keystone stops accepting is replaced once), and learns the user's own id
//! from that token. Application credentials are created with a client-chosen name and secret, which makes a
//! repeated create answer 409 instead of minting a second credential. Every request goes through
//! [`framework::http::ExternalApi`] (timeouts, retries of idempotent calls, `external_api_*` metrics) and every
//! error is a [`KeystoneError`] whose text is safe to show in conditions.
//!
//! The controller never builds a URL: paths live here.

pub mod wire;

use std::collections::HashMap;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use framework::ErrorCategory;
use framework::http::{ExternalApi, HttpError, HttpSettings, Idempotency, TokenCache, credential_fingerprint};
use framework::metrics::Metrics;
use framework::sanitize;
use framework::trust::TrustSettings;
use jiff::Timestamp;
use reqwest::StatusCode;
use secrecy::{ExposeSecret, SecretString};

/// The label value of this system in metrics and messages.
pub const API_NAME: &str = "keystone";

/// Tokens are replaced this long before Keystone says they expire.
const TOKEN_REFRESH_MARGIN: Duration = Duration::from_secs(60);

/// What went wrong talking to Keystone, worded for conditions (no URLs with credentials, no tokens, no bodies).
#[derive(Debug, thiserror::Error)]
pub enum KeystoneError {
    /// The request failed in transport or Keystone answered with an unexpected status.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// Keystone refused the service user's password login (HTTP 401).
    #[error("Keystone refused the password of user {user:?} (domain {domain:?}, project {project:?})")]
    AuthenticationFailed {
        /// The user name.
        user: String,
        /// The user's domain.
        domain: String,
        /// The project the token was scoped to.
        project: String,
    },
    /// The same password was refused moments ago, so it is not tried again yet (Keystone's lockout counts failed
    /// logins); a changed password Secret is tried at once.
    #[error(
        "{refusal}; the same password is not tried again for {retry_in_seconds}s (repeated failed logins lock \
         the user): fix the password Secret and the next attempt logs in at once"
    )]
    AuthenticationHeld {
        /// What the refused login said ([`KeystoneError::AuthenticationFailed`]'s message).
        refusal: String,
        /// Seconds until the same password is tried again.
        retry_in_seconds: u64,
    },
    /// An application credential with this name already exists for the user (HTTP 409).
    #[error("an application credential named {name:?} already exists")]
    Conflict {
        /// The name that is taken.
        name: String,
    },
    /// The configured or published endpoint is not a usable URL.
    #[error("invalid Keystone endpoint {endpoint:?}: {detail}")]
    InvalidEndpoint {
        /// The endpoint, sanitized.
        endpoint: String,
        /// What is wrong with it.
        detail: &'static str,
    },
    /// Keystone answered successfully but without something the protocol promises.
    #[error("Keystone {operation}: unexpected response ({detail})")]
    UnexpectedResponse {
        /// What we were doing.
        operation: &'static str,
        /// What was missing or malformed.
        detail: &'static str,
    },
}

impl KeystoneError {
    /// The framework category: outages are transient, refusals need someone to act.
    pub fn category(&self) -> ErrorCategory {
        match self {
            KeystoneError::Http(error) if error.is_transient() => ErrorCategory::Transient,
            KeystoneError::Http(error) if error.status().is_some_and(|s| s.is_server_error()) => {
                ErrorCategory::Transient
            }
            KeystoneError::Http(HttpError::Decode { .. }) => ErrorCategory::Transient,
            KeystoneError::Http(_) => ErrorCategory::Invalid,
            KeystoneError::AuthenticationFailed { .. }
            | KeystoneError::AuthenticationHeld { .. }
            | KeystoneError::InvalidEndpoint { .. } => ErrorCategory::Invalid,
            KeystoneError::Conflict { .. } => ErrorCategory::Transient,
            KeystoneError::UnexpectedResponse { .. } => ErrorCategory::Transient,
        }
    }

    /// When a refused login should be looked at again: once its hold has passed (a changed password Secret
    /// triggers a reconcile by itself).
    pub fn retry_within(&self) -> Option<Duration> {
        match self {
            KeystoneError::AuthenticationHeld { retry_in_seconds, .. } => Some(Duration::from_secs(*retry_in_seconds)),
            KeystoneError::AuthenticationFailed { .. } => Some(framework::http::REFUSED_LOGIN_HOLD),
            _ => None,
        }
    }

    /// Whether Keystone could not be reached or failed on its side (as opposed to refusing the request).
    pub fn is_unavailable(&self) -> bool {
        self.category() == ErrorCategory::Transient && !matches!(self, KeystoneError::Conflict { .. })
    }

    fn is_unauthorized(&self) -> bool {
        matches!(self, KeystoneError::Http(error) if error.status() == Some(StatusCode::UNAUTHORIZED))
    }
}

impl framework::http::LoginRefusal for KeystoneError {
    fn refusal(&self) -> Option<String> {
        matches!(self, KeystoneError::AuthenticationFailed { .. }).then(|| self.to_string())
    }

    fn held(refusal: String, retry_in: Duration) -> Self {
        KeystoneError::AuthenticationHeld {
            refusal,
            retry_in_seconds: retry_in.as_secs().max(1),
        }
    }
}

/// A Keystone base URL (`http://keystone:5000`, with or without the `/v3` suffix, normalized without it).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Endpoint {
    base: String,
    /// What the server's certificate is verified against (a KeystoneAPI's `spec.tls.caBundleSecretName`).
    pub trust: TrustSettings,
}

impl Endpoint {
    /// Parses a base URL; only `http` and `https` URLs without credentials are accepted.
    pub fn parse(raw: &str) -> Result<Self, KeystoneError> {
        let invalid = |detail| KeystoneError::InvalidEndpoint {
            endpoint: sanitize::display_url(raw),
            detail,
        };
        let url = url::Url::parse(raw.trim()).map_err(|_| invalid("not a URL"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(invalid("the scheme must be http or https"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(invalid("credentials in the URL are not allowed"));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(invalid("the URL has no host"));
        }
        let mut base = url.as_str().trim_end_matches('/').to_string();
        if let Some(stripped) = base.strip_suffix("/v3") {
            base = stripped.to_string();
        }
        Ok(Self {
            base,
            trust: TrustSettings::default(),
        })
    }

    /// The same endpoint, verified against `trust`.
    pub fn with_trust(mut self, trust: TrustSettings) -> Self {
        self.trust = trust;
        self
    }

    /// The base URL without `/v3`, for messages.
    pub fn as_str(&self) -> &str {
        &self.base
    }

    fn url(&self, path: &str) -> String {
        format!("{}/v3{path}", self.base)
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.base)
    }
}

/// A Keystone user that logs in with a password, scoped to a project.
#[derive(Clone, Debug)]
pub struct ServiceUser {
    /// Where Keystone is.
    pub endpoint: Endpoint,
    /// The service user's name in Keystone (the spec's `userName`).
    pub user_name: String,
    /// The user's domain name (e.g. `Default`).
    pub user_domain: String,
    /// The project the token is scoped to (e.g. `service`).
    pub project_name: String,
    /// The project's domain name.
    pub project_domain: String,
    /// The user's password.
    pub password: SecretString,
}

impl ServiceUser {
    fn session_key(&self) -> String {
        [
            self.endpoint.as_str(),
            &self.user_domain,
            &self.user_name,
            &self.project_domain,
            &self.project_name,
        ]
        .join("\u{0}")
    }

    fn fingerprint(&self) -> String {
        credential_fingerprint(&[&self.session_key(), self.password.expose_secret()])
    }
}

/// An access rule of an application credential.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct AccessRule {
    /// OpenStack service type.
    pub service: String,
    /// API path pattern.
    pub path: String,
    /// HTTP method.
    pub method: String,
}

/// What to create.
#[derive(Debug)]
pub struct NewApplicationCredential<'a> {
    /// Unique (per user) name; a second create with the same name answers [`KeystoneError::Conflict`].
    pub name: &'a str,
    /// Free text for administrators.
    pub description: &'a str,
    /// The secret the credential will have (chosen by the caller, so a retried create cannot mint another).
    pub secret: &'a SecretString,
    /// When it expires.
    pub expires_at: Timestamp,
    /// Role names.
    pub roles: &'a [String],
    /// Whether it may manage other credentials and trusts.
    pub unrestricted: bool,
    /// Access rules (empty: unrestricted by path).
    pub access_rules: &'a [AccessRule],
}

/// An application credential as Keystone reports it (never with its secret).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApplicationCredential {
    /// 32-hex id.
    pub id: String,
    /// Unique per user; the operator chooses it, so a repeated create is refused rather than duplicated.
    pub name: String,
    /// Free text; the operators that mint credentials name the object they minted it for.
    pub description: Option<String>,
    /// Expiry (`None`: never expires).
    pub expires_at: Option<Timestamp>,
    /// Role names.
    pub roles: Vec<String>,
    /// Whether it is unrestricted.
    pub unrestricted: bool,
    /// The API calls it is limited to (empty: any call its roles allow).
    pub access_rules: Vec<AccessRule>,
}

impl ApplicationCredential {
    fn from_wire(body: wire::CredentialBody) -> Result<Self, KeystoneError> {
        let expires_at = match body.expires_at.as_deref() {
            None => None,
            Some(raw) => Some(wire::parse_timestamp(raw).ok_or(KeystoneError::UnexpectedResponse {
                operation: "read application credential",
                detail: "unreadable expires_at",
            })?),
        };
        Ok(Self {
            id: body.id,
            name: body.name,
            description: body.description,
            expires_at,
            roles: body.roles.into_iter().map(|r| r.name).collect(),
            unrestricted: body.unrestricted.unwrap_or(false),
            access_rules: body
                .access_rules
                .into_iter()
                .map(|r| AccessRule {
                    service: r.service,
                    path: r.path,
                    method: r.method,
                })
                .collect(),
        })
    }
}

/// A logged-in service user: its token and its own id.
#[derive(Clone)]
struct Session {
    token: SecretString,
    user_id: String,
}

/// The Keystone client; cheap to share (`Arc`), one per process.
pub struct KeystoneClient {
    http: ExternalApi,
    /// One cached session per service user (concurrent callers for a user share one login).
    sessions: StdMutex<HashMap<String, Arc<TokenCache<Session>>>>,
}

impl KeystoneClient {
    /// A client with the given timeouts and retry budget, recording `external_api_*{api="keystone"}` metrics;
    /// CA bundles endpoints name are read through `kube`.
    pub fn new(
        settings: HttpSettings,
        metrics: Option<Metrics>,
        kube: Option<kube::Client>,
    ) -> Result<Self, KeystoneError> {
        Ok(Self {
            http: ExternalApi::with_trust(API_NAME, settings, metrics, kube, TrustSettings::default())?,
            sessions: StdMutex::new(HashMap::new()),
        })
    }

    fn slot(&self, user: &ServiceUser) -> Arc<TokenCache<Session>> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        sessions
            .entry(user.session_key())
            .or_insert_with(|| Arc::new(TokenCache::new(TOKEN_REFRESH_MARGIN)))
            .clone()
    }

    /// The cached session of `user`, or a new login.
    async fn session(&self, user: &ServiceUser) -> Result<Session, KeystoneError> {
        self.slot(user)
            .get_or_login(&user.fingerprint(), || self.login(user))
            .await
    }

    /// Drops the cached session of `user` (after Keystone stopped accepting its token).
    async fn forget_session(&self, user: &ServiceUser) {
        self.slot(user).invalidate().await;
    }

    /// Project-scoped password login. The answer is the token's own document (what validating the token with
    /// itself as subject returns), so the user's id is read from it without a second round-trip.
    async fn login(&self, user: &ServiceUser) -> Result<(Session, Duration), KeystoneError> {
        const OPERATION: &str = "login";
        let body = wire::password_login(
            &user.user_name,
            &user.user_domain,
            &user.password,
            &user.project_name,
            &user.project_domain,
        );
        let request = self.http.client().post(user.endpoint.url("/auth/tokens")).json(&body);
        // Logging in twice is harmless, so transient failures are retried.
        let response = self
            .http
            .send_trusting(
                &user.endpoint.trust,
                OPERATION,
                Idempotency::Idempotent,
                request,
                wire::error_message,
            )
            .await;
        let response = match response {
            Ok(response) => response,
            Err(error) if error.status() == Some(StatusCode::UNAUTHORIZED) => {
                return Err(KeystoneError::AuthenticationFailed {
                    user: user.user_name.clone(),
                    domain: user.user_domain.clone(),
                    project: user.project_name.clone(),
                });
            }
            Err(error) => return Err(error.into()),
        };
        let token = response
            .headers()
            .get("x-subject-token")
            .and_then(|v| v.to_str().ok())
            .map(|v| SecretString::from(v.to_string()))
            .ok_or(KeystoneError::UnexpectedResponse {
                operation: OPERATION,
                detail: "no X-Subject-Token header",
            })?;
        let document: wire::TokenResponse = self.http.json(OPERATION, response).await?;
        let expires_at =
            wire::parse_timestamp(&document.token.expires_at).ok_or(KeystoneError::UnexpectedResponse {
                operation: OPERATION,
                detail: "unreadable token expiry",
            })?;
        let lifetime = Duration::try_from(expires_at.duration_since(Timestamp::now())).unwrap_or(Duration::ZERO);
        tracing::debug!(user = %user.user_name, endpoint = %user.endpoint, ?lifetime, "logged in to Keystone");
        let session = Session {
            token,
            user_id: document.token.user.id,
        };
        Ok((session, lifetime))
    }

    /// Runs `call` with `user`'s session; when Keystone answers 401 to a cached token, logs in again once.
    async fn with_session<T, F, Fut>(&self, user: &ServiceUser, call: F) -> Result<T, KeystoneError>
    where
        F: Fn(Session) -> Fut,
        Fut: Future<Output = Result<T, KeystoneError>>,
    {
        let session = self.session(user).await?;
        match call(session).await {
            Err(error) if error.is_unauthorized() => {
                self.forget_session(user).await;
                let session = self.session(user).await?;
                call(session).await
            }
            other => other,
        }
    }

    /// The id of `user` (from its token).
    pub async fn user_id(&self, user: &ServiceUser) -> Result<String, KeystoneError> {
        Ok(self.session(user).await?.user_id)
    }

    /// Creates an application credential for `user`. A name that already exists answers
    /// [`KeystoneError::Conflict`]: with a caller-chosen name and secret, that means an earlier attempt succeeded.
    pub async fn create_application_credential(
        &self,
        user: &ServiceUser,
        credential: &NewApplicationCredential<'_>,
    ) -> Result<ApplicationCredential, KeystoneError> {
        const OPERATION: &str = "create application credential";
        let body = wire::CreateRequest {
            application_credential: wire::CreateBody {
                name: credential.name,
                description: credential.description,
                secret: credential.secret.expose_secret(),
                expires_at: wire::format_expires_at(credential.expires_at),
                unrestricted: credential.unrestricted,
                roles: credential.roles.iter().map(|name| wire::RoleRef { name }).collect(),
                access_rules: credential
                    .access_rules
                    .iter()
                    .map(|r| wire::AccessRuleBody {
                        service: &r.service,
                        path: &r.path,
                        method: &r.method,
                    })
                    .collect(),
            },
        };
        let body = serde_json::to_value(&body).map_err(|_| KeystoneError::UnexpectedResponse {
            operation: OPERATION,
            detail: "unserializable request",
        })?;
        self.with_session(user, |session| {
            let body = &body;
            async move {
                let request = self
                    .http
                    .client()
                    .post(
                        user.endpoint
                            .url(&format!("/users/{}/application_credentials", session.user_id)),
                    )
                    .header("X-Auth-Token", session.token.expose_secret())
                    .json(body);
                // The caller-chosen name makes a repeated create answer 409, never a second credential, so a
                // create whose answer was lost may be sent again.
                match self
                    .http
                    .send_trusting(
                        &user.endpoint.trust,
                        OPERATION,
                        Idempotency::Idempotent,
                        request,
                        wire::error_message,
                    )
                    .await
                {
                    Ok(response) => {
                        let created: wire::CreateResponse = self.http.json(OPERATION, response).await?;
                        ApplicationCredential::from_wire(created.application_credential)
                    }
                    Err(error) if error.status() == Some(StatusCode::CONFLICT) => Err(KeystoneError::Conflict {
                        name: credential.name.to_string(),
                    }),
                    Err(error) => Err(error.into()),
                }
            }
        })
        .await
    }

    /// The application credentials of `user`, optionally only the one with `name`.
    async fn list(
        &self,
        user: &ServiceUser,
        name: Option<&str>,
        operation: &'static str,
    ) -> Result<Vec<ApplicationCredential>, KeystoneError> {
        self.with_session(user, |session| async move {
            let mut request = self
                .http
                .client()
                .get(
                    user.endpoint
                        .url(&format!("/users/{}/application_credentials", session.user_id)),
                )
                .header("X-Auth-Token", session.token.expose_secret());
            if let Some(name) = name {
                request = request.query(&[("name", name)]);
            }
            let response = self
                .http
                .send_trusting(
                    &user.endpoint.trust,
                    operation,
                    Idempotency::Idempotent,
                    request,
                    wire::error_message,
                )
                .await?;
            let list: wire::ListResponse = self.http.json(operation, response).await?;
            list.application_credentials
                .into_iter()
                .map(ApplicationCredential::from_wire)
                .collect()
        })
        .await
    }

    /// The application credential of `user` named `name`, if any.
    pub async fn find_application_credential(
        &self,
        user: &ServiceUser,
        name: &str,
    ) -> Result<Option<ApplicationCredential>, KeystoneError> {
        let found = self.list(user, Some(name), "find application credential").await?;
        Ok(found.into_iter().find(|c| c.name == name))
    }

    /// Every application credential of `user`.
    pub async fn list_application_credentials(
        &self,
        user: &ServiceUser,
    ) -> Result<Vec<ApplicationCredential>, KeystoneError> {
        self.list(user, None, "list application credentials").await
    }

    /// Deletes an application credential of `user`; returns whether it existed.
    pub async fn delete_application_credential(&self, user: &ServiceUser, id: &str) -> Result<bool, KeystoneError> {
        const OPERATION: &str = "delete application credential";
        self.with_session(user, |session| async move {
            let request = self
                .http
                .client()
                .delete(
                    user.endpoint
                        .url(&format!("/users/{}/application_credentials/{id}", session.user_id)),
                )
                .header("X-Auth-Token", session.token.expose_secret());
            match self
                .http
                .send_trusting(
                    &user.endpoint.trust,
                    OPERATION,
                    Idempotency::Idempotent,
                    request,
                    wire::error_message,
                )
                .await
            {
                Ok(_) => Ok(true),
                Err(error) if error.status() == Some(StatusCode::NOT_FOUND) => Ok(false),
                Err(error) => Err(error.into()),
            }
        })
        .await
    }

    /// Whether `secret` is the secret of application credential `id`: logs in with it (401 or 404: it is not).
    pub async fn application_credential_authenticates(
        &self,
        endpoint: &Endpoint,
        id: &str,
        secret: &SecretString,
    ) -> Result<bool, KeystoneError> {
        const OPERATION: &str = "authenticate application credential";
        let request = self
            .http
            .client()
            .post(endpoint.url("/auth/tokens"))
            .json(&wire::application_credential_login(id, secret));
        match self
            .http
            .send_trusting(
                &endpoint.trust,
                OPERATION,
                Idempotency::Idempotent,
                request,
                wire::error_message,
            )
            .await
        {
            Ok(_) => Ok(true),
            Err(error) if matches!(error.status(), Some(StatusCode::UNAUTHORIZED | StatusCode::NOT_FOUND)) => Ok(false),
            Err(error) => Err(error.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_normalized_without_v3() {
        for raw in [
            "http://keystone:5000",
            "http://keystone:5000/",
            "http://keystone:5000/v3",
            "http://keystone:5000/v3/",
        ] {
            let endpoint = Endpoint::parse(raw).expect("valid endpoint");
            assert_eq!(endpoint.as_str(), "http://keystone:5000", "{raw}");
            assert_eq!(endpoint.url("/auth/tokens"), "http://keystone:5000/v3/auth/tokens");
        }
        let prefixed = Endpoint::parse("https://cloud.example.com/identity/v3").expect("valid endpoint");
        assert_eq!(
            prefixed.url("/auth/tokens"),
            "https://cloud.example.com/identity/v3/auth/tokens"
        );
    }

    #[test]
    fn bad_endpoints_are_refused_without_echoing_credentials() {
        let error = Endpoint::parse("http://admin:hunter2@keystone:5000").expect_err("credentials refused");
        assert!(!error.to_string().contains("hunter2"), "{error}");
        assert!(Endpoint::parse("ftp://keystone").is_err());
        assert!(Endpoint::parse("keystone:5000").is_err());
    }

    #[test]
    fn categories_separate_outages_from_refusals() {
        let outage = KeystoneError::Http(HttpError::Unreachable {
            api: API_NAME,
            operation: "login",
            detail: "x".into(),
        });
        assert_eq!(outage.category(), ErrorCategory::Transient);
        assert!(outage.is_unavailable());
        let refused = KeystoneError::Http(HttpError::Status {
            api: API_NAME,
            operation: "create application credential",
            status: StatusCode::BAD_REQUEST,
            summary: Some("Cannot create an application credential with unassigned role".into()),
        });
        assert_eq!(refused.category(), ErrorCategory::Invalid);
        assert!(!refused.is_unavailable());
        let server = KeystoneError::Http(HttpError::Status {
            api: API_NAME,
            operation: "login",
            status: StatusCode::INTERNAL_SERVER_ERROR,
            summary: None,
        });
        assert!(server.is_unavailable());
        let denied = KeystoneError::AuthenticationFailed {
            user: "barbican".into(),
            domain: "Default".into(),
            project: "service".into(),
        };
        assert_eq!(denied.category(), ErrorCategory::Invalid);
    }

    #[test]
    fn session_fingerprint_changes_with_the_password() {
        let user = |password: &str| ServiceUser {
            endpoint: Endpoint::parse("http://keystone:5000").expect("endpoint"),
            user_name: "barbican".into(),
            user_domain: "Default".into(),
            project_name: "service".into(),
            project_domain: "Default".into(),
            password: SecretString::from(password.to_string()),
        };
        assert_eq!(user("a").session_key(), user("b").session_key());
        assert_ne!(user("a").fingerprint(), user("b").fingerprint());
    }
}
