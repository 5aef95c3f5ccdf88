//! What travels to and from Rancher's v3 API: the resources the client reads, the requests it builds (pure
//! functions, unit-tested), and the quota keys norman understands.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value, json};

/// Annotation the original operator set on projects it created.
pub const MANAGED_ANNOTATION: &str = "waldur/managed";
/// Annotation holding the Waldur organization slug.
pub const ORGANIZATION_ANNOTATION: &str = "waldur/organization";
/// Annotation holding the Waldur project slug.
pub const PROJECT_SLUG_ANNOTATION: &str = "waldur/project_slug";

/// Norman's project quota keys, each with the Kubernetes ResourceQuota name it stands for.
pub const QUOTA_KEYS: [(&str, &str); 13] = [
    ("configMaps", "configmaps"),
    ("limitsCpu", "limits.cpu"),
    ("limitsMemory", "limits.memory"),
    ("persistentVolumeClaims", "persistentvolumeclaims"),
    ("pods", "pods"),
    ("replicationControllers", "replicationcontrollers"),
    ("requestsCpu", "requests.cpu"),
    ("requestsMemory", "requests.memory"),
    ("requestsStorage", "requests.storage"),
    ("secrets", "secrets"),
    ("services", "services"),
    ("servicesLoadBalancers", "services.loadbalancers"),
    ("servicesNodePorts", "services.nodeports"),
];

/// The field of a quota `limit` holding extended resources under their Kubernetes names (Rancher v2.14+), e.g.
/// `{"requests.nvidia.com/gpu": "4"}`; older Rancher versions prune it.
pub const EXTENDED_QUOTA_FIELD: &str = "extended";

/// Whether a Kubernetes ResourceQuota name is an extended resource (`requests.<domain>/<name>`, e.g.
/// `requests.nvidia.com/gpu`): Kubernetes allows only the `requests.` form for them, as they cannot be
/// overcommitted.
pub fn is_extended_quota_key(resource: &str) -> bool {
    resource
        .strip_prefix("requests.")
        .is_some_and(|name| name.contains('/') && !name.starts_with('/') && !name.ends_with('/'))
}

/// The norman quota key for a Kubernetes ResourceQuota name (`limits.cpu` → `limitsCpu`); `None` for names
/// Rancher project quotas cannot express (norman silently drops unknown keys, so they must not be sent).
pub fn norman_quota_key(resource: &str) -> Option<&'static str> {
    QUOTA_KEYS
        .iter()
        .find(|(_, name)| *name == resource)
        .map(|(key, _)| *key)
}

/// A Rancher project as the client sees it.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Project {
    /// `<clusterId>:<projectName>`, e.g. `c-m-abc:p-x7k2q`.
    pub id: String,
    /// The display name.
    #[serde(default)]
    pub name: String,
    /// The downstream cluster the project belongs to.
    #[serde(default)]
    pub cluster_id: String,
    /// Free text shown in the Rancher UI (the spec's description).
    #[serde(default)]
    pub description: Option<String>,
    /// `initializing`, `active`, `removing`, …
    #[serde(default)]
    pub state: Option<String>,
    /// Annotations, where ownership and provenance are recorded.
    #[serde(default, deserialize_with = "null_as_default")]
    pub annotations: BTreeMap<String, String>,
    /// Labels (Rancher marks its Default and System projects with one).
    #[serde(default, deserialize_with = "null_as_default")]
    pub labels: BTreeMap<String, String>,
    /// The project quota.
    #[serde(default)]
    pub resource_quota: Option<QuotaSpec>,
    /// The quota each namespace gets by default.
    #[serde(default)]
    pub namespace_default_resource_quota: Option<QuotaSpec>,
    /// When Rancher created it (RFC 3339).
    #[serde(default)]
    pub created: Option<String>,
}

impl Project {
    /// Whether Rancher is deleting it.
    pub fn is_removing(&self) -> bool {
        self.state.as_deref() == Some("removing")
    }

    /// The project name part of the id (`p-x7k2q`).
    pub fn project_name(&self) -> &str {
        self.id.split_once(':').map(|(_, name)| name).unwrap_or(&self.id)
    }

    /// The current quotas in the shape updates take, if the project has any.
    pub fn quotas(&self) -> Option<ProjectQuotas> {
        let project = self.resource_quota.as_ref()?;
        Some(ProjectQuotas {
            project: project.limit.clone(),
            namespace_default: self
                .namespace_default_resource_quota
                .as_ref()
                .map(|q| q.limit.clone())
                .unwrap_or_default(),
        })
    }
}

fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// `{limit: {limitsCpu: "4", extended: {"requests.nvidia.com/gpu": "2"}, …}}` (the `usedLimit` Rancher adds is
/// read but never sent). Both maps hold norman keys and, for extended resources, their Kubernetes names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuotaSpec {
    /// Quantities by norman key or extended resource name.
    #[serde(default, deserialize_with = "limit_entries")]
    pub limit: BTreeMap<String, String>,
    /// What the project's namespaces use, keyed likewise.
    #[serde(default, deserialize_with = "limit_entries")]
    pub used_limit: BTreeMap<String, String>,
}

/// Reads a quota `limit` into one map: norman's keys, and the entries of `extended` under their own names.
fn limit_entries<'de, D>(deserializer: D) -> Result<BTreeMap<String, String>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let raw: Option<Map<String, Value>> = Option::deserialize(deserializer)?;
    let mut entries = BTreeMap::new();
    for (key, value) in raw.unwrap_or_default() {
        match (key.as_str(), value) {
            (EXTENDED_QUOTA_FIELD, Value::Object(extended)) => {
                for (name, amount) in extended {
                    if let Value::String(amount) = amount {
                        entries.insert(name, amount);
                    }
                }
            }
            (_, Value::String(amount)) => {
                entries.insert(key, amount);
            }
            _ => {}
        }
    }
    Ok(entries)
}

/// A `limit` object for Rancher: extended resource names go under `extended`, `null` values (removals) too.
fn limit_body(entries: impl IntoIterator<Item = (String, Value)>) -> Value {
    let mut limit = Map::new();
    let mut extended = Map::new();
    for (key, value) in entries {
        if is_extended_quota_key(&key) {
            extended.insert(key, value);
        } else {
            limit.insert(key, value);
        }
    }
    if !extended.is_empty() {
        limit.insert(EXTENDED_QUOTA_FIELD.into(), Value::Object(extended));
    }
    Value::Object(limit)
}

/// A project quota and the per-namespace default Rancher requires alongside it (same keys in both).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProjectQuotas {
    /// The project's total, by norman key.
    pub project: BTreeMap<String, String>,
    /// Each namespace's default share, by norman key.
    pub namespace_default: BTreeMap<String, String>,
}

/// A project to create.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NewProject {
    /// The downstream cluster to create it in.
    pub cluster_id: String,
    /// The display name.
    pub name: String,
    /// Free text shown in the Rancher UI.
    pub description: Option<String>,
    /// Annotations, e.g. [`MANAGED_ANNOTATION`] and the owner's identity.
    pub annotations: BTreeMap<String, String>,
    /// Labels to put on the project.
    pub labels: BTreeMap<String, String>,
    /// Quotas, if any.
    pub quotas: Option<ProjectQuotas>,
}

/// The label Rancher puts on every cluster's System project.
pub const SYSTEM_PROJECT_LABEL: &str = "authz.management.cattle.io/system-project";
/// The label Rancher puts on every cluster's Default project.
pub const DEFAULT_PROJECT_LABEL: &str = "authz.management.cattle.io/default-project";

impl Project {
    /// Whether this is one of the projects Rancher makes in every cluster (System, Default): never adopted or
    /// deleted by the operator, whatever a spec says.
    pub fn is_built_in(&self) -> bool {
        let labelled = |label: &str| self.labels.get(label).is_some_and(|v| v == "true");
        labelled(SYSTEM_PROJECT_LABEL) || labelled(DEFAULT_PROJECT_LABEL)
    }
}

/// Changes to a project; anything left `None` (or empty) is left alone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProjectUpdate {
    /// A new display name.
    pub name: Option<String>,
    /// A new description.
    pub description: Option<String>,
    /// Annotations to set (`Some`) or remove (`None`); others are kept.
    pub annotations: BTreeMap<String, Option<String>>,
    /// `Some(Some(q))` makes the quotas exactly `q` (keys not in `q` are removed), `Some(None)` removes them.
    pub quotas: Option<Option<ProjectQuotas>>,
}

