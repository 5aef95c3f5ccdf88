//! The HTTP server: startup on a listener, routing of every path to discovery, OpenAPI, hooks or a resource
//! verb, and the handle tests use to reach it.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::controllers;
use super::discovery;
use super::hooks::{Fault, Hooks, RequestKey};
use super::http::{json_value, page_not_found, with_content_type};
use super::kubeconfig;
use super::lifecycle;
use super::namespaces;
use super::openapi;
use super::partial;
use super::reads;
use super::request::{Output, Query, ResourcePath, negotiate, parse_resource_path, wants_aggregated_discovery};
use super::resources::{GroupResource, ResourceDef};
use super::status::ApiError;
use super::store::{DEFAULT_HISTORY, Store};
use super::watch;
use super::writes;

/// How to start the emulator.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The address to listen on; port 0 picks a free one.
    pub listen: SocketAddr,
    /// How many changes the watch history keeps.
    pub history_capacity: usize,
    /// How often idle watches with `allowWatchBookmarks` get a BOOKMARK.
    pub bookmark_interval: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            history_capacity: DEFAULT_HISTORY,
            bookmark_interval: Duration::from_secs(60),
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Binding the listener failed.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
}

/// State shared by every request and background controller.
pub struct Shared {
    /// The object store.
    pub store: Store,
    /// Test hooks.
    pub hooks: Hooks,
    /// Cancelled at shutdown; ends watches and controllers.
    pub shutdown: CancellationToken,
    /// The bookmark period for watches.
    pub bookmark_interval: Duration,
}

/// The resource a request addresses, resolved against the registry.
#[derive(Clone, Debug)]
pub struct Target {
    /// The resource.
    pub def: Arc<ResourceDef>,
    /// The requested version.
    pub version: String,
    /// The namespace from the URL.
    pub namespace: Option<String>,
    /// The object name from the URL.
    pub name: Option<String>,
    /// The subresource from the URL.
    pub subresource: Option<String>,
}

impl Target {
    /// The group-resource as the client addressed it.
    pub fn gr(&self) -> GroupResource {
        self.def.group_resource()
    }

    /// `group/version` of the request.
    pub fn api_version(&self) -> String {
        self.def.api_version(&self.version)
    }

    /// The namespace as stored (empty for cluster-scoped resources).
    pub fn namespace_key(&self) -> &str {
        self.namespace.as_deref().unwrap_or("")
    }
}

/// Starts servers.
pub struct ApiServer;

impl ApiServer {
    /// Starts the emulator with the default namespaces and its background controllers.
    pub async fn start(config: ServerConfig) -> Result<ServerHandle, StartError> {
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|source| StartError::Bind {
                addr: config.listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| StartError::Bind {
            addr: config.listen,
            source,
        })?;
        let shared = Arc::new(Shared {
            store: Store::new(config.history_capacity),
            hooks: Hooks::default(),
            shutdown: CancellationToken::new(),
            bookmark_interval: config.bookmark_interval,
        });
        namespaces::create_defaults(&shared);
        let controllers = controllers::spawn(shared.clone());
        let app = Router::new().fallback(dispatch).with_state(shared.clone());
        let token = shared.shutdown.clone();
        let server = tokio::spawn(async move {
            let result = axum::serve(listener, app)
                .with_graceful_shutdown(async move { token.cancelled().await })
                .await;
            if let Err(err) = result {
                tracing::warn!(error = %err, "api emulator server stopped with an error");
            }
        });
        Ok(ServerHandle {
            addr,
            url: format!("http://{addr}"),
            shared,
            tasks: vec![server, controllers],
        })
    }
}

/// A running emulator.
pub struct ServerHandle {
    addr: SocketAddr,
    url: String,
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

impl ServerHandle {
    /// The base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Writes a kubeconfig pointing at this server (for kubectl, kube-rs and the Python client).
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        kubeconfig::write(path, &self.url)
    }

    /// The test hooks (counters, faults, cuts).
    pub fn hooks(&self) -> &Hooks {
        &self.shared.hooks
    }

    /// Ends open watch streams, of every resource or of one.
    pub fn cut_watches(&self, resource: Option<GroupResource>) {
        self.shared.hooks.cut_watches(resource);
    }

    /// Drops the watch history: watches from older resourceVersions get an in-stream 410.
    pub fn compact_history(&self) {
        self.shared.store.compact();
    }

