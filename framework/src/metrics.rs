//! Prometheus metrics under controller-runtime's names and labels.
//!
//! Dashboards built for kubebuilder operators (reconcile rate, errors, latency, workers, work queue, leader
//! status, API client traffic) work unchanged against this operator. One [`Metrics`] value owns the registry;
//! each controller gets a [`ControllerMetrics`] view labelled with its name.
//!
//! Beyond controller-runtime's set: `platform_operator_objects{controller,ready,reason}` counts the cached objects
//! by their Ready condition (tallied as the watch reports them, `crate::ready_tally`), and `platform_operator_last_successful_reconcile_timestamp_seconds`
//! stamps each controller's last success, so alerts need no log scraping.
//!
//! kube-runtime's scheduler does not expose its queue, so `workqueue_depth` and
//! `workqueue_queue_duration_seconds` come from what the framework sees going in (every trigger and requeue,
//! `crate::queue`); `workqueue_adds_total` counts reconciles started, which is what controller-runtime's counter
//! measures once its de-duplication is taken into account.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prometheus::{Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry, TextEncoder};

/// controller-runtime's reconcile-time buckets (seconds).
const RECONCILE_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5,
    1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
];
/// client-go's work-queue buckets (seconds): 10^-8 … 10^1.
const WORKQUEUE_BUCKETS: &[f64] = &[1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0];
/// Request latency buckets for API clients (seconds).
const CLIENT_BUCKETS: &[f64] = &[0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0];

/// The reconcile results controller-runtime reports.
pub const RESULTS: [&str; 4] = ["success", "error", "requeue", "requeue_after"];

/// Where one object of a controller stands, as its `Ready` condition says.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjectReadiness {
    /// `"true"`, `"false"`, or `"unknown"` (no Ready condition yet, or status Unknown).
    pub ready: &'static str,
    /// The condition's reason (empty without one).
    pub reason: String,
}

/// Reads how many objects wait in a controller's queue; called at each scrape.
pub type QueueSource = Box<dyn Fn() -> usize + Send + Sync>;

/// Reads how many objects a controller caches at each readiness; called at each scrape.
pub type ObjectSource = Box<dyn Fn() -> Vec<(ObjectReadiness, i64)> + Send + Sync>;

/// One value a controller publishes per object (labels `namespace`, `name`), e.g. when a credential expires.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectGauge {
    /// The metric family, declared by the controller (see `Reconciler::OBJECT_GAUGES`).
    pub family: &'static str,
    /// The value.
    pub value: f64,
}

/// Reads the per-object gauges of every object a controller caches, as `(namespace, name, gauge)`.
pub type ObjectGaugeSource = Box<dyn Fn() -> Vec<(String, String, ObjectGauge)> + Send + Sync>;

/// Failure to create or register a metric (a programming error: duplicate names).
#[derive(Debug, thiserror::Error)]
#[error("metrics registration failed: {0}")]
pub struct MetricsError(#[from] prometheus::Error);

/// Every metric family the operator exposes, registered in one registry.
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    reconcile_total: IntCounterVec,
    reconcile_errors_total: IntCounterVec,
    terminal_reconcile_errors_total: IntCounterVec,
    reconcile_panics_total: IntCounterVec,
    reconcile_time_seconds: HistogramVec,
    max_concurrent_reconciles: IntGaugeVec,
    active_workers: IntGaugeVec,
    workqueue_adds_total: IntCounterVec,
    workqueue_work_duration_seconds: HistogramVec,
    workqueue_unfinished_work_seconds: prometheus::GaugeVec,
    workqueue_longest_running_processor_seconds: prometheus::GaugeVec,
    workqueue_retries_total: IntCounterVec,
    workqueue_depth: IntGaugeVec,
    workqueue_queue_duration_seconds: HistogramVec,
    queue_sources: Arc<Mutex<Vec<(String, QueueSource)>>>,
    leader_election_master_status: IntGaugeVec,
    rest_client_requests_total: IntCounterVec,
    rest_client_request_duration_seconds: HistogramVec,
    external_requests_total: IntCounterVec,
    external_request_duration_seconds: HistogramVec,
    objects: IntGaugeVec,
    last_successful_reconcile: prometheus::GaugeVec,
    object_sources: Arc<Mutex<Vec<(String, ObjectSource)>>>,
    object_gauges: Arc<Mutex<ObjectGauges>>,
}

/// The per-object gauge families controllers declared, and where their values come from.
#[derive(Default)]
struct ObjectGauges {
    families: BTreeMap<&'static str, prometheus::GaugeVec>,
    sources: Vec<ObjectGaugeSource>,
}

