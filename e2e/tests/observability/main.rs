//! Operating the manager: a real Prometheus scrapes its controller-runtime metrics; leader election holds a
//! Lease while it runs and releases it on SIGTERM; the admin endpoints answer.

use e2e::fixtures::prometheus::Prometheus;
use e2e::harness::{Deadline, ManagerOptions, ManagerProcess, OPERATOR_NAMESPACE, TestCluster, wait_until};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use serde_json::json;

/// Prometheus, scraping the real manager, sees the series kubebuilder dashboards query, labelled per controller.
#[tokio::test]
async fn prometheus_scrapes_controller_runtime_metrics_from_the_manager() {
    let cluster = TestCluster::start().await;
    // The kinds the NebariApp controller watches must exist, or kube-runtime backs off all its triggers.
    let mut all = crds::all();
    all.extend(e2e::fixtures::third_party_crds::for_nebari());
    cluster.install_crds(&all).await;
    let manager = ManagerProcess::start(&cluster, ManagerOptions::default()).await;
    let prometheus = Prometheus::start(cluster.dir(), &manager.metrics_target()).await;
    // An app whose namespace is not opted in: counted as not Ready, with its reason.
    let app = json!({
        "apiVersion": "reconcilers.nebari.dev/v1", "kind": "NebariApp",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"hostname": "web.example.com", "service": {"name": "web", "port": 80}},
    });
    cluster.kubectl().apply(&app.to_string()).await;

    let series = wait_until(
        "Prometheus to have scraped the reconcile counters",
        Deadline::secs(60),
        || {
            let prometheus = &prometheus;
            async move {
                let result = prometheus.query("controller_runtime_reconcile_total").await?;
                Ok((!result.is_empty()).then_some(result))
            }
        },
    )
    .await;
    let controllers: Vec<String> = series
        .iter()
        .filter_map(|s| s["metric"]["controller"].as_str().map(str::to_string))
        .collect();
    for expected in ["nebariapp", "keystoneapplicationcredential"] {
        assert!(
            controllers.iter().any(|c| c == expected),
            "no series for {expected}: {controllers:?}"
        );
    }
    for result in ["success", "error", "requeue_after"] {
        assert!(
            series.iter().any(|s| s["metric"]["result"] == result),
            "no result=\"{result}\" series"
        );
    }
    for metric in [
        "controller_runtime_max_concurrent_reconciles",
        "controller_runtime_active_workers",
        "rest_client_requests_total",
        "process_resident_memory_bytes",
    ] {
        let found = prometheus.query(metric).await.expect("query");
        assert!(!found.is_empty(), "Prometheus has no {metric}");
    }
    let not_ready = r#"platform_operator_objects{controller="nebariapp",ready="false",reason="NamespaceNotOptedIn"}"#;
    let counted = wait_until("Prometheus to count the app", Deadline::secs(60), || {
        let prometheus = &prometheus;
        async move {
            let result = prometheus.query(not_ready).await?;
            Ok((!result.is_empty()).then_some(result))
        }
    })
    .await;
    assert_eq!(counted[0]["value"][1], "1");
    let succeeded = prometheus
        .query(r#"time() - platform_operator_last_successful_reconcile_timestamp_seconds{controller="nebariapp"}"#)
        .await
        .expect("query");
    assert!(!succeeded.is_empty(), "the app's reconcile succeeded and was stamped");
    let cpu = prometheus.query("process_cpu_seconds_total").await.expect("query");
    let seconds: f64 = cpu[0]["value"][1]
        .as_str()
        .and_then(|v| v.parse().ok())
        .expect("a number");
    assert!(seconds > 0.0, "CPU time counts fractions of a second: {seconds}");
    let up = prometheus.query("up{job=\"manager\"}").await.expect("query up");
    assert_eq!(
        up.first().and_then(|s| s["value"][1].as_str()),
        Some("1"),
        "the scrape target is up"
    );
    prometheus.stop().await;
}

