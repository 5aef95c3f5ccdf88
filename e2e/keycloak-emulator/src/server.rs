//! Starting and stopping an emulator: the router, and an accept loop of its own so the server can drop a
//! connection without answering and close and reopen its listener (connection refused) on demand.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::app::{App, Shared};
use super::clock::Clock;
use super::config::EmulatorConfig;
use super::hooks::{self, DownMode, DownState, HookState, Hooks};
use super::signing::SigningKey;
use super::store::Store;
use super::wire::ApiError;
use super::{client_scopes, clients, control, fgap, groups, realms, token, users};

/// Lets a handler close the connection its request arrived on, without an answer.
#[derive(Clone)]
pub struct ConnectionControl(Arc<Notify>);

impl ConnectionControl {
    /// Closes the connection; the request in flight is never answered.
    pub fn drop_now(&self) {
        self.0.notify_one();
    }
}

/// Why an emulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// The configured seeds are inconsistent (unknown realm, duplicate name…).
    #[error("invalid emulator seed: {0}")]
    Seed(String),
}

/// The in-memory Keycloak.
pub struct KeycloakEmulator;

impl KeycloakEmulator {
    /// Starts an emulator on `config.listen` (and `config.control_listen`) and returns once it accepts
    /// connections.
    pub async fn start(config: EmulatorConfig) -> Result<EmulatorHandle, StartError> {
        let prefix = normalize_prefix(&config.path_prefix);
        let clock = Clock::default();
        let store = Store::new(&config, clock.epoch_millis()).map_err(|e| StartError::Seed(format!("{e:?}")))?;
        let signing = SigningKey::generate().map_err(|e| StartError::Seed(e.to_string()))?;
        let shared: App = Arc::new(Shared {
            store: Mutex::new(store),
            clock,
            hooks: HookState::default(),
            prefix,
            signing,
        });
        let shutdown = CancellationToken::new();
        let mut tasks = Vec::new();

        let listener = bind(config.listen).map_err(|source| StartError::Bind {
            addr: config.listen,
            source,
        })?;
        let addr = listener.local_addr().map_err(|source| StartError::Bind {
            addr: config.listen,
            source,
        })?;
        let router = full_router(&shared);
        let down = Some(shared.hooks.subscribe_down());
        let acceptor = match &config.tls {
            Some(cert) => Some(cert.acceptor().map_err(|e| StartError::Seed(e.to_string()))?),
            None => None,
        };
        let scheme = if acceptor.is_some() { "https" } else { "http" };
        tasks.push(tokio::spawn(supervise(
            Some(listener),
            addr,
            Serving { router, acceptor },
            down,
            shutdown.clone(),
        )));

        let control_url = match config.control_listen {
            Some(control_addr) => {
                let listener = bind(control_addr).map_err(|source| StartError::Bind {
                    addr: control_addr,
                    source,
                })?;
                let bound = listener.local_addr().map_err(|source| StartError::Bind {
                    addr: control_addr,
                    source,
                })?;
                let router = control::routes().fallback(no_route).with_state(shared.clone());
                tasks.push(tokio::spawn(supervise(
                    Some(listener),
                    bound,
                    Serving { router, acceptor: None },
                    None,
                    shutdown.clone(),
                )));
                Some(format!("http://{bound}"))
            }
            None => None,
        };
        let origin = format!("{scheme}://{addr}");
        Ok(EmulatorHandle {
            url: format!("{origin}{}", shared.prefix),
            origin,
            addr,
            control_url,
            admin_username: config.admin_username,
            admin_password: config.admin_password,
            hooks: Hooks::new(shared),
            shutdown,
            tasks,
        })
    }
}

/// A running emulator. Dropping it stops the server; [`EmulatorHandle::shutdown`] also waits for that.
pub struct EmulatorHandle {
    url: String,
    origin: String,
    addr: SocketAddr,
    control_url: Option<String>,
    admin_username: String,
    admin_password: String,
    hooks: Hooks,
    shutdown: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

impl EmulatorHandle {
    /// The Keycloak base URL clients are configured with (origin plus path prefix, e.g. `http://127.0.0.1:4321/auth`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `http://host:port` without the prefix; the hooks live at `{origin}/__emulator`.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL of the hooks-only listener, when one was configured.
    pub fn control_url(&self) -> Option<&str> {
        self.control_url.as_deref()
    }

    /// Username and password of the master realm administrator.
    pub fn admin_credentials(&self) -> (&str, &str) {
        (&self.admin_username, &self.admin_password)
    }

    /// The test hooks.
    pub fn hooks(&self) -> &Hooks {
        &self.hooks
    }

