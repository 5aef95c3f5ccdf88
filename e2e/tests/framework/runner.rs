//! The runner's contracts: finalizer before side effects, cleanup then removal, legacy finalizers migrated,
//! panics caught and counted, failures retried, readiness after sync, graceful shutdown.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use e2e::harness::fault_proxy::Fault;
use e2e::harness::{Deadline, TestCluster, wait_until};
use framework::finalizer::FinalizerSpec;
use framework::runner::{Context, Outcome, Reconciler};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use tokio::sync::Notify;

use crate::support::{Journal, TestError, run};

const FINALIZER: &str = "test.example.com/cleanup";
const LEGACY: &str = "kopf.zalando.org/KopfFinalizerMarker";

struct ConfigMapController {
    journal: Arc<Journal>,
    /// Reconciles that found our finalizer missing on the stored object: must stay 0.
    finalizer_missing: AtomicUsize,
    panics_left: AtomicUsize,
    failures_left: AtomicUsize,
    release_slow: Arc<Notify>,
    slow_finished: AtomicBool,
    /// Reconciles of objects named `gate…` wait here until the gate opens (then they never wait again).
    gate: tokio::sync::Semaphore,
    gate_open: AtomicBool,
}

impl ConfigMapController {
    fn new() -> Self {
        Self {
            journal: Arc::new(Journal::default()),
            finalizer_missing: AtomicUsize::new(0),
            panics_left: AtomicUsize::new(0),
            failures_left: AtomicUsize::new(0),
            release_slow: Arc::new(Notify::new()),
            slow_finished: AtomicBool::new(false),
            gate: tokio::sync::Semaphore::new(0),
            gate_open: AtomicBool::new(false),
        }
    }

    /// Lets every `gate…` reconcile through, now and later.
    fn open_gate(&self) {
        self.gate_open.store(true, Ordering::SeqCst);
        self.gate.add_permits(tokio::sync::Semaphore::MAX_PERMITS / 2);
    }
}

impl Reconciler for ConfigMapController {
    type Resource = ConfigMap;
    type Error = TestError;

    fn name(&self) -> &'static str {
        "configmaptest"
    }

    fn finalizer(&self) -> Option<FinalizerSpec> {
        Some(FinalizerSpec {
            name: FINALIZER,
            legacy: &[LEGACY],
        })
    }

    async fn reconcile(&self, obj: Arc<ConfigMap>, ctx: &Context) -> Result<Outcome, TestError> {
        let name = obj.name_any();
        let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &obj.namespace().unwrap_or_default());
        let stored = api.get(&name).await.map_err(|e| TestError(e.to_string()))?;
        if !stored.finalizers().iter().any(|f| f == FINALIZER) {
            self.finalizer_missing.fetch_add(1, Ordering::SeqCst);
        }
        if name.starts_with("panic") && self.panics_left.load(Ordering::SeqCst) > 0 {
            self.panics_left.fetch_sub(1, Ordering::SeqCst);
            panic!("deliberate panic in reconcile of {name}");
        }
        if name.starts_with("fail") && self.failures_left.load(Ordering::SeqCst) > 0 {
            self.failures_left.fetch_sub(1, Ordering::SeqCst);
            return Err(TestError("deliberate failure".into()));
        }
        if name.starts_with("gate") && !self.gate_open.load(Ordering::SeqCst) {
            let _ = self.gate.acquire().await;
        }
        if name.starts_with("slow") {
            self.release_slow.notified().await;
            self.slow_finished.store(true, Ordering::SeqCst);
        }
        self.journal.record(&name);
        Ok(Outcome::Done)
    }

    async fn cleanup(&self, obj: Arc<ConfigMap>, _ctx: &Context) -> Result<(), TestError> {
        self.journal.record_cleanup(&obj.name_any());
        Ok(())
    }
}

fn config_map(name: &str, finalizers: &[&str]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            finalizers: (!finalizers.is_empty()).then(|| finalizers.iter().map(|f| f.to_string()).collect()),
            ..Default::default()
        },
        ..Default::default()
    }
}

async fn finalizers_of(api: &Api<ConfigMap>, name: &str) -> Option<Vec<String>> {
    api.get_opt(name).await.expect("get").map(|cm| cm.finalizers().to_vec())
}

