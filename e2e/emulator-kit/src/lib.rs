#![warn(missing_docs)]
//! What the test emulators (Kubernetes API, Keycloak, Rancher) and their tests share: test certificate
//! authorities and HTTPS serving ([`tls`]), and waiting for a condition with a deadline ([`wait`]).

pub mod tls;
pub mod wait;
