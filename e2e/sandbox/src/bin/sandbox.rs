//! `sandbox`: runs the operator with no cluster. Starts a Kubernetes API (a real control plane on loopback, or
//! the API emulator), the operator's surroundings and the `manager`, applies the samples, prints how to point kubectl at it, and stops everything on Ctrl-C or SIGTERM
//! (the manager is also told to stop if the sandbox is killed outright).
//!
//! For scripts: `sandbox --kubeconfig PATH` writes the kubeconfig there and prints a line starting with
//! `sandbox ready` once everything is up.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use sandbox::{Sandbox, SandboxOptions};
use tokio::signal::unix::{Signal, SignalKind, signal};

/// Run the platform operator with no cluster: on a real Kubernetes control plane on loopback, or the API emulator.
#[derive(Debug, Parser)]
#[command(name = "sandbox", version, about)]
struct Args {
    /// Where to write the kubeconfig for kubectl.
    #[arg(long, default_value = "target/sandbox/kubeconfig")]
    kubeconfig: PathBuf,
    /// The Kubernetes API to run on: a real kube-apiserver and kube-controller-manager (provisioned on first
    /// use), or the API emulator (ready at once, nothing to build).
    #[arg(long, value_enum, default_value_t)]
    control_plane: sandbox::api::ControlPlaneKind,
    /// Address of the API emulator (`--control-plane emulator`).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Directory for logs and state.
    #[arg(long, default_value = "target/sandbox")]
    work_dir: PathBuf,
    /// Log every request the API emulator answers (`--control-plane emulator`) (arrival, time taken, status, user, method, URI) to
    /// `api-requests.log` in the work directory.
    #[arg(long)]
    api_request_log: bool,
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Ctrl-C (SIGINT) and SIGTERM (what `kill`, systemd and container runtimes send): both stop the sandbox the
/// same clean way. Listened for from the start, so a signal that arrives while the sandbox starts (or right after
/// it printed that it is ready) is never missed; it is acted on once everything is up.
struct StopSignals {
    interrupt: Signal,
    terminate: Signal,
}

impl StopSignals {
    fn listen() -> std::io::Result<Self> {
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    async fn wait(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let mut stop = match StopSignals::listen() {
        Ok(stop) => stop,
        Err(error) => {
            eprintln!("sandbox: cannot listen for Ctrl-C and SIGTERM: {error}");
            return ExitCode::FAILURE;
        }
    };
    let kubeconfig = std::path::absolute(&args.kubeconfig).unwrap_or(args.kubeconfig.clone());
    let options = SandboxOptions {
        kubeconfig: kubeconfig.clone(),
        control_plane: args.control_plane,
        api_listen: args.listen,
        work_dir: std::path::absolute(&args.work_dir).unwrap_or(args.work_dir.clone()),
        repo_root: repo_root(),
        keystone_fault_proxy: false,
        manager_args: Vec::new(),
        apply_samples: true,
        api_request_log: args.api_request_log,
        keycloak: None,
    };
    println!(
        "starting the sandbox (a first run installs Keystone, which takes a minute; a Keycloak of its own starts in about as long)..."
    );
    let sandbox = match Sandbox::start(options).await {
        Ok(sandbox) => sandbox,
        Err(error) => {
            eprintln!("sandbox: {error}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "sandbox ready: API {} kubeconfig {}",
        sandbox.url(),
        sandbox.kubeconfig().display()
    );
    println!();
    println!("  export KUBECONFIG={}", sandbox.kubeconfig().display());
    println!("  kubectl get nebariapps,appcred,mrp,rpi -A");
    println!("  kubectl describe nebariapp nebariapp-sample");
    println!();
    println!(
        "manager log: {}    Ctrl-C (or SIGTERM) stops everything.",
        sandbox.manager_log().display()
    );
    stop.wait().await;
    println!("stopping...");
    let refusals = sandbox.manager_refusals();
    sandbox.stop().await;
    if refusals.is_empty() {
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "sandbox: the manager was answered Forbidden {} time(s) under the shipped RBAC (manifests/rbac):",
        refusals.len()
    );
    for refusal in refusals {
        eprintln!("  {refusal}");
    }
    ExitCode::FAILURE
}
