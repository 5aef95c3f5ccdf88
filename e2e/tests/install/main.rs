//! The shipped install as a cluster admin installs it: `kubectl apply -k manifests/default` into the API
//! emulator (server dry-run first, strict validation, no warnings), its pod spec under Pod Security
//! `restricted`, and the overlays holding exactly their controllers' rules.

mod alerts;
mod overlays;

use e2e::fixtures::third_party_crds;
use e2e::harness::install::{rendered, repository_root};
use e2e::harness::{Deadline, OPERATOR_NAMESPACE, TestCluster, wait_until};
use serde_json::Value;

async fn kubectl(cluster: &TestCluster, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    let out = cluster.kubectl().run_with_stdin(args, stdin).await;
    (out.success, out.stdout, out.stderr)
}

#[tokio::test]
async fn kubectl_apply_k_of_the_default_install_succeeds_without_warnings_dry_run_first() {
    // A bare cluster: no Prometheus Operator, so none of its kinds may be in the default install.
    let cluster = TestCluster::start().await;
    let dir = repository_root().join("manifests/default");
    let dir = dir.to_string_lossy();
    // A server dry run persists nothing, so the objects inside the install's namespace can only be checked once
    // the namespace exists (a real kube-apiserver answers NotFound just the same): create it first.
    let (ok, _, err) = kubectl(
        &cluster,
        &["create", "namespace", OPERATOR_NAMESPACE, "--save-config"],
        None,
    )
    .await;
    assert!(ok, "{err}");
    let (ok, out, err) = kubectl(&cluster, &["apply", "-k", &dir, "--dry-run=server"], None).await;
    assert!(ok, "server dry-run failed:\n{out}\n{err}");
    assert!(!err.contains("Warning"), "the dry run warned:\n{err}");
    let (ok, out, err) = kubectl(&cluster, &["apply", "-k", &dir], None).await;
    assert!(ok, "apply failed:\n{out}\n{err}");
    assert!(!err.contains("Warning"), "the install warned:\n{err}");
    assert!(
        out.contains("deployment.apps/platform-operator-controller-manager created"),
        "{out}"
    );
    assert!(out.contains("namespace/platform-operator-system configured"), "{out}");
    // Applying again changes nothing and still warns about nothing.
    let (ok, out, err) = kubectl(&cluster, &["apply", "-k", &dir], None).await;
    assert!(ok && !err.contains("Warning"), "{out}\n{err}");
    assert!(
        out.lines().all(|l| l.ends_with("unchanged")),
        "a second apply is a no-op:\n{out}"
    );
    // The aggregated ClusterRole ends up with every controller's rules.
    wait_until("manager-role aggregated", Deadline::secs(10), || async {
        let (_, role, _) = kubectl(
            &cluster,
            &["get", "clusterrole", "platform-operator-manager-role", "-o", "json"],
            None,
        )
        .await;
        let role: Value = serde_json::from_str(&role).map_err(|e| e.to_string())?;
        let rules = role["rules"].as_array().map_or(0, Vec::len);
        Ok((rules > 10).then_some(()))
    })
    .await;
}

/// Where the Prometheus Operator runs, the monitoring overlay adds its ServiceMonitor, the alerts and the dashboard
/// to the default install.
#[tokio::test]
async fn the_monitoring_overlay_applies_where_the_prometheus_operator_runs() {
    let cluster = TestCluster::start().await;
    cluster.install_crds(&third_party_crds::prometheus_operator()).await;
    let dir = repository_root().join("manifests/overlays/monitoring");
    let dir = dir.to_string_lossy();
    let (ok, out, err) = kubectl(&cluster, &["apply", "-k", &dir], None).await;
    assert!(ok, "apply failed:\n{out}\n{err}");
    assert!(!err.contains("Warning"), "the install warned:\n{err}");
    for object in [
        "servicemonitor.monitoring.coreos.com/platform-operator-metrics created",
        "prometheusrule.monitoring.coreos.com/",
        "configmap/platform-operator-dashboard",
        "deployment.apps/platform-operator-controller-manager created",
    ] {
        assert!(out.contains(object), "{object} missing:\n{out}");
    }
    let kinds: Vec<String> = rendered("default")
        .iter()
        .map(|d| d["apiVersion"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        !kinds.iter().any(|v| v.starts_with("monitoring.coreos.com/")),
        "the default install holds a Prometheus Operator kind: {kinds:?}"
    );
}

#[tokio::test]
async fn the_operator_namespace_enforces_pod_security_restricted_and_the_manager_pod_meets_it() {
    let docs = rendered("default");
    let namespace = docs
        .iter()
        .find(|d| d["kind"] == "Namespace")
        .expect("the install has a Namespace");
    assert_eq!(namespace["metadata"]["name"], OPERATOR_NAMESPACE);
    assert_eq!(
        namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
        "restricted"
    );
    let deployment = docs
        .iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("the install has a Deployment");
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(
        kube_emulator::restricted_violations(pod, &deployment["spec"]["template"]["metadata"]),
        Vec::<String>::new()
    );

    // The same check runs in the API emulator: a pod template without hardening is admitted with upstream's
    // warning in that namespace (workloads warn; only Pods would be rejected).
    let cluster = TestCluster::start().await;
    cluster
        .create_namespace_named(
            OPERATOR_NAMESPACE,
            &[("pod-security.kubernetes.io/enforce", "restricted")],
        )
        .await;
    let bare = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: bare\n  namespace: {OPERATOR_NAMESPACE}\nspec:\n  selector:\n    matchLabels: {{app: bare}}\n  template:\n    metadata:\n      labels: {{app: bare}}\n    spec:\n      containers:\n        - name: app\n          image: busybox\n"
    );
    let (ok, out, err) = kubectl(&cluster, &["apply", "-f", "-"], Some(&bare)).await;
    assert!(ok, "{out}\n{err}");
    assert!(
        err.contains("Warning: would violate PodSecurity \"restricted:latest\": allowPrivilegeEscalation != false (container \"app\" must set securityContext.allowPrivilegeEscalation=false)"),
        "{err}"
    );
}

