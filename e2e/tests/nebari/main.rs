//! End-to-end tests of the NebariApp controller: the real `manager` process (`--controllers=nebariapp`) against
//! the API emulator with the Gateway API, SecurityPolicy and Certificate CRDs installed, and the Keycloak
//! emulator; the tests stand in for cert-manager and Envoy Gateway by setting their status. Every test has its
//! own cluster, Keycloak and manager, so they run in parallel. One module per user story.

mod support;

mod auth;
mod deletion;
mod gateway_status;
mod handback;
mod health;
mod isolation;
mod keycloak_resources;
mod namespaced;
mod opt_in;
mod original_env;
mod orphans;
mod private_ca;
mod public_routes;
mod rbac;
mod released_versions;
mod routing;
mod takeover_check;
mod tls;
mod validation;
