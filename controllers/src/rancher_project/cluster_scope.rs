//! What other ManagedRancherProjects share with this one. The Waldur plugin writes the same `spec.cluster`
//! block into every project of a cluster, and every project of a cluster hangs its groups under the same parent
//! group, so those Keycloak groups and ClusterRoleTemplateBindings are shared: they are reference-counted over
//! the objects that still want them, and the members of a shared group are the union over those objects (so two
//! objects in transition never fight over a membership).
//!
//! Every decision about something shared counts the objects of **all namespaces**, whatever the manager
//! watches: what other objects want of a cluster binding or group does not depend on which of them this
//! manager reconciles. Reconciles read the controller's cache when it covers every namespace, and list the
//! objects cluster-wide otherwise (`--watch-namespace`: the caches cover the watched namespaces only); cleanup
//! and the inventory always list them afresh. The manager's ClusterRole may therefore list
//! ManagedRancherProjects in every namespace. A namespaced install (Roles only) may not: the manager asks the
//! API server once, and then counts over the watched namespaces, saying so in its log (docs/security.md).

use std::collections::BTreeSet;
use std::sync::Arc;

use crds::rancher::ManagedRancherProject;
use kube::ResourceExt;

use super::desired::{self, BindingKey, DesiredMember, Scope};

/// The controller's view of every namespace's ManagedRancherProjects.
pub type Peers = framework::peers::Peers<ManagedRancherProject>;

/// The objects other than `me` that are not being deleted.
pub fn others(all: &[Arc<ManagedRancherProject>], me: &ManagedRancherProject) -> Vec<Arc<ManagedRancherProject>> {
    let key = (me.namespace(), me.name_any());
    all.iter()
        .filter(|o| (o.namespace(), o.name_any()) != key)
        .filter(|o| o.metadata.deletion_timestamp.is_none())
        .cloned()
        .collect()
}

/// The groups `me` wants (as `desired`) that another object claimed first: Rancher binds by group name, so a
/// group bound to one project must never be taken by another object (its members would get that project).
/// Only cluster groups of the same cluster are shared (the Waldur plugin writes the same `spec.cluster` block into
/// every project of a cluster). Who came first: the object that records the group in its status, then the
/// older, then the smaller uid, so every replica and restart decides alike.
pub fn contested_groups(
    others: &[Arc<ManagedRancherProject>],
    me: &ManagedRancherProject,
    desired: &desired::Desired,
) -> BTreeSet<String> {
    let mut contested = BTreeSet::new();
    for group in &desired.groups {
        for other in others {
            let Some(theirs) = desired::desired(&other.spec).group(&group.name).cloned() else {
                continue;
            };
            let shared = group.scope == Scope::Cluster
                && theirs.scope == Scope::Cluster
                && other.spec.cluster_id == me.spec.cluster_id;
            if !shared && precedes(other, me, &group.name) {
                contested.insert(group.name.clone());
            }
        }
    }
    contested
}

/// Whether `a` holds `group` before `b` (see [`contested_groups`]).
fn precedes(a: &ManagedRancherProject, b: &ManagedRancherProject, group: &str) -> bool {
    let holds = |o: &ManagedRancherProject| {
        o.status.as_ref().is_some_and(|s| {
            s.keycloak_role_bindings
                .iter()
                .chain(&s.cluster_keycloak_role_bindings)
                .any(|e| e.group_name == group && e.keycloak_group_id.is_some())
        })
    };
    let created = |o: &ManagedRancherProject| o.metadata.creation_timestamp.as_ref().map(|t| t.0);
    match (holds(a), holds(b)) {
        (true, false) => true,
        (false, true) => false,
        _ => (created(a), a.uid()) < (created(b), b.uid()),
    }
}

/// The Rancher project ids other objects record in their status.
pub fn claimed_projects(others: &[Arc<ManagedRancherProject>]) -> BTreeSet<String> {
    others
        .iter()
        .filter_map(|o| o.status.as_ref()?.rancher_project_id.clone())
        .filter(|id| !id.is_empty())
        .collect()
}

