//! Health checks of the apps on the landing page (`landingPage.healthCheck`): the operator probes each enabled,
//! Ready app's endpoint on its Service (`http://<service>.<namespace>.svc:<port><path>`) every `intervalSeconds`,
//! with `timeoutSeconds`, a bounded number at once, and publishes the result in `status.serviceDiscovery.health`
//! and as `nebariapp_health_up{namespace,name}`. Off unless `--nebari-health-checks` (a manager may not be able to
//! reach app Services, e.g. behind NetworkPolicies).
//!
//! Writes are kept to what matters: the status is written when the result changes, and otherwise refreshed every
//! ten intervals (so `lastCheckTime` shows the checks still run without a write, and a reconcile, per check);
//! an event is recorded only when the health changes. The metric always has the latest result.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crds::nebari::{HealthCheckConfig, HealthStatus, NebariApp, ServiceHealth};
use framework::events::{EventPublisher, Severity};
use framework::metrics::Metrics;
use framework::shard::Shard;
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Resource, ResourceExt};
use prometheus::{GaugeVec, Opts};
use serde_json::json;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Metric: 1 when an app's last health check passed, 0 when it failed.
pub const HEALTH_METRIC: &str = "nebariapp_health_up";
/// How often the prober looks for checks that are due.
const TICK: Duration = Duration::from_secs(1);
/// A result that did not change is written again after this many intervals.
const REFRESH_INTERVALS: u32 = 10;

/// How health checks run.
#[derive(Clone, Debug, Default)]
pub struct HealthCheckSettings {
    /// Whether the operator probes at all (`--nebari-health-checks`).
    pub enabled: bool,
    /// Probes in flight at once (`--nebari-health-check-concurrency`).
    pub concurrency: usize,
    /// TEST ONLY: every Service name resolves to this address (`--nebari-test-health-check-address`), so tests
    /// outside a cluster reach their stand-in app.
    pub resolve_to: Option<IpAddr>,
}

/// What one probe found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Healthy or Unhealthy.
    pub status: HealthStatus,
    /// What was seen, for the status and the event.
    pub message: String,
}

/// Resolves every name to one address (tests only).
struct FixedAddress(IpAddr);

impl reqwest::dns::Resolve for FixedAddress {
    fn resolve(&self, _name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let address = SocketAddr::new(self.0, 0);
        Box::pin(async move { Ok(Box::new(std::iter::once(address)) as reqwest::dns::Addrs) })
    }
}

/// Where an app's health endpoint is.
pub fn endpoint(app: &NebariApp, check: &HealthCheckConfig) -> String {
    let namespace = app
        .spec
        .service
        .namespace
        .clone()
        .unwrap_or_else(|| app.namespace().unwrap_or_default());
    let port = check.port.unwrap_or(app.spec.service.port);
    let path = if check.path.starts_with('/') {
        check.path.clone()
    } else {
        format!("/{}", check.path)
    };
    format!("http://{}.{namespace}.svc:{port}{path}", app.spec.service.name)
}

/// The app's health check, when the landing page lists it with checks enabled and the app is Ready.
fn due_check(app: &NebariApp) -> Option<&HealthCheckConfig> {
    let page = app.spec.landing_page.as_ref().filter(|p| p.enabled)?;
    let check = page.health_check.as_ref().filter(|c| c.enabled)?;
    let ready = app
        .status
        .as_ref()
        .is_some_and(|s| framework::conditions::is_true(&s.conditions, framework::conditions::READY));
    (ready && app.meta().deletion_timestamp.is_none()).then_some(check)
}

