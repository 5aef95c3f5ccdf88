//! A reconcile never starts from a cached copy older than the controller's own last write. The chaos run found
//! the failure this prevents: a pass failed and wrote `Ready=False`; its retry, 100 ms later, read the cached
//! object from before that write (the watch was down), found the status it wanted already there, wrote nothing
//! and finished; the failure's echo changed only the status, which triggers nothing, so the object showed the
//! failure until the next resync.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use e2e::harness::fault_proxy::Fault;
use e2e::harness::{Deadline, TestCluster, wait_until};
use framework::conditions::{ConditionUpdate, READY};
use framework::runner::{Context, Outcome, Reconciler};
use framework::status::{self, OnConflict, StatusPolicy, StatusUpdate};
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::Notify;

use crate::support::{TestError, run_with};

/// A kind with a status subresource, for this test only.
#[derive(CustomResource, Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "framework-test.example.com",
    version = "v1",
    kind = "Gadget",
    namespaced,
    status = "GadgetStatus"
)]
pub struct GadgetSpec {
    /// Changed by the test to start a pass.
    #[serde(default)]
    pub revision: i64,
}

/// The test kind's status: conditions only.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GadgetStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    observed_generation: Option<i64>,
}

struct GadgetStatusPolicy;

impl StatusPolicy for GadgetStatusPolicy {
    type Resource = Gadget;
    type Status = GadgetStatus;
    const ON_CONFLICT: OnConflict = OnConflict::Drop;

    fn conditions(status: &GadgetStatus) -> &[Condition] {
        &status.conditions
    }

    fn conditions_mut(status: &mut GadgetStatus) -> &mut Vec<Condition> {
        &mut status.conditions
    }

    fn observed_generation(status: &mut GadgetStatus) -> &mut Option<i64> {
        &mut status.observed_generation
    }
}

/// Reports `Ready=True` (reason `Fine`), except for one armed pass that waits for the test, reports
/// `Ready=False` (reason `Broken`) and fails.
#[derive(Default)]
struct GadgetController {
    fail_next: AtomicBool,
    failing_pass_started: Notify,
    release_failing_pass: Notify,
    /// Passes finished after the failing one wrote Broken.
    passes_after_failure: AtomicUsize,
    failed: AtomicBool,
}

impl Reconciler for GadgetController {
    type Resource = Gadget;
    type Error = TestError;

    fn name(&self) -> &'static str {
        "gadget"
    }

    async fn reconcile(&self, obj: Arc<Gadget>, ctx: &Context) -> Result<Outcome, TestError> {
        let mut update = StatusUpdate::new::<GadgetStatusPolicy>(obj.as_ref(), Timestamp::now());
        let failing = self.fail_next.swap(false, Ordering::SeqCst);
        if failing {
            self.failing_pass_started.notify_one();
            self.release_failing_pass.notified().await;
            update.finish_with(ConditionUpdate::failed(READY, "Broken", "deliberately broken"));
        } else {
            update.finish_with(ConditionUpdate::ok(READY, "Fine", "fine"));
        }
        let published = status::publish(&GadgetStatusPolicy, ctx, obj.as_ref(), update)
            .await
            .map_err(|e| TestError(e.to_string()));
        if failing {
            self.failed.store(true, Ordering::SeqCst);
            published?;
            return Err(TestError("deliberate failure after writing the status".into()));
        }
        published?;
        if self.failed.load(Ordering::SeqCst) {
            self.passes_after_failure.fetch_add(1, Ordering::SeqCst);
        }
        Ok(Outcome::Done)
    }
}

async fn ready_reason(api: &Api<Gadget>, name: &str) -> Option<String> {
    let stored = api.get(name).await.ok()?;
    let conditions = stored.status?.conditions;
    conditions.into_iter().find(|c| c.type_ == READY).map(|c| c.reason)
}

#[tokio::test]
async fn a_retry_reads_the_stored_object_while_the_watch_has_not_shown_the_last_write() {
    replay(Answer::Delivered).await;
}

#[tokio::test]
async fn a_retry_reads_the_stored_object_after_a_write_whose_answer_was_lost() {
    replay(Answer::LostAfterTheWrite).await;
}

/// How the failing pass's status write is answered.
#[derive(Clone, Copy, PartialEq)]
enum Answer {
    /// Normally: the pass learns the version it wrote.
    Delivered,
    /// With a 500 after the write was made: the pass cannot know whether it was.
    LostAfterTheWrite,
}

/// A pass fails after writing Broken while the watch is down from before that write to the end; the retry must
/// still leave Fine.
async fn replay(answer: Answer) {
    let cluster = TestCluster::start_behind_fault_proxy().await;
    cluster.install_crds(&[Gadget::crd()]).await;
    let ns = cluster.create_namespace("own-writes").await;
    let controller = Arc::new(GadgetController::default());
    let running = run_with(cluster.proxied_client().await, controller.clone(), &ns);
    let api: Api<Gadget> = Api::namespaced(cluster.client(), &ns);
    api.create(&PostParams::default(), &Gadget::new("g", GadgetSpec { revision: 1 }))
        .await
        .expect("create");
    wait_until("the first pass to report Fine", Deadline::secs(15), || {
        let api = api.clone();
        async move { Ok((ready_reason(&api, "g").await.as_deref() == Some("Fine")).then_some(())) }
    })
    .await;

    controller.fail_next.store(true, Ordering::SeqCst);
    let started = controller.failing_pass_started.notified();
    api.patch(
        "g",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"revision": 2}})),
    )
    .await
    .expect("change the spec");
    tokio::time::timeout(std::time::Duration::from_secs(15), started)
        .await
        .expect("the changed spec starts the failing pass");
    let faults = cluster.api_faults();
    for verb in ["list", "watch"] {
        faults.add_fault(Fault::route(&format!("{verb} gadgets.framework-test.example.com")).status(500));
    }
    if answer == Answer::LostAfterTheWrite {
        faults.add_fault(
            Fault::route("patch gadgets.framework-test.example.com*")
                .status_after_effect(500)
                .times(1),
        );
    }
    faults.cut_streams("watch *");
    controller.release_failing_pass.notify_one();

    // The retry starts from the cached copy, which still says Fine: only a read of the stored object shows that
    // Fine has to be written again. Nothing triggers a pass after the retry, so what it leaves is final.
    wait_until("the retry after the failure", Deadline::secs(15), || {
        let controller = controller.clone();
        async move { Ok((controller.passes_after_failure.load(Ordering::SeqCst) > 0).then_some(())) }
    })
    .await;
    assert_eq!(
        ready_reason(&api, "g").await.as_deref(),
        Some("Fine"),
        "the retry corrected the status the failed pass wrote"
    );
    faults.clear_faults();
    running.shutdown.cancel();
    running.task.await.expect("runner stops");
}
