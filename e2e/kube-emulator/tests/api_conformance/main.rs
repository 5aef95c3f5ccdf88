#![recursion_limit = "256"]
//! API conformance suite for the Kubernetes API emulator: real clients nobody here wrote (kubectl, the
//! Python `kubernetes` client, kube-rs) and raw HTTP drive an in-process emulator and assert what a real
//! kube-apiserver 1.32 does. Each test cites the reference section it checks
//! or the Kubernetes API conventions.

mod support;

mod authz;
mod http_semantics;
mod kube_rs;
mod kubectl;
mod python;
