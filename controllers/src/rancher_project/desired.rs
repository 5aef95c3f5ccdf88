//! What the spec of a ManagedRancherProject asks for, in the controller's terms (pure): the bindings merged by
//! group and role, one Keycloak group per name with the union of its members, and the quota translated to
//! Rancher's keys. Every step works from this; none of it calls Rancher or Keycloak.

use std::collections::BTreeMap;

use crds::rancher::{ManagedRancherProjectSpec, Member, RoleBinding as SpecBinding};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::keycloak::{User, UserRef};
use crate::rancher::wire::{is_extended_quota_key, norman_quota_key};
use crate::rancher::{ProjectQuotas, Subject};

/// One binding: a group and the role template it is bound with.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BindingKey {
    /// The Keycloak group name.
    pub group: String,
    /// The Rancher role template id.
    pub role: String,
}

impl BindingKey {
    /// A key.
    pub fn new(group: &str, role: &str) -> Self {
        Self {
            group: group.to_string(),
            role: role.to_string(),
        }
    }

    /// The Rancher principal of the group.
    pub fn subject(&self) -> Subject {
        Subject::keycloak_group(&self.group)
    }
}

/// Whether a group serves project or cluster bindings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Bound to the project (PRTBs).
    Project,
    /// Bound to the whole cluster (CRTBs); may be shared by every project of the cluster.
    Cluster,
}

/// A Keycloak group the spec needs, with the union of its members over the bindings naming it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupPlan {
    /// The group name.
    pub name: String,
    /// The description given to a new group.
    pub description: String,
    /// Project or cluster.
    pub scope: Scope,
    /// Who should be a member.
    pub members: Vec<DesiredMember>,
}

/// Everything the spec asks for on the access side.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Desired {
    /// Project bindings, in spec order, deduplicated; `None` when `spec.keycloak.enabled` is false (left alone).
    pub project: Option<Vec<BindingKey>>,
    /// Cluster bindings; `None` when `spec.cluster` is absent or disabled (left alone).
    pub cluster: Option<Vec<BindingKey>>,
    /// The groups, in order of first use.
    pub groups: Vec<GroupPlan>,
    /// The parent group the groups live under, if any.
    pub parent: Option<String>,
}

impl Desired {
    /// Whether the object manages any Keycloak or binding state at all.
    pub fn manages_access(&self) -> bool {
        self.project.is_some() || self.cluster.is_some()
    }

    /// The group called `name`, if wanted.
    pub fn group(&self, name: &str) -> Option<&GroupPlan> {
        self.groups.iter().find(|g| g.name == name)
    }
}

fn add_group(groups: &mut Vec<GroupPlan>, binding: &SpecBinding, scope: Scope) {
    let members = binding.members.iter().map(DesiredMember::from_spec);
    match groups.iter_mut().find(|g| g.name == binding.group_name) {
        Some(group) => {
            for member in members {
                if !group.members.contains(&member) {
                    group.members.push(member);
                }
            }
        }
        None => {
            let mut unique: Vec<DesiredMember> = Vec::new();
            for member in members {
                if !unique.contains(&member) {
                    unique.push(member);
                }
            }
            let description = binding
                .description
                .clone()
                .filter(|d| !d.trim().is_empty())
                .unwrap_or_else(|| match scope {
                    Scope::Project => "Rancher project access group".to_string(),
                    Scope::Cluster => "Rancher cluster access group".to_string(),
                });
            groups.push(GroupPlan {
                name: binding.group_name.clone(),
                description,
                scope,
                members: unique,
            });
        }
    }
}

fn keys(bindings: &[SpecBinding]) -> Vec<BindingKey> {
    let mut keys: Vec<BindingKey> = Vec::new();
    for binding in bindings {
        let key = BindingKey::new(&binding.group_name, &binding.rancher_role);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys
}

/// What the spec asks for (pure). Entries with the same group and role are merged; a group named by several
/// entries gets the union of their members, as in the original operator.
pub fn desired(spec: &ManagedRancherProjectSpec) -> Desired {
    let keycloak = spec.keycloak.clone().unwrap_or_default();
    let cluster = spec
        .cluster
        .as_ref()
        .and_then(|c| c.keycloak.as_ref())
        .filter(|k| k.enabled);
    let mut groups = Vec::new();
    let project = keycloak.enabled.then(|| {
        for binding in &keycloak.role_bindings {
            add_group(&mut groups, binding, Scope::Project);
        }
        keys(&keycloak.role_bindings)
    });
    let cluster = cluster.map(|cluster| {
        for binding in &cluster.role_bindings {
            add_group(&mut groups, binding, Scope::Cluster);
        }
        keys(&cluster.role_bindings)
    });
    Desired {
        project,
        cluster,
        groups,
        parent: keycloak
            .parent_group_name
            .filter(|p| !p.trim().is_empty() && keycloak.enabled),
    }
}

/// A user the spec wants in a group.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DesiredMember {
    /// The identifier as written in the spec.
    pub identifier: String,
    /// Whether it is a Keycloak user id (else a username).
    pub by_id: bool,
}

