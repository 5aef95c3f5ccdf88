#![warn(missing_docs)]
//! The end-to-end test substrate: a Kubernetes API emulator, emulators for Keycloak and Rancher,
//! fixtures for the real systems the tests start (Keystone, Prometheus, the `manager` binary),
//! and the `sandbox` that wires them together for people who want to try the operator without a cluster.

pub mod apiserver;
pub mod fixtures;
pub mod harness;
pub mod keycloak;
pub mod keystone;
pub mod rancher;
pub mod sandbox;
pub mod tls;
