//! The admin HTTP server: `/metrics` for Prometheus, `/healthz` for liveness, `/readyz` for readiness.
//!
//! Kubebuilder operators serve metrics and probes on two ports (`:8080`, `:8081`); the manager keeps that
//! split so existing ServiceMonitors and probe settings carry over. Both ports are served by the same router.

use std::net::SocketAddr;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;
use crate::runner::Readiness;

/// What the admin endpoints report on.
#[derive(Clone)]
pub struct AdminState {
    /// Metrics rendered at `/metrics`.
    pub metrics: Metrics,
    /// Readiness reported at `/readyz`.
    pub readiness: Readiness,
}

/// Failure to start the admin server.
#[derive(Debug, thiserror::Error)]
#[error("cannot listen on {addr}: {source}")]
pub struct AdminError {
    addr: String,
    #[source]
    source: std::io::Error,
}

/// The routes of the admin server.
pub fn router(state: AdminState) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(state)
}

async fn metrics(State(state): State<AdminState>) -> impl IntoResponse {
    (
        [("content-type", "text/plain; version=0.0.4; charset=utf-8")],
        state.metrics.render(),
    )
}

async fn healthz() -> &'static str {
    "ok"
}

async fn readyz(State(state): State<AdminState>) -> (StatusCode, &'static str) {
    if state.readiness.is_ready() {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "caches not synced")
    }
}

/// Binds `addr` (`:8080` style or `host:port`; `0` disables) and returns the bound address with the server future.
pub async fn bind(
    addr: &str,
    state: AdminState,
    shutdown: CancellationToken,
) -> Result<Option<(SocketAddr, impl std::future::Future<Output = ()> + use<>)>, AdminError> {
    if addr == "0" || addr.is_empty() {
        return Ok(None);
    }
    let normalized = if addr.starts_with(':') {
        format!("0.0.0.0{addr}")
    } else {
        addr.to_string()
    };
    let listener = TcpListener::bind(&normalized).await.map_err(|source| AdminError {
        addr: addr.to_string(),
        source,
    })?;
    let local = listener.local_addr().map_err(|source| AdminError {
        addr: addr.to_string(),
        source,
    })?;
    let server = async move {
        let result = axum::serve(listener, router(state))
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await;
        if let Err(error) = result {
            tracing::error!(%error, "admin server failed");
        }
    };
    Ok(Some((local, server)))
}
