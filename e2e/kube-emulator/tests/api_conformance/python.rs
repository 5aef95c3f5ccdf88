//! The official Python `kubernetes` client (37.x) against the emulator: scenarios in
//! `e2e/kube-emulator/tests/python/conformance.py`, each asserting kube-apiserver behaviour from the client's side.

use crate::support::{Env, python, python_scripts};

async fn run(env: &Env, scenario: &str) {
    let out = tokio::process::Command::new(python())
        .arg(python_scripts().join("conformance.py"))
        .arg(&env.kubeconfig)
        .arg(scenario)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), out)
        .await
        .expect("python finished in 60s")
        .expect("python runs");
    assert!(
        out.status.success(),
        "python scenario {scenario} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("{scenario} ok")));
}

/// Python sends bodies without Content-Type and DELETE without options; API
/// conventions (create/read/replace/list/delete, generation on spec change).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_crud() {
    let env = Env::start().await;
    env.install_gizmo_crd().await;
    run(&env, "crud").await;
}

/// Merge patch and JSON patch from the Python client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_patches() {
    let env = Env::start().await;
    env.install_gizmo_crd().await;
    run(&env, "patches").await;
}

/// Optimistic concurrency: stale resourceVersion → 409.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_conflict() {
    let env = Env::start().await;
    run(&env, "conflict").await;
}

/// Watch with a resourceVersion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_watch() {
    let env = Env::start().await;
    run(&env, "watch").await;
}

/// TokenRequest, a 403 Forbidden with kube-apiserver's text, and a SelfSubjectAccessReview, from the Python
/// client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_authz() {
    let env = Env::start().await;
    run(&env, "authz").await;
}
