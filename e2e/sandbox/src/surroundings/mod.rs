//! What each controller expects around it, made against a cluster: the shared Gateways, the opted-in namespace
//! and Services, a realm on a real Keycloak with its admin Secret (NebariApp); the Rancher emulator and another
//! realm with their credential Secrets (ManagedRancherProject). The sandbox prepares both; tests that apply the samples use
//! them too.

pub mod nebari;
pub mod rancher;
