//! The one place controllers plug into the manager.
//!
//! Each controller contributes a [`ControllerEntry`]: its `--controllers` name and how to start it from the
//! shared runtime and the parsed command line. Adding a controller means adding one line to [`all`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use framework::Reconciler;
use framework::backoff::BackoffPolicy;
use framework::runner::{self, RunSettings, Runtime};

use crate::cli::Cli;

/// A controller's future, running until the runtime's shutdown token is cancelled.
pub type Running = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Failure to start a controller (bad configuration).
#[derive(Debug, thiserror::Error)]
#[error("controller {controller}: {message}")]
pub struct StartError {
    /// Which controller.
    pub controller: &'static str,
    /// What is wrong, safe to print.
    pub message: String,
}

/// How to start one controller.
pub struct ControllerEntry {
    /// The name used in `--controllers`, metrics and field managers.
    pub name: &'static str,
    /// Builds the controller's future from the runtime and the command line.
    pub start: fn(&Runtime, &Cli) -> Result<Running, StartError>,
}

/// Runs `reconciler` with the manager's shared settings (concurrency, watched namespaces, backoff) under
/// `field_manager`: what every controller's `start` ends with.
pub fn running<R: Reconciler>(reconciler: R, runtime: &Runtime, cli: &Cli, field_manager: &str) -> Running {
    let settings = RunSettings {
        concurrency: cli.run.max_concurrent_reconciles,
        namespaces: cli.run.watch_namespaces.clone(),
        backoff: BackoffPolicy::default(),
        field_manager: field_manager.to_string(),
    };
    Box::pin(runner::run(Arc::new(reconciler), runtime.clone(), settings))
}

/// Every controller this manager can run.
pub fn all() -> Vec<ControllerEntry> {
    vec![
        ControllerEntry {
            name: crate::nebari_app::NAME,
            start: crate::nebari_app::start,
        },
        ControllerEntry {
            name: crate::application_credential::NAME,
            start: crate::application_credential::start,
        },
        ControllerEntry {
            name: crate::rancher_project::NAME,
            start: crate::rancher_project::start,
        },
        ControllerEntry {
            name: crate::rancher_inventory::NAME,
            start: crate::rancher_inventory::start,
        },
    ]
}

/// Failure to select controllers.
#[derive(Debug, thiserror::Error)]
#[error("unknown controller {name:?}; known controllers: {known}")]
pub struct SelectError {
    name: String,
    known: String,
}

/// The entries named by `--controllers` (`all` selects every controller).
pub fn select(names: &[String]) -> Result<Vec<ControllerEntry>, SelectError> {
    let entries = all();
    let wanted: Vec<String> = names
        .iter()
        .map(|n| n.trim().to_lowercase())
        .filter(|n| !n.is_empty())
        .collect();
    if wanted.is_empty() || wanted.iter().any(|n| n == "all") {
        return Ok(entries);
    }
    let known = entries.iter().map(|e| e.name).collect::<Vec<_>>().join(", ");
    if let Some(unknown) = wanted.iter().find(|n| !entries.iter().any(|e| e.name == n.as_str())) {
        return Err(SelectError {
            name: unknown.clone(),
            known,
        });
    }
    Ok(entries
        .into_iter()
        .filter(|e| wanted.iter().any(|n| n == e.name))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_selects_every_controller() {
        assert_eq!(select(&["all".into()]).expect("all").len(), all().len());
        assert_eq!(select(&[]).expect("empty").len(), all().len());
    }

    #[test]
    fn unknown_controllers_are_rejected_with_the_known_list() {
        let error = select(&["nope".into()]).err().expect("unknown name fails");
        assert!(error.to_string().contains("unknown controller \"nope\""));
    }
}
