//! A throwaway controller on ConfigMaps, driven by the framework runner in-process, for framework tests.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use e2e::harness::TestCluster;
use framework::backoff::BackoffPolicy;
use framework::metrics::Metrics;
use framework::runner::{ControllerDefaults, Readiness, Runtime};
use framework::{ErrorCategory, ReconcileError};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The error of the test controller.
#[derive(Debug, thiserror::Error)]
#[error("test failure: {0}")]
pub struct TestError(pub String);

impl ReconcileError for TestError {
    fn category(&self) -> ErrorCategory {
        ErrorCategory::Transient
    }

    fn reason(&self) -> &'static str {
        "TestFailure"
    }
}

/// What the test controller saw, shared with the test body.
#[derive(Default)]
pub struct Journal {
    /// Reconcile calls per object name.
    pub reconciles: Mutex<BTreeMap<String, usize>>,
    /// Cleanup calls per object name.
    pub cleanups: Mutex<BTreeMap<String, usize>>,
    /// Total reconcile calls.
    pub total: AtomicUsize,
}

impl Journal {
    /// Reconcile calls so far for `name`.
    pub fn reconciles_of(&self, name: &str) -> usize {
        self.reconciles.lock().expect("journal").get(name).copied().unwrap_or(0)
    }

    /// Cleanup calls so far for `name`.
    pub fn cleanups_of(&self, name: &str) -> usize {
        self.cleanups.lock().expect("journal").get(name).copied().unwrap_or(0)
    }

    /// Records a reconcile of `name`.
    pub fn record(&self, name: &str) {
        *self
            .reconciles
            .lock()
            .expect("journal")
            .entry(name.to_string())
            .or_default() += 1;
        self.total.fetch_add(1, Ordering::SeqCst);
    }

    /// Records a cleanup of `name`.
    pub fn record_cleanup(&self, name: &str) {
        *self
            .cleanups
            .lock()
            .expect("journal")
            .entry(name.to_string())
            .or_default() += 1;
    }
}

/// A running framework runtime for one reconciler.
pub struct Running {
    pub metrics: Metrics,
    pub readiness: Readiness,
    pub shutdown: CancellationToken,
    pub task: JoinHandle<()>,
}

/// Runs `reconciler` with the framework runner against the test cluster, watching `namespace`.
pub fn run<R: framework::Reconciler>(cluster: &TestCluster, reconciler: Arc<R>, namespace: &str) -> Running {
    run_with(cluster.client(), reconciler, namespace)
}

/// [`run`] with a client of the test's choosing (one that goes through the API fault proxy).
pub fn run_with<R: framework::Reconciler>(client: kube::Client, reconciler: Arc<R>, namespace: &str) -> Running {
    let metrics = Metrics::new().expect("metrics");
    let readiness = Readiness::default();
    let shutdown = CancellationToken::new();
    let runtime = Runtime {
        client,
        metrics: metrics.clone(),
        readiness: readiness.clone(),
        shutdown: shutdown.clone(),
        defaults: ControllerDefaults {
            namespaces: vec![namespace.to_string()],
            concurrency: 2,
            field_manager_prefix: "framework-test".into(),
            backoff: BackoffPolicy::default(),
            ..ControllerDefaults::default()
        },
    };
    let task = tokio::spawn(framework::runner::start(reconciler, &runtime));
    Running {
        metrics,
        readiness,
        shutdown,
        task,
    }
}
