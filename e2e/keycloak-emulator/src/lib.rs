//! An in-memory Keycloak for tests and the sandbox: the Admin REST API and token endpoint of Keycloak 24–26 as
//! far as the operator's controllers use them, following Keycloak 26's admin REST API to
//! the status code and body (`docs/keycloak-emulator.md` lists what is and is not emulated).
//!
//! Start one with [`KeycloakEmulator::start`]; the [`EmulatorHandle`] gives its URL and the [`Hooks`]: request
//! counters, fault injection (latency, error status, dropped connection), a down switch (connection refused or
//! 503), an adjustable clock for token expiry, the fine-grained-permissions switch, seeding and inspection.
//! The same hooks answer over HTTP under `/__emulator/` (listed in `control.rs` and `docs/keycloak-emulator.md`).

mod app;
mod auth;
mod client_scopes;
mod clients;
mod clock;
mod config;
mod control;
mod fgap;
mod groups;
mod hooks;
mod ids;
mod model;
mod realm;
mod realms;
mod representations;
mod server;
mod server_info;
mod signing;
mod store;
mod token;
mod users;
mod wire;

pub use config::{ClientSeed, EmulatorConfig, GroupSeed, UserSeed};
pub use hooks::{CounterRow, DownMode, Fault, GroupNode, Hooks, SeedError};
pub use server::{EmulatorHandle, KeycloakEmulator, StartError};
