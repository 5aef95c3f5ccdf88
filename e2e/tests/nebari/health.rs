//! Health checks (`--nebari-health-checks`): a small HTTP server plays the app's health endpoint — healthy,
//! failing, then hanging — and the operator publishes each result in `status.serviceDiscovery.health` and
//! `nebariapp_health_up`, with an event only when the health changes.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use e2e::harness::{Deadline, metrics, wait_until};
use serde_json::{Value, json};

use crate::support::{Setup, World};

const HEALTHY: u8 = 0;
const FAILING: u8 = 1;
const HANGING: u8 = 2;

/// The app's health endpoint, switchable between answers; counts the checks it gets.
#[derive(Clone, Default)]
struct StandInApp {
    mode: Arc<AtomicU8>,
    checks: Arc<AtomicU64>,
}

async fn healthz(State(app): State<StandInApp>) -> StatusCode {
    app.checks.fetch_add(1, Ordering::SeqCst);
    match app.mode.load(Ordering::SeqCst) {
        HEALTHY => StatusCode::OK,
        FAILING => StatusCode::SERVICE_UNAVAILABLE,
        _ => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            StatusCode::OK
        }
    }
}

async fn serve(app: StandInApp) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("address").port();
    let router = Router::new().route("/healthz", get(healthz)).with_state(app);
    tokio::spawn(async move { axum::serve(listener, router).await });
    port
}

async fn wait_health(world: &World, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    wait_until(what, Deadline::secs(45), || async {
        let app = serde_json::to_value(world.app("web").await).map_err(|e| e.to_string())?;
        let health = app["status"]["serviceDiscovery"]["health"].clone();
        if check(&health) {
            Ok(Some(health))
        } else {
            Err(health.to_string())
        }
    })
    .await
}

#[tokio::test]
async fn health_checks_report_healthy_failing_and_hanging_apps_with_events_only_on_changes() {
    let world = World::start(Setup {
        manager_args: vec![
            "--nebari-health-checks".to_string(),
            "--nebari-test-health-check-address=127.0.0.1".to_string(),
        ],
        ..Setup::default()
    })
    .await;
    let stand_in = StandInApp::default();
    let port = serve(stand_in.clone()).await;
    let started = Instant::now();
    world
        .apply_app(
            "web",
            json!({"routing": {}, "landingPage": {"enabled": true, "displayName": "Web", "healthCheck": {
                "enabled": true, "path": "/healthz", "port": port, "intervalSeconds": 10, "timeoutSeconds": 1}}}),
        )
        .await;
    world.wait_ready("web").await;

    let health = wait_health(&world, "a healthy check", |h| h["status"] == "Healthy").await;
    assert_eq!(health["message"], "HTTP 200");
    assert!(health["lastCheckTime"].is_string(), "{health}");
    let ns = world.namespace.clone();
    let up = |exposition: &str, value: &str| {
        exposition
            .lines()
            .any(|l| l == format!("nebariapp_health_up{{name=\"web\",namespace=\"{ns}\"}} {value}"))
    };
    assert!(up(&world.manager().metrics().await, "1"), "nebariapp_health_up is 1");
    world.wait_event("web", "HealthCheckPassed").await;

    stand_in.mode.store(FAILING, Ordering::SeqCst);
    let health = wait_health(&world, "a failing check", |h| h["status"] == "Unhealthy").await;
    assert_eq!(health["message"], "HTTP 503");
    assert!(up(&world.manager().metrics().await, "0"), "nebariapp_health_up is 0");
    let note = world.wait_event("web", "HealthCheckFailed").await;
    assert!(note.contains("HTTP 503") && note.contains("/healthz"), "{note}");

    stand_in.mode.store(HANGING, Ordering::SeqCst);
    wait_health(&world, "a check that times out", |h| {
        h["status"] == "Unhealthy" && h["message"] == "no answer within 1s"
    })
    .await;
    let failed_events = world
        .events("web")
        .await
        .iter()
        .filter(|e| e.reason.as_deref() == Some("HealthCheckFailed"))
        .count();
    assert_eq!(failed_events, 1, "still unhealthy: no second event");

    // One check per interval, not more.
    let elapsed = started.elapsed().as_secs();
    let checks = stand_in.checks.load(Ordering::SeqCst);
    assert!(checks <= elapsed / 10 + 2, "{checks} checks in {elapsed}s");
    let scraped = metrics::sum(
        &world.manager().metrics().await,
        "nebariapp_health_up",
        &[("name", "web")],
    );
    assert_eq!(scraped, 0);
}
