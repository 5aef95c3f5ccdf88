//! The `manager` binary: runs the operator's controllers, or prints its CRDs (`manager crds`), hands objects
//! back to a replaced operator (`manager handback`) or checks a cut-over beforehand (`manager takeover-check`).

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
    if let Some(Command::Handback { original }) = cli.command {
        return handback(original);
    }
    if let Some(Command::TakeoverCheck) = cli.command {
        return takeover_check(&cli);
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

/// `manager handback <original>`: renames the finalizers and prints what it changed.
fn handback(original: controllers::manager::handback::Original) -> ExitCode {
    let Some(runtime) = one_shot_runtime() else {
        return ExitCode::FAILURE;
    };
    let result = runtime.block_on(async {
        let client = kube::Client::try_default().await.map_err(|e| e.to_string())?;
        controllers::manager::handback::handback(client, original)
            .await
            .map_err(|e| e.to_string())
    });
    match result {
        Ok(report) => {
            for object in &report.renamed {
                println!("handed back {object}");
            }
            println!("{} object(s) handed back", report.renamed.len());
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("manager handback: {error}");
            ExitCode::FAILURE
        }
    }
}

/// `manager takeover-check`: prints what the controllers would refuse; exit status 1 when something would be.
fn takeover_check(cli: &controllers::manager::cli::Cli) -> ExitCode {
    let Some(runtime) = one_shot_runtime() else {
        return ExitCode::FAILURE;
    };
    let result = runtime.block_on(async {
        let client = kube::Client::try_default().await.map_err(|e| e.to_string())?;
        controllers::manager::takeover_check::check(client, cli)
            .await
            .map_err(|e| e.to_string())
    });
    match result {
        Ok(findings) => {
            print!("{}", controllers::manager::takeover_check::render(&findings));
            if findings.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(error) => {
            eprintln!("manager takeover-check: {error}");
            ExitCode::from(2)
        }
    }
}

/// A single-threaded runtime for a subcommand that runs once; `None` (after saying why) when it cannot start.
fn one_shot_runtime() -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => Some(runtime),
        Err(error) => {
            eprintln!("manager: cannot start the async runtime: {error}");
            None
        }
    }
}
