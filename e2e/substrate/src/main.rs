//! Starts the real substrate (a Kubernetes control plane and Keycloak, as provisioned by
//! `e2e/substrate/provision.sh`) for a test run or a person, and stops it afterwards.
//!
//! `substrate run -- <command…>` starts everything, runs the command with `E2E_SUBSTRATE` naming the
//! description file the tests attach with, and exits with the command's status. `substrate up` starts it and
//! prints how to reach it until interrupted.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};
use substrate::{
    ControlPlane, KeycloakFlavour, Provisioned, RealKeycloak, RealNetworking, SUBSTRATE_ENV, Substrate, SubstrateError,
    client_for,
};

#[derive(Parser)]
#[command(about = "Run the real Kubernetes control plane and Keycloak for the end-to-end tests")]
struct Cli {
    #[command(subcommand)]
    command: Action,
}

#[derive(Subcommand)]
enum Action {
    /// Start the substrate, run a command with E2E_SUBSTRATE set, stop the substrate, exit with its status.
    Run {
        #[command(flatten)]
        options: Options,
        /// The command and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Start the substrate and keep it running until Ctrl-C, printing how to reach it.
    Up {
        #[command(flatten)]
        options: Options,
    },
}

#[derive(clap::Args)]
struct Options {
    /// Which Keycloaks to start beside the control plane.
    #[arg(long, value_enum, default_value_t = Keycloaks::Both)]
    keycloak: Keycloaks,
    /// Also start Envoy Gateway (which runs Envoy for each Gateway) and cert-manager on the control plane.
    #[arg(long)]
    networking: bool,
    /// Where state and logs go (default: a new directory under the system's temporary directory; kept when the
    /// command fails, removed when it succeeds).
    #[arg(long)]
    dir: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Keycloaks {
    /// No Keycloak.
    None,
    /// Only the default-features Keycloak.
    Default,
    /// Both the default and the v1 token-exchange Keycloak.
    Both,
}

/// Everything started, kept alive until dropped.
struct Running {
    // Declared first so it stops before the control plane it watches (fields drop in declaration order).
    networking: Option<RealNetworking>,
    control_plane: ControlPlane,
    keycloaks: Vec<RealKeycloak>,
    description: PathBuf,
}

async fn start(options: &Options, dir: &std::path::Path) -> Result<Running, SubstrateError> {
    let binaries = Provisioned::locate();
    let started = Instant::now();
    eprintln!(
        "[substrate] starting etcd, kube-apiserver, kube-controller-manager and Keycloak under {}",
        dir.display()
    );
    let flavours: &[KeycloakFlavour] = match options.keycloak {
        Keycloaks::None => &[],
        Keycloaks::Default => &[KeycloakFlavour::Default],
        Keycloaks::Both => &[KeycloakFlavour::Default, KeycloakFlavour::V1TokenExchange],
    };
    // The JVMs start while the control plane does; each is mostly waiting on its own CPU work.
    let keycloak_dir = dir.join("keycloak");
    let keycloaks = futures::future::try_join_all(
        flavours
            .iter()
            .map(|flavour| RealKeycloak::start(&binaries, *flavour, &keycloak_dir)),
    );
    let control_plane_dir = dir.join("control-plane");
    // Envoy Gateway and cert-manager need only the control plane: they start while the JVMs still do.
    let control_plane_and_networking = async {
        let control_plane = ControlPlane::start(&binaries, &control_plane_dir).await?;
        eprintln!(
            "[substrate] control plane ready in {:.1} s at {}",
            control_plane.startup().as_secs_f64(),
            control_plane.url()
        );
        if !options.networking {
            return Ok((control_plane, None));
        }
        let client = client_for(control_plane.admin_kubeconfig()).await?;
        let networking = RealNetworking::start(
            &binaries,
            control_plane.admin_kubeconfig(),
            &client,
            &dir.join("networking"),
        )
        .await?;
        eprintln!(
            "[substrate] Envoy Gateway and cert-manager ready at {:.1} s",
            started.elapsed().as_secs_f64()
        );
        Ok::<_, SubstrateError>((control_plane, Some(networking)))
    };
    let ((control_plane, networking), keycloaks) = futures::try_join!(control_plane_and_networking, keycloaks)?;
    for keycloak in &keycloaks {
        eprintln!(
            "[substrate] Keycloak ready in {:.1} s at {}",
            keycloak.startup().as_secs_f64(),
            keycloak.endpoint().url
        );
    }
    let endpoint = |i: usize| keycloaks.get(i).map(|k| k.endpoint().clone());
    let substrate = Substrate {
        admin_kubeconfig: control_plane.admin_kubeconfig().to_path_buf(),
        apiserver_url: control_plane.url().to_string(),
        etcd_url: control_plane.etcd_url().to_string(),
        ca_cert: control_plane.ca_cert().to_path_buf(),
        ca_key: control_plane.ca_key().to_path_buf(),
        audit_log: control_plane.audit_log().to_path_buf(),
        kubectl: binaries.kubectl()?,
        keycloak: endpoint(0),
        keycloak_v1: endpoint(1),
        networking: networking.as_ref().map(|n| n.endpoint().clone()),
    };
    let description = dir.join("substrate.json");
    substrate.write(&description)?;
    eprintln!(
        "[substrate] everything ready in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(Running {
        networking,
        control_plane,
        keycloaks,
        description,
    })
}

fn state_dir(options: &Options) -> Result<(PathBuf, bool), SubstrateError> {
    match &options.dir {
        Some(dir) => Ok((dir.clone(), false)),
        None => {
            let dir = tempfile::Builder::new()
                .prefix("platform-operator-substrate-")
                .tempdir()
                .map_err(|source| SubstrateError::Io {
                    what: "create a state directory".into(),
                    source,
                })?;
            Ok((dir.keep(), true))
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Action::Run { options, command } => {
            let (dir, temporary) = match state_dir(&options) {
                Ok(found) => found,
                Err(error) => return fail(&error),
            };
            let mut running = match start(&options, &dir).await {
                Ok(running) => running,
                Err(error) => return fail(&error),
            };
            let status = match tokio::process::Command::new(&command[0])
                .args(&command[1..])
                .env(SUBSTRATE_ENV, &running.description)
                .spawn()
            {
                Ok(mut child) => tokio::select! {
                    status = child.wait() => status,
                    signal = stop_signal() => {
                        // Stopped from outside (Ctrl-C, `timeout`, a CI cancel): the command goes first, then
                        // the components, so no Keycloak JVM outlives the run.
                        eprintln!("[substrate] {signal}: stopping {} and the components", command[0]);
                        let _ = child.kill().await;
                        drop(running);
                        return ExitCode::FAILURE;
                    }
                },
                Err(error) => Err(error),
            };
            let mut code = match status {
                Ok(status) if status.success() => ExitCode::SUCCESS,
                Ok(status) => {
                    eprintln!(
                        "[substrate] {} exited with {status}; logs kept in {}",
                        command[0],
                        dir.display()
                    );
                    ExitCode::FAILURE
                }
                Err(error) => {
                    eprintln!("[substrate] cannot run {}: {error}", command[0]);
                    ExitCode::FAILURE
                }
            };
            // A component that died during the run explains failures better than the tests can.
            let mut died = running.control_plane.check_running().err();
            for keycloak in &mut running.keycloaks {
                died = died.or(keycloak.check_running().err());
            }
            if let Some(networking) = &mut running.networking {
                died = died.or(networking.check_running().err());
            }
            if let Some(error) = died {
                eprintln!("[substrate] a component stopped during the run: {error}");
                code = ExitCode::FAILURE;
            }
            drop(running);
            if temporary && code == ExitCode::SUCCESS {
                let _ = std::fs::remove_dir_all(&dir);
            }
            code
        }
        Action::Up { options } => {
            let (dir, _) = match state_dir(&options) {
                Ok(found) => found,
                Err(error) => return fail(&error),
            };
            let running = match start(&options, &dir).await {
                Ok(running) => running,
                Err(error) => return fail(&error),
            };
            println!("export {SUBSTRATE_ENV}={}", running.description.display());
            println!(
                "export KUBECONFIG={}",
                running.control_plane.admin_kubeconfig().display()
            );
            eprintln!(
                "[substrate] running; Ctrl-C or SIGTERM stops it (state in {})",
                dir.display()
            );
            let signal = stop_signal().await;
            eprintln!("[substrate] {signal}: stopping the components");
            drop(running);
            ExitCode::SUCCESS
        }
    }
}

/// Resolves on SIGINT or SIGTERM with the signal's name. Without handling SIGTERM the process would end without
/// dropping the components: Keycloak's launcher script would die with us, but the JVM it started would not.
async fn stop_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut terminate) => tokio::select! {
            _ = tokio::signal::ctrl_c() => "SIGINT",
            _ = terminate.recv() => "SIGTERM",
        },
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            "SIGINT"
        }
    }
}

fn fail(error: &SubstrateError) -> ExitCode {
    eprintln!("[substrate] error: {error}");
    ExitCode::FAILURE
}
