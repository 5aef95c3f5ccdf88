//! `rancher-emulator`: runs the Rancher v3 emulator as a process, for the sandbox and for people trying the
//! operator without a Rancher. Prints one ready line with the URL once it accepts connections.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use rancher_emulator::{ApiToken, ClusterSeed, DuplicateBindingPolicy, RancherConfig, RancherEmulator};

/// Which Rancher release to behave like where releases differ.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum DuplicateBindings {
    /// Rancher ≤ 2.13: duplicate role template bindings are created.
    Accept,
    /// Rancher ≥ 2.14: duplicate role template bindings are refused with 409.
    Reject,
}

/// Command-line flags.
#[derive(Debug, Parser)]
#[command(name = "rancher-emulator", about = "An in-memory Rancher v3 (norman) API server")]
struct Args {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Cluster ids to create, each with Default and System projects (repeatable).
    #[arg(long = "cluster", default_value = "local")]
    clusters: Vec<String>,
    /// The API token to accept, `token-xxxxx:secret`; a random one when absent.
    #[arg(long, env = "RANCHER_EMULATOR_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Write the bearer token to this file instead of printing it.
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// How duplicate role template bindings are treated.
    #[arg(long, value_enum, default_value = "accept")]
    duplicate_bindings: DuplicateBindings,
    /// Milliseconds a deleted project stays visible as `removing`.
    #[arg(long, default_value_t = 200)]
    removal_delay_ms: u64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let token = match &args.token {
        Some(pair) => {
            let (access_key, secret) = pair
                .split_once(':')
                .ok_or("--token must look like token-xxxxx:secret")?;
            ApiToken {
                access_key: access_key.to_string(),
                secret: secret.to_string(),
                user_id: "user-admin".into(),
            }
        }
        None => ApiToken::random("user-admin"),
    };
    let config = RancherConfig {
        listen: args.listen,
        clusters: args.clusters.iter().map(|id| ClusterSeed::new(id)).collect(),
        tokens: vec![token.clone()],
        duplicate_bindings: match args.duplicate_bindings {
            DuplicateBindings::Accept => DuplicateBindingPolicy::Accept,
            DuplicateBindings::Reject => DuplicateBindingPolicy::Reject,
        },
        project_removal_delay: Duration::from_millis(args.removal_delay_ms),
        ..RancherConfig::default()
    };
    let emulator = RancherEmulator::start(config).await?;
    match &args.token_file {
        Some(path) => std::fs::write(path, token.bearer())?,
        None if args.token.is_none() => println!("rancher-emulator token {}", token.bearer()),
        None => {}
    }
    println!(
        "rancher-emulator ready at {} (access key {})",
        emulator.url(),
        token.access_key
    );
    tokio::signal::ctrl_c().await?;
    emulator.shutdown().await;
    Ok(())
}
