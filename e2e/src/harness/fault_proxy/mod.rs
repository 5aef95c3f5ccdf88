//! A loopback proxy the harness puts between the manager and a real system (Keycloak, the Kubernetes API): it
//! forwards every request unchanged and, on a test's command, answers an error or a given answer instead, answers
//! an error after the request took effect, adds latency, drops the connection, cuts open streams (watches), or
//! refuses connections altogether. It also counts requests by method and route ([`routes`]). Faults are made in
//! front of the real component, so what the component does is its own.

pub mod routes;

pub use routes::{RouteOf, keycloak_route, kube_route, kube_watch_expired_event};

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::Body;
use emulator_kit::chance::Chance;
use emulator_kit::tls::{ServerCert, TlsAcceptor};
use futures::StreamExt;
use hyper::body::Incoming;
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::server::conn::http1;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

/// Why a proxy could not start.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The loopback address could not be bound.
    #[error("cannot listen on loopback: {0}")]
    Bind(#[source] std::io::Error),
    /// The TLS certificate could not be loaded.
    #[error("cannot serve TLS: {0}")]
    Tls(String),
    /// The forwarding client could not be built (or the upstream's CA or identity not read).
    #[error("cannot build the forwarding client: {0}")]
    Client(#[source] reqwest::Error),
}

/// The component a proxy forwards to, and how it reaches it.
#[derive(Clone, Debug, Default)]
pub struct Upstream {
    /// Base URL (`http://host:port` or `https://…`).
    pub url: String,
    /// The CA (PEM) the component's serving certificate chains to, when it is not a public one.
    pub ca_pem: Option<String>,
    /// Who a request that carries no `Authorization` header is sent as. Requests with one (a ServiceAccount's
    /// bearer token) pass through as they are, so the component authenticates the caller itself.
    pub anonymous_as: Option<Credential>,
    /// How the component shapes an error answer, so injected ones look like its own.
    pub errors: ErrorShape,
}

/// The body of an error answer the proxy makes up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ErrorShape {
    /// `{"error": "HTTP 503 Service Unavailable"}` (Keycloak's shape, and generic enough).
    #[default]
    Json,
    /// A Kubernetes `Status` object with the reason kube-apiserver gives for the status code.
    KubeStatus,
}

impl ErrorShape {
    fn answer(self, status: StatusCode) -> Response<Body> {
        let text = format!("HTTP {} {}", status.as_u16(), status.canonical_reason().unwrap_or(""));
        let body = match self {
            ErrorShape::Json => serde_json::json!({ "error": text }),
            ErrorShape::KubeStatus => serde_json::json!({
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": format!("{text} (injected by the test's fault proxy)"),
                "reason": routes::kube_status_reason(status),
                "code": status.as_u16(),
            }),
        };
        with_type(status, "application/json", body.to_string())
    }
}

impl Upstream {
    /// A plain-HTTP component (or one with a public certificate), requests passed on as they come.
    pub fn plain(url: &str) -> Self {
        Self {
            url: url.to_string(),
            ..Self::default()
        }
    }
}

/// An identity the proxy presents upstream.
#[derive(Clone)]
pub enum Credential {
    /// A bearer token.
    Bearer(String),
    /// A client certificate and its key, both PEM.
    ClientCert {
        /// The certificate.
        cert_pem: String,
        /// The private key.
        key_pem: String,
    },
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret itself.
        f.write_str(match self {
            Credential::Bearer(_) => "Bearer(..)",
            Credential::ClientCert { .. } => "ClientCert(..)",
        })
    }
}

/// A fault rule: matching requests are delayed, answered with an error (before or after they reach the
/// component), or have their connection dropped.
#[derive(Clone, Debug, Default)]
pub struct Fault {
    method: Option<String>,
    route: Option<String>,
    latency: Duration,
    status: Option<u16>,
    body: Option<serde_json::Value>,
    after_effect: bool,
    drop_connection: bool,
    times: Option<u32>,
    chance: Chance,
}

