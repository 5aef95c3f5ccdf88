//! `keycloak-emulator`: runs the in-memory Keycloak as a process, for people and for the sandbox. Prints one
//! ready line with the URL once it accepts connections, and runs until interrupted.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;
use keycloak_emulator::{EmulatorConfig, KeycloakEmulator, UserSeed};

/// Command-line flags.
#[derive(Debug, Parser)]
#[command(
    name = "keycloak-emulator",
    about = "An in-memory Keycloak (Admin REST API and token endpoint, Keycloak 24-26 wire behaviour)"
)]
struct Args {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Optional address of a listener serving only the test hooks (`/__emulator/…`), which stays up while the
    /// main listener is down.
    #[arg(long)]
    control_listen: Option<SocketAddr>,
    /// Realm to create besides `master` (repeatable; the first one receives `--user` seeds).
    #[arg(long = "realm", default_value = "nebari")]
    realms: Vec<String>,
    /// Username of the master realm administrator.
    #[arg(long, env = "KEYCLOAK_EMULATOR_ADMIN_USERNAME", default_value = "admin")]
    admin_username: String,
    /// Password of the master realm administrator.
    #[arg(
        long,
        env = "KEYCLOAK_EMULATOR_ADMIN_PASSWORD",
        default_value = "admin",
        hide_env_values = true
    )]
    admin_password: String,
    /// Path prefix of every Keycloak route (e.g. `/auth`).
    #[arg(long, default_value = "")]
    path_prefix: String,
    /// A user to create in the first realm, as `USERNAME[:PASSWORD[:EMAIL]]` (repeatable).
    #[arg(long = "user")]
    users: Vec<String>,
    /// Access-token lifetime in the master realm, in seconds.
    #[arg(long, default_value_t = 60)]
    master_token_lifespan_seconds: u64,
    /// Access-token lifetime in other realms, in seconds.
    #[arg(long, default_value_t = 300)]
    realm_token_lifespan_seconds: u64,
    /// Turn on fine-grained admin permissions v1 (legacy token exchange).
    #[arg(long)]
    fine_grained_authz_v1: bool,
}

fn user_seed(realm: &str, spec: &str) -> UserSeed {
    let mut parts = spec.splitn(3, ':');
    let mut seed = UserSeed::new(realm, parts.next().unwrap_or_default());
    if let Some(password) = parts.next().filter(|p| !p.is_empty()) {
        seed = seed.password(password);
    }
    if let Some(email) = parts.next().filter(|e| !e.is_empty()) {
        seed = seed.email(email);
    }
    seed
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let first_realm = args.realms.first().cloned().unwrap_or_else(|| "master".into());
    let config = EmulatorConfig {
        listen: args.listen,
        control_listen: args.control_listen,
        path_prefix: args.path_prefix,
        admin_username: args.admin_username,
        admin_password: args.admin_password,
        realms: args.realms,
        master_access_token_lifespan: Duration::from_secs(args.master_token_lifespan_seconds),
        realm_access_token_lifespan: Duration::from_secs(args.realm_token_lifespan_seconds),
        fine_grained_authz_v1: args.fine_grained_authz_v1,
        users: args.users.iter().map(|u| user_seed(&first_realm, u)).collect(),
        ..EmulatorConfig::default()
    };
    let emulator = KeycloakEmulator::start(config).await?;
    match emulator.control_url() {
        Some(control) => println!(
            "keycloak-emulator ready at {} (hooks also at {control})",
            emulator.url()
        ),
        None => println!("keycloak-emulator ready at {}", emulator.url()),
    }
    tokio::signal::ctrl_c().await?;
    emulator.shutdown().await;
    Ok(())
}
