//! The Keycloak emulator pinned to Keycloak's wire behaviour, and the shared Keycloak client driven against it
//! and against the real Keycloak.
//!
//! `conformance_*` modules check the emulator against Keycloak 26's admin API (each test
//! cites its section); `hooks` checks the test hooks; `client_*` modules exercise `controllers::keycloak`
//! end to end over HTTP. Every one of those starts its own in-process emulator, so no state leaks between tests.
//! `real` drives the client against the real Keycloak 26.5 of the run's substrate (`substrate run`), each test
//! in a realm of its own.

mod support;

mod client_auth;
mod client_clients;
mod client_groups;
mod client_resilience;
mod client_token_exchange;
mod client_users;
mod conformance_clients;
mod conformance_conventions;
mod conformance_fgap;
mod conformance_groups;
mod conformance_token;
mod conformance_users;
mod hooks;
mod real;