/// One probe: GET the endpoint; 2xx and 3xx are healthy (redirects are not followed).
pub async fn probe(http: &reqwest::Client, url: &str, timeout: Duration) -> Finding {
    let unhealthy = |message: String| Finding {
        status: HealthStatus::Unhealthy,
        message,
    };
    match tokio::time::timeout(timeout, http.get(url).send()).await {
        Err(_) => unhealthy(format!("no answer within {}s", timeout.as_secs())),
        Ok(Err(error)) if error.is_connect() => unhealthy("connection failed".to_string()),
        Ok(Err(_)) => unhealthy("the request failed".to_string()),
        Ok(Ok(response)) => {
            let status = response.status();
            if status.is_success() || status.is_redirection() {
                Finding {
                    status: HealthStatus::Healthy,
                    message: format!("HTTP {}", status.as_u16()),
                }
            } else {
                unhealthy(format!("HTTP {}", status.as_u16()))
            }
        }
    }
}

/// Per-app bookkeeping.
#[derive(Default)]
struct Track {
    next_due: Option<Instant>,
    in_flight: bool,
}

/// Runs the health checks of every app in the registered caches.
pub struct Prober {
    settings: HealthCheckSettings,
    stores: Mutex<Vec<Store<NebariApp>>>,
    tracks: Mutex<HashMap<ObjectRef<NebariApp>, Track>>,
    metric: Option<GaugeVec>,
}

impl Prober {
    /// A prober with `settings`, publishing its metric in `metrics`.
    pub fn new(settings: HealthCheckSettings, metrics: Option<&Metrics>) -> Result<Self, prometheus::Error> {
        let opts = Opts::new(
            HEALTH_METRIC,
            "1 when the app's last health check passed, 0 when it failed",
        );
        let metric = metrics
            .filter(|_| settings.enabled)
            .map(|metrics| GaugeVec::new(opts, &["namespace", "name"]).and_then(|gauge| metrics.register(gauge)))
            .transpose()?;
        Ok(Self {
            settings,
            stores: Mutex::default(),
            tracks: Mutex::default(),
            metric,
        })
    }

    /// Adds the cache of one watch (one per watched namespace, or one for all).
    pub fn register(&self, store: Store<NebariApp>) {
        self.stores.lock().unwrap_or_else(PoisonError::into_inner).push(store);
    }

