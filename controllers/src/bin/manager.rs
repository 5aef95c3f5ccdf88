//! The `manager` binary: runs the operator's controllers, or prints its CRDs (`manager crds`).

use std::process::ExitCode;

use controllers::manager::cli::Command;
use controllers::manager::legacy_env;

fn main() -> ExitCode {
    let parsed = match legacy_env::parse(std::env::args_os(), &|name| std::env::var(name).ok()) {
        Ok(parsed) => parsed,
        Err(legacy_env::LegacyEnvError::Clap(error)) => error.exit(),
        Err(error) => {
            eprintln!("manager: {error}");
            return ExitCode::FAILURE;
        }
    };
    let cli = parsed.cli;
    if let Some(Command::Crds) = cli.command {
        return match crds::to_yaml(&crds::all()) {
            Ok(yaml) => {
                print!("{yaml}");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("manager: {error}");
                ExitCode::FAILURE
            }
        };
    }
    controllers::manager::logging::init(cli.run.log_format, &cli.run.log_level);
    for deprecation in &parsed.deprecations {
        tracing::warn!("{deprecation}");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("manager: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(controllers::manager::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(%error, "manager failed");
            ExitCode::FAILURE
        }
    }
}
