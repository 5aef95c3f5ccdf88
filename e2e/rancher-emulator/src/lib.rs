//! An in-memory Rancher v3 (norman) API server, for testing the ManagedRancherProject controller and its client
//! without a Rancher.
//!
//! It follows `keycloak-rancher-api.md` Parts B and C to the status code and body: token auth with the odd 401
//! body, the norman error shape with Kubernetes reasons as codes, collections with exact filters, markers and
//! sorting, projects with the admission-webhook checks on quotas, namespaces through both the norman cluster API
//! and the Kubernetes proxy, project and cluster role template bindings with a switchable duplicate policy.
//! `docs/rancher-emulator.md` lists what is and is not emulated.
//!
//! Start one with [`RancherEmulator::start`]; the [`RancherHandle`] gives its URL and token, seeds and inspects
//! state, counts requests and injects faults ([`Fault`]), in-process or over HTTP under `/__emulator/`.

mod auth;
mod bindings;
mod config;
mod hooks;
mod kube_proxy;
mod merge;
mod namespaces;
mod norman;
mod projects;
mod quantity;
mod request;
mod server;
mod store;

pub use config::{ApiToken, BackingNamespaceStyle, ClusterSeed, DuplicateBindingPolicy, RancherConfig};
pub use hooks::{CounterRow, Fault, RouteKey};
pub use server::{RancherEmulator, RancherHandle, StartError};
pub use store::{NamespaceSeed, ProjectSeed, RoleTemplateSeed};
