//! End-to-end tests of the ManagedRancherProject and RancherProjectInventory controllers: the real `manager`
//! process (`--controllers=managedrancherproject,rancherprojectinventory`, a 2-second resync) against the control
//! plane, the Rancher emulator and a realm of its own on the run's real Keycloak (behind a fault proxy). Objects
//! are written the way the Waldur `rancher-kc-crd` plugin writes them. Every test has its own world, so they run in parallel. One module per
//! user story; test names state the expectation.

mod support;

mod admission;
mod adoption;
mod binding_removal;
mod crash_records;
mod creation;
mod deletion;
mod drift;
mod failover;
mod group_claims;
mod handback;
mod idempotence;
mod inventory;
mod membership;
mod namespaced;
mod original_env;
mod orphans;
mod outages;
mod policy;
mod private_ca;
mod quotas;
mod released_versions;
mod samples;
mod sharding;
mod shared_cluster_bindings;
mod status_conflict;
mod validation;
mod without_keycloak;
