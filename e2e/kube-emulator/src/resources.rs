//! The catalogue of served resources: the built-in kinds and every established CRD.
//!
//! A [`ResourceDef`] carries what routing, discovery, tables, storage strategies and validation need to know
//! about one resource; the [`Registry`] maps `(group, resource)` to it.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::fields::Shape;
use super::validation::CrdValidator;

/// A group and plural resource name (`gizmos.hidden.example.com`; `configmaps` for core).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupResource {
    /// The API group; empty for core.
    pub group: String,
    /// The plural resource name.
    pub resource: String,
}

impl GroupResource {
    /// Builds a group-resource pair.
    pub fn new(group: &str, resource: &str) -> Self {
        GroupResource {
            group: group.to_string(),
            resource: resource.to_string(),
        }
    }
}

impl fmt::Display for GroupResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}", self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// The built-in kinds the emulator serves, which decide per-kind strategies (defaults, printers, deletes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuiltinKind {
    /// core/v1 Namespace.
    Namespace,
    /// core/v1 Secret.
    Secret,
    /// core/v1 ConfigMap.
    ConfigMap,
    /// core/v1 Service.
    Service,
    /// core/v1 ServiceAccount.
    ServiceAccount,
    /// core/v1 Event (also served as events.k8s.io/v1).
    Event,
    /// coordination.k8s.io/v1 Lease.
    Lease,
    /// rbac Role.
    Role,
    /// rbac RoleBinding.
    RoleBinding,
    /// rbac ClusterRole.
    ClusterRole,
    /// rbac ClusterRoleBinding.
    ClusterRoleBinding,
    /// apiextensions.k8s.io/v1 CustomResourceDefinition.
    CustomResourceDefinition,
    /// apps/v1 Deployment (stored and validated; no controller runs it).
    Deployment,
    /// admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (evaluated on writes, `admission_policy`).
    ValidatingAdmissionPolicy,
    /// admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding.
    ValidatingAdmissionPolicyBinding,
    /// authorization.k8s.io/v1 SelfSubjectAccessReview (create-only, not stored).
    SelfSubjectAccessReview,
    /// authorization.k8s.io/v1 SubjectAccessReview (create-only, not stored).
    SubjectAccessReview,
    /// authorization.k8s.io/v1 LocalSubjectAccessReview (create-only, not stored).
    LocalSubjectAccessReview,
    /// authorization.k8s.io/v1 SelfSubjectRulesReview (create-only, not stored).
    SelfSubjectRulesReview,
    /// authentication.k8s.io/v1 SelfSubjectReview (create-only, not stored).
    SelfSubjectReview,
    /// authentication.k8s.io/v1 TokenReview (create-only, not stored).
    TokenReview,
}

impl BuiltinKind {
    /// Whether the kind is a create-only review answered without storing anything.
    pub fn is_review(self) -> bool {
        matches!(
            self,
            BuiltinKind::SelfSubjectAccessReview
                | BuiltinKind::SubjectAccessReview
                | BuiltinKind::LocalSubjectAccessReview
                | BuiltinKind::SelfSubjectRulesReview
                | BuiltinKind::SelfSubjectReview
                | BuiltinKind::TokenReview
        )
    }
}

/// Where a resource comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Origin {
    /// A kind compiled into the server.
    Builtin(BuiltinKind),
    /// A custom resource served from the named CRD.
    Custom {
        /// `metadata.name` of the CRD.
        crd_name: String,
    },
}

/// One printer column of a CRD version (`additionalPrinterColumns`).
#[derive(Clone, Debug, PartialEq)]
pub struct PrinterColumn {
    /// The column header.
    pub name: String,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    pub column_type: String,
    /// The OpenAPI format hint.
    pub format: String,
    /// The description (defaulted from the JSONPath).
    pub description: String,
    /// 0 for the default view, higher for `-o wide`.
    pub priority: i64,
    /// The JSONPath, kubectl style (`.spec.size`).
    pub json_path: String,
}

/// One served version of a resource.
#[derive(Clone, Debug, PartialEq)]
pub struct VersionDef {
    /// The version name (`v1`).
    pub name: String,
    /// The version's `openAPIV3Schema`, for custom resources.
    pub schema: Option<Value>,
    /// Printer columns (custom resources).
    pub printer_columns: Vec<PrinterColumn>,
    /// Extra selectable field paths (`.spec.color`), custom resources only.
    pub selectable_fields: Vec<String>,
    /// The merge/ownership shape for server-side apply and managedFields (custom resources; built-in
    /// kinds use `Shape::builtin`).
    pub shape: Option<Arc<Shape>>,
}

