//! The scale benchmark: for each workload and size, a fresh sandbox running only that workload's controller,
//! N objects created at once, and the manager's cost until every object is Ready — Kubernetes reads, lists and
//! writes, reconciles and external calls per object, CPU and peak memory — then an idle phase that should cost
//! nothing. A benchmark, not a test: it measures and reports (table, JSON, SVG), and fails only when the objects
//! do not converge in time. The `bench` binary is its command line; docs/performance.md shows its results.

pub mod process;
pub mod report;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use kube::Client;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use e2e::harness::{Deadline, try_wait_until};

use crate::kinds::{self, Kind};
use crate::{Sandbox, SandboxOptions};
use report::{Report, Row};

/// What kind of objects a benchmark run creates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// Routing-only NebariApps (an HTTPRoute each over HTTP; no Keycloak, no certificate).
    #[value(name = "nebariapp")]
    NebariApp,
    /// NebariApps with authentication: an HTTPRoute, a SecurityPolicy, a Keycloak client, its Secret and reader
    /// Role each.
    #[value(name = "nebariapp-auth")]
    NebariAppAuth,
    /// ManagedRancherProjects with a quota and one group binding with a member.
    #[value(name = "project")]
    Project,
    /// KeystoneApplicationCredentials against the real Keystone.
    #[value(name = "credential")]
    Credential,
}

impl Workload {
    /// The name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Workload::NebariApp => "nebariapp",
            Workload::NebariAppAuth => "nebariapp-auth",
            Workload::Project => "project",
            Workload::Credential => "credential",
        }
    }

    fn kind(self) -> Kind {
        match self {
            Workload::NebariApp | Workload::NebariAppAuth => Kind::NebariApp,
            Workload::Project => Kind::Project,
            Workload::Credential => Kind::Credential,
        }
    }

    /// The `index`th object.
    fn object(self, index: usize) -> Value {
        let name = format!("bench-{index}");
        // Routed over plain HTTP: an HTTPRoute each, no Certificate or per-app listener (a Gateway takes at
        // most 64 listeners, so thousands of apps with TLS would measure the Gateway's limit, not the operator).
        let routed = || {
            kinds::merged(
                kinds::app_spec(&name),
                json!({"routing": {"routes": [{"pathPrefix": "/", "pathType": "PathPrefix"}], "tls": {"enabled": false}}}),
            )
        };
        let spec = match self {
            Workload::NebariApp => routed(),
            Workload::NebariAppAuth => kinds::merged(
                routed(),
                json!({"auth": {"enabled": true, "provider": "keycloak", "provisionClient": true}}),
            ),
            Workload::Project => kinds::merged(
                kinds::project_spec(&name, &format!("bench-group-{index}")),
                json!({"resourceQuotas": {"cpu": "2000m", "memory": "4Gi"}}),
            ),
            Workload::Credential => kinds::credential_spec(),
        };
        self.kind().object(&name, spec)
    }
}

/// Latency added to every request the manager makes to a system, in milliseconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct AddedLatency {
    /// The Kubernetes API.
    pub kube_ms: u64,
    /// Both Keycloaks.
    pub keycloak_ms: u64,
    /// Rancher.
    pub rancher_ms: u64,
}

/// How to run the benchmark.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// The workloads, each run at every size.
    pub workloads: Vec<Workload>,
    /// Object counts.
    pub sizes: Vec<usize>,
    /// How many times every size runs. Rounds go through all sizes in turn, so a slow spell of the machine
    /// falls on every size alike; the summary compares medians.
    pub rounds: usize,
    /// How long the idle phase lasts.
    pub idle: Duration,
    /// How long one size may take to converge before the run fails.
    pub converge_within: Duration,
    /// Creates in flight at once.
    pub create_concurrency: usize,
    /// Added latency per system.
    pub latency: AddedLatency,
    /// Flags added to the manager's command line.
    pub manager_args: Vec<String>,
    /// Where each sandbox keeps its state and the manager log (`<dir>/<workload>-<size>`).
    pub work_dir: PathBuf,
    /// The repository root.
    pub repo_root: PathBuf,
    /// The Kubernetes API the sandboxes run on.
    pub control_plane: crate::api::ControlPlaneKind,
}

/// Why a benchmark run failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The sandbox did not start.
    #[error(transparent)]
    Sandbox(#[from] crate::SandboxError),
    /// Creating the objects failed.
    #[error("creating {workload} object {name}: {source}")]
    Create {
        /// The workload.
        workload: &'static str,
        /// The object.
        name: String,
        /// What the API answered.
        source: kube::Error,
    },
    /// Not every object became Ready in time.
    #[error("{timed_out}; the manager log is in {log}")]
    NotConverged {
        /// What was awaited, how long, and how many were Ready.
        timed_out: String,
        /// Where the manager's log is.
        log: String,
    },
    /// The manager's metrics or process could not be read.
    #[error("reading the manager's {what}: {message}")]
    Probe {
        /// Metrics or process.
        what: &'static str,
        /// What failed.
        message: String,
    },
}

