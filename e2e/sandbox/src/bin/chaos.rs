//! `chaos`: the chaos run at full size (see `sandbox::chaos`). Prints the report as a table, writes it as JSON,
//! and exits non-zero when a check failed. Rerun a failure with the seed it printed.
//!
//! `cargo run --release -p sandbox --bin chaos -- --objects 300 --kills 10 --seed 7`

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use sandbox::chaos::{ChaosOptions, run};

/// Run the operator through faults, crashes, cut watches and compaction, then audit what it left.
#[derive(Debug, Parser)]
#[command(name = "chaos", version, about)]
struct Args {
    /// Seed of every random choice (default: from the clock, printed).
    #[arg(long)]
    seed: Option<u64>,
    /// Objects to create (40 % NebariApps, 35 % ManagedRancherProjects, 25 % application credentials).
    #[arg(long, default_value_t = 300)]
    objects: usize,
    /// Times to SIGKILL the manager during the faulty phase.
    #[arg(long, default_value_t = 10)]
    kills: u32,
    /// Percent of the operator's requests each backend fails while faults are on.
    #[arg(long, default_value_t = 20)]
    fault_percent: u8,
    /// Seconds the faulty phase lasts.
    #[arg(long, default_value_t = 180)]
    fault_seconds: u64,
    /// Seconds between cuts of every watch stream.
    #[arg(long, default_value_t = 5)]
    watch_cut_seconds: u64,
    /// Seconds between compactions of the watch history.
    #[arg(long, default_value_t = 20)]
    compact_seconds: u64,
    /// Seconds the operator may take to converge once faults are off (and to finish deleting).
    #[arg(long, default_value_t = 600)]
    converge_seconds: u64,
    /// Directory for the sandbox's state and logs.
    #[arg(long, default_value = "target/chaos")]
    work_dir: PathBuf,
    /// Where to write the report as JSON.
    #[arg(long, default_value = "target/chaos/report.json")]
    json: PathBuf,
    /// The Kubernetes API to run on.
    #[arg(long, value_enum, default_value_t)]
    control_plane: sandbox::api::ControlPlaneKind,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(1)
    });
    println!("chaos run with seed {seed} (rerun with --seed {seed})");
    let work_dir = std::path::absolute(&args.work_dir).unwrap_or(args.work_dir.clone());
    let _ = std::fs::remove_dir_all(&work_dir);
    let options = ChaosOptions {
        seed,
        objects: args.objects,
        kills: args.kills,
        fault_percent: args.fault_percent,
        fault_phase: Duration::from_secs(args.fault_seconds),
        watch_cut_every: Duration::from_secs(args.watch_cut_seconds.max(1)),
        compact_every: Duration::from_secs(args.compact_seconds.max(1)),
        converge_within: Duration::from_secs(args.converge_seconds),
        work_dir,
        repo_root: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."),
        control_plane: args.control_plane,
    };
    let report = match run(options).await {
        Ok(report) => report,
        Err(error) => {
            eprintln!("chaos: the run could not be carried out: {error}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", report.table());
    if let Some(dir) = args.json.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    match serde_json::to_string_pretty(&report) {
        Ok(json) => match std::fs::write(&args.json, json) {
            Ok(()) => println!("report written to {}", args.json.display()),
            Err(error) => eprintln!("chaos: cannot write {}: {error}", args.json.display()),
        },
        Err(error) => eprintln!("chaos: cannot render the report: {error}"),
    }
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        eprintln!("chaos: checks failed (seed {seed})");
        ExitCode::FAILURE
    }
}
