//! One Keystone per test process, started on first use and shared by every test in the process.
//!
//! The server is started on a thread with its own runtime, so it does not depend on the runtime of the test
//! that happened to start it; it stops when the process exits (gunicorn's watchdog notices).

use tokio::sync::OnceCell;

use super::server::{KeystoneServer, ServerOptions};

static SHARED: OnceCell<KeystoneServer> = OnceCell::const_new();

/// The process's Keystone; panics with installation instructions when Keystone is not installed.
pub async fn keystone() -> &'static KeystoneServer {
    SHARED
        .get_or_init(|| async {
            let started = tokio::task::spawn_blocking(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format!("cannot build a runtime for Keystone: {e}"))?;
                runtime
                    .block_on(KeystoneServer::start(ServerOptions::default()))
                    .map_err(|e| e.to_string())
            })
            .await;
            match started {
                Ok(Ok(server)) => server,
                Ok(Err(error)) => panic!("cannot start the shared Keystone: {error}"),
                Err(error) => panic!("starting the shared Keystone panicked: {error}"),
            }
        })
        .await
}
