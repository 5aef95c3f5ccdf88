//! The operator's own limits on what ManagedRancherProjects and RancherProjectInventories may ask for: which
//! clusters, which role templates, which Keycloak group names. ManagedRancherProjects come from a trusted writer
//! (the Waldur site agent, enforced by the shipped ValidatingAdmissionPolicy); these flags are defence in depth
//! for when that writer is misconfigured or compromised. Every list is empty by default, which allows everything,
//! so the Waldur plugin's output (which binds `cluster-owner`) keeps working unless the platform narrows it.

use super::desired::Desired;

/// What the platform allows projects and inventories to touch. An empty list allows everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RancherPolicy {
    /// Cluster ids projects and inventories may name (`--rancher-allowed-clusters`).
    pub allowed_clusters: Vec<String>,
    /// Role templates project bindings may use (`--rancher-allowed-project-roles`).
    pub project_roles: Vec<String>,
    /// Role templates cluster bindings may use (`--rancher-allowed-cluster-roles`).
    pub cluster_roles: Vec<String>,
    /// A prefix every Keycloak group name (and the parent group's) must start with (`--rancher-group-prefix`).
    pub group_prefix: Option<String>,
}

fn allowed(list: &[String], item: &str) -> bool {
    list.is_empty() || list.iter().any(|allowed| allowed == item)
}

impl RancherPolicy {
    /// Whether `cluster_id` may be named; `Err` says why not (safe to show: it names only the object's own input
    /// and the platform's list).
    pub fn check_cluster(&self, cluster_id: &str) -> Result<(), String> {
        if allowed(&self.allowed_clusters, cluster_id) {
            Ok(())
        } else {
            Err(format!(
                "cluster {cluster_id} is not allowed; the operator manages clusters: {}",
                self.allowed_clusters.join(", ")
            ))
        }
    }

    /// Whether an object wanting `desired` in `cluster_id` is within the policy.
    pub fn check(&self, cluster_id: &str, desired: &Desired) -> Result<(), String> {
        self.check_cluster(cluster_id)?;
        let roles = [
            (desired.project.iter().flatten(), &self.project_roles, "project"),
            (desired.cluster.iter().flatten(), &self.cluster_roles, "cluster"),
        ];
        for (keys, list, scope) in roles {
            for key in keys {
                if !allowed(list, &key.role) {
                    return Err(format!(
                        "role template {} is not allowed for {scope} bindings; allowed: {}",
                        key.role,
                        list.join(", ")
                    ));
                }
            }
        }
        if let Some(prefix) = self.group_prefix.as_deref().filter(|p| !p.is_empty()) {
            let names = desired
                .groups
                .iter()
                .map(|g| g.name.as_str())
                .chain(desired.parent.as_deref());
            for name in names {
                if !name.starts_with(prefix) {
                    return Err(format!(
                        "Keycloak group {name} does not start with the required prefix {prefix}"
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::desired::{BindingKey, GroupPlan, Scope};
    use super::*;

    fn desired(project: &[(&str, &str)], cluster: &[(&str, &str)], parent: Option<&str>) -> Desired {
        let keys = |pairs: &[(&str, &str)]| pairs.iter().map(|(g, r)| BindingKey::new(g, r)).collect::<Vec<_>>();
        let mut desired = Desired {
            project: Some(keys(project)),
            cluster: Some(keys(cluster)),
            groups: Vec::new(),
            parent: parent.map(str::to_string),
        };
        for (group, _) in project.iter().chain(cluster) {
            desired.groups.push(GroupPlan {
                name: group.to_string(),
                description: String::new(),
                scope: Scope::Project,
                members: Vec::new(),
            });
        }
        desired
    }

    #[test]
    fn an_empty_policy_allows_the_plugins_output() {
        let output = desired(
            &[("c_admin", "project-owner")],
            &[("c_admin", "cluster-owner")],
            Some("c"),
        );
        assert_eq!(RancherPolicy::default().check("local", &output), Ok(()));
    }

    #[test]
    fn clusters_roles_and_group_names_outside_the_policy_are_refused() {
        let policy = RancherPolicy {
            allowed_clusters: vec!["c-tenants".into()],
            project_roles: vec!["project-member".into(), "project-owner".into()],
            cluster_roles: vec!["cluster-member".into()],
            group_prefix: Some("waldur-".into()),
        };
        let fine = desired(
            &[("waldur-a", "project-member")],
            &[("waldur-a", "cluster-member")],
            Some("waldur-p"),
        );
        assert_eq!(policy.check("c-tenants", &fine), Ok(()));
        let local = policy.check("local", &fine).expect_err("local is not allowed");
        assert_eq!(
            local,
            "cluster local is not allowed; the operator manages clusters: c-tenants"
        );
        let owner = desired(
            &[("waldur-a", "project-member")],
            &[("waldur-a", "cluster-owner")],
            None,
        );
        assert!(
            policy
                .check("c-tenants", &owner)
                .is_err_and(|e| e.contains("cluster-owner"))
        );
        let admin_group = desired(&[("admin", "project-member")], &[], None);
        assert!(
            policy
                .check("c-tenants", &admin_group)
                .is_err_and(|e| e.contains("prefix waldur-"))
        );
        let parent = desired(&[("waldur-a", "project-member")], &[], Some("admins"));
        assert!(policy.check("c-tenants", &parent).is_err_and(|e| e.contains("admins")));
    }
}
