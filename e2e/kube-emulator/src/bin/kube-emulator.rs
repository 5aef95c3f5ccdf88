//! `kube-emulator`: runs the Kubernetes API emulator as a process, for people and for tests that want a
//! separate server (e.g. the sandbox). Prints one ready line with the URL once it accepts connections.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use kube_emulator::{ApiServer, ServerConfig};

/// Command-line flags.
#[derive(Debug, Parser)]
#[command(
    name = "kube-emulator",
    about = "An in-memory Kubernetes API server (kube-apiserver 1.32 wire behaviour)"
)]
struct Args {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Where to write a kubeconfig pointing at the server.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// How many changes the watch history keeps.
    #[arg(long, default_value_t = 10_000)]
    history: usize,
    /// Seconds between watch bookmarks.
    #[arg(long, default_value_t = 60)]
    bookmark_seconds: u64,
    /// Write one line per request (arrival ms, time taken ms, status, user, method, URI) to this file.
    #[arg(long)]
    request_log: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let config = ServerConfig {
        listen: args.listen,
        history_capacity: args.history,
        bookmark_interval: Duration::from_secs(args.bookmark_seconds.max(1)),
        request_log: args.request_log,
    };
    let server = ApiServer::start(config).await?;
    if let Some(path) = &args.kubeconfig {
        server.write_kubeconfig(path)?;
    }
    println!("kube-emulator ready at {}", server.url());
    tokio::signal::ctrl_c().await?;
    server.shutdown().await;
    Ok(())
}
