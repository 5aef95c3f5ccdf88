//! kubectl v1.32 (the real Go client) against the emulator: the commands users and our e2e tests run.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::support::{Env, gizmo, gizmo_crd, kubectl_path, wait_for};

const GIZMOS: &str = "/apis/conformance.example.com/v1/namespaces/default/gizmos";

async fn with_crd() -> Env {
    install_crd(Env::start().await).await
}

/// [`with_crd`] on the emulator, for a test that watches its request counters.
async fn with_crd_emulated() -> Env {
    install_crd(Env::start_emulated().await).await
}

async fn install_crd(env: Env) -> Env {
    let out = env
        .kubectl_ok(&["apply", "-f", "-"], Some(&gizmo_crd().to_string()))
        .await;
    assert!(
        out.contains("customresourcedefinition.apiextensions.k8s.io/gizmos.conformance.example.com created"),
        "{out}"
    );
    // A real apiserver serves the new kind a moment after accepting the CRD.
    wait_for("gizmos served", || async {
        env.request("GET", GIZMOS, None, None).await.0 == 200
    })
    .await;
    env
}

/// Discovery, OpenAPI v3 validation and Tables as kubectl uses them: client-side apply
/// creates then patches; `get` prints the CRD's printer columns; `-o json` returns the object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_get_with_printer_columns_and_json() {
    let env = with_crd().await;
    let out = env
        .kubectl_ok(&["apply", "-f", "-"], Some(&gizmo("g1", 3).to_string()))
        .await;
    assert!(out.contains("gizmo.conformance.example.com/g1 created"), "{out}");
    let out = env
        .kubectl_ok(&["apply", "-f", "-"], Some(&gizmo("g1", 4).to_string()))
        .await;
    assert!(out.contains("gizmo.conformance.example.com/g1 configured"), "{out}");
    let table = env.kubectl_ok(&["get", "gizmos"], None).await;
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header, vec!["NAME", "SIZE", "READY", "AGE"], "{table}");
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(&row[..2], &["g1", "4"], "{table}");
    let json_out: Value =
        serde_json::from_str(&env.kubectl_ok(&["get", "gz", "g1", "-o", "json"], None).await).unwrap();
    assert_eq!(json_out["spec"]["size"], 4);
    assert!(json_out["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"].is_string());
    let ns = env.kubectl_ok(&["get", "namespaces"], None).await;
    assert!(
        ns.lines().any(|l| l.starts_with("kube-system") && l.contains("Active")),
        "{ns}"
    );
}

/// `apply --server-side` creates, a second manager changing an owned field
/// conflicts (409 rendered by kubectl), `--force-conflicts` takes ownership.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_conflicts_and_force() {
    let env = with_crd().await;
    let out = env
        .kubectl_ok(
            &["apply", "--server-side", "-f", "-"],
            Some(&gizmo("g1", 3).to_string()),
        )
        .await;
    assert!(
        out.contains("gizmo.conformance.example.com/g1 serverside-applied"),
        "{out}"
    );
    let other = env
        .kubectl(
            &["apply", "--server-side", "--field-manager=other", "-f", "-"],
            Some(&gizmo("g1", 5).to_string()),
        )
        .await;
    assert!(!other.status.success(), "a conflicting apply fails");
    let stderr = String::from_utf8_lossy(&other.stderr);
    assert!(
        stderr.contains("Apply failed with 1 conflict: conflict with \"kubectl\": .spec.size"),
        "{stderr}"
    );
    env.kubectl_ok(
        &[
            "apply",
            "--server-side",
            "--field-manager=other",
            "--force-conflicts",
            "-f",
            "-",
        ],
        Some(&gizmo("g1", 5).to_string()),
    )
    .await;
    let obj: Value = serde_json::from_str(
        &env.kubectl_ok(&["get", "gizmo", "g1", "-o", "json", "--show-managed-fields"], None)
            .await,
    )
    .unwrap();
    assert_eq!(obj["spec"]["size"], 5);
    let managers: Vec<&str> = obj["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["manager"].as_str().unwrap())
        .collect();
    assert!(managers.contains(&"other"), "{managers:?}");
}

