//! Minimal types of third-party kinds the operator writes or reads.
//!
//! Only the fields we set or read are declared, every one optional and skipped when unset, so a server-side
//! apply claims exactly what we mean and nothing else (a `null` or default value would claim ownership). These
//! kinds' CRDs belong to their projects; `schema = "disabled"` keeps us from ever generating them.

pub mod cert_manager;
pub mod envoy_gateway;