/// With --leader-elect the manager holds a Lease while it runs, reports it in leader_election_master_status, and
/// releases it on SIGTERM so a successor can take over at once.
#[tokio::test]
async fn the_leader_lease_is_held_while_running_and_released_on_sigterm() {
    let cluster = TestCluster::start().await;
    cluster.install_crds(&crds::all()).await;
    let options = ManagerOptions {
        args: vec![
            "--leader-elect".into(),
            format!("--leader-election-namespace={OPERATOR_NAMESPACE}"),
            "--leader-election-id=observability-test".into(),
        ],
        env: vec![("POD_NAME".into(), "manager-under-test".into())],
        ..ManagerOptions::default()
    };
    let mut manager = ManagerProcess::start(&cluster, options).await;
    let leases: Api<Lease> = Api::namespaced(cluster.client(), OPERATOR_NAMESPACE);
    // Readiness does not wait for leadership (a standby is ready too), so the Lease may still be on its way.
    let holder_source = leases.clone();
    wait_until("the manager to hold the lease", Deadline::secs(20), || {
        let leases = holder_source.clone();
        async move {
            let lease = leases.get_opt("observability-test").await.map_err(|e| e.to_string())?;
            let holder = lease.and_then(|l| l.spec).and_then(|s| s.holder_identity);
            Ok((holder.as_deref() == Some("manager-under-test")).then_some(()))
        }
    })
    .await;
    // The gauge is set right after the Lease write that made it leader.
    let reporting = &manager;
    wait_until(
        "leader_election_master_status to report 1",
        Deadline::secs(10),
        || async move {
            let text = reporting.metrics().await;
            Ok(text
                .contains(r#"leader_election_master_status{name="observability-test"} 1"#)
                .then_some(()))
        },
    )
    .await;

    assert!(manager.stop().await, "the manager exits cleanly on SIGTERM");
    let holder = leases
        .get("observability-test")
        .await
        .expect("lease")
        .spec
        .and_then(|s| s.holder_identity);
    assert!(
        holder.is_none(),
        "the lease is released on shutdown, still held by {holder:?}"
    );
}

/// The shipped Grafana dashboard (`manifests/prometheus/dashboard`): every panel's query parses and returns data
/// from a real Prometheus scraping the manager, with reconciles and external API traffic going on.
#[tokio::test]
async fn every_dashboard_query_returns_data_from_the_managers_metrics() {
    let path = e2e::harness::install::repository_root()
        .join("manifests/prometheus/dashboard/platform-operator-dashboard.json");
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read the dashboard")).expect("dashboard JSON");
    let queries: Vec<String> = dashboard["panels"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["expr"].as_str().map(str::to_string))
        .collect();
    assert!(queries.len() >= 10, "{queries:?}");

    let cluster = TestCluster::start().await;
    let mut all = crds::all();
    all.extend(e2e::fixtures::third_party_crds::for_nebari());
    cluster.install_crds(&all).await;
    // An app with auth in an opted-in namespace: its provisioning calls Keycloak, which does not answer here, so
    // the external API series fill too.
    let setup = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "labels": {"nebari.dev/managed": "true"}}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "keycloak"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "nebari-realm-admin-credentials", "namespace": "keycloak"},
         "stringData": {"username": "admin", "password": "unused"}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "team"},
         "spec": {"ports": [{"port": 80}]}},
        {"apiVersion": "reconcilers.nebari.dev/v1", "kind": "NebariApp", "metadata": {"name": "web", "namespace": "team"},
         "spec": {"hostname": "web.example.com", "service": {"name": "web", "port": 80}, "auth": {"enabled": true}}},
        // And one whose namespace is not opted in: reconciled successfully (it waits for the label).
        {"apiVersion": "reconcilers.nebari.dev/v1", "kind": "NebariApp", "metadata": {"name": "idle", "namespace": "default"},
         "spec": {"hostname": "idle.example.com", "service": {"name": "idle", "port": 80}}},
    ]});
    cluster.kubectl().apply(&setup.to_string()).await;
    let options = ManagerOptions {
        args: vec![
            "--keycloak-url=http://127.0.0.1:9".to_string(),
            "--keycloak-api-timeout-seconds=1".to_string(),
            // As the shipped Deployment runs it (the leader panel needs the Lease).
            "--leader-elect".to_string(),
            format!("--leader-election-namespace={OPERATOR_NAMESPACE}"),
            "--leader-election-id=dashboard-test".to_string(),
        ],
        ..ManagerOptions::default()
    };
    let manager = ManagerProcess::start(&cluster, options).await;
    let prometheus = Prometheus::start(cluster.dir(), &manager.metrics_target()).await;
    wait_until("Keycloak traffic to be scraped", Deadline::secs(60), || {
        let prometheus = &prometheus;
        async move {
            let found = prometheus.query("rate(external_api_requests_total[5m])").await?;
            Ok((!found.is_empty()).then_some(()))
        }
    })
    .await;
    for query in &queries {
        let found = prometheus
            .query(query)
            .await
            .unwrap_or_else(|e| panic!("the dashboard query {query} fails: {e}"));
        assert!(!found.is_empty(), "the dashboard query {query} returns no data");
    }
    prometheus.stop().await;
}

