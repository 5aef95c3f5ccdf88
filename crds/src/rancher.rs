//! `waldur.io/v1alpha1` ManagedRancherProject (`mrp`) and RancherProjectInventory (`rpi`).
//!
//! These are drop-in replacements for the CRDs of the Python `rancher-keycloak-operator`: every field path that
//! any published version of the original accepted (0.0.3 through 0.4.x) is accepted here, so CRs written by the
//! Waldur site-agent `rancher-kc-crd` plugin and by hand apply unchanged. Deliberate differences:
//!
//! - Identifiers that must exist are non-empty (`projectName`, `clusterId`, `groupName`, `rancherRole`,
//!   `userIdentifier`), Keycloak group names are at most 255 characters (Keycloak answers HTTP 500 above that),
//!   and `clusterId` cannot change once the Rancher project exists (a project cannot move between clusters).
//! - `roleBindings` lists hold at most 64 entries, so the cross-field CEL rules stay within the API server's
//!   cost budget; `scanIntervalSeconds` is at least 10.
//! - String fields the original defaulted to `""` have no server-side default: absent means empty.
//! - `resourceQuotas` values are int-or-string (the plugin sends integers for `cpu` and `gpu`); a Waldur key and
//!   the raw ResourceQuota key it translates to (`cpu` and `limits.cpu`, say) cannot both be set.
//! - `status.keycloakRoleBindings[].syncedMembers` entries are objects `{userIdentifier, keycloakUserId}`; the
//!   bare Keycloak user ids the 0.0.3 operator stored are still read.
//! - `spec.namespace` is accepted but ignored, as in the original from 0.3.0 on.
//! - `spec.adoptExistingProject` is new: a Rancher project with the wanted name that carries no ownership
//!   annotation is taken over only when it is set (the original adopted any project with the name).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

/// The longest Keycloak group name: Keycloak stores names in `varchar(255)` and answers 500 above it.
pub const MAX_GROUP_NAME_LEN: usize = 255;
/// The most role bindings one list may hold (bounds the cost of the cross-field CEL rules).
pub const MAX_ROLE_BINDINGS: usize = 64;
/// The scan interval the original operator used, and ours defaults to.
pub const DEFAULT_SCAN_INTERVAL_SECONDS: i64 = 300;

/// The Waldur quota keys the plugin sends, each with the raw ResourceQuota key it stands for. Setting both keys
/// of a pair is rejected by the schema.
pub const WALDUR_QUOTA_KEYS: [(&str, &str); 4] = [
    ("cpu", "limits.cpu"),
    ("memory", "limits.memory"),
    ("storage", "requests.storage"),
    ("gpu", "requests.nvidia.com/gpu"),
];

fn default_true() -> bool {
    true
}

fn default_scan_interval() -> i64 {
    DEFAULT_SCAN_INTERVAL_SECONDS
}

