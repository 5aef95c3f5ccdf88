//! The RancherProjectInventory controller (`rpi`): a read-only report, per Rancher cluster, of the projects no
//! ManagedRancherProject manages. It scans every `spec.scanIntervalSeconds` (the original ignored the field and
//! scanned every 300 s), counts managed projects of the scanned cluster only, and lists each unmanaged project
//! with its namespaces (one namespace listing per scan instead of one per project).
//!
//! A scan costs two Rancher reads (projects, namespaces of the cluster) and one status write. The reconcile
//! its own status write triggers finds the scan fresh and only waits for the next one. ManagedRancherProjects are
//! watched: when the projects they record for the inventory's cluster differ from the last scan's count (the
//! projects being created right after start-up, say), the inventory scans again at once, at most every
//! [`MIN_INTERVAL_SECONDS`], instead of reporting stale counts until the interval is over.

pub mod scan;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use crds::rancher::{ManagedRancherProject, OrphanedProject, RancherProjectInventory, RancherProjectInventoryStatus};
use framework::ReconcileError;
use framework::clock::{Clock, SystemClock};
use framework::conditions::{self, ConditionUpdate, READY};
use framework::error::{KubeError, kube_error};
use framework::events::Severity;
use framework::namespaces::WidestList;
use framework::object_cache::ObjectCache;
use framework::runner::{Context, Outcome, Reconciler, Running, Runtime, Scope, StartError};
use framework::status::{OnConflict, Published, StatusPolicy, StatusUpdate};
use framework::triggers::Triggers;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, ListParams};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};

use crate::rancher::{RancherClient, RancherConnection};
use crate::rancher_project::error::MrpError;
use crate::rancher_project::policy::RancherPolicy;
use crate::rancher_project::status::to_seconds;

/// The controller's name (`--controllers`, metrics, events).
pub const NAME: &str = "rancherprojectinventory";
/// Metric: orphaned projects each inventory reports.
pub const ORPHANS_GAUGE: &str = "rancher_inventory_orphaned_projects";
/// The shortest scan interval honoured (the CRD enforces it too).
const MIN_INTERVAL_SECONDS: i64 = 10;

/// Settings of the RancherProjectInventory controller.
#[derive(Debug, Clone)]
pub struct RancherInventorySettings {
    /// Rancher (the same one ManagedRancherProject uses); without it scans report `RancherNotConfigured`.
    pub rancher: Option<RancherConnection>,
    /// The clusters inventories may scan (the ManagedRancherProject policy's `--rancher-allowed-clusters`).
    pub policy: RancherPolicy,
    /// Delete orphaned projects once their grace period is over (`--rancher-delete-orphans`); off: report only.
    pub delete_orphans: bool,
    /// How long a project must stay orphaned before it is deleted (`--rancher-orphan-grace-seconds`).
    pub orphan_grace: Duration,
}

/// The controller: the Rancher client and a clock.
pub struct InventoryController {
    rancher: Option<RancherClient>,
    policy: RancherPolicy,
    delete_orphans: bool,
    orphan_grace: Duration,
    clock: Arc<dyn Clock>,
    /// Every namespace's ManagedRancherProjects tell managed projects from unmanaged ones.
    objects: WidestList,
    /// The ManagedRancherProjects the watch has seen (cluster and recorded project only), to notice a change of
    /// the managed set between scans.
    projects: ObjectCache<ManagedRancherProject>,
    /// Per inventory (`namespace/name`), the managed project ids its last scan in this process counted.
    scanned: std::sync::Mutex<std::collections::HashMap<String, BTreeSet<String>>>,
}

impl InventoryController {
    /// Builds the controller from its settings.
    pub fn new(
        settings: &RancherInventorySettings,
        kube: kube::Client,
        metrics: Option<framework::metrics::Metrics>,
    ) -> Result<Self, StartError> {
        let rancher = settings
            .rancher
            .as_ref()
            .map(|rancher| rancher.client(kube, metrics))
            .transpose()
            .map_err(|e| StartError {
                controller: NAME,
                message: format!("--rancher-url: {e}"),
            })?;
        Ok(Self {
            rancher,
            policy: settings.policy.clone(),
            delete_orphans: settings.delete_orphans,
            orphan_grace: settings.orphan_grace,
            clock: Arc::new(SystemClock),
            objects: WidestList::default(),
            projects: ObjectCache::default(),
            scanned: std::sync::Mutex::default(),
        })
    }

