//! The Keycloak emulator pinned to Keycloak's wire behaviour, and the shared Keycloak client driven against it.
//!
//! `conformance_*` modules check the emulator against Keycloak 26's admin API (each test
//! cites its section); `hooks` checks the test hooks; `client_*` modules exercise `controllers::keycloak`
//! end to end over HTTP. Every test starts its own in-process emulator, so no state leaks between tests.

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