impl Fault {
    /// A rule for one method and route (as the proxy's [`RouteOf`] names it).
    pub fn on(method: &str, route: &str) -> Self {
        Self {
            method: Some(method.to_string()),
            route: Some(route.to_string()),
            ..Self::default()
        }
    }

    /// A rule for every method on the routes `pattern` names: a route, or a prefix ending in `*`
    /// (`patch managedrancherprojects.waldur.io*` takes the status subresource too).
    pub fn route(pattern: &str) -> Self {
        Self {
            route: Some(pattern.to_string()),
            ..Self::default()
        }
    }

    /// A rule for every request.
    pub fn everywhere() -> Self {
        Self::default()
    }

    /// Answer `status` with `body` (JSON) without forwarding the request.
    pub fn respond(mut self, status: u16, body: serde_json::Value) -> Self {
        self.status = Some(status);
        self.body = Some(body);
        self
    }

    /// Answer `status` without forwarding the request.
    pub fn status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// Forward the request, then answer `status` instead of the component's answer (the change happened, the
    /// client does not know it).
    pub fn status_after_effect(mut self, status: u16) -> Self {
        self.status = Some(status);
        self.after_effect = true;
        self
    }

    /// Delay matching requests by `latency` before anything else.
    pub fn latency(mut self, latency: Duration) -> Self {
        self.latency = latency;
        self
    }

    /// Close the connection without an answer.
    pub fn drop_connection(mut self) -> Self {
        self.drop_connection = true;
        self
    }

    /// Apply to the next `n` matching requests only.
    pub fn times(mut self, n: u32) -> Self {
        self.times = Some(n);
        self
    }

    /// Apply to `percent` % of the matching requests, drawn from `seed`.
    pub fn percent(mut self, percent: u8, seed: u64) -> Self {
        self.chance = Chance::percent(percent, seed);
        self
    }

    fn matches(&self, method: &str, route: &str) -> bool {
        self.method.as_deref().is_none_or(|m| m.eq_ignore_ascii_case(method))
            && self
                .route
                .as_deref()
                .is_none_or(|pattern| route_matches(pattern, route))
    }
}

/// Whether `route` is the one `pattern` names (or starts with its prefix, for a pattern ending in `*`).
fn route_matches(pattern: &str, route: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => route.starts_with(prefix),
        None => pattern == route,
    }
}

/// How the proxied component is down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DownMode {
    /// The listener is closed and open connections are shut: clients get connection refused.
    Refuse,
    /// Every request gets 503 with an HTML body, as from a load balancer with no backend.
    Unavailable,
}

/// What the proxy does with one request, decided when it arrives.
#[derive(Default)]
struct Action {
    latency: Duration,
    status: Option<u16>,
    body: Option<serde_json::Value>,
    after_effect: bool,
    drop_connection: bool,
}

#[derive(Default)]
struct Rules {
    next_id: u64,
    faults: Vec<(u64, Fault)>,
    counts: BTreeMap<(String, String), u64>,
    /// Requests a rule applied to.
    faulted: u64,
}

/// An answer still streaming to its client (a watch), which [`FaultProxy::cut_streams`] can end.
struct OpenStream {
    id: u64,
    route: String,
    cut: CancellationToken,
}

/// The clients that forward requests: as they come, and (for requests without credentials) as the upstream's
/// default identity.
struct Forwarders {
    as_is: reqwest::Client,
    anonymous: reqwest::Client,
    anonymous_bearer: Option<HeaderValue>,
}

struct Shared {
    rules: Mutex<Rules>,
    streams: Mutex<(u64, Vec<OpenStream>)>,
    down: watch::Sender<Option<DownMode>>,
    upstream: String,
    errors: ErrorShape,
    route_of: RouteOf,
    http: Forwarders,
}

