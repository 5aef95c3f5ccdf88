//! Building blocks of the end-to-end tests: a control plane to test against, the real `manager` binary as a
//! child process, kubectl as a user would run it, waiting on conditions with deadlines, and reading what the
//! manager reports (its metrics, events, and the conditions of the objects it reconciles).
//!
//! A test gets the control plane the run asks for: a real one of its own on the run's substrate
//! (`E2E_CONTROL_PLANE=real`, as `e2e/test.sh` runs them), an in-process API emulator, or the cluster in
//! `E2E_KUBECONFIG`. Faults and request counts come from proxies in front of the real components
//! ([`fault_proxy`], [`api_proxy`]), so the same test runs on each.

pub mod api_proxy;
pub mod browser;
pub mod cluster;
pub mod conditions;
pub mod events;
pub mod fault_proxy;
pub mod install;
pub mod keycloak;
pub mod kubectl;
pub mod manager;
pub mod metrics;
pub mod secret_hygiene;
pub mod wait;

pub use cluster::{RequestCount, TestCluster, counts_since};
pub use install::{OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT, OperatorIdentity};
pub use kubectl::Kubectl;
pub use manager::{
    Identity, Launcher, ManagerOptions, ManagerProcess, manager_binary, run_image_once, run_manager_command,
    run_manager_command_status,
};
pub use wait::{Deadline, try_wait_until, wait_until};
