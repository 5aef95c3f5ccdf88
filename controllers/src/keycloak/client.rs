//! The connection to one Keycloak server: configuration, the cached admin token, and the request core every
//! typed call goes through (URL building, bearer header, one retry after a 401, error mapping, pagination).

use framework::trust::TrustSettings;
use std::sync::Arc;
use std::time::Duration;

use framework::http::{ExternalApi, HttpSettings, Idempotency, TokenCache, bearer};
use framework::metrics::Metrics;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, LOCATION};
use reqwest::{Method, Response, StatusCode};
use secrecy::SecretString;
use serde::de::DeserializeOwned;
use serde_json::Value;
use url::Url;

use super::credentials::{Credentials, CredentialsProvider};
use super::error::KeycloakError;
use super::token::login;

/// The `api` label of Keycloak requests in messages and metrics.
pub(crate) const API: &str = "keycloak";

/// Listings longer than this are treated as a server that ignores `first` (it would otherwise never end).
const MAX_LISTED_ITEMS: usize = 100_000;

/// How to reach a Keycloak server.
#[derive(Clone, Debug)]
pub struct KeycloakConfig {
    /// Base URL including Keycloak's `http-relative-path`, e.g. `http://keycloak:8080/auth`.
    pub base_url: String,
    /// Realm whose token endpoint issues the admin token (`master` for admin-cli logins).
    pub token_realm: String,
    /// Items per page of every listing (`max`); Keycloak's own defaults are never relied on.
    pub page_size: u32,
    /// How long before its expiry a cached token is replaced.
    pub token_refresh_margin: Duration,
    /// Timeouts and retries.
    pub http: HttpSettings,
}

impl KeycloakConfig {
    /// Defaults for a server at `base_url`: token realm `master`, pages of 100, refresh 10 s before expiry.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            token_realm: "master".into(),
            page_size: 100,
            token_refresh_margin: Duration::from_secs(10),
            http: HttpSettings::default(),
        }
    }
}

struct Inner {
    api: ExternalApi,
    base: Url,
    token_realm: String,
    page_size: u32,
    tokens: TokenCache,
    provider: Arc<dyn CredentialsProvider>,
}

/// A Keycloak admin client shared by the controllers (cheap to clone; one token cache per client).
#[derive(Clone)]
pub struct KeycloakClient {
    inner: Arc<Inner>,
}

impl KeycloakClient {
    /// A client for the server in `config`, logging in with what `provider` supplies.
    pub fn new(
        config: KeycloakConfig,
        provider: Arc<dyn CredentialsProvider>,
        metrics: Option<Metrics>,
    ) -> Result<Self, KeycloakError> {
        Self::with_trust(config, provider, metrics, None, TrustSettings::default())
    }

    /// [`Self::new`], verifying Keycloak's certificate against `trust` (CA bundles are read through `kube`).
    pub fn with_trust(
        config: KeycloakConfig,
        provider: Arc<dyn CredentialsProvider>,
        metrics: Option<Metrics>,
        kube: Option<kube::Client>,
        trust: TrustSettings,
    ) -> Result<Self, KeycloakError> {
        let invalid = |reason: &str| KeycloakError::InvalidInput {
            operation: "configure client",
            reason: reason.into(),
        };
        let base = Url::parse(&config.base_url).map_err(|_| invalid("the Keycloak URL is not a valid URL"))?;
        if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() {
            return Err(invalid("the Keycloak URL must be an http or https URL"));
        }
        if config.page_size == 0 {
            return Err(invalid("the page size must be at least 1"));
        }
        let api = ExternalApi::with_trust(API, config.http, metrics, kube, trust)?;
        Ok(Self {
            inner: Arc::new(Inner {
                api,
                base,
                token_realm: config.token_realm,
                page_size: config.page_size,
                tokens: TokenCache::new(config.token_refresh_margin),
                provider,
            }),
        })
    }

