//! The `manager` binary: runs the operator's controllers, or prints its CRDs (`manager crds`).

use std::process::ExitCode;

use clap::Parser;
use controllers::manager::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
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