    /// Whether the projects the watched ManagedRancherProjects record for `rpi`'s cluster differ from what its
    /// last scan counted (from this process's memory of that scan, else from the count in its status); `false`
    /// before the watch has listed them.
    fn managed_set_moved(&self, rpi: &RancherProjectInventory) -> bool {
        let Some(projects) = self.projects.list(rpi.namespace().as_deref()) else {
            return false;
        };
        let now = scan::managed_ids(projects.iter().map(AsRef::as_ref), &rpi.spec.cluster_id);
        match self.memory().get(&inventory_key(rpi)) {
            Some(scanned) => *scanned != now,
            None => {
                let reported = rpi.status.as_ref().and_then(|s| s.managed_projects);
                reported != Some(i64::try_from(now.len()).unwrap_or(i64::MAX))
            }
        }
    }

    fn memory(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, BTreeSet<String>>> {
        // A panic while holding the lock leaves a map that is still valid.
        self.scanned.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn scan(&self, rpi: &RancherProjectInventory, ctx: &Context) -> Result<scan::Scan, MrpError> {
        let rancher = self.rancher.as_ref().ok_or(MrpError::NotConfigured {
            system: "Rancher",
            flag: "--rancher-url",
        })?;
        let cluster = &rpi.spec.cluster_id;
        self.policy.check_cluster(cluster).map_err(MrpError::NotAllowed)?;
        let projects = rancher.list_projects(cluster).await?;
        let namespaces = rancher.list_namespaces(cluster, None).await?;
        let (objects, _) = self
            .objects
            .list::<ManagedRancherProject>(&ctx.client, &ctx.namespaces, &ListParams::default())
            .await
            .map_err(kube_error("listing ManagedRancherProjects"))?;
        let managed = scan::managed_ids(objects.iter(), cluster);
        self.memory().insert(inventory_key(rpi), managed.clone());
        let owners: std::collections::BTreeSet<String> =
            objects.iter().map(crate::rancher_project::project::owner_key).collect();
        let known = scan::Known {
            managed_ids: &managed,
            owners: &owners,
            watched: ctx.namespaces.names(),
        };
        Ok(scan::scan(&projects, &namespaces, &known))
    }

    /// The orphans of this scan, each with when it was first seen (kept from the last status); deletes those whose
    /// grace period is over when deleting is on, and announces what it found and did.
    async fn sweep(
        &self,
        rpi: &RancherProjectInventory,
        ctx: &Context,
        found: &scan::Scan,
        now: Timestamp,
    ) -> Vec<OrphanedProject> {
        let previous = rpi
            .status
            .as_ref()
            .map(|s| s.orphaned_projects.as_slice())
            .unwrap_or_default();
        let grace = SignedDuration::try_from(self.orphan_grace).unwrap_or(SignedDuration::MAX);
        let mut kept = Vec::new();
        for (project, owner) in &found.orphaned {
            let seen_before = previous.iter().find(|o| o.project_id == project.id);
            let first_seen = seen_before.map_or(now, |o| o.first_seen.0);
            if seen_before.is_none() {
                let note = format!(
                    "Rancher project {} ({}) belongs to ManagedRancherProject {owner}, which no longer exists; {}",
                    project.id,
                    project.name,
                    if self.delete_orphans {
                        format!("it is deleted after {}s", self.orphan_grace.as_secs())
                    } else {
                        "reported only (--rancher-delete-orphans is off)".to_string()
                    }
                );
                ctx.events
                    .publish(
                        &rpi.object_ref(&()),
                        Severity::Warning,
                        "OrphanedProject",
                        "Scan",
                        &note,
                    )
                    .await;
            }
            let due = now.duration_since(first_seen) >= grace;
            if self.delete_orphans
                && due
                && let Some(rancher) = &self.rancher
            {
                match rancher.delete_project(&project.id).await {
                    Ok(_) => {
                        let note = format!(
                            "deleted Rancher project {} ({}), orphaned by ManagedRancherProject {owner}",
                            project.id, project.name
                        );
                        ctx.events
                            .publish(&rpi.object_ref(&()), Severity::Normal, "OrphanDeleted", "Sweep", &note)
                            .await;
                        continue;
                    }
                    Err(error) => tracing::warn!(project = %project.id, %error, "could not delete an orphaned project"),
                }
            }
            kept.push(OrphanedProject {
                project_id: project.id.clone(),
                name: project.name.clone(),
                owner: owner.clone(),
                first_seen: Time(first_seen),
            });
        }
        kept
    }
}

/// The key of an inventory in [`InventoryController`]'s memory of scans.
fn inventory_key(rpi: &RancherProjectInventory) -> String {
    format!("{}/{}", rpi.namespace().unwrap_or_default(), rpi.name_any())
}

/// [`MIN_INTERVAL_SECONDS`] as a duration.
const MIN_INTERVAL: Duration = Duration::from_secs(MIN_INTERVAL_SECONDS.unsigned_abs());

/// How long ago the last scan was (`None` if never).
fn since_last_scan(rpi: &RancherProjectInventory, now: Timestamp) -> Option<Duration> {
    let last = rpi.status.as_ref()?.last_scan_time.as_ref()?;
    Duration::try_from(now.duration_since(last.0)).ok()
}

/// What the inventory reads of a watched ManagedRancherProject: its cluster and the project it records; the
/// bulky rest (bindings, members, quotas) is dropped from the cache.
fn keep_cluster_and_project(project: &mut ManagedRancherProject) {
    let spec = &mut project.spec;
    spec.description = None;
    spec.namespace = None;
    spec.resource_quotas = None;
    spec.keycloak = None;
    spec.cluster = None;
    let project_id = project.status.as_mut().and_then(|s| s.rancher_project_id.take());
    project.status = project_id.map(|id| crds::rancher::ManagedRancherProjectStatus {
        rancher_project_id: Some(id),
        ..Default::default()
    });
}

fn interval(rpi: &RancherProjectInventory) -> SignedDuration {
    SignedDuration::from_secs(rpi.spec.scan_interval_seconds.max(MIN_INTERVAL_SECONDS))
}

/// How long until the next scan is due, or `None` when a scan is due now (never scanned, the last scan failed,
/// or the spec changed since).
fn next_scan_in(rpi: &RancherProjectInventory, now: Timestamp) -> Option<Duration> {
    let status = rpi.status.as_ref()?;
    let last = status.last_scan_time.as_ref()?;
    if status.observed_generation != rpi.meta().generation || !conditions::is_true(&status.conditions, READY) {
        return None;
    }
    let due = last.0.checked_add(interval(rpi)).ok()?;
    let remaining = Duration::try_from(due.duration_since(now)).ok()?;
    (!remaining.is_zero()).then_some(remaining)
}

impl Reconciler for InventoryController {
    type Resource = RancherProjectInventory;
    type Error = MrpError;

    fn name(&self) -> &'static str {
        NAME
    }

    fn ready_condition(obj: &Self::Resource) -> Option<Condition> {
        framework::status::ready_condition::<Self>(obj)
    }

    const OBJECT_GAUGES: &'static [(&'static str, &'static str)] = &[(
        ORPHANS_GAUGE,
        "Rancher projects of the inventory's cluster whose ManagedRancherProject no longer exists",
    )];

    fn object_gauges(obj: &Self::Resource) -> Vec<framework::metrics::ObjectGauge> {
        let count = obj.status.as_ref().map_or(0, |s| s.orphaned_projects.len());
        // A count of projects fits an f64 exactly.
        #[allow(clippy::cast_precision_loss)]
        let value = count as f64;
        vec![framework::metrics::ObjectGauge {
            family: ORPHANS_GAUGE,
            value,
        }]
    }

    fn watches(&self, triggers: Triggers<RancherProjectInventory>, scope: &Scope) -> Triggers<RancherProjectInventory> {
        let inventories = triggers.store();
        let projects: Api<ManagedRancherProject> = scope.api();
        triggers.watches_cached(
            projects,
            watcher::Config::default(),
            &self.projects,
            keep_cluster_and_project,
            move |project: ManagedRancherProject| {
                inventories
                    .state()
                    .into_iter()
                    .filter(|rpi| {
                        rpi.spec.cluster_id == project.spec.cluster_id && rpi.namespace() == project.namespace()
                    })
                    .map(|rpi| ObjectRef::from_obj(rpi.as_ref()))
                    .collect::<Vec<_>>()
            },
        )
    }

    async fn reconcile(&self, rpi: Arc<RancherProjectInventory>, ctx: &Context) -> Result<Outcome, MrpError> {
        let now = to_seconds(self.clock.now());
        if let Some(wait) = next_scan_in(&rpi, now) {
            match (self.managed_set_moved(&rpi), since_last_scan(&rpi, now)) {
                // The managed set moved: scan again, but not more often than the shortest interval.
                (true, Some(since)) if since >= MIN_INTERVAL => {}
                (true, Some(since)) => return Ok(Outcome::RequeueAfter(MIN_INTERVAL - since)),
                _ => return Ok(Outcome::RequeueAfter(wait)),
            }
        }
        let mut update = StatusUpdate::new::<Self>(&rpi, now);
        let result = self.scan(&rpi, ctx).await;
        let orphans = match &result {
            Ok(found) => self.sweep(&rpi, ctx, found, now).await,
            Err(_) => Vec::new(),
        };
        let ready = match &result {
            Ok(found) => {
                let next = &mut update.status;
                next.orphaned_projects = orphans;
                next.last_scan_time = Some(Time(now));
                next.managed_projects = Some(found.managed);
                next.unmanaged_project_count = Some(i64::try_from(found.unmanaged.len()).unwrap_or(i64::MAX));
                next.unmanaged_projects = found.unmanaged.clone();
                ConditionUpdate::ok(
                    READY,
                    "Scanned",
                    format!(
                        "cluster {} has {} managed, {} unmanaged and {} orphaned project(s)",
                        rpi.spec.cluster_id,
                        found.managed,
                        found.unmanaged.len(),
                        next.orphaned_projects.len()
                    ),
                )
            }
            Err(error) => ConditionUpdate::failed(READY, error.reason(), error.safe_message()),
        };
        update.finish_with(ready);
        match framework::status::publish(self, ctx, rpi.as_ref(), update).await {
            Ok(Published::Dropped | Published::Gone) => return Ok(Outcome::Done),
            Ok(Published::Written | Published::Unchanged) => {}
            Err(error) => return Err(MrpError::from(KubeError::new("writing the status", error))),
        }
        match result {
            Ok(_) => Ok(Outcome::RequeueAfter(
                Duration::try_from(interval(&rpi)).unwrap_or(Duration::from_secs(300)),
            )),
            Err(error) => Err(error),
        }
    }
}

