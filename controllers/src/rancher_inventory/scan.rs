//! One scan of a cluster, as a pure function of what Rancher and the ManagedRancherProjects show: the projects no
//! ManagedRancherProject manages (Rancher's Default and System projects excluded), each with its namespaces,
//! and how many projects of *this* cluster are managed (the original counted every cluster's).

use std::collections::{BTreeMap, BTreeSet};

use crds::rancher::{ManagedRancherProject, UnmanagedProject};

use crate::rancher::{Namespace, Project};
use crate::rancher_project::project::OWNER_ANNOTATION;

pub use crate::rancher::wire::{DEFAULT_PROJECT_LABEL, SYSTEM_PROJECT_LABEL};

/// The result of a scan.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scan {
    /// Projects of the cluster managed by a ManagedRancherProject.
    pub managed: i64,
    /// The other projects, by id.
    pub unmanaged: Vec<UnmanagedProject>,
    /// Projects whose owner annotation names a ManagedRancherProject that is gone: `(project, owner)`.
    pub orphaned: Vec<(Project, String)>,
}

/// What a scan knows about the ManagedRancherProjects: the projects they record, the objects that exist
/// (`<namespace>/<name>`), and which namespaces it can see (`None`: all).
pub struct Known<'a> {
    /// Ids of the projects ManagedRancherProjects record.
    pub managed_ids: &'a BTreeSet<String>,
    /// Every ManagedRancherProject that exists, as `<namespace>/<name>`.
    pub owners: &'a BTreeSet<String>,
    /// The namespaces the objects were listed in; an owner elsewhere cannot be judged gone.
    pub watched: Option<&'a [String]>,
}

/// Whether a project is one Rancher makes for every cluster.
pub fn is_builtin(project: &Project) -> bool {
    let labelled = |label: &str| project.labels.get(label).map(String::as_str) == Some("true");
    labelled(SYSTEM_PROJECT_LABEL)
        || labelled(DEFAULT_PROJECT_LABEL)
        || matches!(project.name.as_str(), "Default" | "System")
}

/// The ids of the projects of `cluster_id` that ManagedRancherProjects record.
pub fn managed_ids<'a>(
    objects: impl IntoIterator<Item = &'a ManagedRancherProject>,
    cluster_id: &str,
) -> BTreeSet<String> {
    objects
        .into_iter()
        .filter(|o| o.spec.cluster_id == cluster_id)
        .filter_map(|o| o.status.as_ref()?.rancher_project_id.clone())
        .filter(|id| !id.is_empty())
        .collect()
}

/// Classifies the projects of one cluster (pure).
pub fn scan(projects: &[Project], namespaces: &[Namespace], known: &Known<'_>) -> Scan {
    let managed_ids = known.managed_ids;
    let mut by_project: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for namespace in namespaces {
        if let Some(project) = namespace.project_id.as_deref() {
            let name = if namespace.name.is_empty() {
                &namespace.id
            } else {
                &namespace.name
            };
            by_project.entry(project).or_default().push(name.clone());
        }
    }
    let mut result = Scan::default();
    let mut projects: Vec<&Project> = projects.iter().filter(|p| !p.is_removing()).collect();
    projects.sort_by(|a, b| a.id.cmp(&b.id));
    for project in projects {
        if managed_ids.contains(&project.id) {
            result.managed += 1;
            continue;
        }
        if let Some(owner) = project.annotations.get(OWNER_ANNOTATION) {
            let namespace = owner.split_once('/').map_or("", |(ns, _)| ns);
            let judged = known
                .watched
                .is_none_or(|watched| watched.iter().any(|w| w == namespace));
            if judged && !known.owners.contains(owner) {
                result.orphaned.push((project.clone(), owner.clone()));
            } else {
                result.managed += 1;
            }
            continue;
        }
        if is_builtin(project) {
            continue;
        }
        let mut namespaces = by_project.get(project.id.as_str()).cloned().unwrap_or_default();
        namespaces.sort();
        result.unmanaged.push(UnmanagedProject {
            project_id: project.id.clone(),
            name: project.name.clone(),
            description: project.description.clone().filter(|d| !d.is_empty()),
            namespaces,
            created_at: project.created.clone(),
        });
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(id: &str, name: &str) -> Project {
        Project {
            id: id.into(),
            name: name.into(),
            cluster_id: "c-1".into(),
            ..Project::default()
        }
    }

    #[test]
    fn builtin_and_managed_projects_are_not_listed_and_namespaces_are_grouped() {
        let mut system = project("c-1:p-sys", "System");
        system.labels.insert(SYSTEM_PROJECT_LABEL.into(), "true".into());
        let managed = project("c-1:p-mgd", "Genomics");
        let mut owned = project("c-1:p-own", "Owned");
        owned.annotations.insert(OWNER_ANNOTATION.into(), "ns/x".into());
        let hand = project("c-1:p-hand", "Hand made");
        let namespaces = vec![
            Namespace {
                id: "b".into(),
                name: "b".into(),
                project_id: Some("c-1:p-hand".into()),
                state: None,
            },
            Namespace {
                id: "a".into(),
                name: "a".into(),
                project_id: Some("c-1:p-hand".into()),
                state: None,
            },
        ];
        let mut orphan = project("c-1:p-orphan", "Orphan");
        orphan.annotations.insert(OWNER_ANNOTATION.into(), "ns/gone".into());
        let mut elsewhere = project("c-1:p-else", "Elsewhere");
        elsewhere
            .annotations
            .insert(OWNER_ANNOTATION.into(), "other/gone".into());
        let managed_ids = BTreeSet::from(["c-1:p-mgd".to_string()]);
        let owners = BTreeSet::from(["ns/x".to_string()]);
        let watched = vec!["ns".to_string()];
        let known = Known {
            managed_ids: &managed_ids,
            owners: &owners,
            watched: Some(&watched),
        };
        let result = scan(&[system, managed, owned, hand, orphan, elsewhere], &namespaces, &known);
        assert_eq!(
            result.managed, 3,
            "an owner in an unwatched namespace cannot be judged gone"
        );
        assert_eq!(result.unmanaged.len(), 1);
        assert_eq!(result.unmanaged[0].project_id, "c-1:p-hand");
        assert_eq!(result.unmanaged[0].namespaces, vec!["a".to_string(), "b".to_string()]);
        let orphans: Vec<(&str, &str)> = result
            .orphaned
            .iter()
            .map(|(p, owner)| (p.id.as_str(), owner.as_str()))
            .collect();
        assert_eq!(orphans, vec![("c-1:p-orphan", "ns/gone")]);
    }
}