fn in_cluster<'a>(
    others: &'a [Arc<ManagedRancherProject>],
    cluster_id: &'a str,
) -> impl Iterator<Item = desired::Desired> + 'a {
    others
        .iter()
        .filter(move |o| o.spec.cluster_id == cluster_id)
        .map(|o| desired::desired(&o.spec))
}

/// Members other objects of the cluster want in the cluster group `group`.
pub fn cluster_members(others: &[Arc<ManagedRancherProject>], cluster_id: &str, group: &str) -> Vec<DesiredMember> {
    in_cluster(others, cluster_id)
        .filter(|d| d.cluster.is_some())
        .filter_map(|d| d.group(group).map(|g| g.members.clone()))
        .flatten()
        .collect()
}

/// Whether another object of the cluster still wants the cluster binding `key`.
pub fn uses_cluster_binding(others: &[Arc<ManagedRancherProject>], cluster_id: &str, key: &BindingKey) -> bool {
    in_cluster(others, cluster_id).any(|d| d.cluster.as_ref().is_some_and(|keys| keys.contains(key)))
}

/// Whether another object (of any cluster: group names are realm-wide) binds the group `name`.
pub fn uses_group(others: &[Arc<ManagedRancherProject>], name: &str) -> bool {
    others.iter().any(|o| desired::desired(&o.spec).group(name).is_some())
}

/// Whether another object puts its groups under the parent `name`.
pub fn uses_parent(others: &[Arc<ManagedRancherProject>], name: &str) -> bool {
    others
        .iter()
        .any(|o| desired::desired(&o.spec).parent.as_deref() == Some(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mrp(name: &str, spec: serde_json::Value) -> Arc<ManagedRancherProject> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "apiVersion": "waldur.io/v1alpha1", "kind": "ManagedRancherProject",
                "metadata": {"name": name, "namespace": "waldur-system"},
                "spec": spec,
            }))
            .expect("valid object"),
        )
    }

    fn shared(name: &str, members: &[&str]) -> Arc<ManagedRancherProject> {
        let members: Vec<serde_json::Value> = members
            .iter()
            .map(|m| serde_json::json!({"userIdentifier": m, "lookupByID": false}))
            .collect();
        mrp(
            name,
            serde_json::json!({
                "projectName": name, "clusterId": "c-1",
                "keycloak": {"parentGroupName": "c_c-1", "roleBindings": []},
                "cluster": {"keycloak": {"roleBindings": [
                    {"groupName": "c_c-1_cluster_admin", "rancherRole": "cluster-owner", "members": members},
                ]}},
            }),
        )
    }

    #[test]
    fn shared_bindings_and_groups_count_only_other_live_objects() {
        let a = shared("a", &["alice"]);
        let b = shared("b", &["bob"]);
        let all = vec![a.clone(), b.clone()];
        let key = BindingKey::new("c_c-1_cluster_admin", "cluster-owner");
        let others_of_a = others(&all, &a);
        assert_eq!(others_of_a.len(), 1);
        assert!(uses_cluster_binding(&others_of_a, "c-1", &key));
        assert!(!uses_cluster_binding(&others_of_a, "c-2", &key), "another cluster");
        assert!(uses_group(&others_of_a, "c_c-1_cluster_admin"));
        assert!(uses_parent(&others_of_a, "c_c-1"));
        assert_eq!(
            cluster_members(&others_of_a, "c-1", "c_c-1_cluster_admin"),
            vec![DesiredMember {
                identifier: "bob".into(),
                by_id: false
            }]
        );
        let mut deleting = (*b).clone();
        deleting.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            jiff::Timestamp::UNIX_EPOCH,
        ));
        let all = vec![a.clone(), Arc::new(deleting)];
        assert!(others(&all, &a).is_empty(), "an object being deleted no longer counts");
    }
}
