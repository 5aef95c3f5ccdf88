//! The emulator's state: clusters, projects, namespaces, role template bindings, role templates and tokens, and
//! the seeds tests create them from.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use chrono::{DateTime, SecondsFormat, Utc};
use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::config::{ApiToken, BackingNamespaceStyle, ClusterSeed, DuplicateBindingPolicy, RancherConfig};

/// The characters Kubernetes' name generator uses (no vowels, no look-alikes); Rancher's `p-xxxxx`,
/// `prtb-xxxxx` and `crtb-xxxxx` names come from it.
pub const NAME_ALPHABET: &[u8; 27] = b"bcdfghjklmnpqrstvwxz2456789";

/// Namespace annotation naming the project a namespace belongs to (`<clusterId>:<projectName>`).
pub const PROJECT_ID_ANNOTATION: &str = "field.cattle.io/projectId";
/// Namespace label Rancher adds with the project name alone.
pub const PROJECT_ID_LABEL: &str = "field.cattle.io/projectId";
/// Namespace quota annotation (a JSON string `{"limit":{…}}`).
pub const RESOURCE_QUOTA_ANNOTATION: &str = "field.cattle.io/resourceQuota";
/// Namespace container default limit annotation (a JSON string).
pub const CONTAINER_LIMIT_ANNOTATION: &str = "field.cattle.io/containerDefaultResourceLimit";
/// Namespace description annotation.
pub const DESCRIPTION_ANNOTATION: &str = "field.cattle.io/description";
/// Set on objects created through norman; such namespaces are deleted with their project.
pub const CREATOR_ID_ANNOTATION: &str = "field.cattle.io/creatorId";
/// Namespaces with this annotation are hidden from norman namespace lists.
pub const SYSTEM_NAMESPACE_ANNOTATION: &str = "management.cattle.io/system-namespace";
/// Label of the System project (which cannot be deleted).
pub const SYSTEM_PROJECT_LABEL: &str = "authz.management.cattle.io/system-project";
/// Label of the Default project.
pub const DEFAULT_PROJECT_LABEL: &str = "authz.management.cattle.io/default-project";

/// A downstream cluster.
#[derive(Clone, Debug)]
pub struct Cluster {
    /// The id, e.g. `c-m-abcd1234`.
    pub id: String,
    /// The display name.
    pub name: String,
    /// Creation time.
    pub created: DateTime<Utc>,
    /// A UUID.
    pub uuid: String,
}

/// A project.
#[derive(Clone, Debug)]
pub struct Project {
    /// The cluster it belongs to.
    pub cluster_id: String,
    /// `metadata.name`, `p-xxxxx`.
    pub name: String,
    /// The norman fields that PUT can change: `name` (the display name), `description`, `resourceQuota`,
    /// `namespaceDefaultResourceQuota`, `containerDefaultResourceLimit`.
    pub fields: Map<String, Value>,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    pub annotations: BTreeMap<String, String>,
    /// Creation time.
    pub created: DateTime<Utc>,
    /// A UUID.
    pub uuid: String,
    /// The user who created it.
    pub creator_id: String,
    /// `status.backingNamespace`: the namespace its PRTBs live in.
    pub backing_namespace: String,
    /// When it was deleted; it disappears `project_removal_delay` later.
    pub removing_since: Option<Instant>,
}

impl Project {
    /// The norman id, `<clusterId>:<name>`.
    pub fn id(&self) -> String {
        format!("{}:{}", self.cluster_id, self.name)
    }

    /// The display name.
    pub fn display_name(&self) -> &str {
        self.fields.get("name").and_then(Value::as_str).unwrap_or_default()
    }

    /// Whether this is the cluster's System project.
    pub fn is_system(&self) -> bool {
        self.labels.get(SYSTEM_PROJECT_LABEL).map(String::as_str) == Some("true")
    }
}

