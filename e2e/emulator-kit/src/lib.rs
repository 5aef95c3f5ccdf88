#![warn(missing_docs)]
//! What the test emulators (Kubernetes API, Keycloak, Rancher) and their tests share: test certificate
//! authorities and HTTPS serving ([`tls`]), waiting for a condition with a deadline ([`wait`]), and the seeded
//! share of requests a fault rule applies to ([`chance`]).

pub mod chance;
pub mod tls;
pub mod wait;