    /// Calls in `realm`, with the provider's credentials.
    pub fn realm(&self, realm: &str) -> RealmClient {
        RealmClient {
            client: self.clone(),
            realm: realm.into(),
            credentials: None,
        }
    }

    /// Calls in `realm`, with explicit credentials instead of the provider's.
    pub fn realm_with(&self, realm: &str, credentials: Credentials) -> RealmClient {
        RealmClient {
            client: self.clone(),
            realm: realm.into(),
            credentials: Some(credentials),
        }
    }

    /// Forgets the cached admin token (the next call logs in again).
    pub async fn invalidate_token(&self) {
        self.inner.tokens.invalidate().await;
    }

    /// A valid admin token for `credentials`: the cached one, or a fresh login.
    async fn token(&self, credentials: &Credentials) -> Result<SecretString, KeycloakError> {
        let inner = &self.inner;
        let fingerprint = credentials.fingerprint(inner.base.as_str(), &inner.token_realm);
        inner
            .tokens
            .get_or_login(&fingerprint, || {
                login(&inner.api, &inner.base, &inner.token_realm, credentials)
            })
            .await
    }
}

/// The admin calls of one realm. Obtained from [`KeycloakClient::realm`] or [`KeycloakClient::realm_with`].
#[derive(Clone)]
pub struct RealmClient {
    client: KeycloakClient,
    realm: String,
    credentials: Option<Credentials>,
}

/// Extracts Keycloak's error text from an error body: `errorMessage`, or `error` with `error_description`.
pub(crate) fn explain(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    if let Some(message) = value.get("errorMessage").and_then(Value::as_str) {
        return Some(message.to_string());
    }
    let error = value.get("error").and_then(Value::as_str);
    let description = value.get("error_description").and_then(Value::as_str);
    match (error, description) {
        (Some(error), Some(description)) => Some(format!("{error}: {description}")),
        (Some(text), None) | (None, Some(text)) => Some(text.to_string()),
        (None, None) => None,
    }
}

/// The id at the end of a create's `Location` header.
pub(crate) fn id_from_location(operation: &'static str, response: &Response) -> Result<String, KeycloakError> {
    response
        .headers()
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|location| location.trim_end_matches('/').rsplit('/').next().map(str::to_string))
        .filter(|id| !id.is_empty())
        .ok_or_else(|| KeycloakError::UnexpectedResponse {
            operation,
            detail: "no Location header on create".into(),
        })
}

impl RealmClient {
    /// The realm these calls address.
    pub fn realm_name(&self) -> &str {
        &self.realm
    }

    /// Items per page of listings.
    pub(crate) fn page_size(&self) -> usize {
        usize::try_from(self.client.inner.page_size).unwrap_or(usize::MAX)
    }

    async fn credentials(&self) -> Result<Credentials, KeycloakError> {
        match &self.credentials {
            Some(credentials) => Ok(credentials.clone()),
            None => self.client.inner.provider.credentials().await,
        }
    }

    /// `{base}/{prefix…}/{segments…}`, each segment percent-encoded.
    fn url_under(&self, prefix: &[&str], segments: &[&str]) -> Result<Url, KeycloakError> {
        let mut url = self.client.inner.base.clone();
        url.path_segments_mut()
            .map_err(|_| KeycloakError::InvalidInput {
                operation: "build URL",
                reason: "base URL cannot have a path".into(),
            })?
            .pop_if_empty()
            .extend(prefix)
            .extend(segments);
        Ok(url)
    }

    /// `{base}/admin/realms/{realm}/{segments…}`, each segment percent-encoded.
    pub(crate) fn admin_url(&self, segments: &[&str]) -> Result<Url, KeycloakError> {
        self.url_under(&["admin", "realms", self.realm.as_str()], segments)
    }

    /// `{base}/admin/{segments…}`: the server-wide admin endpoints (`serverinfo`).
    pub(crate) fn server_url(&self, segments: &[&str]) -> Result<Url, KeycloakError> {
        self.url_under(&["admin"], segments)
    }

