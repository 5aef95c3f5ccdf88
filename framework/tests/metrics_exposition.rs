//! The `/metrics` exposition must be valid for Prometheus, checked by Prometheus's own `promtool`.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use framework::metrics::{Metrics, ReconcileResult};

#[test]
fn exposition_passes_promtool_check_metrics() {
    let metrics = Metrics::new().expect("metrics");
    for name in ["nebariapp", "keystoneapplicationcredential"] {
        let c = metrics.controller(name, 2);
        c.reconcile_started();
        c.reconcile_finished(ReconcileResult::Success, Duration::from_millis(3), false);
        c.reconcile_started();
        c.reconcile_finished(ReconcileResult::Error, Duration::from_millis(40), false);
    }
    metrics.set_leader("platform-operator-leader", true);
    metrics.observe_kube_request("GET", "200", "127.0.0.1", Duration::from_millis(2));
    metrics.observe_external_request("keycloak", "get token", "200", Duration::from_millis(9));
    let exposition = metrics.render();

    let mut child = match Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(error) => panic!(
            "promtool is required for this test ({error}); install it with `apt-get install prometheus` \
             or run e2e/test.sh, which installs it"
        ),
    };
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(exposition.as_bytes())
        .expect("write exposition");
    let output = child.wait_with_output().expect("promtool finishes");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    // promtool exits 1 on format errors and 3 on lint findings only; both must be clean.
    assert!(
        output.status.success(),
        "promtool check metrics failed ({}):\n{report}",
        output.status
    );
    for name in [
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_reconcile_time_seconds",
        "controller_runtime_active_workers",
        "controller_runtime_max_concurrent_reconciles",
        "workqueue_adds_total",
        "workqueue_retries_total",
        "leader_election_master_status",
        "rest_client_requests_total",
        "process_cpu_seconds_total",
    ] {
        assert!(exposition.contains(name), "exposition lacks {name}");
    }
}