/// Events as kubectl describe queries and renders them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_shows_events() {
    let env = with_crd().await;
    let (_, created, _) = env
        .request("POST", GIZMOS, Some("application/json"), Some(gizmo("g1", 1)))
        .await;
    let uid = created["metadata"]["uid"].as_str().unwrap();
    let event = json!({"metadata":{"name":"g1.1","namespace":"default"},"involvedObject":{"apiVersion":"conformance.example.com/v1","kind":"Gizmo","name":"g1","namespace":"default","uid":uid},
        "reason":"Provisioned","message":"gizmo is ready","type":"Normal","source":{"component":"gizmo-controller"},
        "firstTimestamp": "2026-01-01T00:00:00Z","lastTimestamp":"2026-01-01T00:00:00Z","count":1});
    let (status, _, _) = env
        .request(
            "POST",
            "/api/v1/namespaces/default/events",
            Some("application/json"),
            Some(event),
        )
        .await;
    assert_eq!(status, 201);
    let out = env.kubectl_ok(&["describe", "gizmo", "g1"], None).await;
    assert!(out.contains("Events:"), "{out}");
    let line = out
        .lines()
        .find(|l| l.contains("Provisioned"))
        .unwrap_or_else(|| panic!("event row missing:\n{out}"));
    assert!(
        line.contains("Normal") && line.contains("gizmo-controller") && line.contains("gizmo is ready"),
        "{line}"
    );
}

/// `kubectl wait` (get, list with a fieldSelector, watch) and the API conventions for conditions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_condition_ready() {
    let env = with_crd_emulated().await;
    env.request("POST", GIZMOS, Some("application/json"), Some(gizmo("g1", 1)))
        .await;
    let kubeconfig = env.kubeconfig.clone();
    let home = env.dir.clone();
    let waiter = tokio::spawn(async move {
        tokio::process::Command::new(kubectl_path())
            .args(["wait", "--for=condition=Ready", "gizmo/g1", "--timeout=30s"])
            .env("HOME", home)
            .env("KUBECONFIG", kubeconfig)
            .kill_on_drop(true)
            .output()
            .await
            .expect("kubectl wait runs")
    });
    wait_for("kubectl wait is watching", || async {
        env.emulator()
            .hooks()
            .count("watch", "conformance.example.com", "gizmos", "")
            >= 1
    })
    .await;
    let (status, _, _) = env
        .request(
            "PATCH",
            &format!("{GIZMOS}/g1/status"),
            Some("application/merge-patch+json"),
            Some(json!({"status":{"conditions":[{"type":"Ready","status":"True","reason":"Done","message":"ok","lastTransitionTime":"2026-01-01T00:00:00Z"}]}})),
        )
        .await;
    assert_eq!(status, 200);
    let out = tokio::time::timeout(Duration::from_secs(40), waiter)
        .await
        .expect("wait returns")
        .expect("join");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("gizmo.conformance.example.com/g1 condition met"));
}

/// The status subresource via kubectl: `patch --subresource=status` changes status only; `label` adds a label.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_status_subresource_and_label() {
    let env = with_crd().await;
    env.request("POST", GIZMOS, Some("application/json"), Some(gizmo("g1", 1)))
        .await;
    let out = env
        .kubectl_ok(
            &[
                "patch",
                "gizmo",
                "g1",
                "--subresource=status",
                "--type=merge",
                "-p",
                r#"{"status":{"observedGeneration":1},"spec":{"size":7}}"#,
            ],
            None,
        )
        .await;
    assert!(out.contains("gizmo.conformance.example.com/g1 patched"), "{out}");
    let out = env.kubectl_ok(&["label", "gizmo", "g1", "tier=web"], None).await;
    assert!(out.contains("gizmo.conformance.example.com/g1 labeled"), "{out}");
    let (_, obj, _) = env.request("GET", &format!("{GIZMOS}/g1"), None, None).await;
    assert_eq!(obj["status"]["observedGeneration"], 1);
    assert_eq!(obj["spec"]["size"], 1, "spec untouched by a status patch");
    assert_eq!(obj["metadata"]["labels"]["tier"], "web");
    let strategic = env
        .kubectl(&["patch", "gizmo", "g1", "-p", r#"{"spec":{"size":2}}"#], None)
        .await;
    assert!(!strategic.status.success());
    assert!(
        String::from_utf8_lossy(&strategic.stderr).contains(
            "application/strategic-merge-patch+json is not supported by conformance.example.com/v1, Kind=Gizmo"
        ),
        "{}",
        String::from_utf8_lossy(&strategic.stderr)
    );
}

/// kubectl delete waits with a watch until DELETED, and finalizers hold the object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_waits_for_finalizer_removal() {
    let env = with_crd_emulated().await;
    let mut body = gizmo("g1", 1);
    body["metadata"]["finalizers"] = json!(["conformance.example.com/hold"]);
    env.request("POST", GIZMOS, Some("application/json"), Some(body)).await;
    let kubeconfig = env.kubeconfig.clone();
    let home = env.dir.clone();
    let deleter = tokio::spawn(async move {
        tokio::process::Command::new(kubectl_path())
            .args(["delete", "gizmo", "g1", "--timeout=30s"])
            .env("HOME", home)
            .env("KUBECONFIG", kubeconfig)
            .kill_on_drop(true)
            .output()
            .await
            .expect("kubectl delete runs")
    });
    wait_for("deletion marked and kubectl watching", || async {
        let (_, obj, _) = env.request("GET", &format!("{GIZMOS}/g1"), None, None).await;
        obj["metadata"]["deletionTimestamp"].is_string()
            && env
                .emulator()
                .hooks()
                .count("watch", "conformance.example.com", "gizmos", "")
                >= 1
    })
    .await;
    assert!(!deleter.is_finished(), "kubectl delete waits for the finalizer");
    env.request(
        "PATCH",
        &format!("{GIZMOS}/g1"),
        Some("application/merge-patch+json"),
        Some(json!({"metadata":{"finalizers":null}})),
    )
    .await;
    let out = tokio::time::timeout(Duration::from_secs(40), deleter)
        .await
        .expect("delete returns")
        .expect("join");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("gizmo.conformance.example.com \"g1\" deleted"));
}