impl Shared {
    fn rules(&self) -> MutexGuard<'_, Rules> {
        // A test thread that panicked while holding the lock leaves counters that are still meaningful.
        self.rules.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts the request and picks the first rule that applies to it (using up one of its `times`).
    fn on_request(&self, method: &str, route: &str) -> Action {
        let mut rules = self.rules();
        *rules.counts.entry((method.to_string(), route.to_string())).or_default() += 1;
        let mut action = Action::default();
        let mut spent = None;
        let mut rules_faulted = 0;
        for (id, fault) in rules.faults.iter_mut() {
            if !fault.matches(method, route) || !fault.chance.draw() {
                continue;
            }
            rules_faulted += 1;
            action = Action {
                latency: fault.latency,
                status: fault.status,
                body: fault.body.clone(),
                after_effect: fault.after_effect,
                drop_connection: fault.drop_connection,
            };
            if let Some(times) = fault.times.as_mut() {
                *times = times.saturating_sub(1);
                if *times == 0 {
                    spent = Some(*id);
                }
            }
            break;
        }
        if let Some(id) = spent {
            rules.faults.retain(|(rule, _)| *rule != id);
        }
        rules.faulted += rules_faulted;
        action
    }

    fn streams(&self) -> MutexGuard<'_, (u64, Vec<OpenStream>)> {
        self.streams.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Registers an answer that is streaming; it is forgotten when its [`StreamGuard`] drops.
    fn open_stream(self: &Arc<Self>, route: String) -> (StreamGuard, CancellationToken) {
        let cut = CancellationToken::new();
        let mut streams = self.streams();
        streams.0 += 1;
        let id = streams.0;
        streams.1.push(OpenStream {
            id,
            route,
            cut: cut.clone(),
        });
        (
            StreamGuard {
                shared: self.clone(),
                id,
            },
            cut,
        )
    }
}

/// Removes its stream from the open ones when the answer ends (or its client goes away).
struct StreamGuard {
    shared: Arc<Shared>,
    id: u64,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.shared.streams().1.retain(|stream| stream.id != self.id);
    }
}

/// The two forwarding clients for `upstream`.
fn forwarders(upstream: &Upstream) -> Result<Forwarders, reqwest::Error> {
    let builder = || {
        let mut builder = reqwest::Client::builder()
            // The client under test follows redirects (or not) itself; the proxy passes them on.
            .redirect(reqwest::redirect::Policy::none())
            .pool_idle_timeout(Duration::from_secs(30));
        if let Some(ca) = &upstream.ca_pem {
            builder = reqwest::Certificate::from_pem(ca.as_bytes()).map(|ca| builder.add_root_certificate(ca))?;
        }
        Ok::<_, reqwest::Error>(builder)
    };
    let as_is = builder()?.build()?;
    let (anonymous, anonymous_bearer) = match &upstream.anonymous_as {
        None => (as_is.clone(), None),
        Some(Credential::Bearer(token)) => (as_is.clone(), HeaderValue::from_str(&format!("Bearer {token}")).ok()),
        Some(Credential::ClientCert { cert_pem, key_pem }) => {
            let identity = reqwest::Identity::from_pem(format!("{cert_pem}\n{key_pem}").as_bytes())?;
            (builder()?.identity(identity).build()?, None)
        }
    };
    Ok(Forwarders {
        as_is,
        anonymous,
        anonymous_bearer,
    })
}

/// A running proxy; dropping it closes the listener and every connection.
pub struct FaultProxy {
    url: String,
    shared: Arc<Shared>,
    shutdown: CancellationToken,
}

impl FaultProxy {
    /// Starts a proxy on a free loopback port forwarding to `upstream` (`http://host:port`), serving TLS with
    /// `tls` when given, and counting requests under the routes `route_of` names.
    pub async fn start(upstream: &str, route_of: RouteOf, tls: Option<&ServerCert>) -> Result<Self, ProxyError> {
        Self::start_to(&Upstream::plain(upstream), route_of, tls).await
    }

