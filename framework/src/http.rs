//! The one way controllers talk to external systems (Keycloak, Keystone, Rancher).
//!
//! [`ExternalApi`] gives every request a timeout, retries idempotent requests on transient failures with
//! jittered backoff, records `external_api_*` metrics, and turns failures into [`HttpError`]s whose text is safe
//! for conditions and events: no URLs with credentials, no tokens, no response bodies. [`TokenCache`] keeps one
//! bearer token per credential until shortly before it expires.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;
use reqwest::{Method, RequestBuilder, Response, StatusCode};
use secrecy::{ExposeSecret, SecretString};
use tokio::sync::Mutex;

use crate::backoff::BackoffPolicy;
use crate::metrics::Metrics;
use crate::sanitize;
use crate::trust::{TrustSettings, TrustedClients};

/// Timeouts and retry budget of one external API.
#[derive(Clone, Debug)]
pub struct HttpSettings {
    /// Time allowed to establish a connection.
    pub connect_timeout: Duration,
    /// Time allowed for a whole request, response body included.
    pub request_timeout: Duration,
    /// Extra attempts for idempotent requests after a transient failure.
    pub retries: u32,
    /// Delay schedule between attempts.
    pub backoff: BackoffPolicy,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
            retries: 2,
            backoff: BackoffPolicy {
                base: Duration::from_millis(200),
                max: Duration::from_secs(2),
            },
        }
    }
}

/// A failed request to an external system, worded so it can be shown to namespace users.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The system did not answer in time.
    #[error("{api} {operation}: request timed out")]
    Timeout {
        /// Which system.
        api: &'static str,
        /// What we were doing.
        operation: &'static str,
    },
    /// No connection could be made (refused, DNS, TLS).
    #[error("{api} {operation}: {api} is unreachable ({detail})")]
    Unreachable {
        /// Which system.
        api: &'static str,
        /// What we were doing.
        operation: &'static str,
        /// A sanitized cause.
        detail: String,
    },
    /// The system answered with an error status.
    #[error("{api} {operation}: HTTP {status}{}", summary.as_deref().map(|s| format!(": {s}")).unwrap_or_default())]
    Status {
        /// Which system.
        api: &'static str,
        /// What we were doing.
        operation: &'static str,
        /// The HTTP status.
        status: StatusCode,
        /// A sanitized, short explanation extracted by the client from a known error field (never a raw body).
        summary: Option<String>,
    },
    /// The answer could not be understood.
    #[error("{api} {operation}: unexpected response ({detail})")]
    Decode {
        /// Which system.
        api: &'static str,
        /// What we were doing.
        operation: &'static str,
        /// A sanitized cause.
        detail: String,
    },
    /// The client could not be built (bad TLS settings).
    #[error("{api}: cannot build HTTP client ({detail})")]
    Setup {
        /// Which system.
        api: &'static str,
        /// A sanitized cause.
        detail: String,
    },
    /// The server's certificate is not trusted: signed by a CA the operator was not told to trust, expired, or
    /// issued for another name.
    #[error("{api} {operation}: the TLS certificate of {host} is not trusted by {trust} ({detail})")]
    Untrusted {
        /// Which system.
        api: &'static str,
        /// What we were doing.
        operation: &'static str,
        /// The server's host name.
        host: String,
        /// What the operator trusts for this system ([`crate::trust::TrustSettings::describe`]).
        trust: String,
        /// What the TLS library reported, sanitized.
        detail: String,
    },
    /// The CA bundle configured for the system cannot be used.
    #[error("{api}: {detail}")]
    Trust {
        /// Which system.
        api: &'static str,
        /// What is wrong with the bundle.
        detail: String,
    },
}

impl HttpError {
    /// Whether retrying later may succeed (outage, overload) as opposed to a request the server refuses.
    pub fn is_transient(&self) -> bool {
        match self {
            HttpError::Timeout { .. } | HttpError::Unreachable { .. } => true,
            HttpError::Status { status, .. } => is_transient_status(*status),
            HttpError::Decode { .. }
            | HttpError::Setup { .. }
            | HttpError::Untrusted { .. }
            | HttpError::Trust { .. } => false,
        }
    }

