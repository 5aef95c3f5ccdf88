//! A TCP proxy in front of a Keystone that a test can break: take it down (connections refused by closing them,
//! open ones cut) and bring it back, or hold back Keystone's answers while the requests still reach Keystone
//! (a crash "after Keystone acted but before the caller heard").

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{AbortHandle, JoinHandle};

use super::FixtureError;

struct State {
    upstream: SocketAddr,
    down: AtomicBool,
    response_delay_ms: AtomicU64,
    connections: Mutex<Vec<AbortHandle>>,
}

impl State {
    fn cut_all(&self) {
        if let Ok(mut connections) = self.connections.lock() {
            for connection in connections.drain(..) {
                connection.abort();
            }
        }
    }
}

/// A running proxy (stopped on drop). It runs on the runtime that started it.
pub struct KeystoneProxy {
    addr: SocketAddr,
    state: Arc<State>,
    accept: JoinHandle<()>,
}

impl KeystoneProxy {
    /// Starts a proxy on a free port of 127.0.0.1 forwarding to the host and port of `upstream_url`.
    pub async fn start(upstream_url: &str) -> Result<Self, FixtureError> {
        let url = url::Url::parse(upstream_url).map_err(|e| FixtureError::NotReady(format!("proxy upstream: {e}")))?;
        let upstream = url
            .socket_addrs(|| Some(80))
            .ok()
            .and_then(|addrs| addrs.into_iter().next())
            .ok_or_else(|| FixtureError::NotReady(format!("proxy upstream {upstream_url} has no address")))?;
        let (listener, addr) = super::bind_loopback("proxy").await?;
        let state = Arc::new(State {
            upstream,
            down: AtomicBool::new(false),
            response_delay_ms: AtomicU64::new(0),
            connections: Mutex::new(Vec::new()),
        });
        let accept = tokio::spawn(accept_loop(listener, state.clone()));
        Ok(Self { addr, state, accept })
    }

    /// The proxy's base URL, e.g. `http://127.0.0.1:40123`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Takes the proxy down (every connection is closed at once, open ones are cut) or brings it back.
    pub fn set_down(&self, down: bool) {
        self.state.down.store(down, Ordering::SeqCst);
        if down {
            self.state.cut_all();
        }
    }

    /// Holds back every chunk of Keystone's answers for `delay` (zero: forward at once). Requests still reach
    /// Keystone immediately.
    pub fn set_response_delay(&self, delay: Duration) {
        let millis = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.state.response_delay_ms.store(millis, Ordering::SeqCst);
    }
}

impl Drop for KeystoneProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.state.cut_all();
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<State>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        if state.down.load(Ordering::SeqCst) {
            drop(client);
            continue;
        }
        let task = tokio::spawn(forward(client, state.clone()));
        if let Ok(mut connections) = state.connections.lock() {
            connections.retain(|c| !c.is_finished());
            connections.push(task.abort_handle());
        }
    }
}

async fn forward(client: TcpStream, state: Arc<State>) {
    let Ok(upstream) = TcpStream::connect(state.upstream).await else {
        return;
    };
    let (mut client_read, mut client_write) = client.into_split();
    let (mut upstream_read, mut upstream_write) = upstream.into_split();
    let requests = async {
        let _ = tokio::io::copy(&mut client_read, &mut upstream_write).await;
        let _ = upstream_write.shutdown().await;
    };
    let answers = async {
        let mut buffer = vec![0u8; 16 * 1024];
        loop {
            let read = match upstream_read.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            let delay = state.response_delay_ms.load(Ordering::SeqCst);
            if delay > 0 {
                tokio::time::sleep(Duration::from_millis(delay)).await;
            }
            if client_write.write_all(&buffer[..read]).await.is_err() {
                break;
            }
        }
        let _ = client_write.shutdown().await;
    };
    tokio::join!(requests, answers);
}
