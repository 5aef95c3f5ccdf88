//! An in-memory Kubernetes API server that speaks the real wire protocol.
//!
//! Real clients (kubectl, the Python client, kube-rs and the `manager` binary) talk to it over HTTP, so
//! end-to-end tests exercise the operator exactly as a cluster would, on machines where no kube-apiserver
//! can run. Behaviour follows kube-apiserver 1.32; `docs/api-emulator.md` lists what is and is not emulated.
//!
//! Requests are authenticated by bearer token and authorized by RBAC like kube-apiserver's, so
//! the operator's shipped roles are what the tests run under.
//!
//! Start one with [`ApiServer::start`]; the [`ServerHandle`] gives its URL, writes a kubeconfig (a cluster
//! admin's), mints tokens for other users and exposes the test hooks (faults, request counters, the authorization
//! decision log). Everything else is internal: the crate's surface is what this page re-exports.

mod admission;
mod admission_policy;
mod auth;
mod builtin;
mod controllers;
mod convert;
mod crd;
mod discovery;
mod fields;
mod gc;
mod hooks;
mod http;
mod kubeconfig;
mod lifecycle;
mod meta;
mod namespaces;
mod openapi;
mod partial;
mod patch;
mod pod_security;
mod protobuf;
mod reads;
mod request;
mod request_log;
mod resources;
mod selectors;
mod server;
mod ssa;
mod status;
mod store;
mod strict;
mod table;
mod validation;
mod watch;
mod writes;

pub use auth::rbac::PolicyRule;
pub use auth::{
    ADMIN_TOKEN, Attributes, DecisionLog, DecisionLogFile, DecisionRow, ForbiddenResponse, ResourceAttributes,
};
pub use hooks::{Fault, ResponseForm};
pub use pod_security::restricted_violations;
pub use resources::GroupResource;
pub use server::{ApiServer, DECISION_LOG_DIR_ENV, ServerConfig, ServerHandle, StartError};
