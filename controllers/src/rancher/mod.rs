//! A client of Rancher's v3 (norman) management API, for the ManagedRancherProject controller.
//!
//! It finds, creates, updates and deletes projects (display names are not unique in Rancher, so lookups return
//! every match), manages project and cluster role template bindings under both duplicate policies (Rancher ≤
//! 2.13 accepts duplicates, ≥ 2.14 answers 409), and lists namespaces for the inventory. Updates are written for
//! norman's merge semantics (quota keys to drop are sent as `null`). The API token comes from a
//! [`TokenProvider`] on each request, normally a Secret read at use time. Every request goes through
//! [`framework::http::ExternalApi`] (timeouts, retries of idempotent calls on transient failures,
//! `external_api_*` metrics) and every failure is a [`RancherError`] with a category and a message safe for
//! conditions.
//!
//! The controller never builds a URL: paths live here.

pub mod client;
pub mod connection;
pub mod error;
pub mod token;
pub mod wire;

pub use client::{Deletion, RancherClient};
pub use connection::RancherConnection;
pub use error::{ErrorKind, RancherError};
pub use token::{SecretToken, StaticToken, TokenProvider};
pub use wire::{
    BindingTarget, Cluster, Namespace, NewProject, Project, ProjectQuotas, ProjectUpdate, QuotaSpec, RoleBinding,
    Subject,
};

/// The label value of this system in metrics and messages.
pub const API_NAME: &str = "rancher";