    /// Stops accepting connections, closes the open ones and waits for the listeners to end.
    pub async fn shutdown(mut self) {
        self.shutdown.cancel();
        for task in std::mem::take(&mut self.tasks) {
            // A listener task that failed has stopped already; there is nothing left to wait for.
            let _ = task.await;
        }
    }
}

impl Drop for EmulatorHandle {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

fn normalize_prefix(prefix: &str) -> String {
    let trimmed = prefix.trim().trim_end_matches('/');
    if trimmed.is_empty() {
        String::new()
    } else if trimmed.starts_with('/') {
        trimmed.to_string()
    } else {
        format!("/{trimmed}")
    }
}

async fn no_route() -> Response {
    ApiError::no_route().into_response()
}

async fn wrong_method() -> Response {
    ApiError::generic_not_found().into_response()
}

/// Every Keycloak route (under the prefix, counted and subject to faults), the hooks, the fallbacks and the
/// 503 gate.
fn full_router(shared: &App) -> Router {
    keycloak_routes(&shared.prefix)
        .route_layer(from_fn_with_state(shared.clone(), hooks::count_and_fault))
        .merge(control::routes())
        .fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(from_fn_with_state(shared.clone(), hooks::unavailable_gate))
        .with_state(shared.clone())
}

fn keycloak_routes(prefix: &str) -> Router<App> {
    let admin = |path: &str| format!("{prefix}/admin/realms/{{realm}}{path}");
    let client = |path: &str| admin(&format!("/clients/{{id}}{path}"));
    let authz = |path: &str| client(&format!("/authz/resource-server{path}"));
    Router::new()
        .route(
            &format!("{prefix}/realms/{{realm}}/protocol/openid-connect/token"),
            post(token::token),
        )
        .route(
            &format!("{prefix}/realms/{{realm}}/protocol/openid-connect/certs"),
            get(token::certs),
        )
        .route(&format!("{prefix}/admin/serverinfo"), get(super::server_info::get))
        .route(&admin(""), get(realms::get))
        .route(&admin("/users"), get(users::list).post(users::create))
        .route(&admin("/users/count"), get(users::count))
        .route(&admin("/users/{id}"), get(users::get).delete(users::delete))
        .route(&admin("/users/{id}/groups"), get(users::groups))
        .route(&admin("/users/{id}/groups/count"), get(users::groups_count))
        .route(
            &admin("/users/{id}/groups/{group_id}"),
            axum::routing::put(users::join).delete(users::leave),
        )
        .route(&admin("/groups"), get(groups::list).post(groups::create_top_level))
        .route(&admin("/groups/count"), get(groups::count))
        .route(
            &admin("/groups/{id}"),
            get(groups::get).put(groups::update).delete(groups::delete),
        )
        .route(
            &admin("/groups/{id}/children"),
            get(groups::children).post(groups::create_child),
        )
        .route(&admin("/groups/{id}/members"), get(groups::members))
        .route(&admin("/group-by-path/{*path}"), get(groups::by_path))
        .route(&admin("/clients"), get(clients::list).post(clients::create))
        .route(
            &client(""),
            get(clients::get).put(clients::update).delete(clients::delete),
        )
        .route(
            &client("/client-secret"),
            get(clients::get_secret).post(clients::regenerate_secret),
        )
        .route(&client("/service-account-user"), get(clients::service_account_user))
        .route(
            &client("/protocol-mappers/models"),
            get(clients::list_mappers).post(clients::create_mapper),
        )
        .route(
            &client("/protocol-mappers/models/{mapper_id}"),
            get(clients::get_mapper)
                .put(clients::update_mapper)
                .delete(clients::delete_mapper),
        )
        .route(&client("/default-client-scopes"), get(clients::default_scopes))
        .route(
            &client("/default-client-scopes/{scope_id}"),
            axum::routing::put(clients::add_default_scope).delete(clients::remove_default_scope),
        )
        .route(&client("/optional-client-scopes"), get(clients::optional_scopes))
        .route(
            &client("/optional-client-scopes/{scope_id}"),
            axum::routing::put(clients::add_optional_scope).delete(clients::remove_optional_scope),
        )
        .route(
            &client("/management/permissions"),
            get(fgap::get_permissions).put(fgap::set_permissions),
        )
        .route(&authz("/scope"), get(fgap::list_scopes))
        .route(&authz("/scope/search"), get(fgap::search_scope))
        .route(&authz("/policy"), get(fgap::list_policies))
        .route(&authz("/policy/search"), get(fgap::search_policy))
        .route(&authz("/policy/client"), post(fgap::create_client_policy))
        .route(
            &authz("/policy/{policy_id}"),
            get(fgap::get_policy).delete(fgap::delete_policy),
        )
        .route(
            &authz("/policy/client/{policy_id}"),
            get(fgap::get_client_policy).put(fgap::update_client_policy),
        )
        .route(
            &authz("/policy/{policy_id}/associatedPolicies"),
            get(fgap::associated_policies),
        )
        .route(
            &authz("/permission/scope/{permission_id}"),
            get(fgap::get_scope_permission).put(fgap::update_scope_permission),
        )
        .route(
            &admin("/client-scopes"),
            get(client_scopes::list).post(client_scopes::create),
        )
        .route(
            &admin("/client-scopes/{id}"),
            get(client_scopes::get)
                .put(client_scopes::update)
                .delete(client_scopes::delete),
        )
}

/// A listening socket with `SO_REUSEADDR`, so the same port can be bound again after a "down" period.
fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

fn refusing(down: &Option<watch::Receiver<DownState>>) -> bool {
    down.as_ref()
        .is_some_and(|rx| rx.borrow().effective(Instant::now()) == Some(DownMode::Refuse))
}

/// Resolves when the down state changes; never for a listener that ignores it.
async fn down_changed(down: &mut Option<watch::Receiver<DownState>>) {
    match down {
        Some(rx) => {
            if rx.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending::<()>().await,
    }
}

/// Accepts connections on `addr` until shutdown; while the server is down with connection refusal, the
/// listener is closed and open connections are shut, and it is bound again when the server comes back.
/// What a listener serves: the router, over TLS when an acceptor is given.
struct Serving {
    router: Router,
    acceptor: Option<emulator_kit::tls::TlsAcceptor>,
}

async fn supervise(
    mut listener: Option<TcpListener>,
    addr: SocketAddr,
    serving: Serving,
    mut down: Option<watch::Receiver<DownState>>,
    shutdown: CancellationToken,
) {
    loop {
        while refusing(&down) {
            listener = None;
            let until = down.as_ref().and_then(|rx| rx.borrow().until);
            let back_at = async {
                match until {
                    Some(until) => tokio::time::sleep_until(until.into()).await,
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = down_changed(&mut down) => {}
                _ = back_at => {}
            }
        }
        let current = match listener.take() {
            Some(listener) => listener,
            None => match bind(addr) {
                Ok(listener) => listener,
                Err(error) => {
                    tracing::warn!(%addr, %error, "keycloak emulator cannot bind its address again; retrying");
                    tokio::select! {
                        _ = shutdown.cancelled() => return,
                        _ = tokio::time::sleep(std::time::Duration::from_millis(100)) => continue,
                    }
                }
            },
        };
        let connections = shutdown.child_token();
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = down_changed(&mut down) => {
                    if refusing(&down) {
                        connections.cancel();
                        break;
                    }
                }
                accepted = current.accept() => match accepted {
                    Ok((stream, _)) => {
                        let (router, acceptor, stop) =
                            (serving.router.clone(), serving.acceptor.clone(), connections.child_token());
                        tokio::spawn(async move {
                            if let Some(stream) = emulator_kit::tls::accept(stream, acceptor.as_ref()).await {
                                serve_connection(stream, router, stop).await;
                            }
                        });
                    }
                    Err(error) => tracing::debug!(%error, "keycloak emulator accept failed"),
                },
            }
        }
    }
}

/// Serves one HTTP/1.1 connection; `stop` shuts it down gracefully (requests in flight finish), a handler's
/// [`ConnectionControl::drop_now`] closes it at once.
async fn serve_connection(stream: emulator_kit::tls::MaybeTlsStream, router: Router, stop: CancellationToken) {
    let kill = Arc::new(Notify::new());
    let control = ConnectionControl(kill.clone());
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(control.clone());
        let router = router.clone();
        async move {
            let mut response = router.oneshot(request.map(Body::new)).await?;
            // Keycloak answers a wrong method with a plain 404; the router's `Allow` header would give it away.
            response.headers_mut().remove(axum::http::header::ALLOW);
            Ok::<_, std::convert::Infallible>(response)
        }
    });
    let connection = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => {}
        _ = kill.notified() => {}
        _ = stop.cancelled() => {
            connection.as_mut().graceful_shutdown();
            tokio::select! {
                _ = connection.as_mut() => {}
                _ = kill.notified() => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_normalized() {
        assert_eq!(normalize_prefix(""), "");
        assert_eq!(normalize_prefix("/"), "");
        assert_eq!(normalize_prefix("auth/"), "/auth");
        assert_eq!(normalize_prefix("/auth"), "/auth");
    }
}