#[tokio::test]
async fn finalizer_is_added_before_reconcile_and_removed_after_cleanup() {
    let cluster = TestCluster::start().await;
    let ns = cluster.create_namespace("runner").await;
    let controller = Arc::new(ConfigMapController::new());
    let running = run(&cluster, controller.clone(), &ns);
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), &ns);
    api.create(&PostParams::default(), &config_map("app", &[]))
        .await
        .expect("create");

    let journal = controller.journal.clone();
    wait_until("the ConfigMap to be reconciled", Deadline::secs(20), || {
        let journal = journal.clone();
        async move { Ok((journal.reconciles_of("app") > 0).then_some(())) }
    })
    .await;
    assert_eq!(finalizers_of(&api, "app").await, Some(vec![FINALIZER.to_string()]));
    assert_eq!(
        controller.finalizer_missing.load(Ordering::SeqCst),
        0,
        "reconcile ran before the finalizer was stored"
    );

    api.delete("app", &DeleteParams::default()).await.expect("delete");
    wait_until("the ConfigMap to be gone after cleanup", Deadline::secs(20), || {
        let api = api.clone();
        async move {
            Ok(api
                .get_opt("app")
                .await
                .map_err(|e| e.to_string())?
                .is_none()
                .then_some(()))
        }
    })
    .await;
    assert_eq!(controller.journal.cleanups_of("app"), 1, "cleanup runs exactly once");
    running.shutdown.cancel();
    running.task.await.expect("runner stops");
}

#[tokio::test]
async fn legacy_finalizer_is_replaced_by_ours_in_place() {
    let cluster = TestCluster::start().await;
    let ns = cluster.create_namespace("legacy").await;
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), &ns);
    api.create(
        &PostParams::default(),
        &config_map("old", &["other.example.com/keep", LEGACY]),
    )
    .await
    .expect("create");
    let controller = Arc::new(ConfigMapController::new());
    let running = run(&cluster, controller.clone(), &ns);

    let journal = controller.journal.clone();
    wait_until("the migrated ConfigMap to be reconciled", Deadline::secs(20), || {
        let journal = journal.clone();
        async move { Ok((journal.reconciles_of("old") > 0).then_some(())) }
    })
    .await;
    assert_eq!(
        finalizers_of(&api, "old").await,
        Some(vec!["other.example.com/keep".to_string(), FINALIZER.to_string()]),
        "the legacy finalizer is swapped for ours, other finalizers keep their place"
    );
    running.shutdown.cancel();
    running.task.await.expect("runner stops");
}

