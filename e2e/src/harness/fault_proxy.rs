//! A loopback proxy the harness puts between the manager and a real system (Keycloak today): it forwards every
//! request unchanged and, on a test's command, answers an error instead, answers an error after the request took
//! effect, adds latency, drops the connection, or refuses connections altogether. It also counts requests by
//! method and route. Faults are made in front of the real component, so what the component does is its own.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::Body;
use emulator_kit::chance::Chance;
use emulator_kit::tls::{ServerCert, TlsAcceptor};
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
    /// The forwarding client could not be built.
    #[error("cannot build the forwarding client: {0}")]
    Client(#[source] reqwest::Error),
}

/// Turns a request path into the route it is counted and matched under (ids replaced by placeholders).
pub type RouteOf = fn(&str) -> String;

/// A fault rule: matching requests are delayed, answered with an error (before or after they reach the
/// component), or have their connection dropped.
#[derive(Clone, Debug, Default)]
pub struct Fault {
    method: Option<String>,
    route: Option<String>,
    latency: Duration,
    status: Option<u16>,
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

    /// A rule for every request.
    pub fn everywhere() -> Self {
        Self::default()
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
            && self.route.as_deref().is_none_or(|r| r == route)
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
    after_effect: bool,
    drop_connection: bool,
}

#[derive(Default)]
struct Rules {
    next_id: u64,
    faults: Vec<(u64, Fault)>,
    counts: BTreeMap<(String, String), u64>,
}

struct Shared {
    rules: Mutex<Rules>,
    down: watch::Sender<Option<DownMode>>,
    upstream: String,
    route_of: RouteOf,
    http: reqwest::Client,
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
        for (id, fault) in rules.faults.iter_mut() {
            if !fault.matches(method, route) || !fault.chance.draw() {
                continue;
            }
            action = Action {
                latency: fault.latency,
                status: fault.status,
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
        action
    }
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
        let acceptor = tls
            .map(|cert| cert.acceptor().map_err(|e| ProxyError::Tls(e.to_string())))
            .transpose()?;
        let listener = bind(SocketAddr::from(([127, 0, 0, 1], 0))).map_err(ProxyError::Bind)?;
        let addr = listener.local_addr().map_err(ProxyError::Bind)?;
        let http = reqwest::Client::builder()
            // The client under test follows redirects (or not) itself; the proxy passes them on.
            .redirect(reqwest::redirect::Policy::none())
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .map_err(ProxyError::Client)?;
        let (down, _) = watch::channel(None);
        let shared = Arc::new(Shared {
            rules: Mutex::new(Rules::default()),
            down,
            upstream: upstream.trim_end_matches('/').to_string(),
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

    /// Every request seen (since the last reset).
    pub fn total(&self) -> u64 {
        self.shared.rules().counts.values().sum()
    }

    /// Forgets the counts.
    pub fn reset_counters(&self) {
        self.shared.rules().counts.clear();
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

async fn handle(shared: &Shared, request: Request<Incoming>, kill: &Notify) -> Response<Body> {
    if *shared.down.borrow() == Some(DownMode::Unavailable) {
        return html(
            StatusCode::SERVICE_UNAVAILABLE,
            "<html><body><h1>503 Service Temporarily Unavailable</h1></body></html>",
        );
    }
    let method = request.method().as_str().to_string();
    let route = (shared.route_of)(request.uri().path());
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
        return fault_answer(status);
    }
    let answer = forward(shared, request).await;
    match action.status {
        Some(status) => fault_answer(status),
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

async fn forward(shared: &Shared, request: Request<Incoming>) -> Response<Body> {
    let (parts, body) = request.into_parts();
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
    let mut outgoing = shared
        .http
        .request(parts.method, format!("{}{path}", shared.upstream))
        .body(body);
    for (name, value) in &parts.headers {
        if !hop_by_hop(name) {
            outgoing = outgoing.header(name, value);
        }
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
    response
        .body(Body::from_stream(answer.bytes_stream()))
        .unwrap_or_else(|_| plain(StatusCode::BAD_GATEWAY, "fault proxy: unusable answer headers"))
}

/// The answer a failing component gives: JSON with an `error` field (Keycloak's shape, and generic enough).
fn fault_answer(status: u16) -> Response<Body> {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = serde_json::json!({
        "error": format!("HTTP {} {}", status.as_u16(), status.canonical_reason().unwrap_or("")),
    });
    with_type(status, "application/json", body.to_string())
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

/// Keycloak's routes: the realm after `realms/`, every UUID, and a group path after `group-by-path/`
/// become placeholders (`/admin/realms/{realm}/groups/{id}/children`).
pub fn keycloak_route(path: &str) -> String {
    let mut route = Vec::new();
    let mut segments = path.split('/');
    let mut previous = "";
    while let Some(segment) = segments.next() {
        let placeholder = if previous == "realms" {
            Some("{realm}")
        } else if previous == "group-by-path" {
            // The rest of the path is the group's path.
            segments.by_ref().for_each(drop);
            Some("{*path}")
        } else if is_uuid(segment) {
            Some("{id}")
        } else {
            None
        };
        route.push(placeholder.unwrap_or(segment).to_string());
        previous = segment;
    }
    route.join("/")
}

fn is_uuid(segment: &str) -> bool {
    let groups: Vec<&str> = segment.split('-').collect();
    groups.len() == 5
        && groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups.iter().all(|g| g.chars().all(|c| c.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keycloak_routes_name_realms_ids_and_group_paths_by_placeholder() {
        let id = "0b4c6f3e-3c1d-4f52-9a7e-1d2c3b4a5f60";
        assert_eq!(
            keycloak_route(&format!("/admin/realms/nebari/groups/{id}/children")),
            "/admin/realms/{realm}/groups/{id}/children"
        );
        assert_eq!(
            keycloak_route("/realms/master/protocol/openid-connect/token"),
            "/realms/{realm}/protocol/openid-connect/token"
        );
        assert_eq!(
            keycloak_route("/admin/realms/waldur/group-by-path/parent/child"),
            "/admin/realms/{realm}/group-by-path/{*path}"
        );
        assert_eq!(
            keycloak_route("/admin/realms/nebari/clients"),
            "/admin/realms/{realm}/clients"
        );
        assert_eq!(
            keycloak_route("/admin/realms/a/users/not-an-id"),
            "/admin/realms/{realm}/users/not-an-id"
        );
    }

    #[test]
    fn a_rule_with_times_is_used_up_and_the_next_rule_applies() {
        let (down, _) = watch::channel(None);
        let shared = Shared {
            rules: Mutex::new(Rules::default()),
            down,
            upstream: String::new(),
            route_of: keycloak_route,
            http: reqwest::Client::new(),
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
}