    /// [`FaultProxy::start`] for an upstream with its own CA and a default identity.
    pub async fn start_to(
        upstream: &Upstream,
        route_of: RouteOf,
        tls: Option<&ServerCert>,
    ) -> Result<Self, ProxyError> {
        let acceptor = tls
            .map(|cert| cert.acceptor().map_err(|e| ProxyError::Tls(e.to_string())))
            .transpose()?;
        let listener = bind(SocketAddr::from(([127, 0, 0, 1], 0))).map_err(ProxyError::Bind)?;
        let addr = listener.local_addr().map_err(ProxyError::Bind)?;
        let http = forwarders(upstream).map_err(ProxyError::Client)?;
        let (down, _) = watch::channel(None);
        let shared = Arc::new(Shared {
            rules: Mutex::new(Rules::default()),
            streams: Mutex::default(),
            down,
            upstream: upstream.url.trim_end_matches('/').to_string(),
            errors: upstream.errors,
            route_of,
            http,
        });
        let shutdown = CancellationToken::new();
        tokio::spawn(supervise(listener, addr, acceptor, shared.clone(), shutdown.clone()));
        let scheme = if tls.is_some() { "https" } else { "http" };
        Ok(Self {
            url: format!("{scheme}://{addr}"),
            shared,
            shutdown,
        })
    }

    /// The proxy's base URL, to hand to the client under test instead of the component's.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Requests seen for one method and route.
    pub fn count(&self, method: &str, route: &str) -> u64 {
        let rules = self.shared.rules();
        rules
            .counts
            .get(&(method.to_ascii_uppercase(), route.to_string()))
            .copied()
            .unwrap_or(0)
    }

    /// Every counter, keyed `"METHOD route"`.
    pub fn counters(&self) -> BTreeMap<String, u64> {
        let rules = self.shared.rules();
        rules
            .counts
            .iter()
            .map(|((method, route), count)| (format!("{method} {route}"), *count))
            .collect()
    }

    /// Requests seen on the routes `pattern` names (see [`Fault::route`]), whatever their method.
    pub fn count_route(&self, pattern: &str) -> u64 {
        let rules = self.shared.rules();
        rules
            .counts
            .iter()
            .filter(|((_, route), _)| route_matches(pattern, route))
            .map(|(_, count)| count)
            .sum()
    }

    /// Answers still streaming on the routes `pattern` names (open watches: `watch *`).
    pub fn open_streams(&self, pattern: &str) -> usize {
        let streams = self.shared.streams();
        streams.1.iter().filter(|s| route_matches(pattern, &s.route)).count()
    }

    /// Ends the answers still streaming on the routes `pattern` names, as a server ends a watch (the body
    /// finishes cleanly); returns how many.
    pub fn cut_streams(&self, pattern: &str) -> usize {
        let streams = self.shared.streams();
        let cut: Vec<_> = streams.1.iter().filter(|s| route_matches(pattern, &s.route)).collect();
        cut.iter().for_each(|stream| stream.cut.cancel());
        cut.len()
    }

    /// Every request seen (since the last reset).
    pub fn total(&self) -> u64 {
        self.shared.rules().counts.values().sum()
    }

    /// Requests a rule applied to (since the last reset).
    pub fn faulted(&self) -> u64 {
        self.shared.rules().faulted
    }

    /// Forgets the counts.
    pub fn reset_counters(&self) {
        let mut rules = self.shared.rules();
        rules.counts.clear();
        rules.faulted = 0;
    }

    /// Adds a rule (after the ones already there); returns its id for [`FaultProxy::remove_fault`].
    pub fn add_fault(&self, fault: Fault) -> u64 {
        let mut rules = self.shared.rules();
        rules.next_id += 1;
        let id = rules.next_id;
        rules.faults.push((id, fault));
        id
    }

    /// Removes one rule; whether it was still there.
    pub fn remove_fault(&self, id: u64) -> bool {
        let mut rules = self.shared.rules();
        let before = rules.faults.len();
        rules.faults.retain(|(rule, _)| *rule != id);
        rules.faults.len() != before
    }

    /// Whether a rule is still there (a rule with `times` goes once used up).
    pub fn has_fault(&self, id: u64) -> bool {
        self.shared.rules().faults.iter().any(|(rule, _)| *rule == id)
    }