    /// Adds a fault rule.
    pub fn inject_fault(&self, fault: Fault) {
        self.shared.hooks.inject(fault);
    }

    /// The current global resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.shared.store.current_rv()
    }

    /// The number of stored objects of a resource (all namespaces).
    pub fn object_count(&self, group: &str, resource: &str) -> usize {
        self.shared
            .store
            .read(|r| r.count(&GroupResource::new(group, resource)))
    }

    /// Stops accepting requests, ends watches and controllers, and waits for them.
    pub async fn shutdown(mut self) {
        self.shared.shutdown.cancel();
        for task in std::mem::take(&mut self.tasks) {
            // Connections a client keeps open mid-request must not hang shutdown: give them a moment, then
            // stop the task. A task that panicked has already stopped; nothing more to do.
            let abort = task.abort_handle();
            if tokio::time::timeout(Duration::from_secs(5), task).await.is_err() {
                abort.abort();
            }
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
    }
}

async fn dispatch(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let query = Query::parse(uri.query());
    tracing::debug!(%method, %uri, content_type = ?headers.get("content-type"), accept = ?headers.get("accept"), "request");
    if let Some(rest) = path.strip_prefix("/__emulator/") {
        return hook_endpoint(&shared, &method, rest, &query, &body);
    }
    if method == Method::GET
        && let Some(response) = non_resource(&shared, &path, &headers)
    {
        return response;
    }
    let Some(parsed) = parse_resource_path(&path) else {
        return page_not_found();
    };
    let Some(target) = resolve(&shared, parsed) else {
        return page_not_found();
    };
    let verb = verb_of(&method, &target, &query);
    let Some(verb) = verb else { return page_not_found() };
    let key = RequestKey {
        verb: verb.to_string(),
        group: target.def.group.clone(),
        resource: target.def.plural.clone(),
        subresource: target.subresource.clone().unwrap_or_default(),
    };
    let action = shared.hooks.on_request(&key);
    if !action.latency.is_zero() {
        tokio::time::sleep(action.latency).await;
    }
    if let Some(code) = action.error_status {
        return injected_error(code).into_response();
    }
    let output = match negotiate(&headers, target.def.is_custom()) {
        Ok(output) => output,
        Err(error) => return error.into_response(),
    };
    shared.hooks.on_output(&key, output.into());
    let result = match verb {
        "get" => reads::get(&shared, &target, &query, output),
        "list" => reads::list(&shared, &target, &query, output),
        "watch" => watch::watch(shared.clone(), &target, &query, output),
        "create" => writes::create(&shared, &target, &query, &headers, &body),
        "update" => writes::update(&shared, &target, &query, &headers, &body),
        "patch" => writes::patch(&shared, &target, &query, &headers, &body),
        "delete" => lifecycle::delete(&shared, &target, &query, &body),
        "deletecollection" => lifecycle::delete_collection(&shared, &target, &query, &headers, &body),
        _ => Err(ApiError::method_not_allowed(&target.gr(), verb)),
    };
    let response = result.unwrap_or_else(IntoResponse::into_response);
    match output {
        // Reads render metadata themselves; a write's answer is transformed here, as apiserver does.
        Output::Metadata { list, version } if !matches!(verb, "get" | "list" | "watch") => {
            partial::transform_response(response, &target.def, list, version).await
        }
        _ => response,
    }
}

fn injected_error(code: u16) -> ApiError {
    let reason = match code {
        400 => "BadRequest",
        403 => "Forbidden",
        404 => "NotFound",
        409 => "Conflict",
        410 => "Expired",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "",
    };
    ApiError::with_reason(code, reason, format!("injected fault: HTTP {code}"))
}

fn verb_of(method: &Method, target: &Target, query: &Query) -> Option<&'static str> {
    let sub = target.subresource.as_deref();
    let named = target.name.is_some();
    match (method.as_str(), named, sub) {
        ("GET", true, None) if query.flag("watch") => Some("watch"),
        ("GET", true, _) => Some("get"),
        ("GET", false, None) if query.flag("watch") => Some("watch"),
        ("GET", false, None) => Some("list"),
        ("POST", false, None) => Some("create"),
        ("PUT", true, _) => Some("update"),
        ("PATCH", true, _) => Some("patch"),
        ("DELETE", true, None) => Some("delete"),
        ("DELETE", false, None) => Some("deletecollection"),
        _ => None,
    }
}

