//! Nothing is created until the namespace opts in and the backend Service exposes the port; each wait is a
//! Ready=False condition, and the change that ends it (labelling the namespace, creating or fixing the Service)
//! makes the app Ready at once through a watch, not after a poll.

use std::time::{Duration, Instant};

use gateway_api::httproutes::HttpRoute;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Patch, PatchParams};
use serde_json::json;

use crate::support::{SERVICE, SERVICE_PORT, Setup, World};
use e2e::harness::metrics::sum as sum_metric;

/// How soon a watched change must take effect (the original polled every five minutes).
const PROMPTLY: Duration = Duration::from_secs(5);

/// Asserts the controller waits for a watch rather than polling: no reconcile ended in an error (retried with
/// backoff) or asked to be requeued.
async fn assert_no_polling(world: &World) {
    world.wait_idle().await;
    let metrics = world.manager().metrics().await;
    for result in ["error", "requeue", "requeue_after"] {
        let count = sum_metric(
            &metrics,
            "controller_runtime_reconcile_total",
            &[("controller", "nebariapp"), ("result", result)],
        );
        assert_eq!(
            count, 0,
            "while waiting, {count} reconciles ended with {result}: the controller polls"
        );
    }
}

#[tokio::test]
async fn an_app_in_a_namespace_not_opted_in_says_so_and_becomes_ready_once_the_namespace_is_labelled() {
    let world = World::start(Setup {
        opted_in: false,
        ..Setup::default()
    })
    .await;
    world.apply_app("web", json!({"routing": {}})).await;
    let message = world
        .wait_condition("web", "Ready", "False", "NamespaceNotOptedIn")
        .await;
    assert!(
        message.contains("nebari.dev/managed=true") && message.contains(&world.namespace),
        "{message}"
    );
    assert!(
        world.typed::<HttpRoute>("web-route").await.is_none(),
        "nothing is created before the opt-in"
    );
    world.wait_event("web", "NamespaceNotOptedIn").await;
    assert_no_polling(&world).await;

    let labelled = Instant::now();
    world.opt_in().await;
    world.wait_ready("web").await;
    assert!(
        labelled.elapsed() < PROMPTLY,
        "Ready {:?} after the label: not driven by the Namespace watch",
        labelled.elapsed()
    );
    assert!(world.typed::<HttpRoute>("web-route").await.is_some());
}

#[tokio::test]
async fn a_missing_service_or_port_holds_the_app_until_the_service_is_fixed() {
    let world = World::start(Setup {
        service: false,
        ..Setup::default()
    })
    .await;
    world.apply_app("web", json!({"routing": {}})).await;
    let message = world.wait_condition("web", "Ready", "False", "ServiceNotFound").await;
    assert!(message.contains(&format!("{}/{SERVICE}", world.namespace)), "{message}");
    assert_no_polling(&world).await;

    world.create_service(9090).await;
    let message = world
        .wait_condition("web", "Ready", "False", "ServicePortNotFound")
        .await;
    assert!(message.contains(&SERVICE_PORT.to_string()), "{message}");

    let fixed = Instant::now();
    let patch = json!({"spec": {"ports": [{"name": "http", "port": SERVICE_PORT}]}});
    let services: kube::Api<Service> = world.services();
    services
        .patch(SERVICE, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("fix the port");
    world.wait_ready("web").await;
    assert!(
        fixed.elapsed() < PROMPTLY,
        "Ready {:?} after the fix: not driven by the Service watch",
        fixed.elapsed()
    );
}
