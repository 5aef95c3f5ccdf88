//! The one place controllers plug into the manager.
//!
//! Each controller contributes a [`ControllerEntry`]: its `--controllers` name and how its flags become its
//! settings. Adding a controller means adding one line to [`all`].

use framework::runner::{Running, Runtime, StartError};

use super::cli::Cli;

/// How to start one controller.
pub struct ControllerEntry {
    /// The name used in `--controllers`, metrics and field managers.
    pub name: &'static str,
    /// Maps the command line to the controller's settings and starts it with them.
    pub start: fn(&Runtime, &Cli) -> Result<Running, StartError>,
}

/// Every controller this manager can run.
pub fn all() -> Vec<ControllerEntry> {
    vec![
        ControllerEntry {
            name: crate::nebari_app::NAME,
            start: |runtime, cli| crate::nebari_app::start(runtime, cli.nebari_app.settings()),
        },
        ControllerEntry {
            name: crate::application_credential::NAME,
            start: |runtime, cli| {
                crate::application_credential::start(runtime, &cli.keystone_application_credential.settings())
            },
        },
        ControllerEntry {
            name: crate::rancher_project::NAME,
            start: |runtime, cli| {
                crate::rancher_project::start(runtime, cli.managed_rancher_project.project_settings())
            },
        },
        ControllerEntry {
            name: crate::rancher_inventory::NAME,
            start: |runtime, cli| {
                crate::rancher_inventory::start(runtime, cli.managed_rancher_project.inventory_settings())
            },
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
