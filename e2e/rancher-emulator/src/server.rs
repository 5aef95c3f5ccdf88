//! The HTTP server: its own accept loop (so a fault can drop a connection without answering), the dispatch of
//! every request through hooks, authentication and the handlers, and the handle tests drive it with.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State as AxumState;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Router};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::auth;
use super::bindings::{self, Scope};
use super::config::{ApiToken, ClusterSeed, DuplicateBindingPolicy, RancherConfig};
use super::hooks::{self, CounterRow, Fault, Hooks, RouteKey};
use super::kube_proxy;
use super::namespaces;
use super::norman::{ApiError, json_response, unauthorized};
use super::projects;
use super::request::{Call, Kind, Route};
use super::store::{NamespaceSeed, ProjectSeed, RoleTemplateSeed, SeedError, State};

/// Why the emulator could not start.
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
    /// The configuration has no token, so nothing could authenticate.
    #[error("the emulator needs at least one API token")]
    NoToken,
    /// The TLS certificate could not be used.
    #[error("cannot serve TLS: {0}")]
    Tls(String),
}

/// State shared by every connection.
pub struct Shared {
    state: Mutex<State>,
    /// Counters, faults and the down switch.
    pub hooks: Hooks,
    shutdown: CancellationToken,
}

impl Shared {
    /// Runs `f` on the state after finishing due project removals.
    pub fn with_state<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        // Every holder leaves the state consistent (single-map edits), so a poisoned lock is still usable.
        let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        state.purge_removed_projects(Instant::now());
        f(&mut state)
    }

    /// Every object, rendered as the API renders it (links based on `base`).
    pub fn dump(&self, base: &str) -> Value {
        self.with_state(|state| {
            let clusters: Vec<Value> = state
                .clusters
                .values()
                .map(|c| json!({"id": c.id, "name": c.name}))
                .collect();
            let projects: Vec<Value> = state
                .projects
                .values()
                .map(|p| projects::render(state, p, base))
                .collect();
            let namespaces: Vec<Value> = state
                .namespaces
                .values()
                .map(|ns| {
                    let mut rendered = namespaces::render(ns, base);
                    rendered["clusterId"] = json!(ns.cluster_id);
                    rendered
                })
                .collect();
            let prtbs: Vec<Value> = state
                .prtbs
                .values()
                .map(|b| bindings::render(Scope::Project, b, base))
                .collect();
            let crtbs: Vec<Value> = state
                .crtbs
                .values()
                .map(|b| bindings::render(Scope::Cluster, b, base))
                .collect();
            json!({
                "clusters": clusters,
                "projects": projects,
                "namespaces": namespaces,
                "projectRoleTemplateBindings": prtbs,
                "clusterRoleTemplateBindings": crtbs,
            })
        })
    }
}

/// Cancelled by a handler to make its connection close without an answer.
#[derive(Clone)]
struct ConnectionKill(CancellationToken);

/// Starts emulators.
pub struct RancherEmulator;

impl RancherEmulator {
    /// Starts an emulator with `config`'s clusters and tokens.
    pub async fn start(config: RancherConfig) -> Result<RancherHandle, StartError> {
        let admin = config.tokens.first().cloned().ok_or(StartError::NoToken)?;
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
            state: Mutex::new(State::new(&config)),
            hooks: Hooks::default(),
            shutdown: CancellationToken::new(),
        });
        let app = Router::new().fallback(dispatch).with_state(shared.clone());
        let shutdown = shared.shutdown.clone();
        let acceptor = match &config.tls {
            Some(cert) => Some(cert.acceptor().map_err(|e| StartError::Tls(e.to_string()))?),
            None => None,
        };
        let scheme = if acceptor.is_some() { "https" } else { "http" };
        let task = tokio::spawn(accept_loop(listener, app, acceptor, shutdown));
        Ok(RancherHandle {
            addr,
            url: format!("{scheme}://{addr}"),
            shared,
            admin,
            task: Some(task),
        })
    }
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    app: Router,
    acceptor: Option<emulator_kit::tls::TlsAcceptor>,
    shutdown: CancellationToken,
) {
    loop {
        let accepted = tokio::select! {
            _ = shutdown.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                tracing::debug!(%error, "rancher emulator: accept failed");
                continue;
            }
        };
        let kill = CancellationToken::new();
        let service = TowerToHyperService::new(app.clone().layer(Extension(ConnectionKill(kill.clone()))));
        let shutdown = shutdown.clone();
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let Some(stream) = emulator_kit::tls::accept(stream, acceptor.as_ref()).await else {
                return;
            };
            let connection = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                result = connection => {
                    if let Err(error) = result {
                        tracing::debug!(%error, "rancher emulator: connection ended with an error");
                    }
                }
                _ = kill.cancelled() => {}
                _ = shutdown.cancelled() => {}
            }
        });
    }
}