/// A namespace of a downstream cluster; the norman view derives from its annotations.
#[derive(Clone, Debug)]
pub struct Namespace {
    /// The cluster.
    pub cluster_id: String,
    /// The name (also its norman id).
    pub name: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    pub annotations: BTreeMap<String, String>,
    /// Creation time.
    pub created: DateTime<Utc>,
    /// `metadata.uid`.
    pub uuid: String,
    /// `metadata.resourceVersion`.
    pub resource_version: u64,
}

impl Namespace {
    /// The project it belongs to, from the annotation.
    pub fn project_id(&self) -> Option<&str> {
        self.annotations
            .get(PROJECT_ID_ANNOTATION)
            .map(String::as_str)
            .filter(|p| !p.is_empty())
    }

    /// Whether norman hides it.
    pub fn is_system(&self) -> bool {
        self.annotations.get(SYSTEM_NAMESPACE_ANNOTATION).map(String::as_str) == Some("true")
    }

    /// A JSON annotation (quota, container limit) parsed.
    pub fn json_annotation(&self, key: &str) -> Value {
        self.annotations
            .get(key)
            .and_then(|raw| serde_json::from_str(raw).ok())
            .unwrap_or(Value::Null)
    }
}

/// The subject fields of a role template binding, in the order Rancher checks them.
pub const SUBJECT_FIELDS: [&str; 4] = ["userId", "userPrincipalId", "groupId", "groupPrincipalId"];

/// A project or cluster role template binding.
#[derive(Clone, Debug)]
pub struct Binding {
    /// `projectId` of a PRTB or `clusterId` of a CRTB.
    pub target: String,
    /// The Kubernetes namespace it lives in: a project's backing namespace, or the cluster id.
    pub namespace: String,
    /// `metadata.name`, e.g. `prtb-xxxxx`.
    pub name: String,
    /// The role template.
    pub role_template_id: String,
    /// Set subject fields (`userId`, `userPrincipalId`, `groupId`, `groupPrincipalId`).
    pub subjects: BTreeMap<String, String>,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    pub annotations: BTreeMap<String, String>,
    /// Creation time.
    pub created: DateTime<Utc>,
    /// A UUID.
    pub uuid: String,
    /// The user who created it.
    pub creator_id: String,
}

impl Binding {
    /// The norman id, `<namespace>:<name>`.
    pub fn id(&self) -> String {
        format!("{}:{}", self.namespace, self.name)
    }

    /// Whether two bindings give the same role to the same subject (the ≥ 2.14 duplicate rule).
    pub fn duplicates(&self, role_template_id: &str, subjects: &BTreeMap<String, String>) -> bool {
        self.role_template_id == role_template_id
            && subjects
                .iter()
                .any(|(field, value)| self.subjects.get(field) == Some(value))
    }
}

/// A role template.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoleTemplateSeed {
    /// The id, e.g. `project-member`.
    pub id: String,
    /// `project` or `cluster`.
    pub context: String,
    /// Locked templates cannot be assigned.
    #[serde(default)]
    pub locked: bool,
    /// The display name (defaults to the id).
    #[serde(default)]
    pub display_name: Option<String>,
}

impl RoleTemplateSeed {
    /// A template of `context` (`project` or `cluster`).
    pub fn new(id: &str, context: &str) -> Self {
        Self {
            id: id.to_string(),
            context: context.to_string(),
            locked: false,
            display_name: None,
        }
    }
}

/// A project to create directly, bypassing the API (e.g. one "someone else" made).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectSeed {
    /// The cluster.
    pub cluster_id: String,
    /// The display name.
    pub name: String,
    /// The description.
    #[serde(default)]
    pub description: Option<String>,
    /// Annotations.
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    /// Labels.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// `resourceQuota` as norman renders it.
    #[serde(default)]
    pub resource_quota: Option<Value>,
    /// `namespaceDefaultResourceQuota` as norman renders it.
    #[serde(default)]
    pub namespace_default_resource_quota: Option<Value>,
}

/// A namespace to create directly.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceSeed {
    /// The cluster.
    pub cluster_id: String,
    /// The name.
    pub name: String,
    /// The project (`<clusterId>:<projectName>`), if any.
    #[serde(default)]
    pub project_id: Option<String>,
    /// Annotations.
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    /// Labels.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Whether it is a system namespace (hidden from norman lists).
    #[serde(default)]
    pub system: bool,
}