/// Runs every workload at every size, one fresh sandbox each.
pub async fn run(options: &BenchOptions) -> Result<Report, BenchError> {
    let mut report = Report {
        profile: if cfg!(debug_assertions) { "debug" } else { "release" }.into(),
        latency_ms: BTreeMap::from([
            ("kubernetes".to_string(), options.latency.kube_ms),
            ("keycloak".to_string(), options.latency.keycloak_ms),
            ("rancher".to_string(), options.latency.rancher_ms),
        ]),
        manager_args: options.manager_args.clone(),
        rounds: options.rounds.max(1),
        ..Report::default()
    };
    for &workload in &options.workloads {
        for round in 1..=report.rounds {
            for &size in &options.sizes {
                println!(
                    "bench: {} × {size}, round {round} of {}",
                    workload.name(),
                    report.rounds
                );
                let row = run_one(options, workload, size, round).await?;
                println!(
                    "bench: {} × {size} converged in {:.1} s",
                    workload.name(),
                    row.converge_seconds
                );
                report.rows.push(row);
            }
        }
    }
    report.scaling = report.summarize();
    Ok(report)
}

/// A reading of the manager's counters.
struct Reading {
    metrics: String,
    usage: process::Usage,
    /// This process's (the sandbox's) CPU seconds so far.
    sandbox_cpu_seconds: f64,
}

async fn read(sandbox: &Sandbox, http: &reqwest::Client) -> Result<Reading, BenchError> {
    let probe = |what, message: String| BenchError::Probe { what, message };
    let metrics = http
        .get(sandbox.manager_metrics_url())
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| probe("metrics", e.to_string()))?
        .text()
        .await
        .map_err(|e| probe("metrics", e.to_string()))?;
    let pid = sandbox
        .manager_pid()
        .ok_or_else(|| probe("process", "the manager is not running".into()))?;
    let usage = process::usage(pid).ok_or_else(|| probe("process", format!("/proc/{pid} is unreadable")))?;
    let sandbox =
        process::usage(std::process::id()).ok_or_else(|| probe("process", "/proc/self is unreadable".into()))?;
    Ok(Reading {
        metrics,
        usage,
        sandbox_cpu_seconds: sandbox.cpu_seconds,
    })
}

fn sum(metrics: &str, name: &str, labels: &[(&str, &str)]) -> u64 {
    e2e::harness::metrics::sum(metrics, name, labels)
}

/// `external_api_requests_total` summed by its `api` label.
fn external_by_api(metrics: &str) -> BTreeMap<String, u64> {
    let mut totals = BTreeMap::new();
    for line in metrics
        .lines()
        .filter(|l| l.starts_with("external_api_requests_total{"))
    {
        let Some(api) = line.split("api=\"").nth(1).and_then(|rest| rest.split('"').next()) else {
            continue;
        };
        let value = line
            .rsplit(' ')
            .next()
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        *totals.entry(api.to_string()).or_insert(0) += value as u64;
    }
    totals
}

fn apply_latency(sandbox: &Sandbox, latency: AddedLatency) {
    if latency.kube_ms > 0 {
        sandbox
            .api()
            .faults()
            .add_fault(e2e::harness::fault_proxy::Fault::everywhere().latency(Duration::from_millis(latency.kube_ms)));
    }
    if latency.keycloak_ms > 0 {
        let delay = Duration::from_millis(latency.keycloak_ms);
        sandbox
            .nebari_keycloak()
            .proxy()
            .add_fault(e2e::harness::fault_proxy::Fault::everywhere().latency(delay));
        sandbox
            .rancher()
            .keycloak
            .proxy()
            .add_fault(e2e::harness::fault_proxy::Fault::everywhere().latency(delay));
    }
    if latency.rancher_ms > 0 {
        sandbox
            .rancher()
            .rancher
            .inject_fault(rancher_emulator::Fault::on(None, None).latency(Duration::from_millis(latency.rancher_ms)));
    }
}

async fn create_all(client: &Client, workload: Workload, objects: usize, concurrency: usize) -> Result<(), BenchError> {
    let kind = workload.kind();
    let (group, version) = kind.api_version().split_once('/').unwrap_or(("", kind.api_version()));
    let resource =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind.kind()), kind.resource());
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), kind.namespace(), &resource);
    futures::stream::iter(0..objects)
        .map(|index| {
            let api = api.clone();
            async move {
                let object: DynamicObject =
                    serde_json::from_value(workload.object(index)).map_err(|e| BenchError::Probe {
                        what: "workload",
                        message: e.to_string(),
                    })?;
                api.create(&PostParams::default(), &object)
                    .await
                    .map(|_| ())
                    .map_err(|source| BenchError::Create {
                        workload: workload.name(),
                        name: format!("bench-{index}"),
                        source,
                    })
            }
        })
        .buffer_unordered(concurrency.max(1))
        .try_collect::<()>()
        .await
}

