//! The HTTP server: startup on a listener, routing of every path to discovery, OpenAPI, hooks or a resource
//! verb, and the handle tests use to reach it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::auth::{
    self, Access, Attributes, Authenticator, Authorizer, DecisionLog, DecisionRow, ForbiddenResponse, RbacSnapshot,
    ResourceAttributes, impersonation,
};
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
use super::request_log::RequestLog;
use super::resources::{GroupResource, ResourceDef};
use super::status::ApiError;
use super::store::{DEFAULT_HISTORY, Store};
use super::watch;
use super::writes;
use emulator_kit::tls::{TestCa, serve_https};

/// How to start the emulator.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The address to listen on; port 0 picks a free one.
    pub listen: SocketAddr,
    /// How many changes the watch history keeps.
    pub history_capacity: usize,
    /// How often idle watches with `allowWatchBookmarks` get a BOOKMARK.
    pub bookmark_interval: Duration,
    /// Where to write one line per request (arrival, time taken, answer), if anywhere.
    pub request_log: Option<PathBuf>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            history_capacity: DEFAULT_HISTORY,
            bookmark_interval: Duration::from_secs(60),
            request_log: None,
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
    /// The serving certificate could not be made.
    #[error("cannot make the serving certificate: {0}")]
    Tls(#[from] emulator_kit::tls::TlsError),
    /// The request log could not be created.
    #[error("cannot create the request log {path}: {source}")]
    RequestLog {
        /// The file.
        path: PathBuf,
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
    /// Bearer tokens and who they name.
    pub authn: Authenticator,
    /// The RBAC authorizer's current snapshot.
    pub authorizer: Authorizer,
    /// Every authorization decision and 403 answer.
    pub decisions: Arc<DecisionLog>,
    /// Cancelled at shutdown; ends watches and controllers.
    pub shutdown: CancellationToken,
    /// The bookmark period for watches.
    pub bookmark_interval: Duration,
    /// The per-request log, when configured.
    pub request_log: Option<RequestLog>,
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
        let request_log = match &config.request_log {
            None => None,
            Some(path) => Some(RequestLog::create(path).map_err(|source| StartError::RequestLog {
                path: path.clone(),
                source,
            })?),
        };
        let shared = Arc::new(Shared {
            store: Store::new(config.history_capacity),
            hooks: Hooks::default(),
            authn: Authenticator::default(),
            authorizer: Authorizer::default(),
            decisions: Arc::new(DecisionLog::default()),
            shutdown: CancellationToken::new(),
            bookmark_interval: config.bookmark_interval,
            request_log,
        });
        namespaces::create_defaults(&shared);
        auth::bootstrap::create_default_policy(&shared);
        // client-go sends credentials only over TLS: serve HTTPS from a CA made for this server.
        let ca = TestCa::new("kube-emulator-ca")?;
        let serving = ca.issue_server_cert("kube-apiserver", &[&addr.ip().to_string()])?;
        let acceptor = serving.acceptor()?;
        let controllers = controllers::spawn(shared.clone());
        let app = Router::new().fallback(dispatch).with_state(shared.clone());
        let server = tokio::spawn(serve_https(listener, app, acceptor, shared.shutdown.clone()));
        Ok(ServerHandle {
            addr,
            url: format!("https://{addr}"),
            ca_pem: ca.cert_pem(),
            shared,
            tasks: vec![server, controllers],
        })
    }
}

