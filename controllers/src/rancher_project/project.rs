//! The Rancher project: found by its stored id, else chosen among the projects with the wanted display name
//! (adopted only when that is safe), else created with ownership annotations; then its display name,
//! description and annotations kept in line with the spec.
//!
//! Adoption rules (Rancher allows duplicate display names, so a name alone proves nothing):
//!
//! - a project annotated `waldur.io/owner: <namespace>/<name>` of this object is ours (this is also how a
//!   project created just before a crash, whose id never reached the status, is found again instead of
//!   duplicated);
//! - a project with the original operator's `waldur/managed: "true"` and no owner annotation was made by the
//!   replaced operator for this object and is taken over (unless its `waldur.io/resource-project-uuid`
//!   names another Waldur project);
//! - any other project is taken over only with `spec.adoptExistingProject`;
//! - a project another ManagedRancherProject records or owns is never taken;
//! - Rancher's built-in System and Default projects are never taken, whatever the spec says.
//!
//! A project taken over with `adoptExistingProject` is marked `waldur.io/adopted`; deleting the object then only
//! releases it (removes the ownership annotations) unless `spec.deleteAdoptedProject` says to delete it.

use std::collections::{BTreeMap, BTreeSet};

use crds::rancher::ManagedRancherProject;
use kube::ResourceExt;

use super::cluster_scope;
use super::error::MrpError;
use super::reconcile::Pass;
use super::status::{RANCHER_PROJECT_READY, RESOURCE_QUOTA_READY};
use crate::rancher::wire::{MANAGED_ANNOTATION, ORGANIZATION_ANNOTATION, PROJECT_SLUG_ANNOTATION};
use crate::rancher::{NewProject, Project, ProjectQuotas, ProjectUpdate, RancherClient};

/// Annotation marking a project taken over with `adoptExistingProject` (it existed before the object).
pub const ADOPTED_ANNOTATION: &str = "waldur.io/adopted";
/// Annotation naming the ManagedRancherProject (`<namespace>/<name>`) that owns a Rancher project.
pub const OWNER_ANNOTATION: &str = "waldur.io/owner";
/// Annotation recording the Waldur resource (provenance).
pub const RESOURCE_UUID_ANNOTATION: &str = "waldur.io/resource-uuid";
/// Annotation recording the Waldur resource project (provenance; also guards adoption).
pub const RESOURCE_PROJECT_UUID_ANNOTATION: &str = "waldur.io/resource-project-uuid";

/// The owner annotation value of an object.
pub fn owner_key(mrp: &ManagedRancherProject) -> String {
    format!("{}/{}", mrp.namespace().unwrap_or_default(), mrp.name_any())
}

/// Who a project belongs to, from its annotations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ownership {
    /// Annotated as this object's.
    Ours,
    /// Made by the original operator (`waldur/managed`), no owner recorded.
    Original,
    /// Annotated as another object's.
    Other(String),
    /// No ownership annotation.
    Foreign,
}

/// The ownership of `project` as seen by the object `owner`.
pub fn ownership(project: &Project, owner: &str) -> Ownership {
    match project.annotations.get(OWNER_ANNOTATION) {
        Some(o) if o == owner => Ownership::Ours,
        Some(o) => Ownership::Other(o.clone()),
        None if project.annotations.get(MANAGED_ANNOTATION).map(String::as_str) == Some("true") => Ownership::Original,
        None => Ownership::Foreign,
    }
}

/// How an existing project came to be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Adoption {
    /// It carries our owner annotation.
    Owned,
    /// The original operator made it.
    FromOriginalOperator,
    /// The spec allowed taking over a foreign project.
    Explicit,
}

/// What to do about the projects that carry the wanted name.
#[derive(Clone, Debug, PartialEq)]
pub enum Choice {
    /// Use this project.
    Use(Box<Project>, Adoption),
    /// Create a new one.
    Create,
    /// Leave them alone; the message says why.
    Refuse(String),
}

/// What the adoption decision needs to know about the object.
pub struct Wanted<'a> {
    /// `<namespace>/<name>` of the object.
    pub owner: &'a str,
    /// The cluster the project must be in.
    pub cluster_id: &'a str,
    /// The display name.
    pub name: &'a str,
    /// `spec.resourceProjectUuid`.
    pub resource_project_uuid: Option<&'a str>,
    /// `spec.adoptExistingProject`.
    pub adopt_existing: bool,
    /// Project ids other ManagedRancherProjects record in their status.
    pub claimed: &'a BTreeSet<String>,
}