/// A Rancher project managed from Waldur: the project itself, its quota, and Keycloak groups bound to it with
/// Rancher role templates, whose members are kept in sync with the list given here.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "waldur.io",
    version = "v1alpha1",
    kind = "ManagedRancherProject",
    plural = "managedrancherprojects",
    singular = "managedrancherproject",
    shortname = "mrp",
    namespaced,
    status = "ManagedRancherProjectStatus",
    derive = "PartialEq",
    doc = "A Rancher project managed from Waldur, with Keycloak groups bound to it by Rancher role templates.",
    printcolumn = r#"{"name":"Project","type":"string","jsonPath":".spec.projectName","description":"Rancher project display name"}"#,
    printcolumn = r#"{"name":"Cluster","type":"string","jsonPath":".spec.clusterId","description":"Rancher cluster id"}"#,
    printcolumn = r#"{"name":"Rancher ID","type":"string","jsonPath":".status.rancherProjectId","description":"Rancher project id"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase","description":"Lifecycle phase"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    // A Rancher project cannot move between clusters; before one exists there is nothing to move. (On the main
    // resource `self.status` is the stored status: a client cannot clear it in the same update.)
    validation = Rule::new(
        "self.spec.clusterId == oldSelf.spec.clusterId || !has(oldSelf.status) || \
         !has(oldSelf.status.rancherProjectId) || oldSelf.status.rancherProjectId == ''"
    ).message("clusterId is immutable once the Rancher project exists (status.rancherProjectId is set)")
)]
#[x_kube(validation = Rule::new(
    "!has(self.keycloak) || !has(self.keycloak.roleBindings) || !has(self.cluster) || !has(self.cluster.keycloak) \
     || !has(self.cluster.keycloak.roleBindings) || self.cluster.keycloak.roleBindings.all(c, \
     self.keycloak.roleBindings.all(p, p.groupName != c.groupName))"
).message("a Keycloak group cannot be used by both spec.keycloak.roleBindings and spec.cluster.keycloak.roleBindings"))]
#[serde(rename_all = "camelCase")]
pub struct ManagedRancherProjectSpec {
    /// Display name of the Rancher project. An existing project with this name in the cluster is adopted;
    /// otherwise one is created. Renaming updates the Rancher project's display name.
    #[schemars(length(min = 1))]
    pub project_name: String,
    /// Rancher cluster id the project lives in, e.g. `c-m-abc123` or `local`. Cannot be changed once the project
    /// exists (`status.rancherProjectId` is set); until then a mistyped id can be corrected.
    #[schemars(length(min = 1, max = 253))]
    pub cluster_id: String,
    /// Description of the Rancher project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Waldur customer (organization) slug, recorded on the Rancher project as the `waldur/organization`
    /// annotation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organization: Option<String>,
    /// Waldur project slug, recorded on the Rancher project as the `waldur/project_slug` annotation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_slug: Option<String>,
    /// UUID of the Waldur resource (the cluster offering) this project belongs to; provenance only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_uuid: Option<String>,
    /// UUID of the Waldur resource project this CR was written for; provenance only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_project_uuid: Option<String>,
    /// Take over an existing Rancher project with this name even though it carries no ownership annotation
    /// (neither this operator's nor the original operator's `waldur/managed`). Without it such a project is left
    /// alone and the `RancherProjectReady` condition says why. A project another ManagedRancherProject manages is
    /// never taken over, nor are Rancher's built-in System and Default projects. Once adopted, the project is
    /// managed like one this object created, but deleting the object only releases it (see deleteAdoptedProject).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adopt_existing_project: bool,
    /// Delete a project taken over with adoptExistingProject when this object is deleted. By default it is only
    /// released (its ownership annotations removed): it existed before this object and may hold others' work.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub delete_adopted_project: bool,
    /// Deprecated and ignored: operators before 0.3.0 created a namespace from this block. Namespaces are now
    /// managed in Rancher by the project's users.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<LegacyNamespace>,
    /// Project quota. Waldur keys are translated: `cpu` (millicores, an integer) to `limits.cpu`, `memory` (a
    /// quantity) to `limits.memory`, `storage` to `requests.storage`, `gpu` (an integer) to
    /// `requests.nvidia.com/gpu`. Any other key is taken as a Kubernetes ResourceQuota key such as `limits.cpu`
    /// or `pods` and passed through. Removing a key removes the limit. Every value is a non-negative integer or
    /// quantity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::quota_map")]
    #[x_kube(validation = Rule::new(
        "!('cpu' in self && 'limits.cpu' in self) && !('memory' in self && 'limits.memory' in self) \
         && !('storage' in self && 'requests.storage' in self) && !('gpu' in self && 'requests.nvidia.com/gpu' in self)"
    ).message("set either a Waldur quota key (cpu, memory, storage, gpu) or the ResourceQuota key it translates to, not both"))]
    pub resource_quotas: Option<BTreeMap<String, IntOrString>>,
    /// Keycloak groups bound to the project with Rancher project role templates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keycloak: Option<ProjectKeycloak>,
    /// Cluster-wide access: Keycloak groups bound to the whole cluster with Rancher cluster role templates. The
    /// Waldur plugin writes the same block into every project of a cluster; an empty list removes the bindings,
    /// an absent block leaves them alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterAccess>,
}

/// Legacy namespace settings (operators before 0.3.0); accepted and ignored.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct LegacyNamespace {
    /// Name of the namespace the old operator created (defaulted to the project name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Labels the old operator put on that namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
}

/// Keycloak groups for project access.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[x_kube(validation = Rule::new(
    "!has(self.parentGroupName) || !has(self.roleBindings) || self.roleBindings.all(b, b.groupName != self.parentGroupName)"
).message("a role binding's groupName must differ from parentGroupName"))]
#[serde(rename_all = "camelCase")]
pub struct ProjectKeycloak {
    /// Whether Keycloak groups, role bindings and memberships are managed at all.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// Top-level Keycloak group the binding groups are created under (e.g. `c_<clusterId>`), shared by every
    /// project of a cluster. When absent, binding groups are created at the top level. No `/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255), regex(pattern = r"^[^/]+$"))]
    pub parent_group_name: Option<String>,
    /// One Keycloak group per entry, bound to the project with a Rancher role template. Entries with the same
    /// group name and role are merged.
    #[serde(default)]
    #[schemars(length(max = 64))]
    pub role_bindings: Vec<RoleBinding>,
}