#[tokio::test]
async fn a_panicking_reconcile_is_counted_and_retried() {
    let cluster = TestCluster::start().await;
    let ns = cluster.create_namespace("panic").await;
    let controller = Arc::new(ConfigMapController::new());
    controller.panics_left.store(2, Ordering::SeqCst);
    let running = run(&cluster, controller.clone(), &ns);
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), &ns);
    api.create(&PostParams::default(), &config_map("panicky", &[]))
        .await
        .expect("create");

    let journal = controller.journal.clone();
    wait_until(
        "the panicking ConfigMap to reconcile after two panics",
        Deadline::secs(20),
        || {
            let journal = journal.clone();
            async move { Ok((journal.reconciles_of("panicky") > 0).then_some(())) }
        },
    )
    .await;
    let exposition = running.metrics.render();
    assert!(
        exposition.contains(r#"controller_runtime_reconcile_panics_total{controller="configmaptest"} 2"#),
        "{exposition}"
    );
    assert!(exposition.contains(r#"controller_runtime_reconcile_total{controller="configmaptest",result="error"} 2"#));
    assert!(!running.task.is_finished(), "a panic must not stop the controller");
    running.shutdown.cancel();
    running.task.await.expect("runner stops");
}

#[tokio::test]
async fn failed_reconciles_are_retried_until_they_succeed() {
    let cluster = TestCluster::start().await;
    let ns = cluster.create_namespace("retry").await;
    let controller = Arc::new(ConfigMapController::new());
    controller.failures_left.store(4, Ordering::SeqCst);
    let running = run(&cluster, controller.clone(), &ns);
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), &ns);
    api.create(&PostParams::default(), &config_map("failing", &[]))
        .await
        .expect("create");

    let journal = controller.journal.clone();
    wait_until(
        "the failing ConfigMap to reconcile after four failures",
        Deadline::secs(20),
        || {
            let journal = journal.clone();
            async move { Ok((journal.reconciles_of("failing") > 0).then_some(())) }
        },
    )
    .await;
    let exposition = running.metrics.render();
    assert!(
        exposition.contains(r#"controller_runtime_reconcile_errors_total{controller="configmaptest"} 4"#),
        "{exposition}"
    );
    assert!(exposition.contains(r#"workqueue_retries_total{controller="configmaptest",name="configmaptest"} 4"#));
    running.shutdown.cancel();
    running.task.await.expect("runner stops");
}

#[tokio::test]
async fn readiness_follows_the_cache_and_shutdown_waits_for_in_flight_work() {
    let cluster = TestCluster::start().await;
    let ns = cluster.create_namespace("shutdown").await;
    let controller = Arc::new(ConfigMapController::new());
    let running = run(&cluster, controller.clone(), &ns);
    let readiness = running.readiness.clone();
    wait_until("the runner to report ready", Deadline::secs(20), || {
        let readiness = readiness.clone();
        async move { Ok(readiness.is_ready().then_some(())) }
    })
    .await;

    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), &ns);
    api.create(&PostParams::default(), &config_map("slow", &[]))
        .await
        .expect("create");
    let exposition_source = running.metrics.clone();
    wait_until("the slow reconcile to be in flight", Deadline::secs(20), || {
        let metrics = exposition_source.clone();
        async move {
            let text = metrics.render();
            Ok(text
                .contains(r#"controller_runtime_active_workers{controller="configmaptest"} 1"#)
                .then_some(()))
        }
    })
    .await;

    running.shutdown.cancel();
    assert!(
        !running.task.is_finished(),
        "the runner must wait for the in-flight reconcile"
    );
    controller.release_slow.notify_one();
    tokio::time::timeout(std::time::Duration::from_secs(20), running.task)
        .await
        .expect("runner stops once the reconcile finished")
        .expect("runner task");
    assert!(
        controller.slow_finished.load(Ordering::SeqCst),
        "the in-flight reconcile ran to completion"
    );
}

/// A stop that arrives before the cache synced ends the runner promptly: kube-runtime's queue would otherwise
/// wait for a sync that the stopped watches can no longer deliver (seen as a manager hanging on SIGTERM right
/// after start).
#[tokio::test]
async fn shutdown_before_the_cache_synced_stops_promptly() {
    let cluster = TestCluster::start_behind_fault_proxy().await;
    let ns = cluster.create_namespace("early-stop").await;
    // The initial list takes 3 s, so the stop below certainly comes first.
    cluster
        .api_faults()
        .add_fault(Fault::route("list configmaps").latency(std::time::Duration::from_secs(3)));
    let controller = Arc::new(ConfigMapController::new());
    let running = crate::support::run_with(cluster.proxied_client().await, controller.clone(), &ns);
    running.shutdown.cancel();
    assert!(!running.readiness.is_ready(), "the stop came before the cache synced");
    tokio::time::timeout(std::time::Duration::from_secs(10), running.task)
        .await
        .expect("the runner stops without waiting for a cache sync")
        .expect("runner task");
}

/// The value of the `configmaptest` series of `family` in an exposition (0 when absent).
fn series(text: &str, family: &str) -> f64 {
    let prefix = format!(r#"{family}{{controller="configmaptest",name="configmaptest"}} "#);
    text.lines()
        .find_map(|line| line.strip_prefix(&prefix)?.parse().ok())
        .unwrap_or(0.0)
}

/// `workqueue_depth` counts the objects waiting while every worker is busy and falls to 0 once they ran;
/// `workqueue_queue_duration_seconds` measures how long they waited.
#[tokio::test]
async fn the_work_queue_depth_rises_while_workers_are_blocked_and_falls_to_zero_after() {
    let cluster = TestCluster::start().await;
    let ns = cluster.create_namespace("queue").await;
    let controller = Arc::new(ConfigMapController::new());
    let running = run(&cluster, controller.clone(), &ns);
    let metrics = running.metrics.clone();
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), &ns);
    // Both workers (concurrency 2) block on the gated objects.
    for name in ["gate-1", "gate-2"] {
        api.create(&PostParams::default(), &config_map(name, &[]))
            .await
            .expect("create");
    }
    wait_until("both workers to be busy", Deadline::secs(20), || {
        let text = metrics.render();
        async move {
            let busy = text.contains(r#"controller_runtime_active_workers{controller="configmaptest"} 2"#);
            Ok(busy.then_some(()))
        }
    })
    .await;
    for name in ["queued-a", "queued-b", "queued-c"] {
        api.create(&PostParams::default(), &config_map(name, &[]))
            .await
            .expect("create");
    }
    let depth = wait_until("three objects to wait", Deadline::secs(20), || {
        let depth = series(&metrics.render(), "workqueue_depth");
        async move { Ok((depth >= 3.0).then_some(depth)) }
    })
    .await;
    assert!(depth <= 5.0, "at most the five objects wait: {depth}");
    assert_eq!(
        controller.journal.reconciles_of("queued-a"),
        0,
        "nothing ran while the workers were blocked"
    );

    controller.open_gate();
    let journal = controller.journal.clone();
    wait_until("every object to be reconciled", Deadline::secs(20), || {
        let journal = journal.clone();
        async move {
            let done = ["queued-a", "queued-b", "queued-c"]
                .iter()
                .all(|n| journal.reconciles_of(n) > 0);
            Ok(done.then_some(()))
        }
    })
    .await;
    wait_until("the queue to be empty", Deadline::secs(20), || {
        let depth = series(&metrics.render(), "workqueue_depth");
        async move { Ok((depth == 0.0).then_some(())) }
    })
    .await;
    let text = metrics.render();
    assert!(series(&text, "workqueue_queue_duration_seconds_count") >= 5.0, "{text}");
    assert!(series(&text, "workqueue_queue_duration_seconds_sum") > 0.0);
    running.shutdown.cancel();
}
