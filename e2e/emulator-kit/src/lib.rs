#![warn(missing_docs)]
//! What the test emulators (Kubernetes API, Keycloak, Rancher) share: test certificate authorities and HTTPS
//! serving ([`tls`]).

pub mod tls;