/// The shipped image (`e2e/image.sh`) runs the manager as user 65532 with the shipped ServiceAccount's token
/// against the API emulator until the NebariApp sample is Ready.
#[tokio::test]
async fn the_manager_image_runs_as_the_service_account_until_the_nebariapp_sample_is_ready() {
    use e2e::harness::{Launcher, ManagerOptions, ManagerProcess};
    use k8s_openapi::api::core::v1::Namespace;
    use kube::api::Api;

    let archive = image_archive();
    let cluster = TestCluster::start().await;
    let mut crds = crds::all();
    crds.extend(third_party_crds::for_nebari());
    cluster.install_crds(&crds).await;
    let keycloak = e2e::harness::keycloak::run_endpoint(e2e::harness::keycloak::Flavour::Default);
    let realm = e2e::harness::keycloak::unique_realm("nebari");
    let surroundings = sandbox::surroundings::nebari::prepare(&cluster.client(), keycloak, &realm)
        .await
        .expect("prepare the sample's surroundings");
    let _envoy_gateway = e2e::fixtures::envoy_gateway::EnvoyGateway::start(cluster.client());
    let mut args = vec!["--controllers=nebariapp".to_string()];
    args.extend(surroundings.manager_args());
    let manager = ManagerProcess::start(
        &cluster,
        ManagerOptions {
            args,
            launcher: Launcher::Image { archive },
            ..ManagerOptions::default()
        },
    )
    .await;
    let sample = repository_root().join("manifests/samples/reconcilers_v1_nebariapp.yaml");
    let (ok, out, err) = kubectl(
        &cluster,
        &["apply", "-n", "default", "-f", &sample.to_string_lossy()],
        None,
    )
    .await;
    assert!(ok, "{out}\n{err}");
    // The cert-manager stand-in issues the sample's Certificate and the Envoy Gateway stand-in accepts the
    // route, policy and listener; the app is then Ready.
    // The app's name has a `-`, so its gateway-namespace names carry a hash (naming.rs).
    let certificate = controllers::nebari_app::naming::AppNames::new("default", "nebariapp-sample").certificate();
    let certificate = certificate.as_str();
    wait_until("the sample's Certificate", Deadline::secs(60), || async {
        let found = e2e::fixtures::standins::issue_certificate(&cluster.client(), "envoy-gateway-system", certificate)
            .await
            .is_ok();
        Ok(found.then_some(()))
    })
    .await;
    wait_until("the NebariApp sample Ready", Deadline::secs(60), || async {
        let (_, out, _) = kubectl(
            &cluster,
            &["get", "nebariapp", "nebariapp-sample", "-n", "default", "-o", "json"],
            None,
        )
        .await;
        let app: Value = serde_json::from_str(&out).map_err(|e| e.to_string())?;
        let ready = app["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        if ready {
            Ok(Some(()))
        } else {
            Err(app["status"].to_string())
        }
    })
    .await;
    assert!(
        manager.log().contains("nebariapp"),
        "the log of the manager in the container is collected"
    );
    let namespaces: Api<Namespace> = Api::all(cluster.client());
    assert!(namespaces.get_opt(OPERATOR_NAMESPACE).await.expect("get").is_some());
    surroundings.stop().await;
}