impl DesiredMember {
    /// From a spec member (usernames compare case-insensitively, as Keycloak stores them lower-cased).
    pub fn from_spec(member: &Member) -> Self {
        let identifier = member.user_identifier.trim();
        Self {
            identifier: if member.lookup_by_id {
                identifier.to_string()
            } else {
                identifier.to_lowercase()
            },
            by_id: member.lookup_by_id,
        }
    }

    /// Whether `user` is this member.
    pub fn is(&self, user: &User) -> bool {
        if self.by_id {
            user.id == self.identifier
        } else {
            user.username.to_lowercase() == self.identifier
        }
    }

    /// How Keycloak is asked for this user.
    pub fn reference(&self) -> UserRef {
        if self.by_id {
            UserRef::Id(self.identifier.clone())
        } else {
            UserRef::Username(self.identifier.clone())
        }
    }
}

/// The outcome of translating the spec's quotas.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Translation {
    /// What the project should have; `None` means no quota.
    pub quotas: Option<ProjectQuotas>,
    /// Keys that cannot be expressed in a Rancher project quota.
    pub unsupported: Vec<String>,
    /// Values that are not quantities or are negative, described for the condition (never sent to Rancher).
    pub invalid: Vec<String>,
    /// The Rancher quota keys of those invalid values: each keeps the value last applied (a typo never lifts a
    /// limit; see [`super::quotas::effective`]).
    pub held: Vec<String>,
}

fn text(value: &IntOrString) -> String {
    match value {
        IntOrString::Int(n) => n.to_string(),
        IntOrString::String(s) => s.trim().to_string(),
    }
}

/// `n` (digits only) with `unit` appended; any other quantity as written.
fn with_default_unit(value: &IntOrString, unit: &str) -> String {
    let value = text(value);
    if !value.is_empty() && value.chars().all(|c| c.is_ascii_digit()) {
        format!("{value}{unit}")
    } else {
        value
    }
}

/// Translates `spec.resourceQuotas` (pure): the project quota, and each namespace's default as
/// `namespace_percent` of it (see [`super::quotas::share`]).
pub fn translate(spec: Option<&BTreeMap<String, IntOrString>>, namespace_percent: u8) -> Translation {
    let mut limits = BTreeMap::new();
    let mut unsupported = Vec::new();
    let mut invalid = Vec::new();
    let mut held = Vec::new();
    for (key, value) in spec.into_iter().flatten() {
        let (resource, quantity) = match key.as_str() {
            "cpu" => ("limits.cpu", with_default_unit(value, "m")),
            "memory" => ("limits.memory", with_default_unit(value, "Mi")),
            "storage" => ("requests.storage", with_default_unit(value, "Mi")),
            "gpu" => (NVIDIA_GPU, text(value)),
            other => (other, text(value)),
        };
        let quota_key = norman_quota_key(resource)
            .map(str::to_string)
            .or_else(|| is_extended_quota_key(resource).then(|| resource.to_string()));
        match quota_key {
            Some(quota_key) if quantity.starts_with('-') => {
                invalid.push(format!("{key}={} is negative", text(value)));
                held.push(quota_key);
            }
            Some(quota_key) if !quantity.is_empty() && super::quotas::is_quantity(&quantity) => {
                limits.insert(quota_key, quantity);
            }
            Some(quota_key) => {
                invalid.push(format!("{key}={:?} is not a quantity", text(value)));
                held.push(quota_key);
            }
            None => unsupported.push(key.clone()),
        }
    }
    let namespace_default = limits
        .iter()
        .map(|(key, quantity)| (key.clone(), super::quotas::share(key, quantity, namespace_percent)))
        .collect();
    Translation {
        quotas: (!limits.is_empty()).then_some(ProjectQuotas {
            project: limits,
            namespace_default,
        }),
        unsupported,
        invalid,
        held,
    }
}

/// The extended resource Waldur's `gpu` quota stands for.
pub const NVIDIA_GPU: &str = "requests.nvidia.com/gpu";