/// Decides among the projects named like the wanted one (pure).
pub fn choose(candidates: &[Project], wanted: &Wanted<'_>) -> Choice {
    let in_cluster = || {
        candidates
            .iter()
            .filter(|p| !p.is_removing() && p.cluster_id == wanted.cluster_id)
    };
    if in_cluster().any(Project::is_built_in) {
        return Choice::Refuse(format!(
            "{:?} in cluster {} is one of Rancher's built-in projects, which are never taken over; choose another \
             projectName",
            wanted.name, wanted.cluster_id
        ));
    }
    let live: Vec<&Project> = in_cluster().collect();
    let mut ours: Vec<&Project> = live
        .iter()
        .copied()
        .filter(|p| ownership(p, wanted.owner) == Ownership::Ours && !wanted.claimed.contains(&p.id))
        .collect();
    ours.sort_by(|a, b| a.id.cmp(&b.id));
    if let Some(project) = ours.first() {
        return Choice::Use(Box::new((*project).clone()), Adoption::Owned);
    }
    let free: Vec<&Project> = live
        .iter()
        .copied()
        .filter(|p| !wanted.claimed.contains(&p.id) && !matches!(ownership(p, wanted.owner), Ownership::Other(_)))
        .collect();
    let taken: Vec<String> = live
        .iter()
        .filter(|p| !free.iter().any(|f| f.id == p.id))
        .map(|p| match ownership(p, wanted.owner) {
            Ownership::Other(owner) => format!("{} (owned by ManagedRancherProject {owner})", p.id),
            _ => format!("{} (recorded by another ManagedRancherProject)", p.id),
        })
        .collect();
    let original: Vec<&Project> = free
        .iter()
        .copied()
        .filter(|p| ownership(p, wanted.owner) == Ownership::Original)
        .filter(|p| {
            match (
                p.annotations.get(RESOURCE_PROJECT_UUID_ANNOTATION),
                wanted.resource_project_uuid,
            ) {
                (Some(theirs), Some(ours)) => theirs == ours,
                _ => true,
            }
        })
        .collect();
    let subject = format!(
        "a Rancher project named {:?} in cluster {}",
        wanted.name, wanted.cluster_id
    );
    match (original.len(), free.len()) {
        (1, _) => return Choice::Use(Box::new(original[0].clone()), Adoption::FromOriginalOperator),
        (n, _) if n > 1 => {
            return Choice::Refuse(format!(
                "{n} projects named {:?} in cluster {} carry waldur/managed ({}); cannot tell which one is this \
                 object's: delete or rename the extra ones",
                wanted.name,
                wanted.cluster_id,
                ids(&original)
            ));
        }
        _ => {}
    }
    match free.len() {
        0 if taken.is_empty() => Choice::Create,
        0 => Choice::Refuse(format!(
            "{subject} already exists and belongs to another object: {}; choose another projectName",
            taken.join(", ")
        )),
        1 if wanted.adopt_existing => Choice::Use(Box::new(free[0].clone()), Adoption::Explicit),
        1 => Choice::Refuse(format!(
            "{subject} already exists ({}) and was not created by this operator; set spec.adoptExistingProject: \
             true to take it over, or choose another projectName",
            free[0].id
        )),
        n => Choice::Refuse(format!(
            "{n} Rancher projects named {:?} exist in cluster {} ({}); cannot tell which one to take over: delete \
             or rename the extra ones, or choose another projectName",
            wanted.name,
            wanted.cluster_id,
            ids(&free)
        )),
    }
}

fn ids(projects: &[&Project]) -> String {
    projects.iter().map(|p| p.id.as_str()).collect::<Vec<_>>().join(", ")
}