/// `get -w`: Table rows per watch event, column definitions only first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_watch_prints_rows_incrementally() {
    let env = with_crd_emulated().await;
    env.request("POST", GIZMOS, Some("application/json"), Some(gizmo("g1", 1)))
        .await;
    let mut child = tokio::process::Command::new(kubectl_path())
        .args(["get", "gizmos", "--watch"])
        .env("HOME", &env.dir)
        .env("KUBECONFIG", &env.kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("kubectl get --watch runs");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next_line = async || {
        tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("a line within 20s")
            .unwrap()
            .unwrap()
    };
    let header = next_line().await;
    assert!(header.starts_with("NAME"), "{header}");
    assert!(next_line().await.starts_with("g1 "));
    wait_for("kubectl is watching", || async {
        env.emulator()
            .hooks()
            .count("watch", "conformance.example.com", "gizmos", "")
            >= 1
    })
    .await;
    env.request("POST", GIZMOS, Some("application/json"), Some(gizmo("g2", 2)))
        .await;
    let row = next_line().await;
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[..2], &["g2", "2"], "{row}");
    child.kill().await.ok();
}

/// An object violating the schema is a 422 that kubectl renders as
/// `The Gizmo "bad" is invalid: ...`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_objects_are_rejected_with_kubectl_rendering() {
    let env = with_crd().await;
    let out = env
        .kubectl(&["apply", "-f", "-"], Some(&gizmo("bad", 11).to_string()))
        .await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("The Gizmo \"bad\" is invalid: spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"),
        "{stderr}"
    );
}

/// kubectl's typed clients send protobuf bodies for built-in kinds (`kubectl create secret|configmap|
/// namespace|serviceaccount|role|rolebinding`); the server decodes them like JSON ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_subcommands_send_protobuf_bodies() {
    let env = Env::start().await;
    env.kubectl_ok(&["create", "namespace", "team"], None).await;
    env.kubectl_ok(
        &[
            "create",
            "secret",
            "generic",
            "creds",
            "-n",
            "team",
            "--from-literal=password=s3cret",
        ],
        None,
    )
    .await;
    env.kubectl_ok(
        &[
            "create",
            "configmap",
            "settings",
            "-n",
            "team",
            "--from-literal=mode=fast",
        ],
        None,
    )
    .await;
    env.kubectl_ok(&["create", "serviceaccount", "bot", "-n", "team"], None)
        .await;
    env.kubectl_ok(
        &[
            "create",
            "role",
            "reader",
            "-n",
            "team",
            "--verb=get",
            "--resource=configmaps",
        ],
        None,
    )
    .await;
    env.kubectl_ok(
        &[
            "create",
            "rolebinding",
            "bot-reader",
            "-n",
            "team",
            "--role=reader",
            "--serviceaccount=team:bot",
        ],
        None,
    )
    .await;
    let (_, secret, _) = env
        .request("GET", "/api/v1/namespaces/team/secrets/creds", None, None)
        .await;
    assert_eq!(secret["data"]["password"], "czNjcmV0");
    assert_eq!(secret["type"], "Opaque");
    let (_, cm, _) = env
        .request("GET", "/api/v1/namespaces/team/configmaps/settings", None, None)
        .await;
    assert_eq!(cm["data"], json!({"mode":"fast"}));
    let (_, binding, _) = env
        .request(
            "GET",
            "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings/bot-reader",
            None,
            None,
        )
        .await;
    assert_eq!(
        binding["roleRef"],
        json!({"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"reader"})
    );
    assert_eq!(binding["subjects"][0]["kind"], "ServiceAccount");
    assert_eq!(binding["subjects"][0]["name"], "bot");
    assert_eq!(binding["subjects"][0]["namespace"], "team");
    let out = env.kubectl_ok(&["get", "secrets", "-n", "team"], None).await;
    assert!(
        out.lines().any(|l| l.starts_with("creds") && l.contains("Opaque")),
        "{out}"
    );
}