/// Everything the server knows about one resource.
#[derive(Clone, Debug)]
pub struct ResourceDef {
    /// The API group.
    pub group: String,
    /// The plural name.
    pub plural: String,
    /// The singular name.
    pub singular: String,
    /// The Kind.
    pub kind: String,
    /// The list Kind.
    pub list_kind: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Short names (`cm`).
    pub short_names: Vec<String>,
    /// Categories (`all`).
    pub categories: Vec<String>,
    /// Served versions; the first is preferred.
    pub versions: Vec<VersionDef>,
    /// The version objects are stored in.
    pub storage_version: String,
    /// Whether a `/status` subresource exists.
    pub status_subresource: bool,
    /// `/scale` paths (spec replicas, status replicas, label selector) when a scale subresource exists.
    pub scale: Option<ScaleDef>,
    /// Built-in or custom.
    pub origin: Origin,
    /// A terminating CRD's resource: only delete, get, list and watch are served.
    pub terminating: bool,
    /// The compiled schema of the storage version (custom resources), built once per CRD write.
    pub validator: Option<Arc<CrdValidator>>,
}

/// The `/scale` subresource paths of a CRD.
#[derive(Clone, Debug, PartialEq)]
pub struct ScaleDef {
    /// `.spec.replicas`.
    pub spec_replicas_path: String,
    /// `.status.replicas`.
    pub status_replicas_path: String,
    /// `.status.selector`, optional.
    pub label_selector_path: Option<String>,
}

impl ResourceDef {
    /// The group-resource key.
    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(&self.group, &self.plural)
    }

    /// `group/version` (or `version` for core).
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{}", self.group, version)
        }
    }

    /// The built-in kind, if any.
    pub fn builtin(&self) -> Option<BuiltinKind> {
        match self.origin {
            Origin::Builtin(kind) => Some(kind),
            Origin::Custom { .. } => None,
        }
    }

    /// Whether this is a custom resource.
    pub fn is_custom(&self) -> bool {
        matches!(self.origin, Origin::Custom { .. })
    }

    /// The served version named `version`.
    pub fn version(&self, version: &str) -> Option<&VersionDef> {
        self.versions.iter().find(|v| v.name == version)
    }

    /// The discovery verbs, in the order kube-apiserver lists them.
    pub fn verbs(&self) -> Vec<&'static str> {
        if self.builtin().is_some_and(BuiltinKind::is_review) {
            return vec!["create"];
        }
        if self.terminating {
            return vec!["delete", "deletecollection", "get", "list", "watch"];
        }
        if self.is_custom() {
            vec![
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "create",
                "update",
                "watch",
            ]
        } else {
            vec![
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ]
        }
    }

    /// Whether `metadata.generation` is maintained (custom resources and CRDs).
    pub fn tracks_generation(&self) -> bool {
        self.is_custom()
            || matches!(
                self.builtin(),
                Some(BuiltinKind::CustomResourceDefinition | BuiltinKind::Deployment)
            )
    }

    /// Whether a PUT without `metadata.resourceVersion` is allowed.
    pub fn allows_unconditional_update(&self) -> bool {
        !(self.is_custom() || self.builtin() == Some(BuiltinKind::Lease))
    }

    /// Whether a PUT to a missing object creates it.
    pub fn allows_create_on_update(&self) -> bool {
        matches!(self.builtin(), Some(BuiltinKind::Lease | BuiltinKind::Event))
    }

    /// Whether an immediate DELETE answers with the object rather than a Status.
    pub fn returns_deleted_object(&self) -> bool {
        matches!(
            self.builtin(),
            Some(
                BuiltinKind::Namespace
                    | BuiltinKind::ServiceAccount
                    | BuiltinKind::Service
                    | BuiltinKind::CustomResourceDefinition
            )
        )
    }

    /// Whether strategic merge patch is accepted (built-in kinds only).
    pub fn accepts_strategic_merge(&self) -> bool {
        !self.is_custom()
    }
}

/// The resources currently served.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    by_resource: BTreeMap<GroupResource, Arc<ResourceDef>>,
}

impl Registry {
    /// The registry with every built-in kind.
    pub fn with_builtins() -> Self {
        let mut registry = Registry::default();
        for def in builtin_defs() {
            registry.insert(def);
        }
        registry
    }

    /// Adds or replaces a resource.
    pub fn insert(&mut self, def: ResourceDef) {
        self.by_resource.insert(def.group_resource(), Arc::new(def));
    }

    /// Removes a resource.
    pub fn remove(&mut self, gr: &GroupResource) -> Option<Arc<ResourceDef>> {
        self.by_resource.remove(gr)
    }

    /// The resource for a group and plural.
    pub fn get(&self, gr: &GroupResource) -> Option<&Arc<ResourceDef>> {
        self.by_resource.get(gr)
    }