    /// Removes every rule.
    pub fn clear_faults(&self) {
        self.shared.rules().faults.clear();
    }

    /// Takes the component "down" in `mode` until [`FaultProxy::come_up`].
    pub fn go_down(&self, mode: DownMode) {
        self.shared.down.send_replace(Some(mode));
    }

    /// Brings it back (the same address accepts again).
    pub fn come_up(&self) {
        self.shared.down.send_replace(None);
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// A listening socket with `SO_REUSEADDR`, so the same port can be bound again after a refusing period.
fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

/// Accepts connections until shutdown; while down in [`DownMode::Refuse`] the listener is closed and the open
/// connections shut, and the address is bound again when the component comes back.
async fn supervise(
    listener: TcpListener,
    addr: SocketAddr,
    acceptor: Option<TlsAcceptor>,
    shared: Arc<Shared>,
    shutdown: CancellationToken,
) {
    let mut down = shared.down.subscribe();
    let mut listener = Some(listener);
    loop {
        while *down.borrow_and_update() == Some(DownMode::Refuse) {
            listener = None;
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = down.changed() => {}
            }
        }
        let current = match listener.take() {
            Some(listener) => listener,
            None => match bind(addr) {
                Ok(listener) => listener,
                Err(error) => {
                    tracing::warn!(%addr, %error, "fault proxy cannot bind its address again; retrying");
                    tokio::select! {
                        _ = shutdown.cancelled() => return,
                        _ = tokio::time::sleep(Duration::from_millis(100)) => continue,
                    }
                }
            },
        };
        let connections = shutdown.child_token();
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                changed = down.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    if *down.borrow() == Some(DownMode::Refuse) {
                        connections.cancel();
                        break;
                    }
                }
                accepted = current.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let _ = stream.set_nodelay(true);
                    let (acceptor, shared, stop) = (acceptor.clone(), shared.clone(), connections.child_token());
                    tokio::spawn(async move {
                        if let Some(stream) = emulator_kit::tls::accept(stream, acceptor.as_ref()).await {
                            serve_connection(stream, shared, stop).await;
                        }
                    });
                }
            }
        }
    }
}

/// Serves one HTTP/1.1 connection until the client closes it, a rule drops it, or the proxy goes down.
async fn serve_connection(stream: emulator_kit::tls::MaybeTlsStream, shared: Arc<Shared>, stop: CancellationToken) {
    let kill = Arc::new(Notify::new());
    let dropper = kill.clone();
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let (shared, dropper) = (shared.clone(), dropper.clone());
        async move { Ok::<_, std::convert::Infallible>(handle(&shared, request, &dropper).await) }
    });
    let connection = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => {}
        _ = kill.notified() => {}
        _ = stop.cancelled() => {}
    }
}

async fn handle(shared: &Arc<Shared>, request: Request<Incoming>, kill: &Notify) -> Response<Body> {
    if *shared.down.borrow() == Some(DownMode::Unavailable) {
        return html(
            StatusCode::SERVICE_UNAVAILABLE,
            "<html><body><h1>503 Service Temporarily Unavailable</h1></body></html>",
        );
    }
    let (parts, body) = request.into_parts();
    let method = parts.method.as_str().to_string();
    let route = (shared.route_of)(&parts);
    let action = shared.on_request(&method, &route);
    if !action.latency.is_zero() {
        tokio::time::sleep(action.latency).await;
    }
    if action.drop_connection {
        kill.notify_one();
        // The connection task closes the socket and drops this future; nothing is ever answered.
        std::future::pending::<()>().await;
    }
    if let (Some(status), false) = (action.status, action.after_effect) {
        return match action.body {
            Some(body) => with_type(status_code(status), "application/json", body.to_string()),
            None => shared.errors.answer(status_code(status)),
        };
    }
    let answer = forward(shared, parts, body, route).await;
    match action.status {
        Some(status) => shared.errors.answer(status_code(status)),
        None => answer,
    }
}