    /// Sends one admin request to the realm's `segments` (see [`Self::execute_at`]).
    pub(crate) async fn execute(
        &self,
        operation: &'static str,
        method: Method,
        segments: &[&str],
        query: &[(&str, String)],
        body: Option<&Value>,
        idempotency: Idempotency,
    ) -> Result<Response, KeycloakError> {
        let url = self.admin_url(segments)?;
        self.execute_at(operation, method, url, query, body, idempotency).await
    }

    /// Sends one admin request: bearer token from the cache (or a login), transient failures retried per
    /// `idempotency`, and a 401 answered by dropping the token and trying once more with a fresh one.
    pub(crate) async fn execute_at(
        &self,
        operation: &'static str,
        method: Method,
        url: Url,
        query: &[(&str, String)],
        body: Option<&Value>,
        idempotency: Idempotency,
    ) -> Result<Response, KeycloakError> {
        let body = body.map(|b| b.to_string());
        let credentials = self.credentials().await?;
        let api = &self.client.inner.api;
        let mut refreshed = false;
        loop {
            let token = self.client.token(&credentials).await?;
            let mut request = api
                .client()
                .request(method.clone(), url.clone())
                .header(AUTHORIZATION, bearer(&token));
            if !query.is_empty() {
                request = request.query(query);
            }
            if let Some(body) = &body {
                request = request.header(CONTENT_TYPE, "application/json").body(body.clone());
            }
            match api.send(operation, idempotency, request, explain).await {
                Err(error) if error.status() == Some(StatusCode::UNAUTHORIZED) && !refreshed => {
                    tracing::debug!(operation, "keycloak rejected the cached admin token; logging in again");
                    self.client.inner.tokens.invalidate().await;
                    refreshed = true;
                }
                Err(error) => return Err(error.into()),
                Ok(response) => return Ok(response),
            }
        }
    }

    /// Decodes a response's JSON body.
    pub(crate) async fn decode_json<T: DeserializeOwned>(
        &self,
        operation: &'static str,
        response: Response,
    ) -> Result<T, KeycloakError> {
        Ok(self.client.inner.api.json(operation, response).await?)
    }

    /// GET and decode.
    pub(crate) async fn get_json<T: DeserializeOwned>(
        &self,
        operation: &'static str,
        segments: &[&str],
        query: &[(&str, String)],
    ) -> Result<T, KeycloakError> {
        let response = self
            .execute(operation, Method::GET, segments, query, None, Idempotency::Idempotent)
            .await?;
        Ok(self.client.inner.api.json(operation, response).await?)
    }