    /// The resource serving `group/version` with this plural name, if the version is served.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceDef>> {
        let def = self.by_resource.get(&GroupResource::new(group, plural))?;
        def.version(version).map(|_| def.clone())
    }

    /// The resource serving `apiVersion` + `kind` (used by the garbage collector for owners).
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceDef>> {
        let (group, version) = split_api_version(api_version);
        self.by_resource
            .values()
            .find(|d| d.group == group && d.kind == kind && d.version(version).is_some())
            .cloned()
    }

    /// Every resource, ordered by group then plural.
    pub fn all(&self) -> impl Iterator<Item = &Arc<ResourceDef>> {
        self.by_resource.values()
    }
}

/// Splits `group/version` (or `v1`) into its parts.
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", api_version),
    }
}

struct BuiltinSpec {
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    singular: &'static str,
    kind: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
    status: bool,
    builtin: BuiltinKind,
}

const BUILTINS: &[BuiltinSpec] = &[
    BuiltinSpec {
        group: "admissionregistration.k8s.io",
        version: "v1",
        plural: "validatingadmissionpolicies",
        singular: "validatingadmissionpolicy",
        kind: "ValidatingAdmissionPolicy",
        namespaced: false,
        short_names: &[],
        categories: &["api-extensions"],
        status: true,
        builtin: BuiltinKind::ValidatingAdmissionPolicy,
    },
    BuiltinSpec {
        group: "admissionregistration.k8s.io",
        version: "v1",
        plural: "validatingadmissionpolicybindings",
        singular: "validatingadmissionpolicybinding",
        kind: "ValidatingAdmissionPolicyBinding",
        namespaced: false,
        short_names: &[],
        categories: &["api-extensions"],
        status: false,
        builtin: BuiltinKind::ValidatingAdmissionPolicyBinding,
    },
    BuiltinSpec {
        group: "",
        version: "v1",
        plural: "namespaces",
        singular: "namespace",
        kind: "Namespace",
        namespaced: false,
        short_names: &["ns"],
        categories: &[],
        status: true,
        builtin: BuiltinKind::Namespace,
    },
    BuiltinSpec {
        group: "",
        version: "v1",
        plural: "secrets",
        singular: "secret",
        kind: "Secret",
        namespaced: true,
        short_names: &[],
        categories: &[],
        status: false,
        builtin: BuiltinKind::Secret,
    },
    BuiltinSpec {
        group: "",
        version: "v1",
        plural: "configmaps",
        singular: "configmap",
        kind: "ConfigMap",
        namespaced: true,
        short_names: &["cm"],
        categories: &[],
        status: false,
        builtin: BuiltinKind::ConfigMap,
    },
    BuiltinSpec {
        group: "",
        version: "v1",
        plural: "services",
        singular: "service",
        kind: "Service",
        namespaced: true,
        short_names: &["svc"],
        categories: &["all"],
        status: true,
        builtin: BuiltinKind::Service,
    },
    BuiltinSpec {
        group: "",
        version: "v1",
        plural: "serviceaccounts",
        singular: "serviceaccount",
        kind: "ServiceAccount",
        namespaced: true,
        short_names: &["sa"],
        categories: &[],
        status: false,
        builtin: BuiltinKind::ServiceAccount,
    },
    BuiltinSpec {
        group: "",
        version: "v1",
        plural: "events",
        singular: "event",
        kind: "Event",
        namespaced: true,
        short_names: &["ev"],
        categories: &[],
        status: false,
        builtin: BuiltinKind::Event,
    },
    BuiltinSpec {
        group: "events.k8s.io",
        version: "v1",
        plural: "events",
        singular: "event",
        kind: "Event",
        namespaced: true,
        short_names: &["ev"],
        categories: &[],
        status: false,
        builtin: BuiltinKind::Event,
    },
    BuiltinSpec {
        group: "coordination.k8s.io",
        version: "v1",
        plural: "leases",
        singular: "lease",
        kind: "Lease",
        namespaced: true,
        short_names: &[],
        categories: &[],
        status: false,
        builtin: BuiltinKind::Lease,
    },
    BuiltinSpec {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "roles",
        singular: "role",
        kind: "Role",
        namespaced: true,
        short_names: &[],
        categories: &[],
        status: false,
        builtin: BuiltinKind::Role,
    },
    BuiltinSpec {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "rolebindings",
        singular: "rolebinding",
        kind: "RoleBinding",
        namespaced: true,
        short_names: &[],
        categories: &[],
        status: false,
        builtin: BuiltinKind::RoleBinding,
    },
    BuiltinSpec {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "clusterroles",
        singular: "clusterrole",
        kind: "ClusterRole",
        namespaced: false,
        short_names: &[],
        categories: &[],
        status: false,
        builtin: BuiltinKind::ClusterRole,
    },
    BuiltinSpec {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        plural: "clusterrolebindings",
        singular: "clusterrolebinding",
        kind: "ClusterRoleBinding",
        namespaced: false,
        short_names: &[],
        categories: &[],
        status: false,
        builtin: BuiltinKind::ClusterRoleBinding,
    },
    BuiltinSpec {
        group: "apiextensions.k8s.io",
        version: "v1",
        plural: "customresourcedefinitions",
        singular: "customresourcedefinition",
        kind: "CustomResourceDefinition",
        namespaced: false,
        short_names: &["crd", "crds"],
        categories: &["api-extensions"],
        status: true,
        builtin: BuiltinKind::CustomResourceDefinition,
    },
    BuiltinSpec {
        group: "apps",
        version: "v1",
        plural: "deployments",
        singular: "deployment",
        kind: "Deployment",
        namespaced: true,
        short_names: &["deploy"],
        categories: &["all"],
        status: true,
        builtin: BuiltinKind::Deployment,
    },
    BuiltinSpec {
        group: "authorization.k8s.io",
        version: "v1",
        plural: "selfsubjectaccessreviews",
        singular: "selfsubjectaccessreview",
        kind: "SelfSubjectAccessReview",
        namespaced: false,
        short_names: &[],
        categories: &[],
        status: false,
        builtin: BuiltinKind::SelfSubjectAccessReview,
    },
    BuiltinSpec {
        group: "authorization.k8s.io",
        version: "v1",
        plural: "subjectaccessreviews",
        singular: "subjectaccessreview",
        kind: "SubjectAccessReview",
        namespaced: false,
        short_names: &[],
        categories: &[],
        status: false,
        builtin: BuiltinKind::SubjectAccessReview,
    },
    BuiltinSpec {
        group: "authorization.k8s.io",
        version: "v1",
        plural: "localsubjectaccessreviews",
        singular: "localsubjectaccessreview",
        kind: "LocalSubjectAccessReview",
        namespaced: true,
        short_names: &[],
        categories: &[],
        status: false,
        builtin: BuiltinKind::LocalSubjectAccessReview,
    },
    BuiltinSpec {
        group: "authorization.k8s.io",
        version: "v1",
        plural: "selfsubjectrulesreviews",
        singular: "selfsubjectrulesreview",
        kind: "SelfSubjectRulesReview",
        namespaced: false,
        short_names: &[],
        categories: &[],
        status: false,
        builtin: BuiltinKind::SelfSubjectRulesReview,
    },
    BuiltinSpec {
        group: "authentication.k8s.io",
        version: "v1",
        plural: "selfsubjectreviews",
        singular: "selfsubjectreview",
        kind: "SelfSubjectReview",
        namespaced: false,
        short_names: &[],
        categories: &[],
        status: false,
        builtin: BuiltinKind::SelfSubjectReview,
    },
    BuiltinSpec {
        group: "authentication.k8s.io",
        version: "v1",
        plural: "tokenreviews",
        singular: "tokenreview",
        kind: "TokenReview",
        namespaced: false,
        short_names: &[],
        categories: &[],
        status: false,
        builtin: BuiltinKind::TokenReview,
    },
];

