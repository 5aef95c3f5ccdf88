//! An in-memory Kubernetes API server that speaks the real wire protocol.
//!
//! Real clients (kubectl, the Python client, kube-rs and the `manager` binary) talk to it over HTTP, so
//! end-to-end tests exercise the operator exactly as a cluster would, on machines where no kube-apiserver
//! can run. Behaviour follows kube-apiserver 1.32; `docs/api-emulator.md` lists what is and is not emulated.
//!
//! Requests are authenticated by bearer token and authorized by RBAC like kube-apiserver's ([`auth`]), so
//! the operator's shipped roles are what the tests run under.
//!
//! Start one with [`ApiServer::start`]; the [`ServerHandle`] gives its URL, writes a kubeconfig (a cluster
//! admin's), mints tokens for other users and exposes the test hooks ([`hooks`]).

pub mod admission;
pub mod auth;
pub mod builtin;
pub mod controllers;
pub mod convert;
pub mod crd;
pub mod discovery;
pub mod fields;
pub mod gc;
pub mod hooks;
pub mod http;
pub mod kubeconfig;
pub mod lifecycle;
pub mod meta;
pub mod namespaces;
pub mod openapi;
pub mod partial;
pub mod patch;
pub mod pod_security;
pub mod protobuf;
pub mod reads;
pub mod request;
pub mod resources;
pub mod selectors;
pub mod server;
pub mod ssa;
pub mod status;
pub mod store;
pub mod strict;
pub mod table;
pub mod validation;
pub mod watch;
pub mod writes;

pub use hooks::Fault;
pub use resources::GroupResource;
pub use server::{ApiServer, ServerConfig, ServerHandle, StartError};