    /// Probes the apps of `shard` until `shutdown`; returns at once when health checks are off.
    pub async fn run(
        self: Arc<Self>,
        client: kube::Client,
        events: EventPublisher,
        shard: Shard,
        shutdown: CancellationToken,
    ) {
        if !self.settings.enabled {
            return;
        }
        let mut builder = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
        if let Some(address) = self.settings.resolve_to {
            tracing::warn!(%address, "test-only: every health check goes to one address");
            builder = builder.dns_resolver(Arc::new(FixedAddress(address)));
        }
        let http = match builder.build() {
            Ok(http) => http,
            Err(error) => {
                tracing::error!(%error, "health checks cannot start: no HTTP client");
                return;
            }
        };
        let events = Arc::new(events);
        let permits = Arc::new(Semaphore::new(self.settings.concurrency.max(1)));
        let mut tick = tokio::time::interval(TICK);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            for (app, check) in self.due(shard) {
                let Ok(permit) = permits.clone().acquire_owned().await else {
                    return;
                };
                let (prober, http, client, events) = (self.clone(), http.clone(), client.clone(), events.clone());
                tokio::spawn(async move {
                    let url = endpoint(&app, &check);
                    let timeout = Duration::from_secs(u64::try_from(check.timeout_seconds).unwrap_or(5).max(1));
                    let finding = probe(&http, &url, timeout).await;
                    prober.record(&client, &events, &app, &check, finding).await;
                    drop(permit);
                });
            }
        }
    }

    /// The apps of `shard` whose check is due now (marked in flight); forgets apps that no longer have one.
    fn due(&self, shard: Shard) -> Vec<(Arc<NebariApp>, HealthCheckConfig)> {
        let apps: Vec<Arc<NebariApp>> = self
            .stores
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .flat_map(Store::state)
            .filter(|app| shard.owns_object(app.as_ref()))
            .collect();
        let now = Instant::now();
        let mut tracks = self.tracks.lock().unwrap_or_else(PoisonError::into_inner);
        let mut checked = HashSet::new();
        let mut due = Vec::new();
        for app in apps {
            let Some(check) = due_check(&app).cloned() else {
                continue;
            };
            let key = ObjectRef::from_obj(app.as_ref());
            checked.insert(key.clone());
            let track = tracks.entry(key).or_default();
            if !track.in_flight && track.next_due.is_none_or(|at| at <= now) {
                track.in_flight = true;
                due.push((app, check));
            }
        }
        let gone: Vec<ObjectRef<NebariApp>> = tracks.keys().filter(|k| !checked.contains(k)).cloned().collect();
        for key in gone {
            tracks.remove(&key);
            if let Some(metric) = &self.metric {
                let _ = metric.remove_label_values(&[key.namespace.as_deref().unwrap_or_default(), &key.name]);
            }
        }
        due
    }

    /// Publishes a finding: metric, status when it changed (or is due for a refresh), event when health changed.
    async fn record(
        &self,
        client: &kube::Client,
        events: &EventPublisher,
        app: &NebariApp,
        check: &HealthCheckConfig,
        finding: Finding,
    ) {
        let namespace = app.namespace().unwrap_or_default();
        let name = app.name_any();
        let interval = Duration::from_secs(u64::try_from(check.interval_seconds).unwrap_or(30).max(1));
        if let Some(track) = self
            .tracks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_mut(&ObjectRef::from_obj(app))
        {
            track.in_flight = false;
            track.next_due = Some(Instant::now() + interval);
        }
        if let Some(metric) = &self.metric {
            let up = if finding.status == HealthStatus::Healthy {
                1.0
            } else {
                0.0
            };
            metric.with_label_values(&[&namespace, &name]).set(up);
        }
        let previous = app
            .status
            .as_ref()
            .and_then(|s| s.service_discovery.as_ref())
            .and_then(|d| d.health.as_ref());
        let now = Timestamp::now();
        let changed =
            previous.is_none_or(|p| p.status != finding.status || p.message.as_deref() != Some(&finding.message));
        let stale = previous
            .and_then(|p| p.last_check_time.as_ref())
            .is_none_or(|at| now.duration_since(at.0).unsigned_abs() >= interval * REFRESH_INTERVALS);
        if !changed && !stale {
            return;
        }
        let health = ServiceHealth {
            status: finding.status,
            last_check_time: Some(Time(Timestamp::from_second(now.as_second()).unwrap_or(now))),
            message: Some(finding.message.clone()),
        };
        let api: Api<NebariApp> = Api::namespaced(client.clone(), &namespace);
        let patch = json!({"status": {"serviceDiscovery": {"health": health}}});
        if let Err(error) = api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::debug!(%error, namespace, name, "could not record a health check");
            return;
        }
        if previous.is_none_or(|p| p.status != finding.status) {
            let (severity, reason) = match finding.status {
                HealthStatus::Healthy => (Severity::Normal, "HealthCheckPassed"),
                _ => (Severity::Warning, "HealthCheckFailed"),
            };
            let note = format!("health check of {}: {}", endpoint(app, check), finding.message);
            events
                .publish(&app.object_ref(&()), severity, reason, "HealthCheck", &note)
                .await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn app(status: serde_json::Value) -> NebariApp {
        serde_json::from_value(json!({
            "apiVersion": "reconcilers.nebari.dev/v1", "kind": "NebariApp",
            "metadata": {"name": "web", "namespace": "team"},
            "spec": {"hostname": "web.example.com", "service": {"name": "web", "port": 8080},
                     "landingPage": {"enabled": true, "displayName": "Web",
                                     "healthCheck": {"enabled": true, "path": "healthz", "port": 9090}}},
            "status": status,
        }))
        .expect("app")
    }

    #[test]
    fn only_ready_apps_are_checked_on_their_service_name() {
        let ready = app(
            json!({"conditions": [{"type": "Ready", "status": "True", "reason": "Ready",
            "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}),
        );
        let check = due_check(&ready).expect("due");
        assert_eq!(endpoint(&ready, check), "http://web.team.svc:9090/healthz");
        assert!(due_check(&app(json!({}))).is_none(), "not Ready: not probed");
    }
}
