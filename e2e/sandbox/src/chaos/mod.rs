//! The chaos run: the whole operator (the sandbox: API emulator, Keycloak and Rancher emulators, a real Keystone
//! behind a fault proxy, the manager with the shipped RBAC) given a seeded mix of objects, changes and deletions
//! while every backend fails a share of the operator's requests, watch streams are cut, the watch history is
//! compacted and the manager is killed and restarted. With the faults off it must converge; then it is audited:
//! duplicates, unrecorded external objects, orphans after deleting everything, panics and leaked secrets.
//!
//! `cargo run --release -p sandbox --bin chaos` runs it at full size; `tests/chaos.rs` runs a small one in CI.

pub mod audit;
pub mod faults;
pub mod workload;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use kube::Client;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use serde_json::Value;

use crate::kinds::Kind;
use crate::{Sandbox, SandboxOptions};
use audit::{Snapshot, added, repeated};
use e2e::harness::cluster::client_for;
use e2e::harness::secret_hygiene;
use workload::Planned;

/// How big and how hostile a run is.
#[derive(Clone, Debug)]
pub struct ChaosOptions {
    /// Seed of everything random: the objects, their fates, the kill times and the failed requests.
    pub seed: u64,
    /// How many objects to create.
    pub objects: usize,
    /// How many times to SIGKILL the manager during the faulty phase.
    pub kills: u32,
    /// Share of the operator's requests each backend fails while faults are on.
    pub fault_percent: u8,
    /// How long the faulty phase lasts.
    pub fault_phase: Duration,
    /// How often every watch stream is cut.
    pub watch_cut_every: Duration,
    /// How often the watch history is compacted: every watch is cut and its resumption answered 410 Expired.
    pub compact_every: Duration,
    /// How long the operator may take to converge once the faults are off, and to finish the deletions.
    pub converge_within: Duration,
    /// Where the sandbox keeps its state and logs.
    pub work_dir: PathBuf,
    /// The repository root.
    pub repo_root: PathBuf,
    /// The Kubernetes API the sandbox runs on.
    pub control_plane: crate::api::ControlPlaneKind,
}

/// One assertion of the run.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    /// What is checked.
    pub name: String,
    /// Whether it held.
    pub passed: bool,
    /// The figure or the offenders.
    pub detail: String,
}

/// The figures of a run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The seed (rerun with it to replay the same choices).
    pub seed: u64,
    /// Objects created, by kind.
    pub objects: BTreeMap<String, usize>,
    /// Objects changed during the faulty phase.
    pub changed: usize,
    /// Objects deleted during the faulty phase.
    pub deleted: usize,
    /// Manager processes killed with SIGKILL.
    pub kills: u32,
    /// Watch cuts and compactions.
    pub watch_cuts: u32,
    /// Compactions of the watch history.
    pub compactions: u32,
    /// Requests the Keystone proxy failed (the emulators count their own).
    pub keystone_faults: e2e::keystone::fault_proxy::FaultCounts,
    /// The manager's Kubernetes API requests during the faulty phase, and how many of them a fault rule hit.
    pub api_requests: (u64, u64),
    /// Seconds of the faulty phase.
    pub fault_phase_seconds: f64,
    /// Seconds from faults off until every object converged.
    pub converge_seconds: f64,
    /// Seconds from deleting every remaining object until all of them were gone.
    pub delete_all_seconds: f64,
    /// Application credentials left in Keystone after everything was deleted (by design: deleting an object
    /// does not revoke its credential), each recorded before.
    pub keystone_credentials_left: usize,
    /// Every assertion.
    pub checks: Vec<Check>,
}

impl Report {
    /// Whether every check held.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }

    /// The report as a table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!("chaos run, seed {}\n", self.seed));
        out.push_str(&format!(
            "objects {:?}; changed {}, deleted {} during {:.0} s of faults\n",
            self.objects, self.changed, self.deleted, self.fault_phase_seconds
        ));
        out.push_str(&format!(
            "Kubernetes API proxy: {} of the manager's {} requests faulted\n",
            self.api_requests.1, self.api_requests.0
        ));
        out.push_str(&format!(
            "manager SIGKILLed {} times; watches cut {} times; history compacted {} times; Keystone proxy: {} errors, {} resets, {} lost answers, {} forwarded\n",
            self.kills,
            self.watch_cuts,
            self.compactions,
            self.keystone_faults.errors,
            self.keystone_faults.resets,
            self.keystone_faults.lost_answers,
            self.keystone_faults.forwarded
        ));
        out.push_str(&format!(
            "converged {:.1} s after faults off; deleting everything took {:.1} s; {} Keystone credentials left by design\n",
            self.converge_seconds, self.delete_all_seconds, self.keystone_credentials_left
        ));
        out.push_str("| check | result | detail |\n|---|---|---|\n");
        for check in &self.checks {
            out.push_str(&format!(
                "| {} | {} | {} |\n",
                check.name,
                if check.passed { "ok" } else { "FAILED" },
                check.detail
            ));
        }
        out
    }
}

/// Why a run could not be carried out (as opposed to a check that failed, which is in the report).
#[derive(Debug, thiserror::Error)]
pub enum ChaosError {
    /// The sandbox did not start.
    #[error("sandbox: {0}")]
    Sandbox(#[from] crate::SandboxError),
    /// Talking to the API emulator failed.
    #[error("{what}: {source}")]
    Kube {
        /// What was being done.
        what: String,
        /// The error.
        source: Box<kube::Error>,
    },
    /// Reading an external system failed.
    #[error("audit: {0}")]
    Audit(String),
}

fn api_for(client: &Client, kind: Kind) -> Api<DynamicObject> {
    let (group, version) = kind.api_version().split_once('/').unwrap_or(("", kind.api_version()));
    let resource =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind.kind()), kind.resource());
    Api::namespaced_with(client.clone(), kind.namespace(), &resource)
}

async fn apply(client: &Client, kind: Kind, name: &str, spec: &Value) -> Result<(), ChaosError> {
    let object = kind.object(name, spec.clone());
    api_for(client, kind)
        .patch(name, &PatchParams::apply("chaos").force(), &Patch::Apply(&object))
        .await
        .map(|_| ())
        .map_err(|source| ChaosError::Kube {
            what: format!("applying {} {name}", kind.kind()),
            source: Box::new(source),
        })
}

async fn delete(client: &Client, kind: Kind, name: &str) -> Result<(), ChaosError> {
    match api_for(client, kind).delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(source) => Err(ChaosError::Kube {
            what: format!("deleting {} {name}", kind.kind()),
            source: Box::new(source),
        }),
    }
}

/// Whether every object of `planned` is where it should be: present ones Ready for their current generation,
/// deleted ones gone. Returns the names of those that are not.
async fn not_converged(client: &Client, planned: &[&Planned]) -> Vec<String> {
    let mut waiting = Vec::new();
    for kind in [Kind::NebariApp, Kind::Project, Kind::Credential, Kind::Inventory] {
        let objects = match api_for(client, kind).list(&Default::default()).await {
            Ok(list) => list.items,
            Err(error) => return vec![format!("listing {}: {error}", kind.kind())],
        };
        let by_name: BTreeMap<String, &DynamicObject> = objects
            .iter()
            .map(|o| (o.metadata.name.clone().unwrap_or_default(), o))
            .collect();
        for plan in planned.iter().filter(|p| p.kind == kind) {
            match (by_name.get(&plan.name), plan.deleted) {
                (None, true) => {}
                (Some(_), true) => waiting.push(format!("{} (not yet deleted)", plan.name)),
                (None, false) => waiting.push(format!("{} (missing)", plan.name)),
                (Some(object), false) => {
                    if !is_ready(object) {
                        waiting.push(format!("{} ({})", plan.name, readiness(object)));
                    }
                }
            }
        }
    }
    waiting
}

/// Where an object stands: its Ready condition and the generation its status is for.
fn readiness(object: &DynamicObject) -> String {
    let status = &object.data["status"];
    let ready = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready");
    format!(
        "Ready={}/{}: {}; generation {} observed {}",
        ready.map_or("none", |c| c["status"].as_str().unwrap_or("")),
        ready.map_or("", |c| c["reason"].as_str().unwrap_or("")),
        ready.map_or("", |c| c["message"].as_str().unwrap_or("")),
        object.metadata.generation.unwrap_or(0),
        status["observedGeneration"]
    )
}

