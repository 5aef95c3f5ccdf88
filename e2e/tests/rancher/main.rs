//! The Rancher emulator and the operator's Rancher client, in one test binary.
//!
//! `conformance_*` pins the emulator to Rancher v3's wire behaviour (each test
//! cites the section it checks); `hooks` covers the test hooks; `client_*` drives the operator's client
//! (`controllers::rancher`) against the emulator.

mod support;

mod client_bindings;
mod client_projects;
mod client_resilience;
mod client_token;
mod conformance_bindings;
mod conformance_namespaces;
mod conformance_projects;
mod conformance_wire;
mod hooks;