/// Why a seed was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SeedError {
    /// The cluster does not exist.
    #[error("cluster {0} does not exist")]
    UnknownCluster(String),
    /// The project does not exist.
    #[error("project {0} does not exist")]
    UnknownProject(String),
    /// The name is taken.
    #[error("{0} already exists")]
    Exists(String),
}

/// Everything the emulator holds.
pub struct State {
    /// Clusters by id.
    pub clusters: BTreeMap<String, Cluster>,
    /// Projects by id.
    pub projects: BTreeMap<String, Project>,
    /// Namespaces by (cluster, name).
    pub namespaces: BTreeMap<(String, String), Namespace>,
    /// PRTBs by id.
    pub prtbs: BTreeMap<String, Binding>,
    /// CRTBs by id.
    pub crtbs: BTreeMap<String, Binding>,
    /// Role templates by id.
    pub role_templates: BTreeMap<String, RoleTemplateSeed>,
    /// Accepted API tokens.
    pub tokens: Vec<ApiToken>,
    /// The duplicate-binding switch.
    pub duplicate_bindings: DuplicateBindingPolicy,
    /// The backing-namespace naming switch.
    pub backing_namespaces: BackingNamespaceStyle,
    /// How long deleted projects linger as `removing`.
    pub project_removal_delay: Duration,
    /// Whether quotas keep `limit.extended` (Rancher v2.14+); off, it is pruned as older versions do.
    pub extended_quotas: bool,
    resource_version: u64,
}

/// Role templates every Rancher has (context `project` or `cluster`).
const BUILTIN_ROLE_TEMPLATES: [(&str, &str); 18] = [
    ("project-owner", "project"),
    ("project-member", "project"),
    ("read-only", "project"),
    ("create-ns", "project"),
    ("workloads-manage", "project"),
    ("workloads-view", "project"),
    ("secrets-manage", "project"),
    ("secrets-view", "project"),
    ("configmaps-manage", "project"),
    ("configmaps-view", "project"),
    ("services-manage", "project"),
    ("services-view", "project"),
    ("cluster-owner", "cluster"),
    ("cluster-member", "cluster"),
    ("projects-create", "cluster"),
    ("projects-view", "cluster"),
    ("nodes-view", "cluster"),
    ("nodes-manage", "cluster"),
];

/// Namespaces Rancher puts in the System project.
const SYSTEM_NAMESPACES: [&str; 4] = ["kube-system", "kube-public", "kube-node-lease", "cattle-system"];

impl State {
    /// The state described by `config`: its clusters (with Default and System projects), tokens and the
    /// built-in role templates.
    pub fn new(config: &RancherConfig) -> Self {
        let mut state = State {
            clusters: BTreeMap::new(),
            projects: BTreeMap::new(),
            namespaces: BTreeMap::new(),
            prtbs: BTreeMap::new(),
            crtbs: BTreeMap::new(),
            role_templates: BTreeMap::new(),
            tokens: config.tokens.clone(),
            duplicate_bindings: config.duplicate_bindings,
            extended_quotas: true,
            backing_namespaces: config.backing_namespaces,
            project_removal_delay: config.project_removal_delay,
            resource_version: 1,
        };
        for (id, context) in BUILTIN_ROLE_TEMPLATES {
            state
                .role_templates
                .insert(id.to_string(), RoleTemplateSeed::new(id, context));
        }
        for cluster in &config.clusters {
            state.add_cluster(cluster);
        }
        state
    }

    /// The next namespace resourceVersion.
    pub fn next_resource_version(&mut self) -> u64 {
        self.resource_version += 1;
        self.resource_version
    }

