//! Runs one reconciler on `kube_runtime::Controller` with the operator's policies.
//!
//! A controller module implements [`Reconciler`]: which watches drive it, what to do when an object changes
//! (`reconcile`) and when it goes away (`cleanup`). The runner supplies everything else, identically for every
//! controller: the finalizer lifecycle (add before side effects, clean up, remove last), passes that never start
//! from a copy older than the controller's own last write, per-object exponential backoff with jitter after errors,
//! requeue only when the reconciler asks for it, panics caught and counted, controller-runtime metrics, readiness
//! once the caches are synced, and a graceful stop that lets in-flight reconciles finish.

use std::collections::HashMap;
use std::fmt::Debug;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt};
use jiff::Timestamp;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::runtime::controller::{Action, Config as ControllerConfig, Error as ControllerError};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::backoff::BackoffPolicy;
use crate::error::{ErrorCategory, ReconcileError};
use crate::events::EventPublisher;
use crate::finalizer::{self, FinalizerSpec};
use crate::metrics::{ControllerMetrics, Metrics, ObjectGauge, ObjectReadiness, ReconcileResult};
use crate::namespaces::WatchedNamespaces;
use crate::own_writes::OwnWrites;
use crate::queue::QueueProbe;
use crate::shard::Shard;
use crate::triggers::{OwnWatch, Triggers};

/// What a successful reconcile asks for next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing until a watched object changes.
    Done,
    /// Run again after this delay even if nothing changes (a rotation time, a pending dependency).
    RequeueAfter(Duration),
}

impl Outcome {
    /// Requeue at a wall-clock time (immediately if it has passed).
    pub fn requeue_at(when: Timestamp, now: Timestamp) -> Self {
        let delay = Duration::try_from(when.duration_since(now)).unwrap_or(Duration::ZERO);
        Outcome::RequeueAfter(delay)
    }

    /// The earlier of two requests (Done is the latest of all).
    pub fn sooner(self, other: Outcome) -> Outcome {
        match (self, other) {
            (Outcome::Done, o) | (o, Outcome::Done) => o,
            (Outcome::RequeueAfter(a), Outcome::RequeueAfter(b)) => Outcome::RequeueAfter(a.min(b)),
        }
    }
}

/// Where a controller instance watches: one namespace, or all of them.
#[derive(Clone)]
pub struct Scope {
    client: Client,
    namespace: Option<String>,
}

impl Scope {
    /// The namespace watched, or `None` for all namespaces.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// An API handle for a namespaced kind in this scope.
    pub fn api<T>(&self) -> Api<T>
    where
        T: Resource<DynamicType = (), Scope = NamespaceResourceScope>,
    {
        match &self.namespace {
            Some(ns) => Api::namespaced(self.client.clone(), ns),
            None => Api::all(self.client.clone()),
        }
    }

    /// The client, for cluster-scoped kinds or other namespaces.
    pub fn client(&self) -> &Client {
        &self.client
    }
}

/// Shared services handed to every reconcile of one controller.
pub struct Context {
    /// Kubernetes client.
    pub client: Client,
    /// Event publisher (repeats suppressed).
    pub events: EventPublisher,
    /// This controller's metrics.
    pub metrics: ControllerMetrics,
    /// The server-side-apply field manager of this controller.
    pub field_manager: String,
    /// Every namespace the manager watches (for reads spanning all of a controller's objects).
    pub namespaces: WatchedNamespaces,
    /// This controller's writes to its own objects that the watch has not shown yet: record every write to the
    /// reconciled object here ([`OwnWrites::wrote`]), so the next pass does not start from an older copy.
    pub own_writes: OwnWrites,
}

