//! The README's "run it" command: `sandbox` starts everything, every sample becomes Ready, and Ctrl-C or SIGTERM
//! stops it cleanly; its manager and Keystone never outlive it, even when it is killed outright.

use std::process::Stdio;
use std::time::Duration;

use e2e::harness::{Deadline, wait_until};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use sandbox::api::ControlPlaneKind;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Every sample of `manifests/samples` (there is at least one of each kind) reports Ready=True in the sandbox.
/// A started sandbox: its process, and the scratch directory holding its kubeconfig and work directory.
struct Running {
    child: Child,
    dir: tempfile::TempDir,
}

/// Starts the `sandbox` binary and waits for its ready line.
async fn start_sandbox() -> Running {
    let dir = tempfile::tempdir().expect("scratch directory");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sandbox"))
        .arg("--kubeconfig")
        .arg(dir.path().join("kubeconfig"))
        .arg("--work-dir")
        .arg(dir.path().join("work"))
        .arg("--control-plane")
        .arg(ControlPlaneKind::of_test_run().flag())
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
    // Keep reading (and dropping) what it prints, so it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Running { child, dir }
}

fn pid_of(child: &Child) -> Pid {
    Pid::from_raw(i32::try_from(child.id().expect("pid")).expect("pid fits"))
}

/// `(pid, command name)` of every process descending from `root`, from `/proc`.
fn descendants(root: Pid) -> Vec<(Pid, String)> {
    let mut parents: Vec<(Pid, Pid, String)> = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("read /proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses, so split at the last `)`.
        let Some((head, tail)) = stat.rsplit_once(')') else {
            continue;
        };
        let comm = head.split_once('(').map_or("", |(_, c)| c).to_string();
        let ppid = tail.split_whitespace().nth(1).and_then(|p| p.parse::<i32>().ok());
        if let Some(ppid) = ppid {
            parents.push((Pid::from_raw(pid), Pid::from_raw(ppid), comm));
        }
    }
    let mut found = vec![root];
    let mut result = Vec::new();
    while let Some(parent) = found.pop() {
        for (pid, _, comm) in parents.iter().filter(|(_, ppid, _)| *ppid == parent) {
            found.push(*pid);
            result.push((*pid, comm.clone()));
        }
    }
    result
}

/// Whether `pid` still runs (a zombie waiting to be reaped does not).
fn running(pid: Pid) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .map(|(_, tail)| tail.trim_start().starts_with('Z'))
        })
        .is_some_and(|zombie| !zombie)
}

/// Waits until none of `processes` runs.
async fn wait_all_gone(what: &str, processes: &[(Pid, String)]) {
    wait_until(what, Deadline::secs(30), || async {
        let left: Vec<&(Pid, String)> = processes.iter().filter(|(pid, _)| running(*pid)).collect();
        if left.is_empty() {
            Ok(Some(()))
        } else {
            Err(format!("still running: {left:?}"))
        }
    })
    .await;
}

/// The sandbox's manager and Keystone, as processes.
fn children(sandbox: Pid) -> Vec<(Pid, String)> {
    let children = descendants(sandbox);
    assert!(
        children.iter().any(|(_, comm)| comm == "manager"),
        "the manager runs under the sandbox: {children:?}"
    );
    children
}

#[tokio::test]
async fn the_sandbox_runs_every_sample_to_ready_and_stops_on_ctrl_c() {
    let Running { child, dir } = start_sandbox().await;
    let kubeconfig = dir.path().join("kubeconfig");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("kubectl home");
    let kubectl = ControlPlaneKind::of_test_run()
        .kubectl(&kubeconfig, &home)
        .expect("kubectl for the sandbox");
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

    stops_cleanly_on(child, Signal::SIGINT).await;
}

/// Sends `signal` and checks that the sandbox exits cleanly, its children with it.
async fn stops_cleanly_on(mut child: Child, signal: Signal) {
    let pid = pid_of(&child);
    let children = children(pid);
    kill(pid, signal).expect("signal the sandbox");
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
        .await
        .expect("the sandbox stops within a minute")
        .expect("wait for the sandbox");
    assert!(status.success(), "the sandbox exits cleanly on {signal}: {status}");
    wait_all_gone("the manager and Keystone to stop with the sandbox", &children).await;
}

#[tokio::test]
async fn sigterm_stops_the_sandbox_as_ctrl_c_does() {
    let Running { child, dir: _dir } = start_sandbox().await;
    stops_cleanly_on(child, Signal::SIGTERM).await;
}

#[tokio::test]
async fn a_killed_sandbox_takes_its_manager_and_keystone_with_it() {
    let Running { mut child, dir: _dir } = start_sandbox().await;
    let pid = pid_of(&child);
    let children = children(pid);
    kill(pid, Signal::SIGKILL).expect("kill the sandbox");
    child.wait().await.expect("reap the sandbox");
    wait_all_gone(
        "the manager and Keystone to stop after the sandbox was killed",
        &children,
    )
    .await;
}