/// The annotations the project should carry: `Some` to set, `None` to remove.
pub fn desired_annotations(mrp: &ManagedRancherProject) -> BTreeMap<String, Option<String>> {
    let spec = &mrp.spec;
    let text = |v: &Option<String>| v.as_ref().map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    BTreeMap::from([
        (OWNER_ANNOTATION.to_string(), Some(owner_key(mrp))),
        (MANAGED_ANNOTATION.to_string(), Some("true".to_string())),
        (ORGANIZATION_ANNOTATION.to_string(), text(&spec.organization)),
        (PROJECT_SLUG_ANNOTATION.to_string(), text(&spec.project_slug)),
        (RESOURCE_UUID_ANNOTATION.to_string(), text(&spec.resource_uuid)),
        (
            RESOURCE_PROJECT_UUID_ANNOTATION.to_string(),
            text(&spec.resource_project_uuid),
        ),
    ])
}

/// The changes that bring `current`'s name, description and annotations in line with the spec (empty when
/// nothing differs). Quotas are left to [`super::quotas`].
///
/// A project the original operator made is taken over as it stands: its annotations are brought in line (our
/// owner annotation among them) with the first name or description change the spec asks for, so a cutover
/// writes nothing to Rancher. Until then the recorded project id is what ties it to the object.
pub fn metadata_update(mrp: &ManagedRancherProject, current: &Project) -> ProjectUpdate {
    let spec = &mrp.spec;
    let description = spec.description.clone().unwrap_or_default();
    let name = (current.name != spec.project_name).then(|| spec.project_name.clone());
    let description = (current.description.as_deref().unwrap_or_default() != description).then_some(description);
    let left_by_original = ownership(current, &owner_key(mrp)) == Ownership::Original;
    let annotations = if left_by_original && name.is_none() && description.is_none() {
        BTreeMap::new()
    } else {
        desired_annotations(mrp)
            .into_iter()
            .filter(|(key, value)| current.annotations.get(key) != value.as_ref())
            .collect()
    };
    ProjectUpdate {
        name,
        description,
        annotations,
        quotas: None,
    }
}

/// The body of a new project: the spec's name and description, our annotations and the quotas.
pub fn new_project(mrp: &ManagedRancherProject, quotas: Option<ProjectQuotas>) -> NewProject {
    NewProject {
        cluster_id: mrp.spec.cluster_id.clone(),
        name: mrp.spec.project_name.clone(),
        description: mrp.spec.description.clone().filter(|d| !d.is_empty()),
        annotations: desired_annotations(mrp)
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect(),
        labels: BTreeMap::new(),
        quotas,
    }
}

/// The project found or made for an object, and how.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The project as Rancher last showed it.
    pub project: Project,
    /// What happened: `None` when it was already recorded in the status.
    pub how: Option<Found>,
}

/// How a project not recorded in the status was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// Created now.
    Created,
    /// An existing project was taken.
    Adopted(Adoption),
}

/// Finds the object's project (the stored id first), adopts one or creates it (with `quotas`).
pub async fn resolve(
    rancher: &RancherClient,
    mrp: &ManagedRancherProject,
    stored_id: Option<&str>,
    claimed: &BTreeSet<String>,
    quotas: Option<ProjectQuotas>,
) -> Result<Resolved, MrpError> {
    let spec = &mrp.spec;
    if let Some(id) = stored_id.filter(|id| !id.is_empty()) {
        match rancher.get_project(id).await? {
            Some(project) if !project.is_removing() && project.cluster_id == spec.cluster_id => {
                return Ok(Resolved { project, how: None });
            }
            Some(_) => tracing::warn!(
                project = id,
                "the recorded Rancher project is being removed; looking it up by name"
            ),
            None => tracing::warn!(
                project = id,
                "the recorded Rancher project no longer exists; looking it up by name"
            ),
        }
    }
    let owner = owner_key(mrp);
    let wanted = Wanted {
        owner: &owner,
        cluster_id: &spec.cluster_id,
        name: &spec.project_name,
        resource_project_uuid: spec.resource_project_uuid.as_deref(),
        adopt_existing: spec.adopt_existing_project,
        claimed,
    };
    let candidates = rancher.find_projects(&spec.cluster_id, &spec.project_name).await?;
    match choose(&candidates, &wanted) {
        Choice::Use(project, Adoption::Explicit) => {
            // Recorded on the project before anything else, so cleanup releases rather than deletes it.
            let mark = ProjectUpdate {
                annotations: BTreeMap::from([(ADOPTED_ANNOTATION.to_string(), Some("true".to_string()))]),
                ..ProjectUpdate::default()
            };
            let project = rancher.update_project(&project, &mark).await?;
            Ok(Resolved {
                project,
                how: Some(Found::Adopted(Adoption::Explicit)),
            })
        }
        Choice::Use(project, adoption) => Ok(Resolved {
            project: *project,
            how: Some(Found::Adopted(adoption)),
        }),
        Choice::Refuse(message) => Err(MrpError::ProjectNameTaken(message)),
        Choice::Create => match rancher.create_project(&new_project(mrp, quotas)).await {
            Ok(project) => Ok(Resolved {
                project,
                how: Some(Found::Created),
            }),
            Err(error) if error.is_transient() => {
                // The answer may have been lost after Rancher made the project: look for it by its owner
                // annotation before reporting, so a retry never creates a second one.
                let again = rancher.find_projects(&spec.cluster_id, &spec.project_name).await?;
                match choose(&again, &wanted) {
                    Choice::Use(project, Adoption::Owned) => Ok(Resolved {
                        project: *project,
                        how: Some(Found::Created),
                    }),
                    _ => Err(error.into()),
                }
            }
            Err(error) => Err(error.into()),
        },
    }
}