    /// Whether the failure is about TLS trust (an untrusted certificate or an unusable CA bundle): the condition
    /// reason `TLSVerificationFailed`.
    pub fn is_trust(&self) -> bool {
        matches!(self, HttpError::Untrusted { .. } | HttpError::Trust { .. })
    }

    /// The HTTP status, when the server answered.
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            HttpError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

fn is_transient_status(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::TOO_MANY_REQUESTS
            | StatusCode::BAD_GATEWAY
            | StatusCode::SERVICE_UNAVAILABLE
            | StatusCode::GATEWAY_TIMEOUT
    )
}

/// Whether a request may be sent twice without changing the outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Idempotency {
    /// GET, PUT, DELETE and creates made idempotent by the caller (client-chosen ids or names): retried.
    Idempotent,
    /// Everything else: sent once.
    Once,
}

impl Idempotency {
    /// The default for an HTTP method.
    pub fn of(method: &Method) -> Self {
        if matches!(
            *method,
            Method::GET | Method::HEAD | Method::PUT | Method::DELETE | Method::OPTIONS
        ) {
            Idempotency::Idempotent
        } else {
            Idempotency::Once
        }
    }
}

/// A shared HTTP client for one external system.
#[derive(Clone)]
pub struct ExternalApi {
    api: &'static str,
    client: reqwest::Client,
    settings: HttpSettings,
    metrics: Option<Metrics>,
    trust: TrustSettings,
    clients: Arc<TrustedClients>,
}

