//! The shared Keycloak client (`controllers::keycloak`) driven against the real Keycloak 26 of the run's
//! substrate (`substrate run --keycloak both`), and the few wire behaviours of Keycloak the client relies on.
//!
//! Every test works in a realm of its own (`e2e::harness::keycloak::TestRealm`), so tests share the server
//! without seeing each other. `client_*` modules exercise the client end to end through the harness's fault
//! proxy, which counts the requests and injects failures in front of the real server; v1 features (legacy token
//! exchange, fine-grained admin permissions v1) are checked on the run's second Keycloak, which has them on.
//! `wire` checks Keycloak's own answers the client depends on (409 on duplicates, 401 for a token it no longer
//! accepts, the token endpoint's refusals, 404s, the group-name limit), so a Keycloak upgrade that changes them
//! is noticed.

mod support;

mod client_auth;
mod client_clients;
mod client_groups;
mod client_resilience;
mod client_token_exchange;
mod client_users;
mod wire;