async fn dispatch(
    AxumState(shared): AxumState<Arc<Shared>>,
    Extension(kill): Extension<ConnectionKill>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let base = headers
        .get("host")
        .and_then(|h| h.to_str().ok())
        .map(|host| format!("http://{host}"))
        .unwrap_or_else(|| "http://localhost".to_string());
    let route = Route::parse(uri.path());
    let query: Vec<(String, String)> = uri
        .query()
        .map(|q| url::form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    if let Route::Hooks(segments) = &route {
        return hooks::handle_http(&shared, &base, &method, segments, &body);
    }
    let key = RouteKey::new(route.verb(&method, &query), route.resource());
    let action = shared.hooks.on_request(&key);
    if !action.latency.is_zero() {
        tokio::time::sleep(action.latency).await;
    }
    if !action.after_handling
        && let Some(failed) = fail(&action, &kill).await
    {
        return failed;
    }
    let user = auth::credentials(&headers)
        .and_then(|(access_key, secret)| shared.with_state(|state| state.user_for(&access_key, &secret)));
    let Some(user) = user else {
        return unauthorized();
    };
    let call = Call {
        method,
        query,
        body: body.to_vec(),
        base,
        path_and_query: uri
            .path_and_query()
            .map(|pq| pq.as_str().to_string())
            .unwrap_or_default(),
        user,
        content_type: headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string(),
    };
    let response = shared.with_state(|state| route_call(state, &call, &route));
    if action.after_handling
        && let Some(failed) = fail(&action, &kill).await
    {
        return failed;
    }
    response
}

/// The injected failure for a request, if any: an error answer, or a connection closed without one.
async fn fail(action: &hooks::FaultAction, kill: &ConnectionKill) -> Option<Response> {
    if action.drop_connection {
        kill.0.cancel();
        return Some(std::future::pending::<Response>().await);
    }
    action.error_status.map(|status| {
        ApiError::new(status, hooks::fault_code(status), format!("injected fault ({status})")).into_response()
    })
}

fn route_call(state: &mut State, call: &Call, route: &Route) -> Response {
    let result = match route {
        Route::Root => Ok(json_response(
            200,
            &json!({
                "type": "apiRoot",
                "links": {
                    "self": format!("{}/v3", call.base),
                    "projects": format!("{}/v3/projects", call.base),
                    "clusters": format!("{}/v3/clusters", call.base),
                    "projectRoleTemplateBindings": format!("{}/v3/projectroletemplatebindings", call.base),
                    "clusterRoleTemplateBindings": format!("{}/v3/clusterroletemplatebindings", call.base),
                    "roleTemplates": format!("{}/v3/roletemplates", call.base),
                }
            }),
        )),
        Route::Collection(kind) => serve_kind(state, call, *kind, None),
        Route::Resource(kind, id) => serve_kind(state, call, *kind, Some(id)),
        Route::Namespaces { cluster, name } => namespaces::serve(state, call, cluster, name.as_deref()),
        Route::KubeNamespaces { cluster, name } => Ok(kube_proxy::serve(state, call, cluster, name.as_deref())),
        Route::UnknownType(name) => Err(ApiError::not_found(format!("failed to find schema {name}"))),
        Route::NotFound | Route::Hooks(_) => Err(ApiError::not_found("404 page not found")),
    };
    result.unwrap_or_else(IntoResponse::into_response)
}

fn serve_kind(state: &mut State, call: &Call, kind: Kind, id: Option<&str>) -> Result<Response, ApiError> {
    match kind {
        Kind::Projects => projects::serve(state, call, id),
        Kind::ProjectBindings => bindings::serve(state, call, Scope::Project, id),
        Kind::ClusterBindings => bindings::serve(state, call, Scope::Cluster, id),
        Kind::Clusters => bindings::serve_clusters(state, call, id),
        Kind::RoleTemplates => bindings::serve_role_templates(state, call, id),
    }
}

/// A running emulator.
pub struct RancherHandle {
    addr: SocketAddr,
    url: String,
    shared: Arc<Shared>,
    admin: ApiToken,
    task: Option<JoinHandle<()>>,
}

impl RancherHandle {
    /// The base URL, `http://127.0.0.1:PORT` (the API is under `/v3`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The admin token as a bearer value, `token-xxxxx:secret`.
    pub fn admin_token(&self) -> String {
        self.admin.bearer()
    }

    /// The admin token's parts.
    pub fn admin(&self) -> &ApiToken {
        &self.admin
    }

    /// The hooks (counters, faults, down switch).
    pub fn hooks(&self) -> &Hooks {
        &self.shared.hooks
    }

    /// All request counters.
    pub fn counters(&self) -> Vec<CounterRow> {
        self.shared.hooks.counters()
    }

    /// How many `verb` requests reached `resource` (`verb` and `resource` as the counters name them, e.g. `list` and `projects`).
    pub fn count(&self, verb: &str, resource: &str) -> u64 {
        self.shared.hooks.count(verb, resource)
    }

    /// Resets the counters.
    pub fn reset_counters(&self) {
        self.shared.hooks.reset_counters();
    }

    /// Adds a fault rule.
    pub fn inject_fault(&self, fault: Fault) {
        self.shared.hooks.inject(fault);
    }

    /// Clears every fault rule.
    pub fn clear_faults(&self) {
        self.shared.hooks.clear_faults();
    }

    /// Makes every API request (not the hooks) lose its connection, or stops doing so.
    pub fn set_down(&self, down: bool) {
        self.shared.hooks.set_down(down);
    }

    /// Adds a cluster.
    pub fn add_cluster(&self, seed: &ClusterSeed) {
        self.shared.with_state(|state| state.add_cluster(seed));
    }

    /// Adds a project directly (as if someone else created it); returns its id.
    pub fn add_project(&self, seed: &ProjectSeed) -> Result<String, SeedError> {
        self.shared.with_state(|state| state.add_project(seed, "user-someone"))
    }

    /// Adds a namespace directly.
    pub fn add_namespace(&self, seed: &NamespaceSeed) -> Result<(), SeedError> {
        self.shared.with_state(|state| state.add_namespace(seed))
    }

    /// Adds or replaces a role template.
    pub fn add_role_template(&self, seed: RoleTemplateSeed) {
        self.shared.with_state(|state| state.add_role_template(seed));
    }

    /// Accepts another token.
    pub fn add_token(&self, token: ApiToken) {
        self.shared.with_state(|state| state.tokens.push(token));
    }

    /// Revokes a token by access key.
    pub fn revoke_token(&self, access_key: &str) {
        self.shared
            .with_state(|state| state.tokens.retain(|t| t.access_key != access_key));
    }

    /// Emulates a Rancher before v2.14 (`false`), which prunes `limit.extended` from quotas, or a current one.
    pub fn set_extended_quotas(&self, supported: bool) {
        self.shared.with_state(|state| state.extended_quotas = supported);
    }

    /// Sets what a duplicate binding create does.
    pub fn set_duplicate_bindings(&self, policy: DuplicateBindingPolicy) {
        self.shared.with_state(|state| state.duplicate_bindings = policy);
    }

    /// Changes how long deleted projects stay visible as `removing`.
    pub fn set_project_removal_delay(&self, delay: Duration) {
        self.shared.with_state(|state| state.project_removal_delay = delay);
    }

    /// Every object, rendered as the API renders it.
    pub fn dump(&self) -> Value {
        self.shared.dump(&self.url)
    }

    /// Every project, rendered.
    pub fn projects(&self) -> Vec<Value> {
        self.dump_list("projects")
    }

    /// One project, rendered.
    pub fn project(&self, id: &str) -> Option<Value> {
        self.projects().into_iter().find(|p| p["id"] == id)
    }

    /// The projects of a cluster with a display name.
    pub fn projects_named(&self, cluster_id: &str, name: &str) -> Vec<Value> {
        self.projects()
            .into_iter()
            .filter(|p| p["clusterId"] == cluster_id && p["name"] == name)
            .collect()
    }

    /// Every namespace (system ones included), rendered by the norman API plus `clusterId`.
    pub fn namespaces(&self) -> Vec<Value> {
        self.dump_list("namespaces")
    }

    /// Every project role template binding, rendered.
    pub fn project_bindings(&self) -> Vec<Value> {
        self.dump_list("projectRoleTemplateBindings")
    }

    /// Every cluster role template binding, rendered.
    pub fn cluster_bindings(&self) -> Vec<Value> {
        self.dump_list("clusterRoleTemplateBindings")
    }

    fn dump_list(&self, key: &str) -> Vec<Value> {
        self.dump()
            .get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }

    /// Stops accepting requests, drops open connections and waits for the server task.
    pub async fn shutdown(mut self) {
        self.shared.shutdown.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for RancherHandle {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
    }
}
