//! One shutdown signal for the whole process.
//!
//! SIGTERM (Kubernetes stopping the pod) or Ctrl-C cancels a token that every controller, the admin server and
//! leader election watch; controllers stop taking new work and let in-flight reconciles finish.

use tokio_util::sync::CancellationToken;

/// Cancels `token` on SIGTERM or SIGINT. Spawn it once at start-up.
pub async fn cancel_on_signal(token: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = match signal(SignalKind::terminate()) {
            Ok(s) => s,
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGTERM; only Ctrl-C stops the manager");
                let _ = tokio::signal::ctrl_c().await;
                token.cancel();
                return;
            }
        };
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM received, shutting down"),
            _ = tokio::signal::ctrl_c() => tracing::info!("interrupt received, shutting down"),
            _ = token.cancelled() => return,
        }
    }
    #[cfg(not(unix))]
    {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => tracing::info!("interrupt received, shutting down"),
            _ = token.cancelled() => return,
        }
    }
    token.cancel();
}
