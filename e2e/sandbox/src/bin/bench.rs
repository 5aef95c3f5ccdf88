//! `bench`: how the operator scales. For each workload and object count it starts a fresh sandbox running that
//! workload's controller (release build when run with `--release`), creates the objects, waits until all are
//! Ready, idles, and reports per object what it cost (see `sandbox::bench`). Prints a Markdown table, writes
//! JSON and an SVG of the scaling curves.
//!
//! `cargo run --release -p sandbox --bin bench -- --workload nebariapp --objects 1000,5000,10000`

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use sandbox::bench::{AddedLatency, BenchOptions, Workload, run};

/// The bench process hosts the API emulator and the stand-ins, two thirds of the machine's CPU during a run;
/// glibc's allocator was a quarter of that, and grew costlier per object as the emulator's heap grew.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Command-line flags.
#[derive(Debug, Parser)]
#[command(name = "bench", about = "Measure how the operator scales with the number of objects")]
struct Args {
    /// Workloads to run (comma-separated): nebariapp, nebariapp-auth, project, credential.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "nebariapp")]
    workload: Vec<Workload>,
    /// Object counts (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1000")]
    objects: Vec<usize>,
    /// How many times to run every size; the summary compares the medians (sizes alternate between rounds).
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// Seconds of the idle phase after convergence.
    #[arg(long, default_value_t = 30)]
    idle_seconds: u64,
    /// Seconds one size may take to converge.
    #[arg(long, default_value_t = 1800)]
    converge_seconds: u64,
    /// Creates in flight at once.
    #[arg(long, default_value_t = 32)]
    create_concurrency: usize,
    /// Milliseconds added to each of the manager's Kubernetes requests.
    #[arg(long, default_value_t = 0)]
    kube_latency_ms: u64,
    /// Milliseconds added to each Keycloak request.
    #[arg(long, default_value_t = 0)]
    keycloak_latency_ms: u64,
    /// Milliseconds added to each Rancher request.
    #[arg(long, default_value_t = 0)]
    rancher_latency_ms: u64,
    /// An extra flag for the manager (repeatable), e.g. `--manager-arg=--reconcile-debounce-ms=100`.
    #[arg(long = "manager-arg", allow_hyphen_values = true)]
    manager_args: Vec<String>,
    /// Directory for the sandboxes, the JSON report and the SVG.
    #[arg(long, default_value = "target/bench")]
    out_dir: PathBuf,
    /// The Kubernetes API the sandboxes run on.
    #[arg(long, value_enum, default_value_t)]
    control_plane: sandbox::api::ControlPlaneKind,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let out_dir = std::path::absolute(&args.out_dir).unwrap_or(args.out_dir.clone());
    let options = BenchOptions {
        workloads: args.workload,
        sizes: args.objects,
        rounds: args.rounds,
        idle: Duration::from_secs(args.idle_seconds),
        converge_within: Duration::from_secs(args.converge_seconds),
        create_concurrency: args.create_concurrency,
        latency: AddedLatency {
            kube_ms: args.kube_latency_ms,
            keycloak_ms: args.keycloak_latency_ms,
            rancher_ms: args.rancher_latency_ms,
        },
        manager_args: args.manager_args,
        work_dir: out_dir.join("runs"),
        repo_root: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."),
        control_plane: args.control_plane,
    };
    let report = match run(&options).await {
        Ok(report) => report,
        Err(error) => {
            eprintln!("bench: {error}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "\nmanager build: {}, extra flags: {:?}\n\n{}\nKubernetes requests per object:\n{}\nScaling (medians of {} round(s)):\n\n{}",
        report.profile,
        report.manager_args,
        report.table(),
        report.breakdown(),
        report.rounds,
        report.scaling_table()
    );
    let (json, svg) = (out_dir.join("report.json"), out_dir.join("scaling.svg"));
    if let Err(error) = report.write_json(&json).and_then(|()| report.draw(&svg)) {
        eprintln!("bench: writing the results: {error}");
        return ExitCode::FAILURE;
    }
    println!("results: {} and {}", json.display(), svg.display());
    ExitCode::SUCCESS
}