    /// Adds a cluster (replacing none), with its Default and System projects when asked.
    pub fn add_cluster(&mut self, seed: &ClusterSeed) {
        if self.clusters.contains_key(&seed.id) {
            return;
        }
        self.clusters.insert(
            seed.id.clone(),
            Cluster {
                id: seed.id.clone(),
                name: seed.name.clone(),
                created: Utc::now(),
                uuid: random_uuid(),
            },
        );
        if !seed.default_projects {
            return;
        }
        let default = ProjectSeed {
            cluster_id: seed.id.clone(),
            name: "Default".into(),
            description: Some("Default project created for the cluster".into()),
            labels: BTreeMap::from([(DEFAULT_PROJECT_LABEL.to_string(), "true".to_string())]),
            ..ProjectSeed::default()
        };
        let system = ProjectSeed {
            cluster_id: seed.id.clone(),
            name: "System".into(),
            description: Some("System project created for the cluster".into()),
            labels: BTreeMap::from([(SYSTEM_PROJECT_LABEL.to_string(), "true".to_string())]),
            ..ProjectSeed::default()
        };
        // The cluster was inserted above, so seeding its projects and namespaces cannot fail.
        if let Ok(default_id) = self.add_project(&default, "user-admin") {
            let _ = self.add_namespace(&NamespaceSeed {
                cluster_id: seed.id.clone(),
                name: "default".into(),
                project_id: Some(default_id),
                ..NamespaceSeed::default()
            });
        }
        if let Ok(system_id) = self.add_project(&system, "user-admin") {
            for name in SYSTEM_NAMESPACES {
                let _ = self.add_namespace(&NamespaceSeed {
                    cluster_id: seed.id.clone(),
                    name: name.into(),
                    project_id: Some(system_id.clone()),
                    system: true,
                    ..NamespaceSeed::default()
                });
            }
        }
    }

    /// Adds a project without any checks but the cluster's existence; returns its id.
    pub fn add_project(&mut self, seed: &ProjectSeed, creator_id: &str) -> Result<String, SeedError> {
        if !self.clusters.contains_key(&seed.cluster_id) {
            return Err(SeedError::UnknownCluster(seed.cluster_id.clone()));
        }
        let name = loop {
            let candidate = generate_name("p-", 5);
            if !self.projects.contains_key(&format!("{}:{candidate}", seed.cluster_id)) {
                break candidate;
            }
        };
        let mut fields = Map::new();
        fields.insert("name".into(), Value::String(seed.name.clone()));
        fields.insert(
            "description".into(),
            Value::String(seed.description.clone().unwrap_or_default()),
        );
        if let Some(quota) = &seed.resource_quota {
            fields.insert("resourceQuota".into(), quota.clone());
        }
        if let Some(quota) = &seed.namespace_default_resource_quota {
            fields.insert("namespaceDefaultResourceQuota".into(), quota.clone());
        }
        let mut annotations = seed.annotations.clone();
        annotations
            .entry(CREATOR_ID_ANNOTATION.to_string())
            .or_insert_with(|| creator_id.to_string());
        let mut labels = seed.labels.clone();
        labels
            .entry("cattle.io/creator".to_string())
            .or_insert_with(|| "norman".to_string());
        let backing_namespace = match self.backing_namespaces {
            BackingNamespaceStyle::Cluster => format!("{}-{name}", seed.cluster_id),
            BackingNamespaceStyle::Legacy => name.clone(),
        };
        let project = Project {
            cluster_id: seed.cluster_id.clone(),
            name,
            fields,
            labels,
            annotations,
            created: Utc::now(),
            uuid: random_uuid(),
            creator_id: creator_id.to_string(),
            backing_namespace,
            removing_since: None,
        };
        let id = project.id();
        self.projects.insert(id.clone(), project);
        Ok(id)
    }

