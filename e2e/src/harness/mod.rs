//! Building blocks of the end-to-end tests: a control plane to test against, the real `manager` binary as a
//! child process, kubectl as a user would run it, waiting on conditions with deadlines, and reading what the
//! manager reports (its metrics, events, and the conditions of the objects it reconciles).
//!
//! By default a test gets an in-process API emulator of its own. Set `E2E_KUBECONFIG` to a kubeconfig to run the
//! same tests against a real cluster instead (tests that need the emulator's request counters or fault
//! injection then fail with a message saying so).

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
pub use manager::{Identity, Launcher, ManagerOptions, ManagerProcess, manager_binary, run_manager_command};
pub use wait::{Deadline, try_wait_until, wait_until};