/// Headers that describe one connection, not the message: never passed on.
fn hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection" | "keep-alive" | "proxy-connection" | "transfer-encoding" | "te" | "trailer" | "upgrade" | "host"
    )
}

async fn forward(
    shared: &Arc<Shared>,
    parts: hyper::http::request::Parts,
    body: Incoming,
    route: String,
) -> Response<Body> {
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let body = match axum::body::to_bytes(Body::new(body), 64 << 20).await {
        Ok(body) => body,
        Err(error) => {
            return plain(
                StatusCode::BAD_REQUEST,
                &format!("fault proxy: cannot read the request: {error}"),
            );
        }
    };
    let anonymous = !parts.headers.contains_key(header::AUTHORIZATION);
    let client = if anonymous {
        &shared.http.anonymous
    } else {
        &shared.http.as_is
    };
    let mut outgoing = client
        .request(parts.method, format!("{}{path}", shared.upstream))
        .body(body);
    for (name, value) in &parts.headers {
        if !hop_by_hop(name) {
            outgoing = outgoing.header(name, value);
        }
    }
    if let (true, Some(bearer)) = (anonymous, &shared.http.anonymous_bearer) {
        outgoing = outgoing.header(header::AUTHORIZATION, bearer.clone());
    }
    let answer = match outgoing.send().await {
        Ok(answer) => answer,
        Err(error) => {
            return plain(
                StatusCode::BAD_GATEWAY,
                &format!("fault proxy: the component did not answer: {error}"),
            );
        }
    };
    let mut response = Response::builder().status(answer.status());
    for (name, value) in answer.headers() {
        if !hop_by_hop(name) && name != header::CONTENT_LENGTH {
            response = response.header(name, value);
        }
    }
    let (guard, cut) = shared.open_stream(route);
    let body = answer
        .bytes_stream()
        .take_until(cut.cancelled_owned())
        .map(move |chunk| {
            // Held while the answer streams.
            let _open = &guard;
            chunk
        });
    response
        .body(Body::from_stream(body))
        .unwrap_or_else(|_| plain(StatusCode::BAD_GATEWAY, "fault proxy: unusable answer headers"))
}

/// A rule's status code (500 for one that is not a status code at all).
fn status_code(status: u16) -> StatusCode {
    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

fn html(status: StatusCode, body: &'static str) -> Response<Body> {
    with_type(status, "text/html", body.to_string())
}

fn plain(status: StatusCode, body: &str) -> Response<Body> {
    with_type(status, "text/plain", body.to_string())
}

fn with_type(status: StatusCode, content_type: &'static str, body: String) -> Response<Body> {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_with_times_is_used_up_and_the_next_rule_applies() {
        let (down, _) = watch::channel(None);
        let shared = Shared {
            rules: Mutex::new(Rules::default()),
            streams: Mutex::default(),
            down,
            upstream: String::new(),
            errors: ErrorShape::Json,
            route_of: keycloak_route,
            http: forwarders(&Upstream::default()).expect("plain forwarders"),
        };
        {
            let mut rules = shared.rules();
            rules.faults.push((1, Fault::on("POST", "/x").status(503).times(1)));
            rules.faults.push((2, Fault::everywhere().status(500)));
        }
        assert_eq!(shared.on_request("POST", "/x").status, Some(503));
        assert_eq!(shared.on_request("POST", "/x").status, Some(500));
        assert_eq!(shared.on_request("GET", "/y").status, Some(500));
        assert_eq!(shared.rules().counts.get(&("POST".into(), "/x".into())), Some(&2));
    }

    #[test]
    fn a_route_pattern_ending_in_a_star_matches_by_prefix() {
        assert!(route_matches(
            "patch managedrancherprojects.waldur.io*",
            "patch managedrancherprojects.waldur.io/status"
        ));
        assert!(route_matches("watch *", "watch secrets metadata"));
        assert!(route_matches("list configmaps", "list configmaps"));
        assert!(!route_matches("list configmaps", "list configmaps metadata"));
        assert!(!route_matches("watch *", "list configmaps"));
    }
}
