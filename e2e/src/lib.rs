#![warn(missing_docs)]
//! The end-to-end test harness and fixtures: a control plane per test (an API emulator, or a real cluster),
//! the real `manager` binary (or its image) run as the shipped ServiceAccount, kubectl as users run it, the real
//! systems the tests start (Keystone, Prometheus, a realm on the real Keycloak behind a fault proxy) and the
//! surroundings each controller expects. The emulators themselves are crates of their own beside this one
//! (`kube-emulator`, `rancher-emulator`, with `emulator-kit`); the story tests live in `tests/`.

pub mod fixtures;
pub mod harness;
pub mod keystone;