/// Ready=True for the object's current generation.
fn is_ready(object: &DynamicObject) -> bool {
    let status = &object.data["status"];
    let generation = object.metadata.generation.unwrap_or(0);
    let observed = status["observedGeneration"].as_i64().unwrap_or(-1);
    let ready = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    ready && observed == generation
}

/// Polls `waiting` (what is not yet as it should be) until it is empty or `within` passed, reporting progress
/// every 15 s; returns the seconds taken, or what still waits.
async fn wait_for_none<F, Fut>(what: &str, within: Duration, mut waiting: F) -> Result<f64, Vec<String>>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Vec<String>>,
{
    let start = Instant::now();
    let mut reported = 0;
    loop {
        let left = waiting().await;
        if left.is_empty() {
            return Ok(start.elapsed().as_secs_f64());
        }
        if start.elapsed() > within {
            return Err(left);
        }
        let seconds = start.elapsed().as_secs();
        if seconds / 15 != reported {
            reported = seconds / 15;
            let shown: Vec<&String> = left.iter().take(8).collect();
            println!("chaos: {seconds} s, {} {what}: {shown:?}", left.len());
        }
        // Poll interval of a wait with a deadline.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Waits until `planned` converged or `within` passed; returns the seconds taken, or what still waits.
async fn converge(client: &Client, planned: &[&Planned], within: Duration) -> Result<f64, Vec<String>> {
    wait_for_none("objects still converging", within, || not_converged(client, planned)).await
}

/// Every object of every kind in the sandbox already Ready (the samples), so the baseline is settled.
async fn samples_settled(client: &Client, within: Duration) -> Result<(), ChaosError> {
    let not_ready = || async {
        let mut waiting = Vec::new();
        for kind in [Kind::NebariApp, Kind::Project, Kind::Credential, Kind::Inventory] {
            match api_for(client, kind).list(&Default::default()).await {
                Ok(list) => waiting.extend(
                    list.items
                        .iter()
                        .filter(|o| !is_ready(o))
                        .map(|o| format!("{} ({})", o.metadata.name.clone().unwrap_or_default(), readiness(o))),
                ),
                Err(error) => waiting.push(format!("listing {}: {error}", kind.kind())),
            }
        }
        waiting
    };
    wait_for_none("samples not yet Ready", within, not_ready)
        .await
        .map(|_| ())
        .map_err(|waiting| ChaosError::Audit(format!("the samples did not become Ready: {waiting:?}")))
}

/// One step of the faulty phase's timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    CutWatches,
    Compact,
    Change,
    Delete,
    Kill,
}

fn timeline(options: &ChaosOptions, rng: &mut StdRng) -> Vec<(Duration, Step)> {
    let phase = options.fault_phase;
    let mut steps = vec![(phase / 3, Step::Change), (phase * 2 / 3, Step::Delete)];
    let mut at = options.watch_cut_every;
    while at < phase {
        steps.push((at, Step::CutWatches));
        at += options.watch_cut_every;
    }
    let mut at = options.compact_every;
    while at < phase {
        steps.push((at, Step::Compact));
        at += options.compact_every;
    }
    let millis = u64::try_from(phase.as_millis()).unwrap_or(u64::MAX).max(1);
    for _ in 0..options.kills {
        steps.push((Duration::from_millis(rng.random_range(0..millis)), Step::Kill));
    }
    steps.sort();
    steps
}

fn check(name: &str, offenders: Vec<String>, ok_detail: String) -> Check {
    Check {
        name: name.to_string(),
        passed: offenders.is_empty(),
        detail: if offenders.is_empty() {
            ok_detail
        } else {
            let shown: Vec<String> = offenders.iter().take(10).cloned().collect();
            format!("{} found: {}", offenders.len(), shown.join(", "))
        },
    }
}

/// Runs the whole chaos run and reports; an `Err` means it could not be carried out at all.
pub async fn run(options: ChaosOptions) -> Result<Report, ChaosError> {
    let mut rng = StdRng::seed_from_u64(options.seed);
    let mut sandbox_options = SandboxOptions::in_dir(&options.work_dir, &options.repo_root);
    sandbox_options.keystone_fault_proxy = true;
    sandbox_options.api_request_log = true;
    sandbox_options.control_plane = options.control_plane;
    let mut sandbox = Sandbox::start(sandbox_options).await?;
    let client = client_for(sandbox.kubeconfig()).await;
    samples_settled(&client, options.converge_within).await?;
    let before = Snapshot::take(&sandbox).await.map_err(ChaosError::Audit)?;

    let plan = workload::plan(options.seed, options.objects);
    let mut objects = BTreeMap::new();
    for planned in &plan {
        *objects.entry(planned.kind.kind().to_string()).or_insert(0) += 1;
    }

    // The faulty phase.
    sandbox.api().faults().reset_counters();
    faults::turn_on(&sandbox, options.fault_percent, options.seed);
    let started = Instant::now();
    for planned in &plan {
        apply(&client, planned.kind, &planned.name, &planned.spec).await?;
    }
    let (mut kills, mut watch_cuts, mut compactions) = (0, 0, 0);
    for (at, step) in timeline(&options, &mut rng) {
        tokio::time::sleep_until((started + at).into()).await; // the schedule of the run, not a wait for a state
        match step {
            Step::CutWatches => {
                sandbox.api().faults().cut_streams("watch *");
                watch_cuts += 1;
            }
            Step::Compact => {
                sandbox.api().expire_watches();
                compactions += 1;
            }
            Step::Change => {
                for planned in plan.iter().filter(|p| p.changed.is_some()) {
                    apply(&client, planned.kind, &planned.name, planned.final_spec()).await?;
                }
            }
            Step::Delete => {
                for planned in plan.iter().filter(|p| p.deleted) {
                    delete(&client, planned.kind, &planned.name).await?;
                }
            }
            Step::Kill => {
                sandbox.crash_and_restart_manager().await?;
                kills += 1;
            }
        }
    }
    tokio::time::sleep_until((started + options.fault_phase).into()).await;
    let fault_phase_seconds = started.elapsed().as_secs_f64();
    faults::turn_off(&sandbox);
    let keystone_faults = sandbox.keystone_proxy().map(|p| p.counts()).unwrap_or_default();
    let api_requests = (sandbox.api().faults().total(), sandbox.api().faults().faulted());

    let mut checks = Vec::new();
    let all: Vec<&Planned> = plan.iter().collect();
    let converge_seconds = match converge(&client, &all, options.converge_within).await {
        Ok(seconds) => {
            checks.push(check(
                "every object converged",
                Vec::new(),
                format!("{} of {}", plan.len(), plan.len()),
            ));
            seconds
        }
        Err(waiting) => {
            checks.push(check("every object converged", waiting, String::new()));
            options.converge_within.as_secs_f64()
        }
    };

    let converged = Snapshot::take(&sandbox).await.map_err(ChaosError::Audit)?;
    checks.extend(converged_checks(&plan, &before, &converged));
    let mut secret_values = stored_secret_values(&sandbox);
    let mut places = emitted(&sandbox).await;

    // Delete everything the run made; nothing may be left behind.
    let deleting = Instant::now();
    for planned in plan.iter().filter(|p| !p.deleted) {
        delete(&client, planned.kind, &planned.name).await?;
    }
    let gone: Vec<Planned> = plan
        .iter()
        .map(|p| Planned {
            deleted: true,
            ..p.clone()
        })
        .collect();
    let gone_refs: Vec<&Planned> = gone.iter().collect();
    let delete_all_seconds = match converge(&client, &gone_refs, options.converge_within).await {
        Ok(seconds) => seconds,
        Err(waiting) => {
            checks.push(check("every object deleted", waiting, String::new()));
            deleting.elapsed().as_secs_f64()
        }
    };
    let after = Snapshot::take(&sandbox).await.map_err(ChaosError::Audit)?;
    checks.extend(orphan_checks(&before, &after));
    let credentials_left = added(before.keystone_credentials.keys(), after.keystone_credentials.keys());
    // Panics and secrets, over everything the operator emitted.
    let log = std::fs::read_to_string(sandbox.manager_log()).unwrap_or_default();
    let panics: Vec<String> = log
        .lines()
        .filter(|l| l.contains("panicked"))
        .map(|l| l.chars().take(200).collect())
        .collect();
    checks.push(check("no panic in the manager", panics, "0".into()));
    secret_values.extend(stored_secret_values(&sandbox));
    places.extend(emitted(&sandbox).await);
    let leaks = secret_hygiene::leaks(&secret_values, &places);
    checks.push(check(
        "no secret in logs, events, status or metrics",
        leaks,
        format!(
            "{} secret values searched in {} places",
            secret_values.len(),
            places.len()
        ),
    ));
    checks.push(check(
        "the manager was restarted after every kill",
        if sandbox.manager_starts() == kills + 1 {
            Vec::new()
        } else {
            vec![format!("{} starts for {kills} kills", sandbox.manager_starts())]
        },
        format!("{} starts", sandbox.manager_starts()),
    ));
    sandbox.stop().await;

    Ok(Report {
        seed: options.seed,
        objects,
        changed: plan.iter().filter(|p| p.changed.is_some()).count(),
        deleted: plan.iter().filter(|p| p.deleted).count(),
        kills,
        watch_cuts,
        compactions,
        keystone_faults,
        api_requests,
        fault_phase_seconds,
        converge_seconds,
        delete_all_seconds,
        keystone_credentials_left: credentials_left.len(),
        checks,
    })
}

/// Every secret value the cluster's Secrets hold now (see [`secret_hygiene::secret_values`]).
fn stored_secret_values(sandbox: &Sandbox) -> std::collections::BTreeSet<String> {
    let secrets: Vec<_> = sandbox
        .api()
        .all_objects()
        .into_iter()
        .filter(|(gr, _)| gr.group.is_empty() && gr.resource == "secrets")
        .map(|(_, object)| object)
        .collect();
    secret_hygiene::secret_values(secrets.iter().map(|o| o.as_ref()))
}

/// The places the operator writes to: its log, every Event, every object but Secrets, its metrics.
async fn emitted(sandbox: &Sandbox) -> Vec<(String, String)> {
    let mut places = vec![(
        "the manager log".to_string(),
        std::fs::read_to_string(sandbox.manager_log()).unwrap_or_default(),
    )];
    for (resource, object) in sandbox.api().all_objects() {
        if resource.group.is_empty() && resource.resource == "secrets" {
            continue;
        }
        let name = format!(
            "{} {}/{}",
            resource.resource,
            object["metadata"]["namespace"].as_str().unwrap_or(""),
            object["metadata"]["name"].as_str().unwrap_or("")
        );
        places.push((name, object.to_string()));
    }
    if let Ok(response) = reqwest::get(sandbox.manager_metrics_url()).await
        && let Ok(metrics) = response.text().await
    {
        places.push(("the manager's metrics".to_string(), metrics));
    }
    places
}

/// After convergence: nothing twice, every live object's external objects present, none for deleted ones, and
/// every Keystone credential of a live object recorded in a Secret.
fn converged_checks(plan: &[Planned], before: &Snapshot, now: &Snapshot) -> Vec<Check> {
    let live = |kind: Kind| plan.iter().filter(move |p| p.kind == kind && !p.deleted);
    let mut checks = Vec::new();

    // Keycloak clients of NebariApps: one per live app with auth, none otherwise.
    let clients: Vec<String> = added(&before.keycloak_clients, &now.keycloak_clients);
    let expected: Vec<String> = live(Kind::NebariApp)
        .filter(|p| p.has_auth())
        .map(|p| format!("{}-{}", Kind::NebariApp.namespace(), p.name))
        .collect();
    let mut wrong: Vec<String> = repeated(&now.keycloak_clients);
    wrong.extend(
        expected
            .iter()
            .filter(|c| !clients.contains(c))
            .map(|c| format!("{c} missing")),
    );
    wrong.extend(
        clients
            .iter()
            .filter(|c| c.starts_with("default-chaos-app-") && !expected.contains(c))
            .map(|c| format!("{c} left over")),
    );
    checks.push(check(
        "Keycloak clients: one per app with auth, no duplicate, none left over",
        wrong,
        format!("{} clients", expected.len()),
    ));

    // Keycloak groups of projects: each live project's group once, with its members; none of deleted ones.
    let mut wrong = repeated(&now.keycloak_groups);
    for (index, planned) in plan.iter().enumerate().filter(|(_, p)| p.kind == Kind::Project) {
        let path = format!(
            "/{}/{}",
            crate::kinds::SANDBOX_PARENT_GROUP,
            workload::project_group(index)
        );
        let present = now.keycloak_groups.contains(&path);
        match (planned.deleted, present) {
            (true, true) => wrong.push(format!("{path} left over")),
            (false, false) => wrong.push(format!("{path} missing")),
            (false, true) => {
                let mut want: Vec<String> = planned.final_spec()["keycloak"]["roleBindings"][0]["members"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|m| m["userIdentifier"].as_str().map(str::to_string))
                    .collect();
                want.sort();
                let mut have = now.group_members.get(&path).cloned().unwrap_or_default();
                have.sort();
                if want != have {
                    wrong.push(format!("{path} members {have:?}, want {want:?}"));
                }
            }
            (true, false) => {}
        }
    }
    checks.push(check(
        "Keycloak groups: one per project with its members, no duplicate, none left over",
        wrong,
        format!("{} groups", live(Kind::Project).count()),
    ));

    // Rancher projects and bindings.
    let mut wrong = Vec::new();
    let owners: Vec<String> = now
        .rancher_projects
        .values()
        .map(|(_, _, owner)| owner.clone())
        .filter(|o| !o.is_empty())
        .collect();
    wrong.extend(repeated(&owners));
    for planned in plan.iter().filter(|p| p.kind == Kind::Project) {
        let owner = format!("{}/{}", Kind::Project.namespace(), planned.name);
        let count = owners.iter().filter(|o| **o == owner).count();
        match (planned.deleted, count) {
            (true, 0) | (false, 1) => {}
            (true, n) => wrong.push(format!("{owner}: {n} projects left over")),
            (false, n) => wrong.push(format!("{owner}: {n} projects")),
        }
    }
    let bindings: Vec<String> = now
        .rancher_bindings
        .values()
        .map(|(project, role, subject)| format!("{project} {role} {subject}"))
        .collect();
    wrong.extend(repeated(&bindings));
    let live_projects: Vec<&String> = now
        .rancher_projects
        .iter()
        .filter(|(_, (_, _, owner))| owner.starts_with("waldur-system/chaos-project-"))
        .map(|(id, _)| id)
        .collect();
    for id in &live_projects {
        if !now.rancher_bindings.values().any(|(project, _, _)| project == *id) {
            wrong.push(format!("project {id} has no binding"));
        }
    }
    checks.push(check(
        "Rancher: one project per live object with its binding, no duplicate project or binding",
        wrong,
        format!("{} projects, {} bindings", live_projects.len(), bindings.len()),
    ));

    // Keystone: every credential minted for a live object is recorded in one of its Secrets.
    let mut wrong = Vec::new();
    let mut minted = 0;
    for planned in live(Kind::Credential) {
        let marker = format!(
            "KeystoneApplicationCredential {}/{} ",
            Kind::Credential.namespace(),
            planned.name
        );
        for (id, description) in &now.keystone_credentials {
            if description.contains(&marker) {
                minted += 1;
                if !now.recorded_credentials.contains_key(id) {
                    wrong.push(format!("{id} minted for {} but recorded nowhere", planned.name));
                }
            }
        }
    }
    checks.push(check(
        "Keystone: every credential of a live object recorded in a Secret (no duplicate mint, no lost record)",
        wrong,
        format!("{minted} credentials, all recorded"),
    ));
    checks
}

/// After deleting everything: each system as it was before the run (Keystone excepted, see the report).
fn orphan_checks(before: &Snapshot, after: &Snapshot) -> Vec<Check> {
    let count = |name: &str, found: Vec<String>| check(name, found, "0".into());
    vec![
        count(
            "orphans: Keycloak clients",
            added(&before.keycloak_clients, &after.keycloak_clients),
        ),
        count(
            "orphans: Keycloak groups",
            added(&before.keycloak_groups, &after.keycloak_groups),
        ),
        count(
            "orphans: Rancher projects",
            added(before.rancher_projects.keys(), after.rancher_projects.keys()),
        ),
        count(
            "orphans: Rancher bindings",
            added(before.rancher_bindings.keys(), after.rancher_bindings.keys())
                .into_iter()
                .chain(added(&before.rancher_cluster_bindings, &after.rancher_cluster_bindings))
                .collect(),
        ),
        count(
            "orphans: listeners on the shared Gateways",
            added(&before.gateway_listeners, &after.gateway_listeners),
        ),
        count(
            "orphans: objects in the cluster",
            added(&before.cluster_objects, &after.cluster_objects),
        ),
    ]
}