fn builtin_defs() -> Vec<ResourceDef> {
    BUILTINS
        .iter()
        .map(|b| ResourceDef {
            group: b.group.to_string(),
            plural: b.plural.to_string(),
            singular: b.singular.to_string(),
            kind: b.kind.to_string(),
            list_kind: format!("{}List", b.kind),
            namespaced: b.namespaced,
            short_names: b.short_names.iter().map(|s| s.to_string()).collect(),
            categories: b.categories.iter().map(|s| s.to_string()).collect(),
            versions: vec![VersionDef {
                name: b.version.to_string(),
                schema: None,
                printer_columns: Vec::new(),
                selectable_fields: Vec::new(),
                shape: None,
            }],
            storage_version: b.version.to_string(),
            status_subresource: b.status,
            scale: None,
            origin: Origin::Builtin(b.builtin),
            terminating: false,
            validator: None,
        })
        .collect()
}

/// The storage key of a resource: events.k8s.io events share core events' storage.
pub fn storage_key(gr: &GroupResource) -> GroupResource {
    if gr.group == "events.k8s.io" && gr.resource == "events" {
        GroupResource::new("", "events")
    } else {
        gr.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_resource_prints_like_kube() {
        assert_eq!(GroupResource::new("", "configmaps").to_string(), "configmaps");
        assert_eq!(GroupResource::new("a.io", "gizmos").to_string(), "gizmos.a.io");
    }

    #[test]
    fn builtins_are_served_and_found_by_kind() {
        let registry = Registry::with_builtins();
        assert!(registry.lookup("", "v1", "configmaps").is_some());
        assert!(registry.lookup("", "v2", "configmaps").is_none());
        assert_eq!(
            registry
                .by_kind("coordination.k8s.io/v1", "Lease")
                .map(|d| d.plural.clone()),
            Some("leases".into())
        );
    }
}
