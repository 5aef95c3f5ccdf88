//! A real OpenStack Keystone for the end-to-end tests and the sandbox.
//!
//! - [`install`]: the PyPI installation (`e2e/keystone/install.sh`, pinned by `e2e/keystone/constraints.txt`);
//! - [`server`]: a Keystone on 127.0.0.1 (sqlite, fernet tokens, gunicorn), started from a bootstrapped template;
//! - [`shared`]: one Keystone per test process, started on first use and shared by its tests (each test makes its
//!   own users, so tests stay independent);
//! - [`admin`]: what an administrator does (users, roles, projects) and what tests check (count a user's
//!   application credentials, log in with one);
//! - [`proxy`]: a breakable TCP proxy to simulate Keystone outages and lost answers;
//! - [`fault_proxy`]: an HTTP proxy failing a seeded share of requests (the chaos run's Keystone faults);
//! - [`sample`]: preparing Keystone and the cluster so `manifests/samples`' `ac-barbican` becomes Ready.

pub mod admin;
pub mod fault_proxy;
pub mod install;
pub mod proxy;
pub mod sample;
pub mod server;
pub mod shared;

pub use admin::{KeystoneAdmin, ServiceAccount};
pub use proxy::KeystoneProxy;
pub use server::{KeystoneServer, ServerOptions, TlsServing};

/// A listener on a free port of 127.0.0.1 for one of the proxies in front of Keystone, and its address.
async fn bind_loopback(what: &str) -> Result<(tokio::net::TcpListener, std::net::SocketAddr), FixtureError> {
    let io = |source| FixtureError::Io {
        what: format!("binding the {what}"),
        source,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(io)?;
    let addr = listener.local_addr().map_err(io)?;
    Ok((listener, addr))
}

/// Why a Keystone fixture could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// Keystone is not installed (the message says how to install it).
    #[error("{0}")]
    NotInstalled(String),
    /// A file or process operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What we were doing.
        what: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A setup command failed.
    #[error("{command} failed:\n{detail}")]
    Command {
        /// The command.
        command: String,
        /// The end of its error output.
        detail: String,
    },
    /// The server did not come up.
    #[error("Keystone did not become ready: {0}")]
    NotReady(String),
    /// A Keystone API call failed.
    #[error("Keystone {operation}: {detail}")]
    Api {
        /// The call.
        operation: String,
        /// What came back.
        detail: String,
    },
    /// A Kubernetes call failed.
    #[error("{what}: {source}")]
    Kube {
        /// What we were doing.
        what: String,
        /// The cause.
        #[source]
        source: Box<kube::Error>,
    },
}