/// The `ResourceQuotaReady` message of an applied quota (deterministic, so an unchanged quota writes nothing).
pub fn describe(desired: &Translation) -> String {
    let list = |limits: &BTreeMap<String, String>| {
        limits
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let applied = match &desired.quotas {
        None => "no quota is set on the Rancher project".to_string(),
        Some(q) if q.project == q.namespace_default => {
            format!("project quota and namespace default quota set: {}", list(&q.project))
        }
        Some(q) => format!(
            "project quota set: {}; each namespace's default quota: {}",
            list(&q.project),
            list(&q.namespace_default)
        ),
    };
    if desired.unsupported.is_empty() {
        applied
    } else {
        format!(
            "{applied}; not applied because Rancher project quotas cannot express them: {}",
            desired.unsupported.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(value: serde_json::Value) -> ManagedRancherProjectSpec {
        serde_json::from_value(value).expect("valid spec")
    }

    #[test]
    fn bindings_merge_by_group_and_role_and_groups_union_their_members() {
        let desired = desired(&spec(serde_json::json!({
            "projectName": "p", "clusterId": "c",
            "keycloak": {"parentGroupName": "c_c", "roleBindings": [
                {"groupName": "g1", "rancherRole": "project-member", "members": [{"userIdentifier": "alice", "lookupByID": false}]},
                {"groupName": "g1", "rancherRole": "project-member", "members": [{"userIdentifier": "Bob", "lookupByID": false}]},
                {"groupName": "g1", "rancherRole": "read-only", "members": [{"userIdentifier": "ALICE", "lookupByID": false}]},
                {"groupName": "g2", "rancherRole": "project-owner"},
            ]},
            "cluster": {"keycloak": {"roleBindings": [
                {"groupName": "cl", "rancherRole": "cluster-owner", "members": [{"userIdentifier": "u-1"}]},
            ]}},
        })));
        assert_eq!(
            desired.project,
            Some(vec![
                BindingKey::new("g1", "project-member"),
                BindingKey::new("g1", "read-only"),
                BindingKey::new("g2", "project-owner")
            ])
        );
        assert_eq!(desired.cluster, Some(vec![BindingKey::new("cl", "cluster-owner")]));
        let g1 = desired.group("g1").expect("g1");
        assert_eq!(g1.members.len(), 2, "alice (any case) and bob: {:?}", g1.members);
        assert_eq!(desired.group("cl").map(|g| g.scope), Some(Scope::Cluster));
        assert_eq!(desired.parent.as_deref(), Some("c_c"));
    }

    #[test]
    fn disabled_or_absent_blocks_are_left_alone() {
        let desired = desired(&spec(serde_json::json!({
            "projectName": "p", "clusterId": "c",
            "keycloak": {"enabled": false, "roleBindings": [{"groupName": "g", "rancherRole": "r"}]},
        })));
        assert_eq!(desired.project, None);
        assert_eq!(desired.cluster, None);
        assert!(desired.groups.is_empty());
        assert!(!desired.manages_access());
        let empty_cluster = super::desired(&spec(serde_json::json!({
            "projectName": "p", "clusterId": "c", "cluster": {"keycloak": {"roleBindings": []}},
        })));
        assert_eq!(
            empty_cluster.cluster,
            Some(vec![]),
            "an empty list removes what was made"
        );
        assert_eq!(
            empty_cluster.project,
            Some(vec![]),
            "an absent keycloak block is enabled and empty"
        );
    }

    fn quotas(pairs: &[(&str, IntOrString)]) -> BTreeMap<String, IntOrString> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    fn limits(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn waldur_keys_translate_with_their_units() {
        let t = translate(
            Some(&quotas(&[
                ("cpu", IntOrString::Int(4000)),
                ("memory", IntOrString::String("8192Mi".into())),
                ("storage", IntOrString::Int(10240)),
            ])),
            100,
        );
        let expected = limits(&[
            ("limitsCpu", "4000m"),
            ("limitsMemory", "8192Mi"),
            ("requestsStorage", "10240Mi"),
        ]);
        assert_eq!(
            t.quotas,
            Some(ProjectQuotas {
                project: expected.clone(),
                namespace_default: expected
            })
        );
        assert!(t.unsupported.is_empty());
    }

    #[test]
    fn raw_resource_quota_keys_and_gpus_pass_through_and_unknown_keys_are_reported() {
        let t = translate(
            Some(&quotas(&[
                ("limits.cpu", IntOrString::String("2000m".into())),
                ("pods", IntOrString::Int(20)),
                ("gpu", IntOrString::Int(2)),
                ("requests.example.com/fpga", IntOrString::Int(1)),
                ("example.com/widgets", IntOrString::Int(1)),
                ("limits.nvidia.com/gpu", IntOrString::Int(1)),
                ("requests.memory", IntOrString::String("lots".into())),
            ])),
            50,
        );
        let quotas = t.quotas.expect("quotas");
        assert_eq!(
            quotas.project,
            limits(&[
                ("limitsCpu", "2000m"),
                ("pods", "20"),
                ("requests.example.com/fpga", "1"),
                ("requests.nvidia.com/gpu", "2")
            ])
        );
        assert_eq!(
            quotas.namespace_default,
            limits(&[
                ("limitsCpu", "1000m"),
                ("pods", "10"),
                ("requests.example.com/fpga", "1"),
                ("requests.nvidia.com/gpu", "1")
            ])
        );
        assert_eq!(
            t.unsupported,
            vec!["example.com/widgets".to_string(), "limits.nvidia.com/gpu".to_string(),]
        );
        assert_eq!(
            t.invalid,
            vec![r#"requests.memory="lots" is not a quantity"#.to_string()]
        );
        assert_eq!(t.held, vec!["requestsMemory".to_string()]);
    }

    #[test]
    fn no_keys_means_no_quota() {
        assert_eq!(translate(None, 50), Translation::default());
        assert_eq!(translate(Some(&BTreeMap::new()), 50).quotas, None);
    }
}