impl ProjectUpdate {
    /// Whether applying this to `current` would change nothing.
    pub fn is_noop_for(&self, current: &Project) -> bool {
        self.name.as_ref().is_none_or(|n| *n == current.name)
            && self
                .description
                .as_ref()
                .is_none_or(|d| Some(d) == current.description.as_ref())
            && self
                .annotations
                .iter()
                .all(|(k, v)| current.annotations.get(k) == v.as_ref())
            && self.quotas.as_ref().is_none_or(|q| *q == current.quotas())
    }
}

/// The body of `POST /v3/projects`.
pub fn create_project_body(project: &NewProject) -> Value {
    let mut body = Map::new();
    body.insert("type".into(), json!("project"));
    body.insert("clusterId".into(), json!(project.cluster_id));
    body.insert("name".into(), json!(project.name));
    if let Some(description) = &project.description {
        body.insert("description".into(), json!(description));
    }
    body.insert("annotations".into(), json!(project.annotations));
    body.insert("labels".into(), json!(project.labels));
    if let Some(quotas) = &project.quotas {
        let limit = |entries: &BTreeMap<String, String>| limit_body(entries.iter().map(|(k, v)| (k.clone(), json!(v))));
        body.insert("resourceQuota".into(), json!({"limit": limit(&quotas.project)}));
        body.insert(
            "namespaceDefaultResourceQuota".into(),
            json!({"limit": limit(&quotas.namespace_default)}),
        );
    }
    Value::Object(body)
}

/// The body of `PUT /v3/projects/<id>`, written for norman's merge: annotations go as the complete map (norman
/// replaces user-set keys with the body's), and quota keys to drop are sent as `null` (an absent key would be
/// kept).
pub fn update_project_body(current: &Project, update: &ProjectUpdate) -> Value {
    let mut body = Map::new();
    if let Some(name) = &update.name {
        body.insert("name".into(), json!(name));
    }
    if let Some(description) = &update.description {
        body.insert("description".into(), json!(description));
    }
    if !update.annotations.is_empty() {
        let mut annotations = current.annotations.clone();
        for (key, value) in &update.annotations {
            match value {
                Some(value) => annotations.insert(key.clone(), value.clone()),
                None => annotations.remove(key),
            };
        }
        body.insert("annotations".into(), json!(annotations));
    }
    match &update.quotas {
        None => {}
        Some(None) => {
            body.insert("resourceQuota".into(), Value::Null);
            body.insert("namespaceDefaultResourceQuota".into(), Value::Null);
        }
        Some(Some(quotas)) => {
            let old = current.quotas().unwrap_or_default();
            body.insert(
                "resourceQuota".into(),
                json!({"limit": limit_with_removals(&old.project, &quotas.project)}),
            );
            body.insert(
                "namespaceDefaultResourceQuota".into(),
                json!({"limit": limit_with_removals(&old.namespace_default, &quotas.namespace_default)}),
            );
        }
    }
    Value::Object(body)
}

fn limit_with_removals(old: &BTreeMap<String, String>, new: &BTreeMap<String, String>) -> Value {
    let kept = new.iter().map(|(k, v)| (k.clone(), json!(v)));
    let removed = old
        .keys()
        .filter(|k| !new.contains_key(*k))
        .map(|k| (k.clone(), Value::Null));
    limit_body(kept.chain(removed))
}

/// Who a role template binding grants to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Subject {
    /// An external group principal, e.g. `keycloakoidc_group://<name>`.
    GroupPrincipal(String),
    /// An external user principal, e.g. `keycloakoidc_user://<id>`.
    UserPrincipal(String),
    /// A Rancher user id (`u-xxxxx`).
    User(String),
    /// A Rancher group id.
    Group(String),
}

impl Subject {
    /// The principal of a Keycloak group as Rancher's Keycloak OIDC provider names it (by group name).
    pub fn keycloak_group(name: &str) -> Self {
        Subject::GroupPrincipal(format!("keycloakoidc_group://{name}"))
    }

    /// The principal of a Keycloak user (by Keycloak user id).
    pub fn keycloak_user(id: &str) -> Self {
        Subject::UserPrincipal(format!("keycloakoidc_user://{id}"))
    }

    /// The body and filter field this subject goes in.
    pub fn field(&self) -> &'static str {
        match self {
            Subject::GroupPrincipal(_) => "groupPrincipalId",
            Subject::UserPrincipal(_) => "userPrincipalId",
            Subject::User(_) => "userId",
            Subject::Group(_) => "groupId",
        }
    }

    /// The principal or id the binding names.
    pub fn value(&self) -> &str {
        match self {
            Subject::GroupPrincipal(v) | Subject::UserPrincipal(v) | Subject::User(v) | Subject::Group(v) => v,
        }
    }
}

