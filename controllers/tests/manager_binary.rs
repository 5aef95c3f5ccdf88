//! The `manager` binary as an operator meets it: `--help` documents every flag with its environment variable,
//! `manager crds` prints every CRD as valid YAML, and `kubectl kustomize manifests/default` renders the install.

use std::process::Command;

use clap::CommandFactory;
use controllers::manager::cli::Cli;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

fn manager(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_manager"))
        .args(args)
        .output()
        .expect("run manager");
    assert!(
        output.status.success(),
        "manager {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

#[test]
fn help_documents_every_flag_with_its_environment_variable() {
    let help = manager(&["--help"]);
    let command = Cli::command();
    let mut flags = 0;
    for arg in command.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        if arg.is_hide_set() || long == "help" || long == "version" {
            continue;
        }
        flags += 1;
        assert!(help.contains(&format!("--{long}")), "--help does not mention --{long}");
        assert!(arg.get_help().is_some(), "--{long} has no description");
        let env = arg
            .get_env()
            .unwrap_or_else(|| panic!("--{long} has no environment variable"));
        assert!(
            help.contains(&format!("[env: {}=", env.to_string_lossy())),
            "--help does not show {env:?}"
        );
    }
    assert!(flags >= 30, "expected the flags of all controllers, found {flags}");
    for expected in [
        "--metrics-bind-address",
        "--leader-elect",
        "--watch-namespace",
        "--controllers",
        "--log-format",
    ] {
        assert!(help.contains(expected), "{expected} missing from --help");
    }
}

/// Text logs written to a file or a pipe carry no colour codes (they are for people reading `kubectl logs` or a
/// collector's view, where escape codes show as noise).
#[test]
fn text_logs_into_a_pipe_carry_no_colour_codes() {
    let output = Command::new(env!("CARGO_BIN_EXE_manager"))
        .args([
            "--log-format=text",
            "--log-level=no such level[",
            "--controllers=nebariapp",
        ])
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .expect("run manager");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("invalid --log-level") && stderr.contains("WARN"),
        "the warning is logged as text: {stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "escape codes in a piped log: {stderr:?}");
}

#[test]
fn crds_subcommand_prints_every_crd_as_valid_yaml() {
    let yaml = manager(&["crds"]);
    let documents: Vec<CustomResourceDefinition> =
        serde_saphyr::from_multiple(&yaml).expect("manager crds prints valid multi-document YAML");
    assert_eq!(
        documents,
        crds::all(),
        "manager crds prints exactly the operator's CRDs"
    );
    let names: Vec<String> = documents.iter().filter_map(|crd| crd.metadata.name.clone()).collect();
    for expected in [
        "nebariapps.reconcilers.nebari.dev",
        "keystoneapplicationcredentials.keystone.openstack.org",
        "managedrancherprojects.waldur.io",
        "rancherprojectinventories.waldur.io",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from manager crds"
        );
    }
}

#[test]
fn kustomize_default_renders_the_whole_install() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../manifests/default");
    let output = match Command::new("kubectl").args(["kustomize", dir]).output() {
        Ok(output) => output,
        Err(error) => panic!("kubectl is required ({error}); install kubectl 1.32 (it bundles kustomize)"),
    };
    assert!(
        output.status.success(),
        "kustomize failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let rendered = String::from_utf8(output.stdout).expect("UTF-8");
    let documents: Vec<serde_json::Value> = serde_saphyr::from_multiple(&rendered).expect("valid YAML");
    let kinds: Vec<(String, String)> = documents
        .iter()
        .map(|d| {
            (
                d["kind"].as_str().unwrap_or("").to_string(),
                d["metadata"]["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    for kind in [
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Deployment",
        "Service",
        "CustomResourceDefinition",
    ] {
        assert!(
            kinds.iter().any(|(k, _)| k == kind),
            "manifests/default renders no {kind}: {kinds:?}"
        );
    }
    // The default install applies on a cluster without the Prometheus Operator: its kinds come only with
    // the monitoring overlay.
    assert!(
        !documents.iter().any(|d| d["apiVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("monitoring.coreos.com/"))),
        "manifests/default renders a Prometheus Operator kind: {kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|(k, _)| k == "CustomResourceDefinition").count(),
        crds::all().len()
    );
    let deployment = documents
        .iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("deployment");
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
    let container = &pod["containers"][0]["securityContext"];
    assert_eq!(container["readOnlyRootFilesystem"], true);
    assert_eq!(container["allowPrivilegeEscalation"], false);
    assert_eq!(container["capabilities"]["drop"], serde_json::json!(["ALL"]));
    assert!(
        deployment.to_string().contains("platform-operator-system"),
        "the namespace is applied"
    );
}