/// A running emulator.
pub struct ServerHandle {
    addr: SocketAddr,
    url: String,
    ca_pem: String,
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

impl ServerHandle {
    /// The base URL, `https://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The PEM certificate of the CA that signed the serving certificate (what clients must trust).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// An HTTP client that trusts the server and authenticates with `token`.
    pub fn http_client(&self, token: &str) -> reqwest::Client {
        let mut headers = reqwest::header::HeaderMap::new();
        if let Ok(value) = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}")) {
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        let mut builder = reqwest::Client::builder().default_headers(headers);
        if let Ok(ca) = reqwest::Certificate::from_pem(self.ca_pem.as_bytes()) {
            builder = builder.add_root_certificate(ca);
        }
        // Only a broken TLS backend makes the builder fail; fall back to a client that will say so per request.
        builder.build().unwrap_or_default()
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Writes a cluster admin's kubeconfig pointing at this server (for kubectl, kube-rs and the Python client).
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        kubeconfig::write(path, &self.url, &self.ca_pem, auth::ADMIN_TOKEN)
    }

    /// A kube-rs client that trusts the server and authenticates with `token`.
    pub async fn kube_client(&self, token: &str) -> Result<kube::Client, Box<dyn std::error::Error + Send + Sync>> {
        let text = kubeconfig::render(&self.url, &self.ca_pem, token);
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&text)?;
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default()).await?;
        Ok(kube::Client::try_from(config)?)
    }

    /// Writes a kubeconfig that authenticates with `token` (a ServiceAccount's, a tenant's).
    pub fn write_kubeconfig_with_token(&self, path: &Path, token: &str) -> std::io::Result<()> {
        kubeconfig::write(path, &self.url, &self.ca_pem, token)
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

    /// Mints a bearer token that authenticates as `user` with `groups` (plus `system:authenticated`): a
    /// tenant, a second admin, a component the test plays.
    pub fn mint_token(&self, user: &str, groups: &[&str]) -> String {
        let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        self.shared.authn.mint_user(user, &groups)
    }

    /// Every distinct authorization decision so far (who, verb, resource, namespace, allowed, which rule).
    pub fn decisions(&self) -> Vec<DecisionRow> {
        self.shared.decisions.rows()
    }

    /// Every 403 answered so far.
    pub fn forbidden_responses(&self) -> Vec<ForbiddenResponse> {
        self.shared.decisions.forbidden_responses()
    }

    /// The decision log itself (to keep reading it after the handle is gone).
    pub fn decision_log(&self) -> Arc<DecisionLog> {
        self.shared.decisions.clone()
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

    /// Every stored object, with its resource (for checks over everything a test left, e.g. secret hygiene).
    pub fn all_objects(&self) -> Vec<(GroupResource, Arc<Value>)> {
        self.shared.store.read(|r| {
            r.stored_resources()
                .into_iter()
                .flat_map(|gr| {
                    r.range(&gr, None, None)
                        .into_iter()
                        .map(move |(_, object)| (gr.clone(), object))
                        .collect::<Vec<_>>()
                })
                .collect()
        })
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

/// Environment variable naming a directory where every emulator writes its authorization decisions when it
/// stops, so a check over a whole test run can find the rules of the shipped roles nothing used
/// (`cargo run -p e2e --bin rbac-coverage`).
pub const DECISION_LOG_DIR_ENV: &str = "E2E_AUTHZ_LOG_DIR";

impl ServerHandle {
    fn write_decision_log(&self) {
        let Some(dir) = std::env::var_os(DECISION_LOG_DIR_ENV) else {
            return;
        };
        let dir = std::path::PathBuf::from(dir);
        let path = dir.join(format!("decisions-{}-{}.json", std::process::id(), self.addr.port()));
        let file = self.shared.decisions.to_file();
        let written = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(&path, serde_json::to_vec(&file).unwrap_or_default()));
        if let Err(error) = written {
            tracing::warn!(path = %path.display(), %error, "cannot write the decision log");
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.write_decision_log();
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
    let Some(log) = &shared.request_log else {
        return handle(&shared, method, uri, headers, body, &mut String::new()).await;
    };
    let (arrival, started) = (SystemTime::now(), Instant::now());
    let mut user = String::new();
    let response = handle(&shared, method.clone(), uri.clone(), headers, body, &mut user).await;
    log.record(
        arrival,
        started.elapsed(),
        response.status().as_u16(),
        &user,
        method.as_str(),
        &uri.to_string(),
    );
    response
}

/// Answers one request; `user` is set to who sent it once that is known.
async fn handle(
    shared: &Arc<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
    user: &mut String,
) -> Response {
    let path = uri.path().to_string();
    let query = Query::parse(uri.query());
    tracing::debug!(%method, %uri, content_type = ?headers.get("content-type"), accept = ?headers.get("accept"), "request");
    if let Some(rest) = path.strip_prefix("/__emulator/") {
        return hook_endpoint(shared, &method, rest, &query, &body);
    }
    let access = match authenticate(shared, &headers) {
        Ok(access) => access,
        Err(error) => return error.into_response(),
    };
    user.clone_from(&access.user.name);
    let forbidden = |error: ApiError| {
        shared.decisions.record_forbidden(ForbiddenResponse {
            user: access.user.name.clone(),
            method: method.to_string(),
            path: path.clone(),
            message: error.message.clone(),
        });
        error.into_response()
    };
    let parsed = parse_resource_path(&path);
    let attributes = request_attributes(&method, &path, parsed.as_ref(), &query);
    if let Err(error) = access.check(&attributes) {
        return forbidden(error);
    }
    if method == Method::GET
        && let Some(response) = non_resource(shared, &path, &headers)
    {
        return response;
    }
    let Some(parsed) = parsed else {
        return page_not_found();
    };
    let Some(target) = resolve(shared, parsed) else {
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
    let action = shared.hooks.on_request(&key, &access.user.name);
    if !action.latency.is_zero() {
        tokio::time::sleep(action.latency).await;
    }
    if let Some(code) = action.error_status
        && !action.after_handling
    {
        return injected_error(code).into_response();
    }
    let output = match negotiate(&headers, target.def.is_custom()) {
        Ok(output) => output,
        Err(error) => return error.into_response(),
    };
    shared.hooks.on_output(&key, output.into());
    let is_review = target.def.builtin().is_some_and(|k| k.is_review());
    let result = match verb {
        "create" if is_review => auth::reviews::review(shared, &access, &target, &headers, &body),
        "create" if target.subresource.as_deref() == Some("token") => {
            auth::reviews::token_request(shared, &target, &headers, &body)
        }
        "get" => reads::get(shared, &target, &query, output),
        "list" => reads::list(shared, &target, &query, output),
        "watch" => watch::watch(shared.clone(), &target, &query, output),
        "create" => writes::create(shared, &access, &target, &query, &headers, &body),
        "update" => writes::update(shared, &access, &target, &query, &headers, &body),
        "patch" => writes::patch(shared, &access, &target, &query, &headers, &body),
        "delete" => lifecycle::delete(shared, &target, &query, &body),
        "deletecollection" => lifecycle::delete_collection(shared, &target, &query, &headers, &body),
        _ => Err(ApiError::method_not_allowed(&target.gr(), verb)),
    };
    let response = match result {
        Ok(response) => response,
        Err(error) if error.code == 403 => return forbidden(error),
        Err(error) => error.into_response(),
    };
    if let Some(code) = action.error_status {
        // `after_handling`: the request took effect; its answer is lost.
        return injected_error(code).into_response();
    }
    match output {
        // Reads render metadata themselves; a write's answer is transformed here, as apiserver does.
        Output::Metadata { list, version } if !matches!(verb, "get" | "list" | "watch") => {
            partial::transform_response(response, &target.def, list, version).await
        }
        _ => response,
    }
}

/// Authenticates the request and applies impersonation: who the request acts as, with the RBAC state it is
/// judged against. A cluster admin acting as itself needs no RBAC snapshot.
fn authenticate(shared: &Shared, headers: &HeaderMap) -> Result<Access, ApiError> {
    let user = shared.authn.authenticate(&shared.store, headers)?;
    let impersonating = headers.keys().any(|name| name.as_str().starts_with("impersonate-"));
    let rbac = if user.is_master() && !impersonating {
        Arc::new(RbacSnapshot::default())
    } else {
        shared.authorizer.snapshot(&shared.store)
    };
    let mut access = Access {
        user,
        rbac,
        log: shared.decisions.clone(),
    };
    if impersonating {
        match impersonation::acting_user(&access, headers) {
            Ok(Some(user)) => access.user = Arc::new(user),
            Ok(None) => {}
            Err(error) => {
                if error.code == 403 {
                    shared.decisions.record_forbidden(ForbiddenResponse {
                        user: access.user.name.clone(),
                        method: "impersonate".into(),
                        path: String::new(),
                        message: error.message.clone(),
                    });
                }
                return Err(error);
            }
        }
    }
    Ok(access)
}

/// The attributes kube-apiserver's request-info resolver gives a request (`requestinfo.go`): resource
/// requests under `/api/v1/…` and `/apis/<group>/<version>/…`, everything else a non-resource path.
fn request_attributes(method: &Method, path: &str, parsed: Option<&ResourcePath>, query: &Query) -> Attributes {
    let Some(parsed) = parsed else {
        return Attributes::NonResource {
            verb: method.as_str().to_ascii_lowercase(),
            path: path.to_string(),
        };
    };
    let named = parsed.name.is_some();
    let mut name = parsed.name.clone().unwrap_or_default();
    let verb = match method.as_str() {
        "GET" | "HEAD" if named => "get",
        "GET" | "HEAD" => {
            if let Some(selected) = query
                .get("fieldSelector")
                .and_then(|s| s.strip_prefix("metadata.name="))
                .filter(|n| !n.is_empty() && !n.contains([',', '/', '%']) && *n != "." && *n != "..")
            {
                name = selected.to_string();
            }
            if query.flag("watch") { "watch" } else { "list" }
        }
        "POST" => "create",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" if named => "delete",
        "DELETE" => "deletecollection",
        other => {
            return Attributes::NonResource {
                verb: other.to_ascii_lowercase(),
                path: path.to_string(),
            };
        }
    };
    // `/api/v1/namespaces/<ns>` is in namespace <ns> itself, so a RoleBinding there can grant access to it.
    let namespace = match (&parsed.namespace, parsed.group.as_str(), parsed.resource.as_str()) {
        (Some(ns), _, _) => ns.clone(),
        (None, "", "namespaces") => parsed.name.clone().unwrap_or_default(),
        (None, _, _) => String::new(),
    };
    Attributes::Resource(ResourceAttributes {
        verb: verb.into(),
        group: parsed.group.clone(),
        resource: parsed.resource.clone(),
        subresource: parsed.subresource.clone().unwrap_or_default(),
        namespace,
        name,
    })
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
        ("POST", true, Some("token")) => Some("create"),
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
            "token" => def.group.is_empty() && def.plural == "serviceaccounts",
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
        "/openapi/v2" => with_content_type(200, openapi::v2_document(), openapi::V2_CONTENT_TYPE, &[]),
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
        ("GET", "authz/decisions") => json_value(200, &json!(shared.decisions.rows()), &[]),
        ("GET", "authz/forbidden") => json_value(200, &json!(shared.decisions.forbidden_responses()), &[]),
        ("DELETE", "authz") => {
            shared.decisions.clear();
            json_value(200, &json!({}), &[])
        }
        ("POST", "tokens") => {
            #[derive(serde::Deserialize)]
            struct TokenFor {
                user: String,
                #[serde(default)]
                groups: Vec<String>,
            }
            match serde_json::from_slice::<TokenFor>(body) {
                Ok(request) => json_value(
                    201,
                    &json!({"token": shared.authn.mint_user(&request.user, &request.groups)}),
                    &[],
                ),
                Err(err) => ApiError::bad_request(format!("invalid token request: {err}")).into_response(),
            }
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
