//! NebariApps served for real: the run's shared control plane with Envoy Gateway (which runs an Envoy on this
//! machine for each Gateway) and cert-manager started beside it (`substrate run --networking`), the real `manager`
//! running the NebariApp controller under its shipped RBAC, and a client that reaches the app's backend through
//! Envoy. Nothing here plays a component: every status is the real one's verdict.
//!
//! The Envoys bind the Gateways' ports (80, 443) on all of the machine's addresses, so these tests take turns
//! (`.config/nextest.toml` runs this binary one test at a time) and each waits until its Envoys are gone.

mod support;

mod auth;
mod isolation;
mod lifecycle;
mod refused_policy;
mod tls;
mod token_exchange;