/// What a role template binding is attached to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum BindingTarget {
    /// A project, by id (`<clusterId>:<projectName>`): a ProjectRoleTemplateBinding.
    Project(String),
    /// A cluster, by id: a ClusterRoleTemplateBinding.
    Cluster(String),
}

impl BindingTarget {
    /// The collection path segment.
    pub fn collection(&self) -> &'static str {
        match self {
            BindingTarget::Project(_) => "projectroletemplatebindings",
            BindingTarget::Cluster(_) => "clusterroletemplatebindings",
        }
    }

    /// The norman type.
    pub fn type_name(&self) -> &'static str {
        match self {
            BindingTarget::Project(_) => "projectRoleTemplateBinding",
            BindingTarget::Cluster(_) => "clusterRoleTemplateBinding",
        }
    }

    /// The field naming the target.
    pub fn field(&self) -> &'static str {
        match self {
            BindingTarget::Project(_) => "projectId",
            BindingTarget::Cluster(_) => "clusterId",
        }
    }

    /// The target's id.
    pub fn id(&self) -> &str {
        match self {
            BindingTarget::Project(id) | BindingTarget::Cluster(id) => id,
        }
    }
}

/// A project or cluster role template binding.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoleBinding {
    /// Opaque id, `<namespace>:prtb-…` or `<clusterId>:crtb-…`.
    pub id: String,
    /// `metadata.name`.
    #[serde(default)]
    pub name: String,
    /// The role template granted, e.g. `project-member`.
    #[serde(default)]
    pub role_template_id: String,
    /// The project (PRTBs).
    #[serde(default)]
    pub project_id: Option<String>,
    /// The cluster (CRTBs).
    #[serde(default)]
    pub cluster_id: Option<String>,
    /// Subject: group principal.
    #[serde(default)]
    pub group_principal_id: Option<String>,
    /// Subject: user principal.
    #[serde(default)]
    pub user_principal_id: Option<String>,
    /// Subject: Rancher user.
    #[serde(default)]
    pub user_id: Option<String>,
    /// Subject: Rancher group.
    #[serde(default)]
    pub group_id: Option<String>,
    /// Annotations; [`CREATED_BY_ANNOTATION`] marks the bindings the operator made.
    #[serde(default, deserialize_with = "null_as_default")]
    pub annotations: BTreeMap<String, String>,
}

/// Annotation on the role template bindings the operator creates: only those are ever deleted by it (a binding
/// of the same group and role made by someone else is used, never removed).
pub const CREATED_BY_ANNOTATION: &str = "waldur.io/created-by";
/// Its value.
pub const CREATED_BY: &str = "platform-operator";

impl RoleBinding {
    /// Whether the operator created this binding.
    pub fn made_by_operator(&self) -> bool {
        self.annotations.get(CREATED_BY_ANNOTATION).map(String::as_str) == Some(CREATED_BY)
    }

    /// Whether this binding is exactly `role` for `subject` on `target`.
    pub fn is_for(&self, target: &BindingTarget, role: &str, subject: &Subject) -> bool {
        let on_target = match target {
            BindingTarget::Project(id) => self.project_id.as_deref() == Some(id),
            BindingTarget::Cluster(id) => self.cluster_id.as_deref() == Some(id),
        };
        let value = match subject {
            Subject::GroupPrincipal(_) => &self.group_principal_id,
            Subject::UserPrincipal(_) => &self.user_principal_id,
            Subject::User(_) => &self.user_id,
            Subject::Group(_) => &self.group_id,
        };
        on_target && self.role_template_id == role && value.as_deref() == Some(subject.value())
    }
}

/// The JSON body creating a binding of `subject` to `target` with `role`.
pub fn create_binding_body(target: &BindingTarget, role: &str, subject: &Subject) -> Value {
    json!({
        "type": target.type_name(),
        target.field(): target.id(),
        "roleTemplateId": role,
        subject.field(): subject.value(),
        "annotations": {CREATED_BY_ANNOTATION: CREATED_BY},
    })
}

