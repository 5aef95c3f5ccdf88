#![warn(missing_docs)]
//! The generic reconcile framework every controller of this operator runs on.
//!
//! It holds mechanisms, never policy: how to run a reconciler ([`runner`]), guard external cleanup
//! ([`finalizer`]), keep conditions ([`conditions`]) and publish status one way ([`status`]), re-read what the
//! cache may not show yet ([`live`], [`own_writes`]), read Secrets at use time ([`secrets`]), apply and prune children
//! ([`children`], found without lists through [`child_cache`]), publish events without repeats ([`events`]),
//! derive valid names ([`names`]), call external systems safely ([`http`], [`sanitize`]), watch related kinds by
//! metadata only ([`metadata`]), look objects up by a derived key ([`index`]), and expose metrics (objects counted
//! by readiness as the watch goes, [`ready_tally`]), probes and leader election ([`metrics`], [`admin`],
//! [`leader`]). It knows no CRD of ours.

pub mod access;
pub mod admin;
pub mod backoff;
pub mod changes;
pub mod child_cache;
pub mod children;
pub mod clock;
pub mod conditions;
pub mod error;
pub mod events;
pub mod finalizer;
pub mod http;
pub mod index;
pub mod kube_client;
pub mod leader;
pub mod live;
pub mod metadata;
pub mod metrics;
pub mod names;
pub mod namespaces;
pub mod object_cache;
pub mod orphans;
pub mod own_writes;
pub mod peers;
#[cfg(target_os = "linux")]
pub mod process_metrics;
pub mod queue;
pub mod ready_tally;
pub mod runner;
pub mod sanitize;
pub mod secrets;
pub mod shard;
pub mod shutdown;
pub mod status;
pub mod triggers;
pub mod trust;

pub use error::{ErrorCategory, ReconcileError};
pub use runner::{Context, Outcome, Reconciler};