/// Applies the spec's name, description and annotations; returns the project as Rancher now shows it and
/// whether anything was written.
pub async fn sync_metadata(
    rancher: &RancherClient,
    mrp: &ManagedRancherProject,
    project: Project,
) -> Result<(Project, bool), MrpError> {
    let update = metadata_update(mrp, &project);
    if update.is_noop_for(&project) {
        return Ok((project, false));
    }
    let updated = rancher.update_project(&project, &update).await?;
    Ok((updated, true))
}

/// Whether cleanup releases `project` instead of deleting it: it was adopted and the spec does not say to delete
/// adopted projects.
pub fn release_only(project: &Project, mrp: &ManagedRancherProject) -> bool {
    project.annotations.get(ADOPTED_ANNOTATION).is_some_and(|v| v == "true") && !mrp.spec.delete_adopted_project
}

/// The update that hands a released project back: ownership and adoption annotations removed.
pub fn release(project: &Project) -> ProjectUpdate {
    let annotations = [OWNER_ANNOTATION, ADOPTED_ANNOTATION]
        .into_iter()
        .filter(|key| project.annotations.contains_key(*key))
        .map(|key| (key.to_string(), None))
        .collect();
    ProjectUpdate {
        annotations,
        ..ProjectUpdate::default()
    }
}

/// The projects named like the object's that it may delete on cleanup: its own (owner annotation), and — when
/// `stale` (the recorded id was gone) — one the original operator made, as that operator's fallback did.
pub fn deletable(candidates: &[Project], owner: &str, cluster_id: &str, stale: bool) -> Vec<Project> {
    candidates
        .iter()
        .filter(|p| !p.is_removing() && p.cluster_id == cluster_id && !p.is_built_in())
        .filter(|p| match ownership(p, owner) {
            Ownership::Ours => true,
            Ownership::Original => stale,
            Ownership::Other(_) | Ownership::Foreign => false,
        })
        .cloned()
        .collect()
}