/// The exact-match filters that find a binding (norman ANDs them).
pub fn binding_filters(target: &BindingTarget, role: &str, subject: &Subject) -> Vec<(&'static str, String)> {
    vec![
        (target.field(), target.id().to_string()),
        ("roleTemplateId", role.to_string()),
        (subject.field(), subject.value().to_string()),
    ]
}

/// A namespace of a downstream cluster, as the norman cluster API shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Namespace {
    /// The namespace name (its id).
    pub id: String,
    /// The name as Kubernetes knows it (the same as the id).
    #[serde(default)]
    pub name: String,
    /// The project it belongs to, if any.
    #[serde(default)]
    pub project_id: Option<String>,
    /// `active`, `removing`, …
    #[serde(default)]
    pub state: Option<String>,
}

/// A downstream cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cluster {
    /// The cluster id, e.g. `c-m-abc123` (what specs name).
    pub id: String,
    /// The display name.
    #[serde(default)]
    pub name: String,
    /// `active`, `provisioning`, …
    #[serde(default)]
    pub state: Option<String>,
}

/// A page of a norman collection.
#[derive(Clone, Debug, Deserialize)]
pub struct Collection<T> {
    /// The items.
    #[serde(default = "Vec::new")]
    pub data: Vec<T>,
    /// Paging information.
    #[serde(default)]
    pub pagination: Option<Pagination>,
}

/// Norman paging: when `partial`, `next` is the URL of the following page.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Pagination {
    /// Whether more items follow.
    #[serde(default)]
    pub partial: bool,
    /// The next page's URL.
    #[serde(default)]
    pub next: Option<String>,
}

impl Pagination {
    /// The marker of the next page, taken from `next` (the URL's host may not be ours, e.g. behind a proxy).
    pub fn next_marker(&self) -> Option<String> {
        if !self.partial {
            return None;
        }
        let next = url::Url::parse(self.next.as_deref()?).ok()?;
        next.query_pairs()
            .find(|(k, _)| k == "marker")
            .map(|(_, v)| v.into_owned())
    }
}