/// The shipped image's manager is built without the test-only hooks: it refuses the flags the end-to-end tests
/// steer their (debug) manager with, while it accepts the same command line without them.
#[test]
fn the_shipped_manager_has_no_test_only_flags() {
    let archive = image_archive();
    let dir = tempfile::tempdir().expect("temporary directory");
    let help = e2e::harness::run_image_once(&archive, dir.path(), &["--help"]);
    assert!(
        help.status.success(),
        "the image's manager runs: {}",
        String::from_utf8_lossy(&help.stderr)
    );
    for flag in [
        "--appcred-test-clock-offset-seconds=60",
        "--nebari-test-health-check-address=127.0.0.1",
    ] {
        let refused = e2e::harness::run_image_once(&archive, dir.path(), &[flag, "--help"]);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        let name = flag.split('=').next().unwrap_or(flag);
        assert!(
            !refused.status.success() && stderr.contains(&format!("unexpected argument '{name}'")),
            "the shipped manager accepts the test-only {name}: {stderr}"
        );
    }
}

/// The OCI archive `e2e/image.sh` wrote (`E2E_IMAGE_ARCHIVE`, else its default place).
fn image_archive() -> std::path::PathBuf {
    std::env::var_os("E2E_IMAGE_ARCHIVE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| repository_root().join("target/image/platform-operator.tar"))
}

/// `kubectl explain` of every kind shows what the kind is, lists `apiVersion`, `kind` and `metadata` like a
/// built-in kind, and wraps descriptions at the terminal's width rather than the source's: inside a paragraph no
/// line ends early.
#[tokio::test]
async fn every_kind_reads_well_in_kubectl_explain() {
    let cluster = TestCluster::start().await;
    let crds = crds::all();
    cluster.install_crds(&crds).await;
    for crd in &crds {
        let kind = crd.spec.names.singular.clone().unwrap_or_default();
        // A real apiserver publishes a new kind's discovery and OpenAPI a moment after it is Established.
        let out = wait_until(&format!("kubectl explain {kind}"), Deadline::secs(30), || {
            let cluster = &cluster;
            let kind = kind.clone();
            async move {
                let (ok, out, err) = kubectl(cluster, &["explain", &kind], None).await;
                if ok { Ok(Some(out)) } else { Err(err) }
            }
        })
        .await;
        assert!(!out.contains("Auto-generated"), "{out}");
        let fields = section(&out, "FIELDS:");
        for field in ["apiVersion", "kind", "metadata", "spec", "status"] {
            assert!(
                fields
                    .lines()
                    .any(|l| l.trim_start().starts_with(&format!("{field}\t"))),
                "{kind} lists {field}:\n{out}"
            );
        }
        assert_no_early_breaks(&kind, &section(&out, "DESCRIPTION:"));
        let (ok, spec, err) = kubectl(&cluster, &["explain", &format!("{kind}.spec")], None).await;
        assert!(ok, "explain {kind}.spec: {err}");
        for (field, block) in field_blocks(&section(&spec, "FIELDS:")) {
            assert_no_early_breaks(&format!("{kind}.spec.{field}"), &block);
        }
    }
}

/// The lines of `output` after the `heading` line, up to the next heading.
fn section(output: &str, heading: &str) -> String {
    output
        .lines()
        .skip_while(|l| l.trim() != heading)
        .skip(1)
        .take_while(|l| !l.ends_with(':') || l.starts_with(' '))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The description of each field in a FIELDS section (field line, then its indented description).
fn field_blocks(fields: &str) -> Vec<(String, String)> {
    let mut blocks: Vec<(String, String)> = Vec::new();
    for line in fields.lines() {
        let indent = line.len() - line.trim_start().len();
        if indent <= 2 && !line.trim().is_empty() {
            let name = line.split_whitespace().next().unwrap_or_default().to_string();
            blocks.push((name, String::new()));
        } else if let Some((_, block)) = blocks.last_mut() {
            block.push_str(line);
            block.push('\n');
        }
    }
    blocks
}

/// kubectl wraps a paragraph at about 80 columns, so only its last line may be short: a short line followed by
/// more text of the same paragraph is a line break that came from the source.
fn assert_no_early_breaks(what: &str, text: &str) {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    for pair in lines.windows(2) {
        let (line, next) = (pair[0], pair[1]);
        let list_item = next.starts_with("- ") || next.starts_with("* ");
        if line.is_empty() || next.is_empty() || list_item {
            continue;
        }
        assert!(
            line.len() >= 45,
            "{what}: the line {line:?} ends early although its paragraph goes on ({next:?}):\n{text}"
        );
    }
}
