//! What a pass found and made, gathered step by step for the status (`status::assemble`).

use std::collections::{BTreeMap, BTreeSet};

use crds::rancher::{PendingMember, RoleBindingStatus, SyncedMember};

use super::desired::BindingKey;
use crate::rancher::{Project, RoleBinding};

/// What the steps found and made.
#[derive(Default)]
pub struct Done {
    /// The Rancher project (step 1), when it exists.
    pub project: Option<Project>,
    /// The Keycloak side (steps 3 and 5).
    pub groups: GroupsDone,
    /// The Rancher bindings (step 4).
    pub bindings: BindingsDone,
    /// Entries of removed project bindings whose cleanup is unfinished (step 6), kept for the next pass.
    pub project_leftovers: Vec<RoleBindingStatus>,
    /// The same for cluster bindings.
    pub cluster_leftovers: Vec<RoleBindingStatus>,
}

/// The Keycloak side after steps 3 and 5.
#[derive(Default)]
pub struct GroupsDone {
    /// The parent's id, when the step ran and succeeded.
    pub parent_id: Option<String>,
    /// Whether the parent step ran (the id above is then authoritative).
    pub parent_known: bool,
    /// Group ids by name.
    pub ids: BTreeMap<String, String>,
    /// Membership by group name (absent when the group's sync failed: the previous report is kept).
    pub members: BTreeMap<String, Synced>,
    /// The realm, when Keycloak is configured.
    pub usable: bool,
    /// Groups created by this pass (they have no members to list yet).
    pub created: BTreeSet<String>,
    /// Groups a parent change replaced whose removal failed in this pass, by name: their ids stay recorded.
    pub replaced: BTreeMap<String, String>,
}

/// The Rancher binding side after step 4.
#[derive(Default)]
pub struct BindingsDone {
    /// Binding ids of the project's bindings, by key.
    pub project_ids: BTreeMap<BindingKey, String>,
    /// Binding ids of the cluster's bindings, by key.
    pub cluster_ids: BTreeMap<BindingKey, String>,
    /// The project's bindings as listed (for removals).
    pub project_listing: Option<Vec<RoleBinding>>,
    /// The cluster's bindings as listed (for removals).
    pub cluster_listing: Option<Vec<RoleBinding>>,
}

/// What a group's membership is after a sync.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Synced {
    /// Wanted members confirmed in the group, sorted by identifier.
    pub synced: Vec<SyncedMember>,
    /// Wanted members not in the group, with the reason, sorted by identifier.
    pub pending: Vec<PendingMember>,
    /// How many direct members the group has now.
    pub member_count: i64,
    /// Usernames added by this pass.
    pub added: Vec<String>,
    /// Usernames removed by this pass.
    pub removed: Vec<String>,
}
