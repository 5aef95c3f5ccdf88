//! A failing watch pauses only itself: when every watch of a controller expires at once (the API server compacted
//! its history, as etcd does), the controller still reconciles a change within seconds. kube-runtime's default
//! paused all of a controller's triggers after each watch error, up to 30 s per error, so six expired watches
//! stalled the controller for about a minute; the chaos run saw a NebariApp controller ignore deletions for 5
//! minutes that way.

use std::sync::Arc;
use std::time::Instant;

use e2e::harness::{Deadline, TestCluster, wait_until};
use framework::runner::{Context, Outcome, Reconciler, Scope};
use framework::triggers::Triggers;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::ResourceExt;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use serde_json::json;

use e2e::harness::fault_proxy::{Fault, kube_watch_expired_event};

use crate::support::{Journal, TestError, run_with};

/// Reconciles ConfigMaps, watching six other kinds the way a controller watches its related objects.
#[derive(Default)]
struct WatchfulController {
    journal: Arc<Journal>,
}

fn none<K>(_: K) -> Vec<ObjectRef<ConfigMap>> {
    Vec::new()
}

impl Reconciler for WatchfulController {
    type Resource = ConfigMap;
    type Error = TestError;

    fn name(&self) -> &'static str {
        "watchful"
    }

    fn watches(&self, triggers: Triggers<ConfigMap>, scope: &Scope) -> Triggers<ConfigMap> {
        let config = watcher::Config::default;
        triggers
            .watches(scope.api::<Secret>(), config(), none)
            .watches(scope.api::<Service>(), config(), none)
            .watches(scope.api::<ServiceAccount>(), config(), none)
            .watches(scope.api::<Role>(), config(), none)
            .watches(scope.api::<RoleBinding>(), config(), none)
            .watches(scope.api::<Lease>(), config(), none)
    }

    async fn reconcile(&self, obj: Arc<ConfigMap>, _ctx: &Context) -> Result<Outcome, TestError> {
        self.journal.record(&obj.name_any());
        Ok(Outcome::Done)
    }
}

#[tokio::test]
async fn when_every_watch_expires_at_once_a_change_is_still_reconciled_within_seconds() {
    let cluster = TestCluster::start_behind_fault_proxy().await;
    let ns = cluster.create_namespace("trigger-errors").await;
    let controller = Arc::new(WatchfulController::default());
    let running = run_with(cluster.proxied_client().await, controller.clone(), &ns);
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(), &ns);
    let app = ConfigMap {
        metadata: ObjectMeta {
            name: Some("app".into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    api.create(&PostParams::default(), &app).await.expect("create");
    let journal = controller.journal.clone();
    wait_until("the first reconcile", Deadline::secs(20), || {
        let journal = journal.clone();
        async move { Ok((journal.reconciles_of("app") > 0).then_some(())) }
    })
    .await;
    let before = journal.reconciles_of("app");

    // Every watch is cut and resumes from a resourceVersion the server no longer has: a 410 Expired for each at
    // once. (The proxy answers the resumptions as kube-apiserver does after an etcd compaction; the apiserver's
    // watch cache would serve resumptions this recent from memory.)
    let faults = cluster.api_faults();
    // ConfigMaps and the six related kinds.
    let watches = wait_until("the seven watches open", Deadline::secs(10), || async {
        let open = faults.open_streams("watch *");
        Ok((open >= 7).then_some(open))
    })
    .await;
    let expired = faults.add_fault(
        Fault::route("watch *")
            .respond(200, kube_watch_expired_event())
            .times(u32::try_from(watches).expect("a few watches")),
    );
    faults.cut_streams("watch *");
    let changed = Instant::now();
    api.patch(
        "app",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"changed": "yes"}}})),
    )
    .await
    .expect("label");
    wait_until("the change to be reconciled", Deadline::secs(10), || {
        let journal = journal.clone();
        async move { Ok((journal.reconciles_of("app") > before).then_some(())) }
    })
    .await;
    eprintln!(
        "MEASURE trigger errors: change reconciled {:?} after every watch expired",
        changed.elapsed()
    );
    wait_until("every cut watch answered 410 Expired", Deadline::secs(10), || async {
        Ok((!faults.has_fault(expired)).then_some(()))
    })
    .await;
    running.shutdown.cancel();
    running.task.await.expect("runner stops");
}