/// A scan's result is recomputed by the next scan: a write refused as stale is dropped.
impl StatusPolicy for InventoryController {
    type Resource = RancherProjectInventory;
    type Status = RancherProjectInventoryStatus;
    const ON_CONFLICT: OnConflict = OnConflict::Drop;

    fn conditions(status: &RancherProjectInventoryStatus) -> &[Condition] {
        &status.conditions
    }

    fn conditions_mut(status: &mut RancherProjectInventoryStatus) -> &mut Vec<Condition> {
        &mut status.conditions
    }

    fn observed_generation(status: &mut RancherProjectInventoryStatus) -> &mut Option<i64> {
        &mut status.observed_generation
    }
}

/// Starts the controller with its settings.
pub fn start(runtime: &Runtime, settings: RancherInventorySettings) -> Result<Running, StartError> {
    let controller = InventoryController::new(&settings, runtime.client.clone(), Some(runtime.metrics.clone()))?;
    Ok(framework::runner::start(Arc::new(controller), runtime))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inventory(status: Option<RancherProjectInventoryStatus>) -> RancherProjectInventory {
        let mut rpi = RancherProjectInventory::new(
            "cluster-c-1",
            crds::rancher::RancherProjectInventorySpec {
                cluster_id: "c-1".into(),
                scan_interval_seconds: 60,
            },
        );
        rpi.metadata.generation = Some(1);
        rpi.status = status;
        rpi
    }

    #[test]
    fn a_fresh_successful_scan_waits_for_the_interval() {
        let t0: Timestamp = "2026-01-01T00:00:00Z".parse().expect("time");
        assert_eq!(next_scan_in(&inventory(None), t0), None, "never scanned");
        let mut status = RancherProjectInventoryStatus {
            last_scan_time: Some(Time(t0)),
            observed_generation: Some(1),
            ..Default::default()
        };
        conditions::set(
            &mut status.conditions,
            ConditionUpdate::ok(READY, "Scanned", "ok"),
            Some(1),
            t0,
        );
        let rpi = inventory(Some(status.clone()));
        let later = t0.checked_add(SignedDuration::from_secs(15)).expect("time");
        assert_eq!(next_scan_in(&rpi, later), Some(Duration::from_secs(45)));
        let due = t0.checked_add(SignedDuration::from_secs(60)).expect("time");
        assert_eq!(next_scan_in(&rpi, due), None);
        status.observed_generation = Some(0);
        assert_eq!(next_scan_in(&inventory(Some(status)), later), None, "the spec changed");
    }
}