impl Default for ProjectKeycloak {
    fn default() -> Self {
        Self {
            enabled: true,
            parent_group_name: None,
            role_bindings: Vec::new(),
        }
    }
}

/// Cluster-wide access settings.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
pub struct ClusterAccess {
    /// Keycloak groups bound to the cluster with Rancher cluster role templates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keycloak: Option<ClusterKeycloak>,
}

/// Keycloak groups for cluster access.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterKeycloak {
    /// Whether cluster-wide groups and bindings are managed.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// One Keycloak group per entry, bound to the cluster with a Rancher cluster role template such as
    /// `cluster-owner`. An empty list removes every cluster binding this CR made.
    #[serde(default)]
    #[schemars(length(max = 64))]
    pub role_bindings: Vec<RoleBinding>,
}

impl Default for ClusterKeycloak {
    fn default() -> Self {
        Self {
            enabled: true,
            role_bindings: Vec::new(),
        }
    }
}

/// A Keycloak group, the Rancher role template it is bound with, and its members.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RoleBinding {
    /// Name of the Keycloak group. Rancher identifies Keycloak groups by name, so it must be unique in the
    /// realm; at most 255 characters, no `/` (Keycloak separates group paths with it).
    #[schemars(length(min = 1, max = 255), regex(pattern = r"^[^/]+$"))]
    pub group_name: String,
    /// Rancher role template id, e.g. `project-member`, `project-owner`, `read-only` or (for cluster bindings)
    /// `cluster-owner`.
    #[schemars(length(min = 1, max = 253))]
    pub rancher_role: String,
    /// Description of the group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Users who should be members of the group. Users are looked up in Keycloak, never created; users not
    /// found yet are reported as pending and added once they exist.
    #[serde(default)]
    pub members: Vec<Member>,
}

/// A user who should be a member of a group.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    /// The Keycloak user id (when `lookupByID` is true) or username (when false).
    #[schemars(length(min = 1, max = 255))]
    pub user_identifier: String,
    /// Whether `userIdentifier` is a Keycloak user id (true) or a username (false).
    #[serde(default = "default_true", rename = "lookupByID")]
    pub lookup_by_id: bool,
}

/// Lifecycle phase, as the original operator reported it; the Waldur plugin maps `Ready` to OK and `Error` to
/// erred.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Accepted, not yet worked on.
    Pending,
    /// The Rancher project is being created.
    Creating,
    /// Everything requested is in place.
    Ready,
    /// Converging towards the spec (or waiting for something, see conditions).
    Updating,
    /// Cleaning up after deletion.
    Deleting,
    /// A persistent failure that needs attention (see conditions).
    Error,
}

/// Observed state of a ManagedRancherProject.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ManagedRancherProjectStatus {
    /// Lifecycle phase: Pending, Creating, Ready, Updating, Deleting or Error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// Rancher id of the project, `<clusterId>:<projectName>` (e.g. `c-m-abc123:p-x7k2q`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rancher_project_id: Option<String>,
    /// Deprecated: the namespace operators before 0.3.0 created. Kept so their status reads back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_name: Option<String>,
    /// Keycloak id of the parent group the binding groups hang under (found again by it after a rename).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keycloak_parent_group_id: Option<String>,
    /// Per project role binding: the Keycloak group, the Rancher binding and the members.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keycloak_role_bindings: Vec<RoleBindingStatus>,
    /// Per cluster role binding: the Keycloak group, the Rancher cluster binding and the members.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_keycloak_role_bindings: Vec<RoleBindingStatus>,
    /// RancherProjectReady, ResourceQuotaReady, KeycloakGroupsReady, RancherBindingsReady, MembershipSynced and
    /// the summary Ready.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// When the last reconcile finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_reconcile_time: Option<Time>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// What exists for one role binding.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RoleBindingStatus {
    /// Name of the Keycloak group.
    pub group_name: String,
    /// The Rancher role template the group is bound with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rancher_role: Option<String>,
    /// Keycloak id of the group (cleanup and membership use it, not the name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keycloak_group_id: Option<String>,
    /// Keycloak id of the group a `parentGroupName` change replaced, recorded until its removal succeeds so a
    /// failed removal is retried rather than forgotten.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced_keycloak_group_id: Option<String>,
    /// Rancher id of the role template binding (`<namespace>:prtb-…` or `<clusterId>:crtb-…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rancher_binding_id: Option<String>,
    /// How many members the Keycloak group has.
    #[serde(default)]
    pub member_count: i64,
    /// Members confirmed in the Keycloak group.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub synced_members: Vec<SyncedMember>,
    /// Members that could not be added yet, with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_members: Vec<PendingMember>,
}