async fn run_one(options: &BenchOptions, workload: Workload, objects: usize, round: usize) -> Result<Row, BenchError> {
    let work_dir = options.work_dir.join(format!("{}-{objects}-{round}", workload.name()));
    let _ = std::fs::remove_dir_all(&work_dir);
    let controller = workload.kind().controller();
    let sandbox = Sandbox::start(SandboxOptions {
        apply_samples: false,
        manager_args: [format!("--controllers={controller}")]
            .into_iter()
            .chain(options.manager_args.iter().cloned())
            .collect(),
        control_plane: options.control_plane,
        ..SandboxOptions::in_dir(&work_dir, &options.repo_root)
    })
    .await?;
    apply_latency(&sandbox, options.latency);
    let client = e2e::harness::cluster::client_for(sandbox.kubeconfig()).await;
    let http = reqwest::Client::new();

    sandbox.api().faults().reset_counters();
    let before = read(&sandbox, &http).await?;
    let started = Instant::now();
    create_all(&client, workload, objects, options.create_concurrency).await?;
    let created = started.elapsed();
    // A tenth of a second: the reading is cheap (the manager's metrics page and /proc), and a coarser poll would
    // blur the smaller sizes' convergence time.
    let deadline = Deadline {
        timeout: options.converge_within,
        poll: Duration::from_millis(100),
    };
    let what = format!("{objects} {} objects Ready", workload.name());
    let after = try_wait_until(&what, deadline, || async {
        let reading = read(&sandbox, &http).await.map_err(|e| e.to_string())?;
        let ready = sum(
            &reading.metrics,
            "platform_operator_objects",
            &[("controller", controller), ("ready", "true")],
        );
        match ready >= objects as u64 {
            true => Ok(Some(reading)),
            false => Err(format!("{ready} Ready")),
        }
    })
    .await
    .map_err(|timed_out| BenchError::NotConverged {
        timed_out,
        log: sandbox.manager_log().display().to_string(),
    })?;
    let converge = started.elapsed();
    let requests = sandbox.api().manager_requests();
    let verb_count = |verbs: &[&str]| -> u64 {
        requests
            .iter()
            .filter(|row| verbs.contains(&row.verb.as_str()))
            .map(|row| row.count)
            .sum()
    };
    let per_object = |total: u64| total as f64 / objects as f64;
    let mut by_request: BTreeMap<String, u64> = BTreeMap::new();
    for row in requests.iter().filter(|row| row.verb != "watch") {
        let mut request = format!("{} {}", row.verb, row.resource);
        if !row.subresource.is_empty() {
            request = format!("{request}/{}", row.subresource);
        }
        *by_request.entry(request).or_insert(0) += row.count;
    }
    let reconciles = |metrics: &str| {
        sum(
            metrics,
            "controller_runtime_reconcile_total",
            &[("controller", controller)],
        )
    };
    let (external_before, external_after) = (external_by_api(&before.metrics), external_by_api(&after.metrics));
    let external_per_object = external_after
        .iter()
        .map(|(api, total)| {
            let delta = total - external_before.get(api).copied().unwrap_or(0);
            (api.clone(), per_object(delta))
        })
        .filter(|(_, n)| *n > 0.0)
        .collect();

    // The idle phase: a measured window with nothing changing, so anything counted in it is waste.
    sandbox.api().faults().reset_counters();
    let idle_started = Instant::now();
    tokio::time::sleep(options.idle).await;
    let idle = read(&sandbox, &http).await?;
    let idle_requests: u64 = sandbox.api().manager_requests().iter().map(|row| row.count).sum();
    let external_total = |m: &str| external_by_api(m).values().sum::<u64>();

    let row = Row {
        workload: workload.name().into(),
        objects,
        round,
        converge_seconds: converge.as_secs_f64(),
        created_seconds: created.as_secs_f64(),
        gets_per_object: per_object(verb_count(&["get"])),
        lists_per_object: per_object(verb_count(&["list"])),
        writes_per_object: per_object(verb_count(&["create", "update", "patch", "delete", "deletecollection"])),
        watches: verb_count(&["watch"]),
        requests_per_object: by_request
            .into_iter()
            .map(|(request, total)| (request, per_object(total)))
            .collect(),
        reconciles_per_object: per_object(reconciles(&after.metrics) - reconciles(&before.metrics)),
        external_per_object,
        cpu_seconds: after.usage.cpu_seconds - before.usage.cpu_seconds,
        sandbox_cpu_seconds: after.sandbox_cpu_seconds - before.sandbox_cpu_seconds,
        peak_rss_mib: idle.usage.peak_rss_mib,
        idle_requests,
        idle_reconciles: reconciles(&idle.metrics) - reconciles(&after.metrics),
        idle_external: external_total(&idle.metrics) - external_total(&after.metrics),
        idle_seconds: idle_started.elapsed().as_secs_f64(),
    };
    sandbox.stop().await;
    Ok(row)
}