/// Implemented by each controller.
pub trait Reconciler: Send + Sync + 'static {
    /// The kind this controller reconciles.
    type Resource: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Serialize
        + Debug
        + Send
        + Sync
        + 'static;
    /// The controller's error type.
    type Error: ReconcileError;

    /// The controller's name: metrics label, event reporter, field manager suffix, `--controllers` value.
    fn name(&self) -> &'static str;

    /// The finalizer guarding external cleanup, if the controller has any.
    fn finalizer(&self) -> Option<FinalizerSpec> {
        None
    }

    /// Whether a status change written by someone else asks for a reconcile (a status field users edit to ask for
    /// something, as the rotation time of an application credential). Off by default: then the echoes of the
    /// operator's own status writes start no reconcile (see `triggers`).
    const STATUS_TRIGGERS: bool = false;

    /// Drops from an object, before it enters the controller's cache, what nothing reads from the cache (the
    /// reconcile re-reads the object where it needs all of it). Default: nothing beyond managedFields.
    fn trim_cached(_obj: &mut Self::Resource) {}

    /// The object's `Ready` condition, for the `platform_operator_objects` gauge (none: counted as unknown).
    fn ready_condition(_obj: &Self::Resource) -> Option<Condition> {
        None
    }

    /// Per-object gauge families this controller publishes, as `(name, help)` (labels `namespace`, `name`).
    const OBJECT_GAUGES: &'static [(&'static str, &'static str)] = &[];

    /// The values of [`Self::OBJECT_GAUGES`] for one object (read at each scrape from the cache).
    fn object_gauges(_obj: &Self::Resource) -> Vec<ObjectGauge> {
        Vec::new()
    }

    /// Adds watches on owned and related kinds for this scope (the object's own watch is there already).
    fn watches(&self, triggers: Triggers<Self::Resource>, _scope: &Scope) -> Triggers<Self::Resource> {
        triggers
    }

    /// Brings the world in line with `obj` (never called while `obj` is being deleted).
    fn reconcile(
        &self,
        obj: Arc<Self::Resource>,
        ctx: &Context,
    ) -> impl Future<Output = Result<Outcome, Self::Error>> + Send;

    /// Undoes external side effects before `obj` disappears; the finalizer is removed when this succeeds.
    fn cleanup(
        &self,
        _obj: Arc<Self::Resource>,
        _ctx: &Context,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        async { Ok(()) }
    }
}