/// The short explanation of a Rancher error body for messages: `Code: message` from norman errors, the
/// message of the odd 401 body or of a Kubernetes Status.
pub fn explain_error(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let message = value.get("message").and_then(Value::as_str).filter(|m| !m.is_empty());
    let code = value.get("code").and_then(Value::as_str).filter(|c| !c.is_empty());
    let field = value.get("fieldName").and_then(Value::as_str);
    match (code, message, field) {
        (Some(code), Some(message), _) if value.get("kind").is_none() => Some(format!("{code}: {message}")),
        (Some(code), None, Some(field)) => Some(format!("{code}: {field}")),
        (_, Some(message), _) => Some(message.to_string()),
        (Some(code), None, None) => Some(code.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn create_body_carries_type_cluster_name_annotations_and_both_quotas() {
        let project = NewProject {
            cluster_id: "c-m-1".into(),
            name: "Genomics 2026".into(),
            description: Some("d".into()),
            annotations: limits(&[(MANAGED_ANNOTATION, "true")]),
            labels: BTreeMap::new(),
            quotas: Some(ProjectQuotas {
                project: limits(&[("limitsCpu", "4000m")]),
                namespace_default: limits(&[("limitsCpu", "4000m")]),
            }),
        };
        assert_eq!(
            create_project_body(&project),
            json!({
                "type": "project", "clusterId": "c-m-1", "name": "Genomics 2026", "description": "d",
                "annotations": {"waldur/managed": "true"}, "labels": {},
                "resourceQuota": {"limit": {"limitsCpu": "4000m"}},
                "namespaceDefaultResourceQuota": {"limit": {"limitsCpu": "4000m"}},
            })
        );
    }

    fn current() -> Project {
        Project {
            id: "c:p-abcde".into(),
            name: "old".into(),
            cluster_id: "c".into(),
            annotations: limits(&[
                ("waldur/managed", "true"),
                ("someone/else", "keep"),
                ("field.cattle.io/creatorId", "u"),
            ]),
            resource_quota: Some(QuotaSpec {
                limit: limits(&[("limitsCpu", "2"), ("pods", "10")]),
                ..QuotaSpec::default()
            }),
            namespace_default_resource_quota: Some(QuotaSpec {
                limit: limits(&[("limitsCpu", "1"), ("pods", "5")]),
                ..QuotaSpec::default()
            }),
            ..Project::default()
        }
    }

    #[test]
    fn update_body_sends_full_annotations_and_nulls_removed_quota_keys() {
        let update = ProjectUpdate {
            name: Some("new".into()),
            annotations: BTreeMap::from([
                ("waldur/organization".to_string(), Some("org".to_string())),
                ("waldur/managed".to_string(), None),
            ]),
            quotas: Some(Some(ProjectQuotas {
                project: limits(&[("limitsCpu", "4")]),
                namespace_default: limits(&[("limitsCpu", "4")]),
            })),
            ..ProjectUpdate::default()
        };
        assert_eq!(
            update_project_body(&current(), &update),
            json!({
                "name": "new",
                "annotations": {"someone/else": "keep", "field.cattle.io/creatorId": "u", "waldur/organization": "org"},
                "resourceQuota": {"limit": {"limitsCpu": "4", "pods": null}},
                "namespaceDefaultResourceQuota": {"limit": {"limitsCpu": "4", "pods": null}},
            })
        );
    }

    #[test]
    fn update_body_clears_quotas_with_nulls_and_leaves_out_untouched_fields() {
        let update = ProjectUpdate {
            quotas: Some(None),
            ..ProjectUpdate::default()
        };
        assert_eq!(
            update_project_body(&current(), &update),
            json!({"resourceQuota": null, "namespaceDefaultResourceQuota": null})
        );
        assert_eq!(update_project_body(&current(), &ProjectUpdate::default()), json!({}));
        assert!(ProjectUpdate::default().is_noop_for(&current()));
        let same_name = ProjectUpdate {
            name: Some("old".into()),
            ..ProjectUpdate::default()
        };
        assert!(same_name.is_noop_for(&current()));
    }

    #[test]
    fn binding_requests_name_exactly_one_subject_and_mark_the_operator_as_creator() {
        let target = BindingTarget::Project("c:p-abcde".into());
        let subject = Subject::keycloak_group("team a");
        assert_eq!(
            create_binding_body(&target, "project-member", &subject),
            json!({"type": "projectRoleTemplateBinding", "projectId": "c:p-abcde", "roleTemplateId": "project-member",
                   "groupPrincipalId": "keycloakoidc_group://team a",
                   "annotations": {"waldur.io/created-by": "platform-operator"}})
        );
        assert_eq!(
            binding_filters(
                &BindingTarget::Cluster("c".into()),
                "cluster-owner",
                &Subject::User("u-1".into())
            ),
            vec![
                ("clusterId", "c".to_string()),
                ("roleTemplateId", "cluster-owner".to_string()),
                ("userId", "u-1".to_string())
            ]
        );
    }

    #[test]
    fn quota_keys_translate_from_kubernetes_names() {
        assert_eq!(norman_quota_key("limits.cpu"), Some("limitsCpu"));
        assert_eq!(norman_quota_key("requests.storage"), Some("requestsStorage"));
        assert_eq!(norman_quota_key("requests.nvidia.com/gpu"), None);
    }

    #[test]
    fn next_marker_comes_from_the_next_link() {
        let pagination = Pagination {
            partial: true,
            next: Some("https://elsewhere/v3/projects?limit=2&marker=c%3Ap-x".into()),
        };
        assert_eq!(pagination.next_marker().as_deref(), Some("c:p-x"));
        assert_eq!(
            Pagination {
                partial: false,
                next: None
            }
            .next_marker(),
            None
        );
    }

    #[test]
    fn error_bodies_are_summarized_without_the_body() {
        let norman = br#"{"baseType":"error","code":"NotFound","message":"projects.management.cattle.io \"p-x\" not found","status":404,"type":"error"}"#;
        assert_eq!(
            explain_error(norman).as_deref(),
            Some("NotFound: projects.management.cattle.io \"p-x\" not found")
        );
        let unauthorized = br#"{"type":"error","status":"401","message":"must authenticate"}"#;
        assert_eq!(explain_error(unauthorized).as_deref(), Some("must authenticate"));
        let missing = br#"{"baseType":"error","code":"MissingRequired","fieldName":"name","message":"","status":422,"type":"error"}"#;
        assert_eq!(explain_error(missing).as_deref(), Some("MissingRequired: name"));
        let status = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"namespaces \"x\" already exists","reason":"AlreadyExists","code":409}"#;
        assert_eq!(
            explain_error(status).as_deref(),
            Some("namespaces \"x\" already exists")
        );
        assert_eq!(explain_error(b"<html>"), None);
    }
}
