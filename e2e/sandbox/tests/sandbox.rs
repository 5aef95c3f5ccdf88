//! The README's "run it" command: `sandbox` starts everything, every sample becomes Ready, and Ctrl-C stops it
//! cleanly.

use std::process::Stdio;
use std::time::Duration;

use e2e::harness::{Deadline, Kubectl, wait_until};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

/// Every sample of `manifests/samples` (there is at least one of each kind) reports Ready=True in the sandbox.
#[tokio::test]
async fn the_sandbox_runs_every_sample_to_ready_and_stops_on_ctrl_c() {
    let dir = tempfile::tempdir().expect("scratch directory");
    let kubeconfig = dir.path().join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sandbox"))
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--work-dir")
        .arg(dir.path().join("work"))
        // The manager binary beside the sandbox is current (cargo built the workspace): no nested cargo build.
        .env_remove("CARGO")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("start the sandbox");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let ready = tokio::time::timeout(Duration::from_secs(300), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.starts_with("sandbox ready") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(ready, Ok(true), "the sandbox never printed its ready line");

    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("kubectl home");
    let kubectl = Kubectl::new(&kubeconfig, &home);
    for kind in [
        "nebariapps",
        "keystoneapplicationcredentials",
        "managedrancherprojects",
        "rancherprojectinventories",
    ] {
        let kubectl = kubectl.clone();
        wait_until(&format!("every {kind} sample to be Ready"), Deadline::secs(120), || {
            let kubectl = kubectl.clone();
            async move {
                let out = kubectl.run(&["get", kind, "-A", "-o", "json"]).await;
                if !out.success {
                    return Err(out.stderr);
                }
                let list: serde_json::Value = serde_json::from_str(&out.stdout).map_err(|e| e.to_string())?;
                let items = list["items"].as_array().cloned().unwrap_or_default();
                if items.is_empty() {
                    return Err(format!("no {kind} at all: every kind has samples in manifests/samples"));
                }
                let not_ready: Vec<String> = items
                    .iter()
                    .filter(|item| {
                        !item["status"]["conditions"]
                            .as_array()
                            .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
                    })
                    .map(|item| format!("{}/{}", item["metadata"]["namespace"], item["metadata"]["name"]))
                    .collect();
                if not_ready.is_empty() {
                    Ok(Some(()))
                } else {
                    Err(format!("not Ready: {not_ready:?}"))
                }
            }
        })
        .await;
    }

    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id().expect("pid")).expect("pid fits"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("send Ctrl-C");
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
        .await
        .expect("the sandbox stops within a minute of Ctrl-C")
        .expect("wait for the sandbox");
    assert!(status.success(), "the sandbox exits cleanly on Ctrl-C: {status}");
}