/// Runner-level failures around a reconcile.
#[derive(Debug, thiserror::Error)]
pub enum RunError<E: ReconcileError> {
    /// The reconciler failed.
    #[error(transparent)]
    Reconcile(E),
    /// Adding or removing the finalizer failed.
    #[error("updating finalizers: {0}")]
    Finalizer(#[source] kube::Error),
    /// Reading the stored object (the cache had not shown this controller's last write) failed.
    #[error("reading the object: {0}")]
    Reread(#[source] kube::Error),
    /// The reconcile panicked; the message is the panic payload.
    #[error("reconcile panicked: {0}")]
    Panicked(String),
    /// The reconcile did not finish within the deadline: it was dropped at its pending step (as a crash there
    /// would) and is retried with backoff, so one stuck call cannot hold a worker forever.
    #[error("reconcile did not finish within {}s; abandoned, will retry", .0.as_secs())]
    TimedOut(Duration),
}

impl<E: ReconcileError> RunError<E> {
    /// The error category, for metrics and backoff.
    pub fn category(&self) -> ErrorCategory {
        match self {
            RunError::Reconcile(e) => e.category(),
            RunError::Finalizer(_) | RunError::Reread(_) | RunError::TimedOut(_) => ErrorCategory::Transient,
            RunError::Panicked(_) => ErrorCategory::Internal,
        }
    }
}

/// Whether all controllers' caches have synced: what `/readyz` reports.
#[derive(Clone, Default)]
pub struct Readiness {
    pending: Arc<AtomicUsize>,
}

impl Readiness {
    /// Registers one cache that must sync before the process is ready.
    fn register(&self) -> ReadinessGuard {
        self.pending.fetch_add(1, Ordering::SeqCst);
        ReadinessGuard {
            pending: self.pending.clone(),
            done: false,
        }
    }

    /// True when every registered cache has synced.
    pub fn is_ready(&self) -> bool {
        self.pending.load(Ordering::SeqCst) == 0
    }
}

struct ReadinessGuard {
    pending: Arc<AtomicUsize>,
    done: bool,
}

impl ReadinessGuard {
    fn synced(mut self) {
        self.done = true;
        self.pending.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Drop for ReadinessGuard {
    fn drop(&mut self) {
        // A controller that stops before syncing must not keep the process "not ready" forever if it restarts;
        // but it must not count as synced either. Leaving the count raised is the honest answer.
        if !self.done {
            tracing::debug!("controller stopped before its cache synced");
        }
    }
}

/// Process-wide services the runner needs.
#[derive(Clone)]
pub struct Runtime {
    /// Kubernetes client (instrumented).
    pub client: Client,
    /// The metrics registry.
    pub metrics: Metrics,
    /// Readiness of all controllers.
    pub readiness: Readiness,
    /// Cancelled once to stop every controller gracefully.
    pub shutdown: CancellationToken,
    /// What every controller of the process runs with.
    pub defaults: ControllerDefaults,
}

impl Runtime {
    /// Spawns work that belongs to no single object (an orphan sweep): on the first shard only, so a sharded
    /// install does it once.
    pub fn spawn_global_work(&self, work: impl Future<Output = ()> + Send + 'static) {
        if self.defaults.shard.runs_global_work() {
            tokio::spawn(work);
        }
    }
}

/// Settings every controller of the process shares.
#[derive(Clone, Debug)]
pub struct ControllerDefaults {
    /// Namespaces to watch; empty means all.
    pub namespaces: Vec<String>,
    /// Reconciles running at once, per controller and watched namespace.
    pub concurrency: u16,
    /// Field managers are `<prefix>-<controller name>`.
    pub field_manager_prefix: String,
    /// Retry delays after errors.
    pub backoff: BackoffPolicy,
    /// The longest one reconcile may run before it is abandoned and retried.
    pub reconcile_timeout: Duration,
    /// The share of the objects this replica reconciles.
    pub shard: Shard,
    /// How long a trigger waits for more triggers of the same object before its reconcile starts, so a burst
    /// of changes (a gateway accepting a route and then its policy) costs one pass; zero starts at once.
    pub debounce: Duration,
}

impl Default for ControllerDefaults {
    fn default() -> Self {
        ControllerDefaults {
            namespaces: Vec::new(),
            concurrency: 4,
            field_manager_prefix: "manager".into(),
            backoff: BackoffPolicy::default(),
            reconcile_timeout: Duration::from_secs(300),
            shard: Shard::WHOLE,
            debounce: Duration::ZERO,
        }
    }
}

impl ControllerDefaults {
    /// The server-side-apply field manager of the controller named `name`.
    pub fn field_manager(&self, name: &str) -> String {
        format!("{}-{name}", self.field_manager_prefix)
    }
}

/// A started controller: runs until the runtime's shutdown token is cancelled.
pub type Running = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

/// A controller's configuration is unusable, so it cannot start.
#[derive(Debug, thiserror::Error)]
#[error("controller {controller}: {message}")]
pub struct StartError {
    /// Which controller.
    pub controller: &'static str,
    /// What is wrong, safe to print.
    pub message: String,
}

struct State<R: Reconciler> {
    reconciler: Arc<R>,
    context: Context,
    finalizer: Option<FinalizerSpec>,
    backoff: BackoffPolicy,
    reconcile_timeout: Duration,
    failures: Mutex<HashMap<ObjectRef<R::Resource>, FailureStreak>>,
    in_flight: Mutex<HashMap<u64, Instant>>,
    next_id: AtomicU64,
    queue: QueueProbe<R::Resource>,
}

impl<R: Reconciler> State<R> {
    fn track_start(&self) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut in_flight) = self.in_flight.lock() {
            in_flight.insert(id, Instant::now());
            self.context.metrics.in_flight(in_flight.values().map(|t| t.elapsed()));
        }
        id
    }

    fn track_end(&self, id: u64) {
        if let Ok(mut in_flight) = self.in_flight.lock() {
            in_flight.remove(&id);
            self.context.metrics.in_flight(in_flight.values().map(|t| t.elapsed()));
        }
    }
}

/// Starts `reconciler` with the process's shared settings (watched namespaces, concurrency, backoff) under the
/// field manager derived from its name; it runs until `runtime.shutdown` is cancelled and in-flight reconciles
/// have finished.
///
/// The caches it needs are registered with `runtime.readiness` before this returns, so `/readyz` cannot report
/// ready between spawning the controller and its first poll.
pub fn start<R: Reconciler>(reconciler: Arc<R>, runtime: &Runtime) -> Running {
    let namespaces = &runtime.defaults.namespaces;
    let scopes: Vec<Option<String>> = if namespaces.is_empty() {
        vec![None]
    } else {
        namespaces.iter().cloned().map(Some).collect()
    };
    let guards: Vec<ReadinessGuard> = scopes.iter().map(|_| runtime.readiness.register()).collect();
    Box::pin(run_scopes(reconciler, runtime.clone(), scopes, guards))
}

async fn run_scopes<R: Reconciler>(
    reconciler: Arc<R>,
    runtime: Runtime,
    scopes: Vec<Option<String>>,
    guards: Vec<ReadinessGuard>,
) {
    let name = reconciler.name();
    let defaults = &runtime.defaults;
    let field_manager = defaults.field_manager(name);
    let state = Arc::new(State {
        finalizer: reconciler.finalizer(),
        reconciler: reconciler.clone(),
        context: Context {
            client: runtime.client.clone(),
            events: EventPublisher::new(runtime.client.clone(), &field_manager),
            metrics: runtime.metrics.controller(name, defaults.concurrency),
            field_manager,
            namespaces: WatchedNamespaces::new(defaults.namespaces.clone()),
            own_writes: OwnWrites::default(),
        },
        backoff: defaults.backoff,
        reconcile_timeout: defaults.reconcile_timeout,
        failures: Mutex::new(HashMap::new()),
        in_flight: Mutex::new(HashMap::new()),
        next_id: AtomicU64::new(0),
        queue: QueueProbe::default(),
    });
    let queue = state.queue.clone();
    runtime.metrics.register_queue(name, Box::new(move || queue.depth()));
    let instances = scopes.into_iter().zip(guards).map(|(namespace, guard)| {
        let scope = Scope {
            client: runtime.client.clone(),
            namespace,
        };
        run_scope(state.clone(), scope, runtime.clone(), guard)
    });
    futures::future::join_all(instances).await;
    tracing::info!(controller = name, "controller stopped");
}

async fn run_scope<R: Reconciler>(state: Arc<State<R>>, scope: Scope, runtime: Runtime, guard: ReadinessGuard) {
    let name = state.reconciler.name();
    let concurrency = runtime.defaults.concurrency;
    let api: Api<R::Resource> = scope.api();
    let shard = runtime.defaults.shard;
    let triggers = Triggers::new(
        api,
        OwnWatch {
            config: watcher::Config::default(),
            probe: state.queue.clone(),
            status_triggers: R::STATUS_TRIGGERS,
            shard,
            trim: R::trim_cached,
            readiness: |obj| readiness(R::ready_condition(obj)),
            own_writes: state.context.own_writes.clone(),
        },
    );
    let tally = triggers.ready_tally();
    runtime.metrics.register_objects(name, Box::new(move || tally.counts()));
    let controller = state
        .reconciler
        .watches(triggers, &scope)
        .into_controller()
        .with_config(
            ControllerConfig::default()
                .concurrency(concurrency)
                .debounce(runtime.defaults.debounce),
        )
        .graceful_shutdown_on(runtime.shutdown.clone().cancelled_owned());
    let store = controller.store();
    if !R::OBJECT_GAUGES.is_empty() {
        let gauged = store.clone();
        let source = move || {
            gauged
                .state()
                .iter()
                .filter(|obj| shard.owns_object(obj.as_ref()))
                .flat_map(|obj| {
                    let (namespace, name) = (obj.namespace().unwrap_or_default(), obj.name_any());
                    R::object_gauges(obj)
                        .into_iter()
                        .map(move |gauge| (namespace.clone(), name.clone(), gauge))
                })
                .collect()
        };
        if let Err(error) = runtime
            .metrics
            .register_object_gauges(R::OBJECT_GAUGES, Box::new(source))
        {
            tracing::warn!(controller = name, %error, "per-object gauges are not published");
        }
    }
    let namespace = scope.namespace().unwrap_or("*").to_string();
    let synced = Arc::new(AtomicBool::new(false));
    let synced_flag = synced.clone();
    tokio::spawn(async move {
        // kube-runtime's readiness signal wakes only the most recent waiter, and the controller itself waits on
        // it too; re-polling with a short timeout observes the store once it is ready whoever was woken.
        loop {
            match tokio::time::timeout(Duration::from_millis(200), store.wait_until_ready()).await {
                Ok(Ok(())) => {
                    tracing::info!(controller = name, namespace, "cache synced");
                    synced_flag.store(true, Ordering::Release);
                    guard.synced();
                    return;
                }
                Ok(Err(_)) => return,
                Err(_elapsed) => {}
            }
        }
    });
    let queue = state.queue.clone();
    controller
        .run(reconcile::<R>, error_policy::<R>, state)
        .take_until(forceful_stop(name, runtime.shutdown.clone(), synced))
        .for_each(|result| {
            let queue = queue.clone();
            async move {
                match result {
                    // The object went before its turn came: it no longer waits.
                    Err(ControllerError::ObjectNotFound(gone)) => {
                        let object = ObjectRef::<R::Resource>::new(&gone.name);
                        let object = match &gone.namespace {
                            Some(namespace) => object.within(namespace),
                            None => object,
                        };
                        queue.started(&object);
                    }
                    // Reconcile failures are logged (with their category) where they happen.
                    Err(ControllerError::ReconcilerFailed(..)) | Ok(_) => {}
                    // A watch that cannot list or watch (RBAC, a CRD not installed) would otherwise fail silently.
                    Err(error) => {
                        tracing::warn!(controller = name, %error, "watch or queue failure; retrying with backoff")
                    }
                }
            }
        })
        .await;
}

/// How a Ready condition counts in `platform_operator_objects`.
fn readiness(ready: Option<Condition>) -> ObjectReadiness {
    match ready {
        Some(condition) => ObjectReadiness {
            ready: match condition.status.as_str() {
                "True" => "true",
                "False" => "false",
                _ => "unknown",
            },
            reason: condition.reason,
        },
        None => ObjectReadiness {
            ready: "unknown",
            reason: String::new(),
        },
    }
}

/// How long a graceful stop waits for in-flight reconciles before abandoning them; below Kubernetes' default
/// 30 s termination grace period so the manager still releases its Lease before SIGKILL.
pub const SHUTDOWN_DRAIN_TIMEOUT: Duration = Duration::from_secs(25);

/// Resolves when a graceful stop has to give way to a forceful one: at once when shutdown comes before the
/// cache synced (nothing can be in flight yet, and kube-runtime's queue would wait forever for a sync that the
/// stopped watches can no longer deliver), else after [`SHUTDOWN_DRAIN_TIMEOUT`].
async fn forceful_stop(controller: &'static str, shutdown: CancellationToken, synced: Arc<AtomicBool>) {
    shutdown.cancelled().await;
    if !synced.load(Ordering::Acquire) {
        return;
    }
    tokio::time::sleep(SHUTDOWN_DRAIN_TIMEOUT).await;
    tracing::warn!(
        controller,
        timeout_seconds = SHUTDOWN_DRAIN_TIMEOUT.as_secs(),
        "in-flight reconciles did not finish in time; abandoning them"
    );
}

async fn reconcile<R: Reconciler>(obj: Arc<R::Resource>, state: Arc<State<R>>) -> Result<Action, RunError<R::Error>> {
    let name = state.reconciler.name();
    let key = ObjectRef::from_obj(obj.as_ref());
    let id = state.track_start();
    let span = tracing::info_span!(
        "reconcile",
        controller = name,
        namespace = obj.namespace().unwrap_or_default(),
        // `object`, not `name`: JSON logs put the span's own name under `name`.
        object = obj.name_any(),
        reconcile_id = id,
    );
    let started = Instant::now();
    if let Some(waited) = state.queue.started(&key) {
        state.context.metrics.waited(waited);
    }
    state.context.metrics.reconcile_started();
    let (outcome, changes) = crate::changes::collect(
        AssertUnwindSafe(run_within_deadline(obj, &state))
            .catch_unwind()
            .instrument(span.clone()),
    )
    .await;
    state.track_end(id);
    let elapsed = started.elapsed();
    let result = match outcome {
        Ok(result) => result,
        Err(payload) => {
            state.context.metrics.panicked();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(RunError::Panicked(message))
        }
    };
    let _entered = span.enter();
    match result {
        Ok(outcome) => {
            if let Ok(mut failures) = state.failures.lock() {
                failures.remove(&key);
            }
            let (label, action) = match outcome {
                Outcome::Done => (ReconcileResult::Success, Action::await_change()),
                Outcome::RequeueAfter(d) => {
                    state.queue.requeued(key.clone(), d);
                    (ReconcileResult::RequeueAfter, Action::requeue(d))
                }
            };
            state.context.metrics.reconcile_finished(label, elapsed, false);
            summarize(&changes, elapsed, &format!("{outcome:?}"));
            Ok(action)
        }
        Err(error) => {
            let category = error.category();
            state
                .context
                .metrics
                .reconcile_finished(ReconcileResult::Error, elapsed, category.is_terminal());
            summarize(&changes, elapsed, "error");
            match category {
                _ if matches!(error, RunError::TimedOut(_)) => tracing::warn!(%error, "reconcile failed"),
                ErrorCategory::Transient | ErrorCategory::Dependency => {
                    tracing::info!(category = category.as_str(), %error, "reconcile failed")
                }
                ErrorCategory::Invalid | ErrorCategory::Internal => {
                    tracing::warn!(category = category.as_str(), %error, "reconcile failed")
                }
            }
            Err(error)
        }
    }
}

/// The reconcile's one line: at info what it changed, at debug when it changed nothing.
fn summarize(changes: &[String], elapsed: Duration, outcome: &str) {
    let elapsed_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
    if changes.is_empty() {
        tracing::debug!(elapsed_ms, outcome, "reconciled: nothing changed");
    } else {
        tracing::info!(elapsed_ms, outcome, changes = %changes.join("; "), "reconciled: {} change(s)", changes.len());
    }
}

async fn run_within_deadline<R: Reconciler>(
    obj: Arc<R::Resource>,
    state: &State<R>,
) -> Result<Outcome, RunError<R::Error>> {
    let deadline = state.reconcile_timeout;
    tokio::time::timeout(deadline, run_phases(obj, state))
        .await
        .unwrap_or(Err(RunError::TimedOut(deadline)))
}

async fn run_phases<R: Reconciler>(obj: Arc<R::Resource>, state: &State<R>) -> Result<Outcome, RunError<R::Error>> {
    let ctx = &state.context;
    let api: Api<R::Resource> = match obj.namespace() {
        Some(ns) => Api::namespaced(ctx.client.clone(), &ns),
        None => Api::all(ctx.client.clone()),
    };
    let Some(obj) = current(&api, obj, &ctx.own_writes).await.map_err(RunError::Reread)? else {
        return Ok(Outcome::Done);
    };
    let Some(spec) = state.finalizer else {
        if obj.meta().deletion_timestamp.is_some() {
            return Ok(Outcome::Done);
        }
        return state.reconciler.reconcile(obj, ctx).await.map_err(RunError::Reconcile);
    };
    if obj.meta().deletion_timestamp.is_some() {
        if !spec.is_present(obj.as_ref()) {
            return Ok(Outcome::Done);
        }
        state
            .reconciler
            .cleanup(obj.clone(), ctx)
            .await
            .map_err(RunError::Reconcile)?;
        finalizer::remove(&api, obj.as_ref(), &spec, &ctx.field_manager)
            .await
            .map_err(RunError::Finalizer)?;
        if let Some(uid) = obj.uid() {
            ctx.events.forget(&uid);
        }
        crate::changes::record("cleanup finished, finalizer removed");
        return Ok(Outcome::Done);
    }
    // Reconcile the object as stored after adding the finalizer: its resourceVersion is current, so a status
    // write guarded by it succeeds on the first pass.
    let obj = match finalizer::ensure(&api, obj.as_ref(), &spec, &ctx.field_manager).await {
        Ok(Some(updated)) => {
            crate::changes::record(format!("finalizer {} added", spec.name));
            ctx.own_writes.wrote(&updated);
            Arc::new(updated)
        }
        Ok(None) => obj,
        Err(error) => {
            ctx.own_writes.may_have_written(obj.as_ref());
            return Err(RunError::Finalizer(error));
        }
    };
    state.reconciler.reconcile(obj, ctx).await.map_err(RunError::Reconcile)
}

/// The copy a pass starts from: the cached one, unless this process wrote the object since (see [`OwnWrites`]);
/// then the stored one, or `None` when the object is gone.
async fn current<K>(api: &Api<K>, cached: Arc<K>, own_writes: &OwnWrites) -> Result<Option<Arc<K>>, kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    if !own_writes.is_behind(cached.as_ref()) {
        return Ok(Some(cached));
    }
    tracing::debug!("the cache has not shown this controller's last write yet; reading the stored object");
    let fresh = crate::live::reread(api, cached.as_ref()).await?;
    if let Some(fresh) = &fresh {
        own_writes.read(fresh);
    }
    Ok(fresh.map(Arc::new))
}

/// An object's consecutive failures, and when the first of them happened.
type FailureStreak = (u32, Instant);

fn error_policy<R: Reconciler>(obj: Arc<R::Resource>, error: &RunError<R::Error>, state: Arc<State<R>>) -> Action {
    let key = ObjectRef::from_obj(obj.as_ref());
    let (failures, failing_for) = match state.failures.lock() {
        Ok(mut map) => {
            let (count, since) = map.entry(key.clone()).or_insert((0, Instant::now()));
            *count = count.saturating_add(1);
            (*count, since.elapsed())
        }
        Err(_) => (1, Duration::ZERO),
    };
    let mut delay = state.backoff.delay_within(failures, failing_for, &mut rand::rng());
    if let RunError::Reconcile(error) = error
        && let Some(cap) = error.retry_within()
    {
        delay = delay.min(cap);
    }
    state.queue.requeued(key, delay);
    Action::requeue(delay)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::SignedDuration;

    #[test]
    fn requeue_at_a_past_time_is_immediate() {
        let now = Timestamp::from_second(1_000).expect("time");
        let five = SignedDuration::from_secs(5);
        assert_eq!(
            Outcome::requeue_at(now - five, now),
            Outcome::RequeueAfter(Duration::ZERO)
        );
        assert_eq!(
            Outcome::requeue_at(now + five, now),
            Outcome::RequeueAfter(Duration::from_secs(5))
        );
    }

    #[test]
    fn sooner_picks_the_earliest_request() {
        let a = Outcome::RequeueAfter(Duration::from_secs(5));
        let b = Outcome::RequeueAfter(Duration::from_secs(2));
        assert_eq!(a.sooner(b), b);
        assert_eq!(Outcome::Done.sooner(a), a);
        assert_eq!(Outcome::Done.sooner(Outcome::Done), Outcome::Done);
    }

    #[test]
    fn readiness_waits_for_every_cache() {
        let readiness = Readiness::default();
        assert!(readiness.is_ready());
        let a = readiness.register();
        let b = readiness.register();
        assert!(!readiness.is_ready());
        a.synced();
        assert!(!readiness.is_ready());
        b.synced();
        assert!(readiness.is_ready());
    }
}