/// A member confirmed in its Keycloak group.
#[derive(Serialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SyncedMember {
    /// The identifier as given in the spec (a username or a Keycloak user id).
    pub user_identifier: String,
    /// The Keycloak user id it resolved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keycloak_user_id: Option<String>,
}

/// The wire forms of a synced member: the object we write, or the bare Keycloak user id of operator 0.0.3.
#[derive(Deserialize)]
#[serde(untagged)]
enum SyncedMemberWire {
    Current {
        #[serde(rename = "userIdentifier")]
        user_identifier: String,
        #[serde(default, rename = "keycloakUserId")]
        keycloak_user_id: Option<String>,
    },
    LegacyKeycloakId(String),
}

impl<'de> Deserialize<'de> for SyncedMember {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match SyncedMemberWire::deserialize(deserializer)? {
            SyncedMemberWire::Current {
                user_identifier,
                keycloak_user_id,
            } => SyncedMember {
                user_identifier,
                keycloak_user_id,
            },
            SyncedMemberWire::LegacyKeycloakId(id) => SyncedMember {
                user_identifier: id.clone(),
                keycloak_user_id: Some(id),
            },
        })
    }
}

/// A member that is not in its Keycloak group yet.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PendingMember {
    /// The identifier as given in the spec.
    pub user_identifier: String,
    /// Why the member is pending, e.g. `UserNotFound` (the user has not logged in to Keycloak yet).
    pub reason: String,
    /// A human-readable explanation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A per-cluster report of the Rancher projects that no ManagedRancherProject manages.
#[derive(CustomResource, Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[kube(
    group = "waldur.io",
    version = "v1alpha1",
    kind = "RancherProjectInventory",
    plural = "rancherprojectinventories",
    singular = "rancherprojectinventory",
    shortname = "rpi",
    namespaced,
    status = "RancherProjectInventoryStatus",
    derive = "PartialEq",
    doc = "A report of the Rancher projects in one cluster that no ManagedRancherProject manages.",
    printcolumn = r#"{"name":"Managed","type":"integer","jsonPath":".status.managedProjects","description":"Projects managed by ManagedRancherProjects"}"#,
    printcolumn = r#"{"name":"Unmanaged","type":"integer","jsonPath":".status.unmanagedProjectCount","description":"Projects nothing manages"}"#,
    printcolumn = r#"{"name":"Last Scan","type":"date","jsonPath":".status.lastScanTime"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct RancherProjectInventorySpec {
    /// Rancher cluster id to scan, e.g. `c-m-abc123`.
    #[schemars(length(min = 1, max = 253))]
    pub cluster_id: String,
    /// Seconds between scans.
    #[serde(default = "default_scan_interval")]
    #[schemars(range(min = 10))]
    pub scan_interval_seconds: i64,
}

/// The result of the last scan.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RancherProjectInventoryStatus {
    /// When the cluster was last scanned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_scan_time: Option<Time>,
    /// How many projects of this cluster ManagedRancherProjects in this namespace manage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_projects: Option<i64>,
    /// How many projects of this cluster are not managed (the Default and System projects are not counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmanaged_project_count: Option<i64>,
    /// Each project nothing manages, with its namespaces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmanaged_projects: Vec<UnmanagedProject>,
    /// Projects this operator made for a ManagedRancherProject that no longer exists (it was deleted while its
    /// finalizer was missing, so its cleanup never ran): deleted after the grace period when the operator runs
    /// with `--rancher-delete-orphans`, otherwise only reported.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub orphaned_projects: Vec<OrphanedProject>,
    /// Ready, and why a scan failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// A Rancher project whose ManagedRancherProject is gone.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OrphanedProject {
    /// Rancher id of the project.
    pub project_id: String,
    /// Display name.
    #[serde(default)]
    pub name: String,
    /// The ManagedRancherProject (`<namespace>/<name>`) the project's `waldur.io/owner` annotation names.
    pub owner: String,
    /// When a scan first found it orphaned (the grace period counts from here).
    pub first_seen: Time,
}

/// A Rancher project no ManagedRancherProject manages.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct UnmanagedProject {
    /// Rancher id of the project.
    pub project_id: String,
    /// Display name.
    #[serde(default)]
    pub name: String,
    /// The project's description in Rancher.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Namespaces in the project.
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// When Rancher created the project, as Rancher reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
}

#[cfg(test)]
mod tests;