/// The builder every client of a system starts from: its timeouts, our user agent, and no redirects (a redirect
/// could carry credentials to another host; it is reported as the 3xx it is).
fn base_builder(settings: &HttpSettings) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .connect_timeout(settings.connect_timeout)
        .timeout(settings.request_timeout)
        .user_agent(concat!("platform-operator/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::none())
}

impl ExternalApi {
    /// Builds the client for the system named `api` (used in messages and as the metric label), trusting the
    /// public CA roots.
    pub fn new(api: &'static str, settings: HttpSettings, metrics: Option<Metrics>) -> Result<Self, HttpError> {
        Self::with_trust(api, settings, metrics, None, TrustSettings::default())
    }

    /// Builds the client for `api` trusting what `trust` says; CA bundles are read through `kube`.
    pub fn with_trust(
        api: &'static str,
        settings: HttpSettings,
        metrics: Option<Metrics>,
        kube: Option<kube::Client>,
        trust: TrustSettings,
    ) -> Result<Self, HttpError> {
        let client = base_builder(&settings).build().map_err(|e| HttpError::Setup {
            api,
            detail: sanitize::sanitize(&e.to_string()),
        })?;
        let for_clients = settings.clone();
        let clients = TrustedClients::new(kube, Box::new(move || base_builder(&for_clients)));
        Ok(Self {
            api,
            client,
            settings,
            metrics,
            trust,
            clients: Arc::new(clients),
        })
    }

    /// What this system's server certificate is verified against by default.
    pub fn trust(&self) -> &TrustSettings {
        &self.trust
    }

    /// The system's name.
    pub fn api(&self) -> &'static str {
        self.api
    }

    /// The underlying client, for building requests.
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// Sends a request, retrying transient failures when `idempotency` allows, and returns the response when its
    /// status is a success. Error statuses become [`HttpError::Status`] with `summary` produced by `explain`
    /// from the response body (pass a function that extracts the system's error field; its output is sanitized).
    pub async fn send(
        &self,
        operation: &'static str,
        idempotency: Idempotency,
        request: RequestBuilder,
        explain: fn(&[u8]) -> Option<String>,
    ) -> Result<Response, HttpError> {
        let trust = self.trust.clone();
        self.send_trusting(&trust, operation, idempotency, request, explain)
            .await
    }

    /// [`Self::send`], verifying the server against `trust` instead of the system's default (an endpoint that
    /// names its own CA bundle).
    pub async fn send_trusting(
        &self,
        trust: &TrustSettings,
        operation: &'static str,
        idempotency: Idempotency,
        request: RequestBuilder,
        explain: fn(&[u8]) -> Option<String>,
    ) -> Result<Response, HttpError> {
        let attempts = match idempotency {
            Idempotency::Idempotent => self.settings.retries + 1,
            Idempotency::Once => 1,
        };
        let mut last_error = None;
        for attempt in 1..=attempts {
            let Some(this_try) = request.try_clone() else {
                // Streaming bodies cannot be cloned: send once.
                return self.send_once(trust, operation, request, explain).await;
            };
            match self.send_once(trust, operation, this_try, explain).await {
                Ok(response) => return Ok(response),
                Err(error) if error.is_transient() && attempt < attempts => {
                    let delay = self.settings.backoff.delay(attempt, &mut rand::rng());
                    tracing::debug!(api = self.api, operation, attempt, ?delay, %error, "retrying external request");
                    tokio::time::sleep(delay).await;
                    last_error = Some(error);
                }
                Err(error) => return Err(error),
            }
        }
        Err(last_error.unwrap_or(HttpError::Timeout {
            api: self.api,
            operation,
        }))
    }

    async fn send_once(
        &self,
        trust: &TrustSettings,
        operation: &'static str,
        request: RequestBuilder,
        explain: fn(&[u8]) -> Option<String>,
    ) -> Result<Response, HttpError> {
        let (_, request) = request.build_split();
        let request = request.map_err(|e| self.transport_error(operation, &e))?;
        let client = self.clients.client(trust).await.map_err(|e| HttpError::Trust {
            api: self.api,
            detail: sanitize::sanitize(&e.to_string()),
        })?;
        let host = request.url().host_str().unwrap_or_default().to_string();
        let writes = !matches!(*request.method(), Method::GET | Method::HEAD);
        let started = Instant::now();
        let result = client.execute(request).await;
        if let Err(error) = &result
            && let Some(detail) = certificate_problem(error)
        {
            // Read the bundle again before the next attempt: the CA may just have been fixed.
            self.clients.recheck(trust).await;
            if let Some(metrics) = &self.metrics {
                metrics.observe_external_request(self.api, operation, "error", started.elapsed());
            }
            return Err(HttpError::Untrusted {
                api: self.api,
                operation,
                host,
                trust: trust.describe(),
                detail,
            });
        }
        let elapsed = started.elapsed();
        let code = match &result {
            Ok(response) => response.status().as_u16().to_string(),
            Err(_) => "error".to_string(),
        };
        let latency_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        tracing::debug!(api = self.api, operation, code, latency_ms, "external request");
        if let Some(metrics) = &self.metrics {
            metrics.observe_external_request(self.api, operation, &code, elapsed);
        }
        if writes && result.as_ref().is_ok_and(|r| r.status().is_success()) {
            crate::changes::record(format!("{}: {operation}", self.api));
        }
        let response = result.map_err(|e| self.transport_error(operation, &e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let body = response.bytes().await.unwrap_or_default();
        tracing::debug!(
            api = self.api,
            operation,
            status = status.as_u16(),
            body = %sanitize::sanitize(&String::from_utf8_lossy(&body)),
            "external request failed"
        );
        let summary = explain(&body).map(|s| sanitize::sanitize(&s));
        Err(HttpError::Status {
            api: self.api,
            operation,
            status,
            summary,
        })
    }

    fn transport_error(&self, operation: &'static str, error: &reqwest::Error) -> HttpError {
        if error.is_timeout() {
            return HttpError::Timeout {
                api: self.api,
                operation,
            };
        }
        if error.is_connect() || error.is_request() {
            let detail = if error.is_connect() {
                "connection failed"
            } else {
                "request failed"
            };
            return HttpError::Unreachable {
                api: self.api,
                operation,
                detail: detail.to_string(),
            };
        }
        HttpError::Decode {
            api: self.api,
            operation,
            detail: sanitize::sanitize(&error.to_string()),
        }
    }

    /// Reads a JSON body, mapping malformed answers to [`HttpError::Decode`].
    pub async fn json<T: serde::de::DeserializeOwned>(
        &self,
        operation: &'static str,
        response: Response,
    ) -> Result<T, HttpError> {
        let bytes = response
            .bytes()
            .await
            .map_err(|e| self.transport_error(operation, &e))?;
        serde_json::from_slice(&bytes).map_err(|e| HttpError::Decode {
            api: self.api,
            operation,
            detail: format!("invalid JSON at line {} column {}", e.line(), e.column()),
        })
    }
}

/// What the TLS layer said when it refused the server's certificate, if that is why `error` happened.
fn certificate_problem(error: &reqwest::Error) -> Option<String> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = source {
        let text = current.to_string();
        if text.contains("certificate") || text.contains("UnknownIssuer") {
            let detail = text
                .rsplit_once("invalid peer certificate: ")
                .map_or(text.as_str(), |(_, rest)| rest)
                .to_string();
            return Some(sanitize::sanitize(&detail));
        }
        source = current.source();
    }
    None
}

/// A credential held until shortly before it expires.
struct Cached<T> {
    value: T,
    fingerprint: String,
    expires_at: Instant,
}

/// How long a login the server refused is not repeated with the same credentials. Keycloak's brute-force
/// detection and Keystone's lockout count failed logins, so retrying a refused one on every reconcile (and for
/// every object using it) locks the account; new credentials are tried at once.
pub const REFUSED_LOGIN_HOLD: Duration = Duration::from_secs(300);

/// An error of a login that may be the server refusing the credentials (rather than failing to answer).
pub trait LoginRefusal: Sized {
    /// Why the server refused the credentials, or `None` for any other failure (retried as usual).
    fn refusal(&self) -> Option<String>;
    /// The error returned, without asking the server, while a refusal is held: `refusal` is what the server
    /// said, `retry_in` how long until the same credentials are tried again.
    fn held(refusal: String, retry_in: Duration) -> Self;
}

/// A refused login remembered per credentials fingerprint: what the server said and until when it is held.
struct Refused {
    reason: String,
    until: Instant,
}

/// Caches one credential (a bearer token, a login session) for an external system, keyed by a fingerprint of
/// what minted it so a rotated password or a changed URL forces a new login. Concurrent callers wait for one
/// login instead of each logging in. With [`TokenCache::get_or_login`] a refused login is not repeated with the
/// same credentials for [`REFUSED_LOGIN_HOLD`].
pub struct TokenCache<T = SecretString> {
    slot: Mutex<Option<Cached<T>>>,
    refresh_before_expiry: Duration,
    /// Refused logins by fingerprint (a handful at most: one per credentials in use).
    refused: std::sync::Mutex<std::collections::HashMap<String, Refused>>,
    refusal_hold: Duration,
}

impl<T: Clone> Default for TokenCache<T> {
    fn default() -> Self {
        Self::new(Duration::from_secs(10))
    }
}

impl<T: Clone> TokenCache<T> {
    /// A cache that refreshes credentials `refresh_before_expiry` before they expire.
    pub fn new(refresh_before_expiry: Duration) -> Self {
        Self {
            slot: Mutex::new(None),
            refresh_before_expiry,
            refused: std::sync::Mutex::new(std::collections::HashMap::new()),
            refusal_hold: REFUSED_LOGIN_HOLD,
        }
    }

    /// The same cache holding refused logins for `hold` instead of [`REFUSED_LOGIN_HOLD`].
    pub fn with_refusal_hold(mut self, hold: Duration) -> Self {
        self.refusal_hold = hold;
        self
    }

    /// Returns the cached credential for `fingerprint` or logs in with `fetch`, which yields the credential and
    /// its lifetime.
    pub async fn get_or_fetch<F, Fut, E>(&self, fingerprint: &str, fetch: F) -> Result<T, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(T, Duration), E>>,
    {
        let mut slot = self.slot.lock().await;
        if let Some(cached) = slot.as_ref()
            && cached.fingerprint == fingerprint
            && Instant::now() + self.refresh_before_expiry < cached.expires_at
        {
            return Ok(cached.value.clone());
        }
        *slot = None;
        let (value, lifetime) = fetch().await?;
        *slot = Some(Cached {
            value: value.clone(),
            fingerprint: fingerprint.to_string(),
            expires_at: Instant::now() + lifetime,
        });
        Ok(value)
    }

    /// [`Self::get_or_fetch`] for a login the server may refuse: after a refusal, the same credentials get the
    /// held error ([`LoginRefusal::held`]) without a request until the hold has passed; other credentials (a
    /// fixed Secret) log in at once. Callers waiting on the same login see its refusal, not a login each.
    pub async fn get_or_login<F, Fut, E>(&self, fingerprint: &str, fetch: F) -> Result<T, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(T, Duration), E>>,
        E: LoginRefusal,
    {
        // The slot's lock is held across the check and the login, so callers queued behind a refused login find
        // the refusal recorded when they get their turn.
        let mut slot = self.slot.lock().await;
        if let Some((reason, retry_in)) = self.held(fingerprint) {
            return Err(E::held(reason, retry_in));
        }
        if let Some(cached) = slot.as_ref()
            && cached.fingerprint == fingerprint
            && Instant::now() + self.refresh_before_expiry < cached.expires_at
        {
            return Ok(cached.value.clone());
        }
        *slot = None;
        match fetch().await {
            Ok((value, lifetime)) => {
                self.refusals().remove(fingerprint);
                *slot = Some(Cached {
                    value: value.clone(),
                    fingerprint: fingerprint.to_string(),
                    expires_at: Instant::now() + lifetime,
                });
                Ok(value)
            }
            Err(error) => {
                if let Some(reason) = error.refusal() {
                    let now = Instant::now();
                    let mut refused = self.refusals();
                    refused.retain(|_, r| r.until > now);
                    refused.insert(
                        fingerprint.to_string(),
                        Refused {
                            reason,
                            until: now + self.refusal_hold,
                        },
                    );
                }
                Err(error)
            }
        }
    }

    /// The refusal held for `fingerprint` and how long it still holds.
    fn held(&self, fingerprint: &str) -> Option<(String, Duration)> {
        let now = Instant::now();
        self.refusals()
            .get(fingerprint)
            .filter(|r| r.until > now)
            .map(|r| (r.reason.clone(), r.until - now))
    }

    fn refusals(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Refused>> {
        // A panic while holding this lock leaves a map that is still valid.
        self.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Drops the cached credential (after the server rejected it with 401).
    pub async fn invalidate(&self) {
        *self.slot.lock().await = None;
    }
}

/// A fingerprint of credentials for [`TokenCache`] keys: a hash, so the cache never holds the secret twice.
pub fn credential_fingerprint(parts: &[&str]) -> String {
    crate::names::short_hash(&parts.join("\u{0}"))
}

/// Exposes a secret for building a request header; kept in one place so secret use is easy to audit.
pub fn bearer(token: &SecretString) -> String {
    format!("Bearer {}", token.expose_secret())
}

/// A tiny random jitter helper for callers that schedule polls (resyncs) themselves.
pub fn jittered(base: Duration, fraction: f64) -> Duration {
    let spread = base.as_secs_f64() * fraction.clamp(0.0, 1.0);
    let offset = rand::rng().random_range(-spread..=spread);
    Duration::from_secs_f64((base.as_secs_f64() + offset).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A login error for the refusal tests: refused, failed, or held.
    #[derive(Debug, PartialEq)]
    enum TestLogin {
        Refused,
        Down,
        Held(String),
    }

    impl LoginRefusal for TestLogin {
        fn refusal(&self) -> Option<String> {
            (*self == TestLogin::Refused).then(|| "bad password".to_string())
        }
        fn held(refusal: String, _retry_in: Duration) -> Self {
            TestLogin::Held(refusal)
        }
    }

    #[tokio::test]
    async fn a_refused_login_is_held_for_its_credentials_only_and_retried_after_the_hold() {
        let cache: TokenCache = TokenCache::new(Duration::from_secs(1));
        let logins = AtomicUsize::new(0);
        let refuse = || async {
            logins.fetch_add(1, Ordering::SeqCst);
            Err::<(SecretString, Duration), _>(TestLogin::Refused)
        };
        assert_eq!(cache.get_or_login("old", refuse).await.err(), Some(TestLogin::Refused));
        for _ in 0..5 {
            assert_eq!(
                cache.get_or_login("old", refuse).await.err(),
                Some(TestLogin::Held("bad password".into())),
                "held without asking the server"
            );
        }
        assert_eq!(logins.load(Ordering::SeqCst), 1);

        let accept = || async {
            logins.fetch_add(1, Ordering::SeqCst);
            Ok::<_, TestLogin>((SecretString::from("t"), Duration::from_secs(60)))
        };
        cache
            .get_or_login("new", accept)
            .await
            .expect("new credentials log in at once");
        assert_eq!(logins.load(Ordering::SeqCst), 2);

        let down = || async {
            logins.fetch_add(1, Ordering::SeqCst);
            Err::<(SecretString, Duration), _>(TestLogin::Down)
        };
        assert_eq!(cache.get_or_login("other", down).await.err(), Some(TestLogin::Down));
        assert_eq!(cache.get_or_login("other", down).await.err(), Some(TestLogin::Down));
        assert_eq!(logins.load(Ordering::SeqCst), 4, "an outage is not held");

        // Once the hold has passed (here: no hold at all), the same credentials are tried again.
        let unheld: TokenCache = TokenCache::new(Duration::from_secs(1)).with_refusal_hold(Duration::ZERO);
        assert_eq!(unheld.get_or_login("old", refuse).await.err(), Some(TestLogin::Refused));
        assert_eq!(unheld.get_or_login("old", refuse).await.err(), Some(TestLogin::Refused));
        assert_eq!(logins.load(Ordering::SeqCst), 6);
    }

    #[tokio::test]
    async fn token_cache_reuses_until_expiry_and_refreshes_on_new_credentials() {
        let cache = TokenCache::new(Duration::from_secs(1));
        let logins = AtomicUsize::new(0);
        let login = || async {
            logins.fetch_add(1, Ordering::SeqCst);
            Ok::<_, std::convert::Infallible>((SecretString::from("t"), Duration::from_secs(60)))
        };
        cache.get_or_fetch("a", login).await.expect("login");
        cache.get_or_fetch("a", login).await.expect("cached");
        assert_eq!(logins.load(Ordering::SeqCst), 1, "second call must use the cache");
        cache.get_or_fetch("b", login).await.expect("new credentials");
        assert_eq!(
            logins.load(Ordering::SeqCst),
            2,
            "changed credentials must log in again"
        );
        cache.invalidate().await;
        cache.get_or_fetch("b", login).await.expect("after invalidate");
        assert_eq!(logins.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn token_cache_refreshes_tokens_about_to_expire() {
        let cache = TokenCache::new(Duration::from_secs(30));
        let logins = AtomicUsize::new(0);
        let login = || async {
            logins.fetch_add(1, Ordering::SeqCst);
            Ok::<_, std::convert::Infallible>((SecretString::from("t"), Duration::from_secs(20)))
        };
        cache.get_or_fetch("a", login).await.expect("login");
        cache.get_or_fetch("a", login).await.expect("login again");
        assert_eq!(
            logins.load(Ordering::SeqCst),
            2,
            "a token inside the refresh margin is not reused"
        );
    }

    #[test]
    fn status_errors_never_include_bodies_and_classify_transience() {
        let e = HttpError::Status {
            api: "keycloak",
            operation: "create client",
            status: StatusCode::SERVICE_UNAVAILABLE,
            summary: None,
        };
        assert!(e.is_transient());
        assert_eq!(e.to_string(), "keycloak create client: HTTP 503 Service Unavailable");
        let e = HttpError::Status {
            api: "keycloak",
            operation: "create client",
            status: StatusCode::CONFLICT,
            summary: Some("Client exists".into()),
        };
        assert!(!e.is_transient());
        assert_eq!(
            e.to_string(),
            "keycloak create client: HTTP 409 Conflict: Client exists"
        );
    }

    #[test]
    fn idempotency_follows_the_method() {
        assert_eq!(Idempotency::of(&Method::GET), Idempotency::Idempotent);
        assert_eq!(Idempotency::of(&Method::DELETE), Idempotency::Idempotent);
        assert_eq!(Idempotency::of(&Method::POST), Idempotency::Once);
    }

    #[test]
    fn jitter_stays_within_its_fraction() {
        for _ in 0..100 {
            let d = jittered(Duration::from_secs(100), 0.1);
            assert!(d >= Duration::from_secs(90) && d <= Duration::from_secs(110));
        }
    }
}