fn resolve(shared: &Shared, parsed: ResourcePath) -> Option<Target> {
    let def = shared
        .store
        .read(|r| r.registry().lookup(&parsed.group, &parsed.version, &parsed.resource))?;
    match (&parsed.namespace, def.namespaced, &parsed.name) {
        (Some(_), false, _) => return None,
        (None, true, Some(_)) => return None,
        _ => {}
    }
    if let Some(sub) = parsed.subresource.as_deref() {
        let ok = match sub {
            "status" => def.status_subresource,
            "scale" => def.scale.is_some(),
            "finalize" => def.group.is_empty() && def.plural == "namespaces",
            _ => false,
        };
        if !ok {
            return None;
        }
    }
    Some(Target {
        def,
        version: parsed.version,
        namespace: parsed.namespace,
        name: parsed.name,
        subresource: parsed.subresource,
    })
}

fn non_resource(shared: &Shared, path: &str, headers: &HeaderMap) -> Option<Response> {
    let registry = || shared.store.read(|r| r.registry().clone());
    let trimmed = path.trim_end_matches('/');
    let response = match trimmed {
        "/version" => json_value(200, &discovery::version(), &[]),
        "/healthz" | "/readyz" | "/livez" => with_content_type(200, b"ok".to_vec(), "text/plain; charset=utf-8", &[]),
        "/api" => {
            if wants_aggregated_discovery(headers) {
                aggregated(&discovery::aggregated(&registry(), true))
            } else {
                json_value(200, &discovery::legacy_api(), &[])
            }
        }
        "/apis" => {
            if wants_aggregated_discovery(headers) {
                aggregated(&discovery::aggregated(&registry(), false))
            } else {
                json_value(200, &discovery::legacy_apis(&registry()), &[])
            }
        }
        "/api/v1" => json_value(200, &discovery::legacy_resource_list(&registry(), "", "v1")?, &[]),
        "/openapi/v3" => json_value(200, &openapi::index(&registry()), &[]),
        "/openapi/v3/api/v1" => json_value(200, &openapi::document(&registry(), "", "v1")?, &[]),
        _ => {
            let segments: Vec<&str> = trimmed.trim_start_matches('/').split('/').collect();
            match segments.as_slice() {
                ["apis", group] => json_value(200, &discovery::legacy_group(&registry(), group)?, &[]),
                ["apis", group, version] => {
                    json_value(200, &discovery::legacy_resource_list(&registry(), group, version)?, &[])
                }
                ["openapi", "v3", "apis", group, version] => {
                    json_value(200, &openapi::document(&registry(), group, version)?, &[])
                }
                _ => return None,
            }
        }
    };
    Some(response)
}

fn aggregated(doc: &Value) -> Response {
    with_content_type(
        200,
        serde_json::to_vec(doc).unwrap_or_default(),
        discovery::AGGREGATED_CONTENT_TYPE,
        &[],
    )
}

fn hook_endpoint(shared: &Shared, method: &Method, path: &str, query: &Query, body: &Bytes) -> Response {
    match (method.as_str(), path.trim_end_matches('/')) {
        ("GET", "counters") => json_value(200, &json!(shared.hooks.counters()), &[]),
        ("DELETE", "counters") => {
            shared.hooks.reset_counters();
            json_value(200, &json!({}), &[])
        }
        ("POST", "faults") => match serde_json::from_slice::<Fault>(body) {
            Ok(fault) => {
                shared.hooks.inject(fault);
                json_value(201, &json!({}), &[])
            }
            Err(err) => ApiError::bad_request(format!("invalid fault: {err}")).into_response(),
        },
        ("DELETE", "faults") => {
            shared.hooks.clear_faults();
            json_value(200, &json!({}), &[])
        }
        ("POST", "watches/cut") => {
            let resource = query
                .get("resource")
                .map(|r| GroupResource::new(query.get("group").unwrap_or(""), r));
            shared.hooks.cut_watches(resource);
            json_value(200, &json!({}), &[])
        }
        ("POST", "compact") => {
            shared.store.compact();
            json_value(
                200,
                &json!({"resourceVersion": shared.store.current_rv().to_string()}),
                &[],
            )
        }
        _ => page_not_found(),
    }
}
