//! The default RBAC policy kube-apiserver creates at start (`bootstrappolicy`): cluster-admin for
//! `system:masters`, discovery, basic-user (the access reviews) and public-info-viewer for every authenticated
//! user, and the user-facing `admin`/`edit`/`view` roles that aggregate `aggregate-to-*` ClusterRoles.

use serde_json::{Value, json};

use super::super::meta;
use super::super::server::Shared;
use super::rbac::rbac_resource;

const DISCOVERY_URLS: &[&str] = &[
    "/livez",
    "/readyz",
    "/healthz",
    "/version",
    "/version/",
    "/openapi",
    "/openapi/*",
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
];
const PUBLIC_INFO_URLS: &[&str] = &["/livez", "/readyz", "/healthz", "/version", "/version/"];

fn stamp(mut obj: Value, kind: &str) -> Value {
    obj["apiVersion"] = json!("rbac.authorization.k8s.io/v1");
    obj["kind"] = json!(kind);
    let metadata = meta::metadata_mut(&mut obj);
    metadata.insert("uid".into(), json!(meta::new_uid()));
    metadata.insert("creationTimestamp".into(), json!(meta::now_rfc3339()));
    metadata
        .entry("labels")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .map(|labels| labels.insert("kubernetes.io/bootstrapping".into(), json!("rbac-defaults")));
    metadata.insert(
        "annotations".into(),
        json!({"rbac.authorization.kubernetes.io/autoupdate": "true"}),
    );
    obj
}

fn cluster_role(name: &str, labels: Value, rules: Value) -> Value {
    stamp(
        json!({"metadata": {"name": name, "labels": labels}, "rules": rules}),
        "ClusterRole",
    )
}

fn aggregated(name: &str, labels: Value, selector_label: &str) -> Value {
    stamp(
        json!({"metadata": {"name": name, "labels": labels},
               "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {selector_label: "true"}}]},
               "rules": []}),
        "ClusterRole",
    )
}

fn binding(name: &str, role: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|g| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}))
        .collect();
    stamp(
        json!({"metadata": {"name": name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
               "subjects": subjects}),
        "ClusterRoleBinding",
    )
}

/// The objects of the default policy: `(plural, object)`.
pub fn default_policy() -> Vec<(&'static str, Value)> {
    let read = json!(["get", "list", "watch"]);
    let write = json!(["create", "delete", "deletecollection", "patch", "update"]);
    vec![
        (
            "clusterroles",
            cluster_role(
                "cluster-admin",
                json!({}),
                json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                       {"verbs": ["*"], "nonResourceURLs": ["*"]}]),
            ),
        ),
        (
            "clusterroles",
            cluster_role(
                "system:discovery",
                json!({}),
                json!([{"verbs": ["get"], "nonResourceURLs": DISCOVERY_URLS}]),
            ),
        ),
        (
            "clusterroles",
            cluster_role(
                "system:basic-user",
                json!({}),
                json!([
                    {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
                     "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
                    {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"]}
                ]),
            ),
        ),
        (
            "clusterroles",
            cluster_role(
                "system:public-info-viewer",
                json!({}),
                json!([{"verbs": ["get"], "nonResourceURLs": PUBLIC_INFO_URLS}]),
            ),
        ),
        (
            "clusterroles",
            aggregated("admin", json!({}), "rbac.authorization.k8s.io/aggregate-to-admin"),
        ),
        (
            "clusterroles",
            aggregated(
                "edit",
                json!({"rbac.authorization.k8s.io/aggregate-to-admin": "true"}),
                "rbac.authorization.k8s.io/aggregate-to-edit",
            ),
        ),
        (
            "clusterroles",
            aggregated(
                "view",
                json!({"rbac.authorization.k8s.io/aggregate-to-edit": "true"}),
                "rbac.authorization.k8s.io/aggregate-to-view",
            ),
        ),
        (
            "clusterroles",
            cluster_role(
                "system:aggregate-to-admin",
                json!({"rbac.authorization.k8s.io/aggregate-to-admin": "true"}),
                json!([
                    {"verbs": read, "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"]},
                    {"verbs": write, "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"]},
                ]),
            ),
        ),
        (
            "clusterroles",
            cluster_role(
                "system:aggregate-to-edit",
                json!({"rbac.authorization.k8s.io/aggregate-to-edit": "true"}),
                json!([
                    {"verbs": write, "apiGroups": [""],
                     "resources": ["configmaps", "secrets", "services", "serviceaccounts"]},
                    {"verbs": read, "apiGroups": [""], "resources": ["secrets"]},
                    {"verbs": ["create"], "apiGroups": [""], "resources": ["serviceaccounts/token"]},
                    {"verbs": ["impersonate"], "apiGroups": [""], "resources": ["serviceaccounts"]},
                ]),
            ),
        ),
        (
            "clusterroles",
            cluster_role(
                "system:aggregate-to-view",
                json!({"rbac.authorization.k8s.io/aggregate-to-view": "true"}),
                json!([
                    {"verbs": read, "apiGroups": [""],
                     "resources": ["configmaps", "services", "serviceaccounts", "events"]},
                    {"verbs": read, "apiGroups": [""], "resources": ["namespaces"]},
                    {"verbs": read, "apiGroups": ["events.k8s.io"], "resources": ["events"]},
                ]),
            ),
        ),
        (
            "clusterrolebindings",
            binding("cluster-admin", "cluster-admin", &["system:masters"]),
        ),
        (
            "clusterrolebindings",
            binding("system:discovery", "system:discovery", &["system:authenticated"]),
        ),
        (
            "clusterrolebindings",
            binding("system:basic-user", "system:basic-user", &["system:authenticated"]),
        ),
        (
            "clusterrolebindings",
            binding(
                "system:public-info-viewer",
                "system:public-info-viewer",
                &["system:authenticated", "system:unauthenticated"],
            ),
        ),
    ]
}

/// Stores the default policy (at start, before any request).
pub fn create_default_policy(shared: &Shared) {
    shared.store.write(|txn| {
        for (plural, obj) in default_policy() {
            txn.put(&rbac_resource(plural), obj);
        }
    });
}