    /// GET and decode; `None` when Keycloak answers 404.
    pub(crate) async fn get_optional<T: DeserializeOwned>(
        &self,
        operation: &'static str,
        segments: &[&str],
    ) -> Result<Option<T>, KeycloakError> {
        match self.get_json(operation, segments, &[]).await {
            Ok(value) => Ok(Some(value)),
            Err(error) if error.is_not_found() => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Every item of a listing, fetched page by page with explicit `first`/`max` until a page comes back short.
    pub(crate) async fn get_all<T: DeserializeOwned>(
        &self,
        operation: &'static str,
        segments: &[&str],
        query: &[(&str, String)],
    ) -> Result<Vec<T>, KeycloakError> {
        let page_size = self.page_size();
        let mut items = Vec::new();
        let mut first = 0usize;
        loop {
            let mut page_query = query.to_vec();
            page_query.push(("first", first.to_string()));
            page_query.push(("max", page_size.to_string()));
            let page: Vec<T> = self.get_json(operation, segments, &page_query).await?;
            let received = page.len();
            items.extend(page);
            // A short page is the last; a long one means the server ignored `max` and sent everything.
            if received != page_size {
                return Ok(items);
            }
            if items.len() >= MAX_LISTED_ITEMS {
                return Err(KeycloakError::UnexpectedResponse {
                    operation,
                    detail: format!("more than {MAX_LISTED_ITEMS} items; the server may be ignoring `first`"),
                });
            }
            first += page_size;
        }
    }

    /// POST a create; the new object's id comes from `Location`. Creates are retried on transient failures:
    /// callers resolve the 409 a repeated create may meet by looking the object up.
    pub(crate) async fn create(
        &self,
        operation: &'static str,
        segments: &[&str],
        body: &Value,
    ) -> Result<(String, Response), KeycloakError> {
        let response = self
            .execute(
                operation,
                Method::POST,
                segments,
                &[],
                Some(body),
                Idempotency::Idempotent,
            )
            .await?;
        Ok((id_from_location(operation, &response)?, response))
    }

    /// PUT (update, membership, attachment).
    pub(crate) async fn put(
        &self,
        operation: &'static str,
        segments: &[&str],
        body: Option<&Value>,
    ) -> Result<Response, KeycloakError> {
        self.execute(operation, Method::PUT, segments, &[], body, Idempotency::Idempotent)
            .await
    }

    /// DELETE; `false` when the object was already gone (404).
    pub(crate) async fn delete(&self, operation: &'static str, segments: &[&str]) -> Result<bool, KeycloakError> {
        match self
            .execute(operation, Method::DELETE, segments, &[], None, Idempotency::Idempotent)
            .await
        {
            Ok(_) => Ok(true),
            Err(error) if error.is_not_found() => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Decodes a response body.
    pub(crate) async fn decode<T: DeserializeOwned>(
        &self,
        operation: &'static str,
        response: Response,
    ) -> Result<T, KeycloakError> {
        Ok(self.client.inner.api.json(operation, response).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keycloak::credentials::StaticCredentials;

    fn client(base: &str) -> KeycloakClient {
        let provider = Arc::new(StaticCredentials(Credentials::admin_password(
            "admin",
            SecretString::from("pw"),
        )));
        KeycloakClient::new(KeycloakConfig::new(base), provider, None).expect("client")
    }

    #[test]
    fn admin_urls_keep_the_prefix_and_encode_segments() {
        let realm = client("http://kc.example:8080/auth/").realm("my realm");
        let url = realm.admin_url(&["groups", "a/b", "children"]).expect("url");
        assert_eq!(
            url.as_str(),
            "http://kc.example:8080/auth/admin/realms/my%20realm/groups/a%2Fb/children"
        );
        let url = client("http://kc.example")
            .realm("nebari")
            .admin_url(&["users"])
            .expect("url");
        assert_eq!(url.as_str(), "http://kc.example/admin/realms/nebari/users");
    }

    #[test]
    fn bad_base_urls_are_refused() {
        let provider = Arc::new(StaticCredentials(Credentials::admin_password(
            "admin",
            SecretString::from("pw"),
        )));
        for base in ["not a url", "mailto:kc@example.org", "ftp://kc"] {
            let result = KeycloakClient::new(KeycloakConfig::new(base), provider.clone(), None);
            assert!(matches!(result, Err(KeycloakError::InvalidInput { .. })), "{base}");
        }
    }

    #[test]
    fn error_text_comes_from_the_known_fields_only() {
        assert_eq!(
            explain(br#"{"errorMessage":"Sibling group named 'x' already exists."}"#).as_deref(),
            Some("Sibling group named 'x' already exists.")
        );
        assert_eq!(
            explain(br#"{"error":"invalid_grant","error_description":"Invalid user credentials"}"#).as_deref(),
            Some("invalid_grant: Invalid user credentials")
        );
        assert_eq!(
            explain(br#"{"error":"Could not find group by id"}"#).as_deref(),
            Some("Could not find group by id")
        );
        assert_eq!(explain(b"<html>proxy error</html>"), None);
        assert_eq!(explain(br#"{"other":"x"}"#), None);
    }
}