/// JSON logs: every line of a reconcile names the controller, the object and the reconcile; a reconcile that
/// changed something says what in one info line, one that changed nothing says nothing at info.
#[tokio::test]
async fn reconcile_logs_are_json_lines_with_the_object_and_one_summary_of_what_changed() {
    let cluster = TestCluster::start().await;
    let mut all = crds::all();
    all.extend(e2e::fixtures::third_party_crds::for_nebari());
    cluster.install_crds(&all).await;
    let options = ManagerOptions::controllers(&["nebariapp"], None, vec!["--log-format=json".to_string()]);
    let manager = ManagerProcess::start(&cluster, options).await;
    let app = json!({
        "apiVersion": "reconcilers.nebari.dev/v1", "kind": "NebariApp",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"hostname": "web.example.com", "service": {"name": "web", "port": 80}},
    });
    cluster.kubectl().apply(&app.to_string()).await;
    let summaries = |log: &str| -> Vec<serde_json::Value> {
        log.lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|line| line["message"].as_str().is_some_and(|m| m.starts_with("reconciled: ")))
            .collect()
    };
    let first = wait_until("the first reconcile's summary", Deadline::secs(60), || {
        let found = summaries(&manager.log());
        async move { Ok(found.into_iter().find(|s| s["level"] == "INFO")) }
    })
    .await;
    let span = &first["span"];
    assert_eq!(
        (
            span["controller"].as_str(),
            span["namespace"].as_str(),
            span["object"].as_str()
        ),
        (Some("nebariapp"), Some("default"), Some("web")),
        "{first}"
    );
    assert!(span["reconcile_id"].is_u64(), "{first}");
    let changes = first["changes"].as_str().unwrap_or_default();
    assert!(changes.contains("finalizer") && changes.contains("status"), "{first}");

    // Every line of the manager is JSON, and every line inside a reconcile carries the object.
    let log = manager.log();
    for line in log.lines().filter(|l| !l.trim().is_empty()) {
        let parsed: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
        assert!(parsed["timestamp"].is_string() && parsed["level"].is_string(), "{line}");
        if parsed["span"]["name"] == "reconcile" {
            for field in ["controller", "namespace", "object", "reconcile_id"] {
                assert!(!parsed["span"][field].is_null(), "{field} missing: {line}");
            }
        }
    }

    // A reconcile that changes nothing (an annotation the controller ignores) logs no summary at info.
    let before = manager.reconciles("nebariapp").await;
    let info_before = summaries(&manager.log())
        .iter()
        .filter(|s| s["level"] == "INFO")
        .count();
    cluster
        .kubectl()
        .run(&[
            "annotate",
            "nebariapp",
            "web",
            "-n",
            "default",
            "example.com/note=unrelated",
        ])
        .await
        .expect_success("annotate");
    manager.wait_reconciles("nebariapp", before, 1).await;
    let info_after = summaries(&manager.log())
        .iter()
        .filter(|s| s["level"] == "INFO")
        .count();
    assert_eq!(info_after, info_before, "a no-op reconcile says nothing at info");
}