    /// Adds a namespace directly (annotations and label for its project are set as Rancher would).
    pub fn add_namespace(&mut self, seed: &NamespaceSeed) -> Result<(), SeedError> {
        if !self.clusters.contains_key(&seed.cluster_id) {
            return Err(SeedError::UnknownCluster(seed.cluster_id.clone()));
        }
        let key = (seed.cluster_id.clone(), seed.name.clone());
        if self.namespaces.contains_key(&key) {
            return Err(SeedError::Exists(format!("namespace {}", seed.name)));
        }
        let mut annotations = seed.annotations.clone();
        if let Some(project_id) = &seed.project_id {
            if !self.projects.contains_key(project_id) {
                return Err(SeedError::UnknownProject(project_id.clone()));
            }
            annotations.insert(PROJECT_ID_ANNOTATION.to_string(), project_id.clone());
        }
        if seed.system {
            annotations.insert(SYSTEM_NAMESPACE_ANNOTATION.to_string(), "true".to_string());
        }
        let resource_version = self.next_resource_version();
        let mut namespace = Namespace {
            cluster_id: seed.cluster_id.clone(),
            name: seed.name.clone(),
            labels: seed.labels.clone(),
            annotations,
            created: Utc::now(),
            uuid: random_uuid(),
            resource_version,
        };
        sync_project_label(&mut namespace);
        self.namespaces.insert(key, namespace);
        Ok(())
    }

    /// Adds or replaces a role template.
    pub fn add_role_template(&mut self, seed: RoleTemplateSeed) {
        self.role_templates.insert(seed.id.clone(), seed);
    }

    /// The user a token authenticates, if any token matches.
    pub fn user_for(&self, access_key: &str, secret: &str) -> Option<String> {
        self.tokens
            .iter()
            .find(|t| t.access_key == access_key && t.secret == secret)
            .map(|t| t.user_id.clone())
    }

    /// Finishes project deletions whose grace period passed: the project and its bindings go; namespaces
    /// created through norman go with it, others are detached ("Not in a Project").
    pub fn purge_removed_projects(&mut self, now: Instant) {
        let due: Vec<String> = self
            .projects
            .iter()
            .filter(|(_, p)| {
                p.removing_since
                    .is_some_and(|since| now.duration_since(since) >= self.project_removal_delay)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            let Some(project) = self.projects.remove(&id) else {
                continue;
            };
            self.prtbs.retain(|_, b| b.target != id);
            let members: Vec<(String, String)> = self
                .namespaces
                .iter()
                .filter(|(_, ns)| ns.project_id() == Some(id.as_str()))
                .map(|(key, _)| key.clone())
                .collect();
            for key in members {
                let created_by_norman = self
                    .namespaces
                    .get(&key)
                    .is_some_and(|ns| ns.annotations.contains_key(CREATOR_ID_ANNOTATION));
                if created_by_norman {
                    self.namespaces.remove(&key);
                    continue;
                }
                let resource_version = self.next_resource_version();
                if let Some(ns) = self.namespaces.get_mut(&key) {
                    ns.annotations.remove(PROJECT_ID_ANNOTATION);
                    ns.labels.remove(PROJECT_ID_LABEL);
                    ns.resource_version = resource_version;
                }
            }
            tracing::debug!(project = %project.id(), "rancher emulator: project removed");
        }
    }
}

/// Keeps the `field.cattle.io/projectId` label in step with the annotation, as Rancher's controller does.
pub fn sync_project_label(namespace: &mut Namespace) {
    match namespace
        .project_id()
        .and_then(|id| id.split_once(':'))
        .map(|(_, name)| name.to_string())
    {
        Some(project_name) => {
            namespace.labels.insert(PROJECT_ID_LABEL.to_string(), project_name);
        }
        None => {
            namespace.labels.remove(PROJECT_ID_LABEL);
        }
    }
}

/// `prefix` plus `length` characters from the Kubernetes name generator's alphabet.
pub fn generate_name(prefix: &str, length: usize) -> String {
    let mut rng = rand::rng();
    let suffix: String = (0..length)
        .map(|_| NAME_ALPHABET[rng.random_range(0..NAME_ALPHABET.len())] as char)
        .collect();
    format!("{prefix}{suffix}")
}

/// A random version-4 UUID.
pub fn random_uuid() -> String {
    let bytes: [u8; 16] = rand::rng().random();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-4{}-a{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

/// RFC 3339 with second precision and `Z`, as Rancher renders `created`.
pub fn rfc3339(time: &DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Copies a string map into a JSON object.
pub fn string_map(map: &BTreeMap<String, String>) -> Value {
    Value::Object(map.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect())
}
