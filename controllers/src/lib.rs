#![warn(missing_docs)]
//! The operator's controllers, the clients of the external systems they talk to, and the `manager` that runs
//! them.
//!
//! Each controller lives in its own module and plugs into the manager through [`manager::registry`]. Clients of external
//! systems (Keycloak, Keystone, Rancher) are separate modules so controllers can share them.

pub mod application_credential;
pub mod keycloak;
pub mod keystone;
pub mod manager;
pub mod nebari_app;
pub mod orphan_policy;
pub mod rancher;
pub mod rancher_inventory;
pub mod rancher_project;
