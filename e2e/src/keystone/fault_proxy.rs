//! An HTTP proxy in front of the real Keystone that fails a seeded share of requests, one request at a time:
//! answered with a 5xx without reaching Keystone, the connection closed without an answer, or forwarded to
//! Keystone and then the answer lost (Keystone acted, the caller never hears). The Keycloak and Rancher
//! emulators fail requests themselves; Keystone is real, so its faults live here. Used by the chaos run.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use emulator_kit::chance::Chance;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::FixtureError;

/// How many requests of each kind a proxy failed, and how many it forwarded whole.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FaultCounts {
    /// Forwarded and answered.
    pub forwarded: u64,
    /// Answered 503 without reaching Keystone.
    pub errors: u64,
    /// Connection closed without reaching Keystone.
    pub resets: u64,
    /// Forwarded, then the connection closed instead of answering.
    pub lost_answers: u64,
}

/// The shares of requests to fail, each drawn from the seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultMix {
    /// Percent answered 503.
    pub error_percent: u8,
    /// Percent whose connection is closed before forwarding.
    pub reset_percent: u8,
    /// Percent forwarded whose answer is then lost.
    pub lost_answer_percent: u8,
    /// Seed of the draws.
    pub seed: u64,
}

/// What happens to one request.
enum Fate {
    Forward,
    Error,
    Reset,
    LoseAnswer,
}

struct Draws {
    error: Chance,
    reset: Chance,
    lost: Chance,
}

impl Draws {
    fn new(mix: FaultMix) -> Self {
        Self {
            error: Chance::percent(mix.error_percent, mix.seed),
            reset: Chance::percent(mix.reset_percent, mix.seed.rotate_left(21)),
            lost: Chance::percent(mix.lost_answer_percent, mix.seed.rotate_left(42)),
        }
    }

    fn fate(&mut self) -> Fate {
        if self.error.draw() {
            Fate::Error
        } else if self.reset.draw() {
            Fate::Reset
        } else if self.lost.draw() {
            Fate::LoseAnswer
        } else {
            Fate::Forward
        }
    }
}

struct ProxyState {
    upstream: String,
    http: reqwest::Client,
    draws: Mutex<Option<Draws>>,
    forwarded: AtomicU64,
    errors: AtomicU64,
    resets: AtomicU64,
    lost_answers: AtomicU64,
}

impl ProxyState {
    fn fate(&self) -> Fate {
        // A poisoned lock only means a draw panicked; the draws are still usable.
        let mut draws = self.draws.lock().unwrap_or_else(|p| p.into_inner());
        draws.as_mut().map_or(Fate::Forward, Draws::fate)
    }
}

/// A running proxy; it stops when dropped.
pub struct FaultProxy {
    addr: SocketAddr,
    state: Arc<ProxyState>,
    accept: JoinHandle<()>,
}

impl FaultProxy {
    /// Starts a proxy on a free port of 127.0.0.1 forwarding every request to `upstream_url`, failing none yet.
    pub async fn start(upstream_url: &str) -> Result<Self, FixtureError> {
        let (listener, addr) = super::bind_loopback("fault proxy").await?;
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| FixtureError::NotReady(format!("fault proxy client: {e}")))?;
        let state = Arc::new(ProxyState {
            upstream: upstream_url.trim_end_matches('/').to_string(),
            http,
            draws: Mutex::new(None),
            forwarded: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            resets: AtomicU64::new(0),
            lost_answers: AtomicU64::new(0),
        });
        let accept = tokio::spawn(accept_loop(listener, state.clone()));
        Ok(Self { addr, state, accept })
    }

    /// The proxy's base URL, e.g. `http://127.0.0.1:40123`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Starts failing requests by `mix`, or stops (`None`).
    pub fn set_faults(&self, mix: Option<FaultMix>) {
        let mut draws = self.state.draws.lock().unwrap_or_else(|p| p.into_inner());
        *draws = mix.map(Draws::new);
    }

    /// What the proxy did so far.
    pub fn counts(&self) -> FaultCounts {
        FaultCounts {
            forwarded: self.state.forwarded.load(Ordering::Relaxed),
            errors: self.state.errors.load(Ordering::Relaxed),
            resets: self.state.resets.load(Ordering::Relaxed),
            lost_answers: self.state.lost_answers.load(Ordering::Relaxed),
        }
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<ProxyState>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        tokio::spawn(serve_connection(stream, state.clone()));
    }
}

/// Serves one client connection; a request whose fate is to lose its connection closes it.
async fn serve_connection(stream: tokio::net::TcpStream, state: Arc<ProxyState>) {
    let kill = Arc::new(Notify::new());
    let killer = kill.clone();
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let state = state.clone();
        let kill = killer.clone();
        async move {
            let response = match state.fate() {
                Fate::Error => {
                    state.errors.fetch_add(1, Ordering::Relaxed);
                    unavailable()
                }
                Fate::Reset => {
                    state.resets.fetch_add(1, Ordering::Relaxed);
                    kill.notify_one();
                    std::future::pending::<hyper::Response<Body>>().await
                }
                Fate::LoseAnswer => {
                    let _ = forward(&state, request).await;
                    state.lost_answers.fetch_add(1, Ordering::Relaxed);
                    kill.notify_one();
                    std::future::pending::<hyper::Response<Body>>().await
                }
                Fate::Forward => {
                    let response = forward(&state, request).await;
                    state.forwarded.fetch_add(1, Ordering::Relaxed);
                    response
                }
            };
            Ok::<_, std::convert::Infallible>(response)
        }
    });
    let connection = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => {}
        _ = kill.notified() => {}
    }
}

fn unavailable() -> hyper::Response<Body> {
    let mut response = hyper::Response::new(Body::from(
        r#"{"error": {"code": 503, "title": "Service Unavailable", "message": "injected fault"}}"#,
    ));
    *response.status_mut() = hyper::StatusCode::SERVICE_UNAVAILABLE;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

/// Sends `request` to Keystone and returns its answer (a 502 when Keystone cannot be reached).
async fn forward(state: &ProxyState, request: hyper::Request<Incoming>) -> hyper::Response<Body> {
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(Body::new(body), 16 * 1024 * 1024).await else {
        return bad_gateway();
    };
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut outgoing = state
        .http
        .request(parts.method.clone(), format!("{}{path}", state.upstream))
        .body(body);
    for (name, value) in &parts.headers {
        if name != hyper::header::HOST && name != hyper::header::CONTENT_LENGTH {
            outgoing = outgoing.header(name, value);
        }
    }
    let Ok(answer) = outgoing.send().await else {
        return bad_gateway();
    };
    let status = answer.status();
    let headers = answer.headers().clone();
    let Ok(bytes) = answer.bytes().await else {
        return bad_gateway();
    };
    let mut response = hyper::Response::new(Body::from(bytes));
    *response.status_mut() = status;
    for (name, value) in &headers {
        if name != hyper::header::CONTENT_LENGTH && name != hyper::header::TRANSFER_ENCODING {
            response.headers_mut().append(name, value.clone());
        }
    }
    response
}

fn bad_gateway() -> hyper::Response<Body> {
    let mut response = hyper::Response::new(Body::empty());
    *response.status_mut() = hyper::StatusCode::BAD_GATEWAY;
    response
}