impl Pass<'_> {
    /// Step 1: the Rancher project, found by its recorded id, adopted or created, with the spec's metadata.
    pub async fn project(&mut self) {
        let plan = &self.plan;
        let spec = &plan.mrp.spec;
        if spec.project_name.trim().is_empty() || spec.cluster_id.trim().is_empty() {
            self.report.fail(
                RANCHER_PROJECT_READY,
                MrpError::InvalidSpec("projectName and clusterId must not be empty".into()),
            );
            self.report
                .wait(RESOURCE_QUOTA_READY, "waiting for the Rancher project");
            return;
        }
        let Some(rancher) = plan.controller.rancher.as_ref() else {
            self.report.fail(RANCHER_PROJECT_READY, MrpError::rancher_missing());
            self.report
                .wait(RESOURCE_QUOTA_READY, "waiting for the Rancher project");
            return;
        };
        let claimed = cluster_scope::claimed_projects(&plan.others);
        let resolved = match resolve(
            rancher,
            plan.mrp,
            plan.previous.rancher_project_id.as_deref(),
            &claimed,
            plan.translation.quotas.clone(),
        )
        .await
        {
            Ok(resolved) => resolved,
            Err(error) => {
                self.report.fail(RANCHER_PROJECT_READY, error);
                self.report
                    .wait(RESOURCE_QUOTA_READY, "waiting for the Rancher project");
                return;
            }
        };
        let id = resolved.project.id.clone();
        match resolved.how {
            Some(Found::Created) => self.report.note(
                "ProjectCreated",
                format!(
                    "created Rancher project {id} ({:?}) in cluster {}",
                    spec.project_name, spec.cluster_id
                ),
            ),
            Some(Found::Adopted(Adoption::Owned)) => {
                // Made by this object before its id reached the status (a crash, or a failed status write): found
                // again by its owner annotation rather than duplicated.
                tracing::info!(project = %id, "found this object's Rancher project by its owner annotation");
            }
            Some(Found::Adopted(how)) => {
                let why = match how {
                    Adoption::FromOriginalOperator => "the original rancher-keycloak-operator created it",
                    _ => "spec.adoptExistingProject allows it",
                };
                self.report.note(
                    "ProjectAdopted",
                    format!(
                        "took over the existing Rancher project {id} ({:?}): {why}",
                        spec.project_name
                    ),
                );
            }
            None => {}
        }
        let mut project = resolved.project;
        match sync_metadata(rancher, plan.mrp, project.clone()).await {
            Ok((updated, wrote)) => {
                project = updated;
                if wrote {
                    self.report.note(
                        "ProjectUpdated",
                        format!("updated the name, description or annotations of Rancher project {id}"),
                    );
                }
                self.report.ok(
                    RANCHER_PROJECT_READY,
                    "ProjectReady",
                    format!(
                        "Rancher project {id} ({:?}) exists in cluster {}",
                        spec.project_name, spec.cluster_id
                    ),
                );
            }
            Err(error) => self.report.fail(RANCHER_PROJECT_READY, error),
        }
        self.done.project = Some(project);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(id: &str, annotations: &[(&str, &str)]) -> Project {
        Project {
            id: id.into(),
            name: "Genomics".into(),
            cluster_id: "c-1".into(),
            annotations: annotations
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Project::default()
        }
    }

    fn wanted<'a>(claimed: &'a BTreeSet<String>, adopt: bool) -> Wanted<'a> {
        Wanted {
            owner: "waldur-system/genomics",
            cluster_id: "c-1",
            name: "Genomics",
            resource_project_uuid: Some("rp-1"),
            adopt_existing: adopt,
            claimed,
        }
    }

    #[test]
    fn nothing_named_so_means_create() {
        let claimed = BTreeSet::new();
        assert_eq!(choose(&[], &wanted(&claimed, false)), Choice::Create);
        let mut removing = project("c-1:p-old", &[]);
        removing.state = Some("removing".into());
        assert_eq!(choose(&[removing], &wanted(&claimed, false)), Choice::Create);
    }

    #[test]
    fn our_own_project_is_found_again_after_a_crash() {
        let claimed = BTreeSet::new();
        let ours = project("c-1:p-ours", &[(OWNER_ANNOTATION, "waldur-system/genomics")]);
        let foreign = project("c-1:p-aaaa", &[]);
        assert_eq!(
            choose(&[foreign, ours.clone()], &wanted(&claimed, false)),
            Choice::Use(Box::new(ours), Adoption::Owned)
        );
    }

    #[test]
    fn the_original_operators_project_is_taken_over_unless_it_names_another_waldur_project() {
        let claimed = BTreeSet::new();
        let original = project("c-1:p-orig", &[(MANAGED_ANNOTATION, "true")]);
        assert_eq!(
            choose(std::slice::from_ref(&original), &wanted(&claimed, false)),
            Choice::Use(Box::new(original), Adoption::FromOriginalOperator)
        );
        let other_rp = project(
            "c-1:p-orig",
            &[(MANAGED_ANNOTATION, "true"), (RESOURCE_PROJECT_UUID_ANNOTATION, "rp-2")],
        );
        assert!(matches!(
            choose(&[other_rp], &wanted(&claimed, false)),
            Choice::Refuse(_)
        ));
    }

    #[test]
    fn a_foreign_project_needs_explicit_adoption() {
        let claimed = BTreeSet::new();
        let foreign = project("c-1:p-hand", &[]);
        match choose(std::slice::from_ref(&foreign), &wanted(&claimed, false)) {
            Choice::Refuse(message) => {
                assert!(message.contains("adoptExistingProject"), "{message}");
                assert!(message.contains("c-1:p-hand"), "{message}");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert_eq!(
            choose(std::slice::from_ref(&foreign), &wanted(&claimed, true)),
            Choice::Use(Box::new(foreign), Adoption::Explicit)
        );
        let two = [project("c-1:p-a", &[]), project("c-1:p-b", &[])];
        assert!(matches!(choose(&two, &wanted(&claimed, true)), Choice::Refuse(_)));
    }

    #[test]
    fn projects_of_other_objects_are_never_taken() {
        let claimed = BTreeSet::from(["c-1:p-claimed".to_string()]);
        let owned_elsewhere = project("c-1:p-other", &[(OWNER_ANNOTATION, "waldur-system/other")]);
        let claimed_original = project("c-1:p-claimed", &[(MANAGED_ANNOTATION, "true")]);
        match choose(&[owned_elsewhere, claimed_original], &wanted(&claimed, true)) {
            Choice::Refuse(message) => assert!(message.contains("waldur-system/other"), "{message}"),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    fn mrp(spec: serde_json::Value) -> ManagedRancherProject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "waldur.io/v1alpha1", "kind": "ManagedRancherProject",
            "metadata": {"name": "genomics", "namespace": "waldur-system"},
            "spec": spec,
        }))
        .expect("valid object")
    }

    #[test]
    fn metadata_updates_only_what_differs() {
        let object = mrp(serde_json::json!({
            "projectName": "Genomics 2026", "clusterId": "c-1", "description": "d", "organization": "org",
        }));
        let mut current = project("c-1:p-x", &[]);
        current.name = "Genomics".into();
        let update = metadata_update(&object, &current);
        assert_eq!(update.name.as_deref(), Some("Genomics 2026"));
        assert_eq!(update.description.as_deref(), Some("d"));
        assert_eq!(
            update.annotations.get(OWNER_ANNOTATION),
            Some(&Some("waldur-system/genomics".to_string()))
        );
        assert!(
            !update.annotations.contains_key(PROJECT_SLUG_ANNOTATION),
            "absent and absent is no change"
        );

        let mut converged = current.clone();
        converged.name = "Genomics 2026".into();
        converged.description = Some("d".into());
        converged.annotations = desired_annotations(&object)
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect();
        assert!(metadata_update(&object, &converged).is_noop_for(&converged));
        converged
            .annotations
            .insert(PROJECT_SLUG_ANNOTATION.into(), "stale".into());
        assert_eq!(
            metadata_update(&object, &converged)
                .annotations
                .get(PROJECT_SLUG_ANNOTATION),
            Some(&None),
            "an annotation whose spec field went away is removed"
        );
    }

    #[test]
    fn a_project_the_original_made_is_stamped_only_with_a_change_the_spec_asks_for() {
        let object = mrp(serde_json::json!({
            "projectName": "Genomics 2026", "clusterId": "c-1", "description": "d", "organization": "org",
        }));
        let mut left = project("c-1:p-x", &[(MANAGED_ANNOTATION, "true")]);
        left.name = "Genomics 2026".into();
        left.description = Some("d".into());
        assert!(
            metadata_update(&object, &left).is_noop_for(&left),
            "taken over as it stands"
        );
        left.description = Some("old".into());
        let update = metadata_update(&object, &left);
        assert_eq!(update.description.as_deref(), Some("d"));
        assert_eq!(
            update.annotations.get(OWNER_ANNOTATION),
            Some(&Some("waldur-system/genomics".to_string())),
            "stamped with the first change"
        );
    }

    #[test]
    fn cleanup_deletes_only_owned_projects_and_the_originals_when_the_id_was_stale() {
        let ours = project("c-1:p-ours", &[(OWNER_ANNOTATION, "waldur-system/genomics")]);
        let original = project("c-1:p-orig", &[(MANAGED_ANNOTATION, "true")]);
        let foreign = project("c-1:p-hand", &[]);
        let all = [ours.clone(), original.clone(), foreign];
        assert_eq!(
            deletable(&all, "waldur-system/genomics", "c-1", false),
            vec![ours.clone()]
        );
        assert_eq!(
            deletable(&all, "waldur-system/genomics", "c-1", true),
            vec![ours, original]
        );
    }
}