fn counter(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> Result<IntCounterVec, MetricsError> {
    let metric = IntCounterVec::new(Opts::new(name, help), labels)?;
    registry.register(Box::new(metric.clone()))?;
    Ok(metric)
}

fn gauge(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> Result<IntGaugeVec, MetricsError> {
    let metric = IntGaugeVec::new(Opts::new(name, help), labels)?;
    registry.register(Box::new(metric.clone()))?;
    Ok(metric)
}

fn float_gauge(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> Result<prometheus::GaugeVec, MetricsError> {
    let metric = prometheus::GaugeVec::new(Opts::new(name, help), labels)?;
    registry.register(Box::new(metric.clone()))?;
    Ok(metric)
}

fn histogram(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
    buckets: &[f64],
) -> Result<HistogramVec, MetricsError> {
    let metric = HistogramVec::new(HistogramOpts::new(name, help).buckets(buckets.to_vec()), labels)?;
    registry.register(Box::new(metric.clone()))?;
    Ok(metric)
}

impl Metrics {
    /// Creates the registry with every family, plus the process collector (`process_*`).
    pub fn new() -> Result<Self, MetricsError> {
        let registry = Registry::new();
        #[cfg(target_os = "linux")]
        registry.register(Box::new(crate::process_metrics::ProcessMetrics::for_self()))?;
        let r = &registry;
        let wq = &["name", "controller"];
        Ok(Self {
            reconcile_total: counter(
                r,
                "controller_runtime_reconcile_total",
                "Total number of reconciliations per controller",
                &["controller", "result"],
            )?,
            reconcile_errors_total: counter(
                r,
                "controller_runtime_reconcile_errors_total",
                "Total number of reconciliation errors per controller",
                &["controller"],
            )?,
            terminal_reconcile_errors_total: counter(
                r,
                "controller_runtime_terminal_reconcile_errors_total",
                "Total number of terminal reconciliation errors per controller",
                &["controller"],
            )?,
            reconcile_panics_total: counter(
                r,
                "controller_runtime_reconcile_panics_total",
                "Total number of reconciliation panics per controller",
                &["controller"],
            )?,
            reconcile_time_seconds: histogram(
                r,
                "controller_runtime_reconcile_time_seconds",
                "Length of time per reconciliation per controller",
                &["controller"],
                RECONCILE_BUCKETS,
            )?,
            max_concurrent_reconciles: gauge(
                r,
                "controller_runtime_max_concurrent_reconciles",
                "Maximum number of concurrent reconciles per controller",
                &["controller"],
            )?,
            active_workers: gauge(
                r,
                "controller_runtime_active_workers",
                "Number of currently used workers per controller",
                &["controller"],
            )?,
            workqueue_adds_total: counter(
                r,
                "workqueue_adds_total",
                "Total number of adds handled by workqueue",
                wq,
            )?,
            workqueue_work_duration_seconds: histogram(
                r,
                "workqueue_work_duration_seconds",
                "How long in seconds processing an item from workqueue takes",
                wq,
                WORKQUEUE_BUCKETS,
            )?,
            workqueue_unfinished_work_seconds: float_gauge(
                r,
                "workqueue_unfinished_work_seconds",
                "How many seconds of work has been done that is in progress and hasn't been observed by work_duration",
                wq,
            )?,
            workqueue_longest_running_processor_seconds: float_gauge(
                r,
                "workqueue_longest_running_processor_seconds",
                "How many seconds has the longest running processor for workqueue been running",
                wq,
            )?,
            workqueue_retries_total: counter(
                r,
                "workqueue_retries_total",
                "Total number of retries handled by workqueue",
                wq,
            )?,
            leader_election_master_status: gauge(
                r,
                "leader_election_master_status",
                "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master",
                &["name"],
            )?,
            rest_client_requests_total: counter(
                r,
                "rest_client_requests_total",
                "Number of HTTP requests to the Kubernetes API, partitioned by status code, method, and host",
                &["code", "method", "host"],
            )?,
            rest_client_request_duration_seconds: histogram(
                r,
                "rest_client_request_duration_seconds",
                "Request latency in seconds to the Kubernetes API, broken down by verb and host",
                &["verb", "host"],
                CLIENT_BUCKETS,
            )?,
            external_requests_total: counter(
                r,
                "external_api_requests_total",
                "Requests to external systems (Keycloak, Keystone, Rancher) by api, operation and status code",
                &["api", "operation", "code"],
            )?,
            external_request_duration_seconds: histogram(
                r,
                "external_api_request_duration_seconds",
                "Latency of requests to external systems by api and operation",
                &["api", "operation"],
                CLIENT_BUCKETS,
            )?,
            objects: gauge(
                r,
                "platform_operator_objects",
                "Objects per controller by their Ready condition's status and reason",
                &["controller", "ready", "reason"],
            )?,
            last_successful_reconcile: float_gauge(
                r,
                "platform_operator_last_successful_reconcile_timestamp_seconds",
                "Unix time of the controller's last reconcile that succeeded",
                &["controller"],
            )?,
            workqueue_depth: gauge(r, "workqueue_depth", "Current depth of workqueue", wq)?,
            workqueue_queue_duration_seconds: histogram(
                r,
                "workqueue_queue_duration_seconds",
                "How long in seconds an item stays in workqueue before being requested",
                wq,
                WORKQUEUE_BUCKETS,
            )?,
            queue_sources: Arc::new(Mutex::new(Vec::new())),
            object_sources: Arc::new(Mutex::new(Vec::new())),
            object_gauges: Arc::new(Mutex::new(ObjectGauges::default())),
            registry,
        })
    }

    /// Adds a controller's queue (all its scopes) to `workqueue_depth`.
    pub fn register_queue(&self, controller: &str, source: QueueSource) {
        if let Ok(mut sources) = self.queue_sources.lock() {
            sources.push((controller.to_string(), source));
        }
    }

    /// Reads `workqueue_depth` from the registered queues (at each scrape).
    fn read_queues(&self) {
        let Ok(sources) = self.queue_sources.lock() else {
            return;
        };
        for (controller, source) in sources.iter() {
            let depth = i64::try_from(source()).unwrap_or(i64::MAX);
            self.workqueue_depth
                .with_label_values(&[controller, controller])
                .set(depth);
        }
    }

    /// Registers a metric family a controller owns (its own counter or gauge) and hands it back.
    pub fn register<C>(&self, collector: C) -> Result<C, prometheus::Error>
    where
        C: prometheus::core::Collector + Clone + 'static,
    {
        self.registry.register(Box::new(collector.clone()))?;
        Ok(collector)
    }

    /// Adds the tally of one controller's cache (one per watched scope) to `platform_operator_objects`.
    pub fn register_objects(&self, controller: &str, source: ObjectSource) {
        if let Ok(mut sources) = self.object_sources.lock() {
            sources.push((controller.to_string(), source));
        }
    }

    /// Publishes per-object gauges: `families` as `(name, help)`, values from `source` at each scrape. A family
    /// declared twice (one controller watching several namespaces) is registered once.
    pub fn register_object_gauges(
        &self,
        families: &[(&'static str, &'static str)],
        source: ObjectGaugeSource,
    ) -> Result<(), MetricsError> {
        let Ok(mut gauges) = self.object_gauges.lock() else {
            return Ok(());
        };
        for (name, help) in families {
            if !gauges.families.contains_key(name) {
                let family = float_gauge(&self.registry, name, help, &["namespace", "name"])?;
                gauges.families.insert(name, family);
            }
        }
        gauges.sources.push(source);
        Ok(())
    }

    /// Refills the per-object gauges from their sources (at each scrape).
    fn fill_object_gauges(&self) {
        let Ok(gauges) = self.object_gauges.lock() else {
            return;
        };
        for family in gauges.families.values() {
            family.reset();
        }
        for source in &gauges.sources {
            for (namespace, name, gauge) in source() {
                if let Some(family) = gauges.families.get(gauge.family) {
                    family.with_label_values(&[&namespace, &name]).set(gauge.value);
                }
            }
        }
    }

    /// Sets `platform_operator_objects` from the registered tallies (at each scrape).
    fn count_objects(&self) {
        let Ok(sources) = self.object_sources.lock() else {
            return;
        };
        let mut counts: BTreeMap<(String, &'static str, String), i64> = BTreeMap::new();
        for (controller, source) in sources.iter() {
            for (readiness, count) in source() {
                *counts
                    .entry((controller.clone(), readiness.ready, readiness.reason))
                    .or_default() += count;
            }
        }
        self.objects.reset();
        for ((controller, ready, reason), count) in counts {
            self.objects
                .with_label_values(&[&controller, ready, &reason])
                .set(count);
        }
    }

    /// The underlying registry, for controllers that add their own families.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Renders the text exposition format served at `/metrics`.
    pub fn render(&self) -> String {
        self.count_objects();
        self.fill_object_gauges();
        self.read_queues();
        let mut buffer = Vec::new();
        let encoder = TextEncoder::new();
        if let Err(error) = encoder.encode(&self.registry.gather(), &mut buffer) {
            tracing::warn!(%error, "failed to encode metrics");
        }
        String::from_utf8_lossy(&buffer).into_owned()
    }

    /// The metrics view for one controller; pre-initialises its series so dashboards see zeros, not gaps.
    pub fn controller(&self, name: &str, max_concurrent: u16) -> ControllerMetrics {
        for result in RESULTS {
            self.reconcile_total.with_label_values(&[name, result]).inc_by(0);
        }
        self.reconcile_errors_total.with_label_values(&[name]).inc_by(0);
        self.terminal_reconcile_errors_total
            .with_label_values(&[name])
            .inc_by(0);
        self.reconcile_panics_total.with_label_values(&[name]).inc_by(0);
        self.max_concurrent_reconciles
            .with_label_values(&[name])
            .set(i64::from(max_concurrent));
        self.active_workers.with_label_values(&[name]).set(0);
        self.workqueue_adds_total.with_label_values(&[name, name]).inc_by(0);
        self.workqueue_retries_total.with_label_values(&[name, name]).inc_by(0);
        self.workqueue_depth.with_label_values(&[name, name]).set(0);
        self.workqueue_unfinished_work_seconds
            .with_label_values(&[name, name])
            .set(0.0);
        self.workqueue_longest_running_processor_seconds
            .with_label_values(&[name, name])
            .set(0.0);
        ControllerMetrics {
            metrics: self.clone(),
            name: name.to_string(),
        }
    }

    /// Records whether this process currently holds the named leader lease.
    pub fn set_leader(&self, lease: &str, leading: bool) {
        self.leader_election_master_status
            .with_label_values(&[lease])
            .set(i64::from(leading));
    }

    /// Records one Kubernetes API request.
    pub fn observe_kube_request(&self, method: &str, code: &str, host: &str, elapsed: Duration) {
        self.rest_client_requests_total
            .with_label_values(&[code, method, host])
            .inc();
        self.rest_client_request_duration_seconds
            .with_label_values(&[method, host])
            .observe(elapsed.as_secs_f64());
    }

    /// Records one request to an external system.
    pub fn observe_external_request(&self, api: &str, operation: &str, code: &str, elapsed: Duration) {
        self.external_requests_total
            .with_label_values(&[api, operation, code])
            .inc();
        self.external_request_duration_seconds
            .with_label_values(&[api, operation])
            .observe(elapsed.as_secs_f64());
    }
}

/// How one reconcile ended, as controller-runtime labels it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReconcileResult {
    /// Finished; wait for the next change.
    Success,
    /// Failed; retried with backoff.
    Error,
    /// Finished and asked to run again after a delay.
    RequeueAfter,
}

impl ReconcileResult {
    fn label(self) -> &'static str {
        match self {
            ReconcileResult::Success => "success",
            ReconcileResult::Error => "error",
            ReconcileResult::RequeueAfter => "requeue_after",
        }
    }
}

/// The metrics of one controller (all series carry `controller=<name>`).
#[derive(Clone)]
pub struct ControllerMetrics {
    metrics: Metrics,
    name: String,
}

impl ControllerMetrics {
    /// The controller name used as label value.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// An object waited `waited` in the queue before its reconcile started.
    pub fn waited(&self, waited: Duration) {
        self.metrics
            .workqueue_queue_duration_seconds
            .with_label_values(&[&self.name, &self.name])
            .observe(waited.as_secs_f64());
    }

    /// A reconcile started: one worker busy, one item taken off the queue.
    pub fn reconcile_started(&self) {
        let m = &self.metrics;
        m.active_workers.with_label_values(&[&self.name]).inc();
        m.workqueue_adds_total
            .with_label_values(&[&self.name, &self.name])
            .inc();
    }

    /// A reconcile ended after `elapsed`, with `result`; `terminal` marks errors that need a human.
    pub fn reconcile_finished(&self, result: ReconcileResult, elapsed: Duration, terminal: bool) {
        let m = &self.metrics;
        let name = self.name.as_str();
        m.active_workers.with_label_values(&[name]).dec();
        m.reconcile_total.with_label_values(&[name, result.label()]).inc();
        m.reconcile_time_seconds
            .with_label_values(&[name])
            .observe(elapsed.as_secs_f64());
        m.workqueue_work_duration_seconds
            .with_label_values(&[name, name])
            .observe(elapsed.as_secs_f64());
        if result != ReconcileResult::Error {
            let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
            m.last_successful_reconcile
                .with_label_values(&[name])
                .set(now.as_secs_f64());
        }
        if result == ReconcileResult::Error {
            m.reconcile_errors_total.with_label_values(&[name]).inc();
            m.workqueue_retries_total.with_label_values(&[name, name]).inc();
            if terminal {
                m.terminal_reconcile_errors_total.with_label_values(&[name]).inc();
            }
        }
    }

    /// A reconcile panicked (it is also counted as an error by [`Self::reconcile_finished`]).
    pub fn panicked(&self) {
        self.metrics
            .reconcile_panics_total
            .with_label_values(&[&self.name])
            .inc();
    }

    /// Updates the in-progress gauges from the ages of the reconciles currently running.
    pub fn in_flight(&self, ages: impl Iterator<Item = Duration>) {
        let (total, longest) = ages.fold((0.0_f64, 0.0_f64), |(sum, max), age| {
            let secs = age.as_secs_f64();
            (sum + secs, max.max(secs))
        });
        let labels = [self.name.as_str(), self.name.as_str()];
        self.metrics
            .workqueue_unfinished_work_seconds
            .with_label_values(&labels)
            .set(total);
        self.metrics
            .workqueue_longest_running_processor_seconds
            .with_label_values(&labels)
            .set(longest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_carries_controller_runtime_names_and_zeroed_series() {
        let metrics = Metrics::new().expect("metrics");
        let c = metrics.controller("nebariapp", 4);
        c.reconcile_started();
        c.reconcile_finished(ReconcileResult::Error, Duration::from_millis(12), true);
        metrics.set_leader("operator-lock", true);
        let text = metrics.render();
        for expected in [
            r#"controller_runtime_reconcile_total{controller="nebariapp",result="success"} 0"#,
            r#"controller_runtime_reconcile_total{controller="nebariapp",result="error"} 1"#,
            r#"controller_runtime_reconcile_total{controller="nebariapp",result="requeue"} 0"#,
            r#"controller_runtime_reconcile_errors_total{controller="nebariapp"} 1"#,
            r#"controller_runtime_terminal_reconcile_errors_total{controller="nebariapp"} 1"#,
            r#"controller_runtime_max_concurrent_reconciles{controller="nebariapp"} 4"#,
            r#"controller_runtime_active_workers{controller="nebariapp"} 0"#,
            r#"workqueue_retries_total{controller="nebariapp",name="nebariapp"} 1"#,
            r#"leader_election_master_status{name="operator-lock"} 1"#,
            "controller_runtime_reconcile_time_seconds_bucket",
        ] {
            assert!(text.contains(expected), "missing {expected} in\n{text}");
        }
    }

    #[test]
    fn objects_are_counted_by_readiness_at_each_scrape_and_successes_are_stamped() {
        let metrics = Metrics::new().expect("metrics");
        let c = metrics.controller("nebariapp", 1);
        // Two entries of one standing (as two watched namespaces would report) are added up.
        let conflict = ObjectReadiness {
            ready: "false",
            reason: "HostnameConflict".into(),
        };
        let ready = ObjectReadiness {
            ready: "true",
            reason: "AllReady".into(),
        };
        let state = Arc::new(Mutex::new(vec![(ready, 1), (conflict.clone(), 1), (conflict, 1)]));
        let shared = state.clone();
        metrics.register_objects(
            "nebariapp",
            Box::new(move || shared.lock().map(|s| s.clone()).unwrap_or_default()),
        );
        let text = metrics.render();
        assert!(
            text.contains(
                r#"platform_operator_objects{controller="nebariapp",ready="false",reason="HostnameConflict"} 2"#
            ),
            "{text}"
        );
        assert!(text.contains(r#"platform_operator_objects{controller="nebariapp",ready="true",reason="AllReady"} 1"#));
        assert!(
            !text.contains("platform_operator_last_successful_reconcile_timestamp_seconds{"),
            "no success yet"
        );
        if let Ok(mut objects) = state.lock() {
            objects.truncate(1);
        }
        c.reconcile_started();
        c.reconcile_finished(ReconcileResult::Success, Duration::from_millis(3), false);
        let text = metrics.render();
        assert!(
            !text.contains("HostnameConflict"),
            "series of objects gone are dropped:\n{text}"
        );
        let stamp = text
            .lines()
            .find_map(|l| {
                l.strip_prefix(
                    r#"platform_operator_last_successful_reconcile_timestamp_seconds{controller="nebariapp"} "#,
                )
            })
            .and_then(|v| v.parse::<f64>().ok())
            .expect("stamped");
        assert!(stamp > 1.7e9, "{stamp}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn exposition_includes_process_metrics() {
        let metrics = Metrics::new().expect("metrics");
        assert!(metrics.render().contains("process_resident_memory_bytes"));
    }
}
