//! What each controller expects around it, made against a cluster: the shared Gateways, the opted-in namespace
//! and Services, the Keycloak emulator with its admin Secret (NebariApp); the Rancher and Keycloak emulators with
//! their credential Secrets (ManagedRancherProject). The sandbox prepares both; tests that apply the samples use
//! them too.

pub mod nebari;
pub mod rancher;
