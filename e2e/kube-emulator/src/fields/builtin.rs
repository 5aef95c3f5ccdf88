//! Shapes of the built-in kinds the emulator serves, and the "zero object" of each.
//!
//! The structure (fields, maps, lists, int-or-string) comes from the JSON schemas k8s-openapi generates with
//! its `schemars` feature. Those schemas carry no `x-kubernetes-list-type`, `-list-map-keys`, `-map-type` or
//! patch-strategy extensions, so every list would be atomic and every map granular; the table below adds
//! the list and map types kube-apiserver declares for the fields of these kinds.
//!
//! The zero object is what Go's zero value of the kind serializes to: non-pointer structs are present
//! (`spec: {}`), so a write that fills them does not "create" them, which decides where `"."` appears in
//! the Update entries of a create.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use k8s_openapi::schemars::{self, JsonSchema};
use serde_json::{Value, json};

use super::openapi::{Converter, Override, Overrides};
use super::{ListKind, Shape};

/// The definition name of ObjectMeta in the generated schemas.
pub(crate) const OBJECT_META_DEFINITION: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// Definitions whose structs are atomic (`+structType=atomic` in kubernetes/api).
const ATOMIC_DEFINITIONS: &[&str] = &[
    "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference",
    "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
    "io.k8s.api.core.v1.ObjectReference",
    "io.k8s.api.core.v1.LocalObjectReference",
    "io.k8s.api.rbac.v1.RoleRef",
];

fn map_list(keys: &[&str], defaults: &[(&str, Value)]) -> Override {
    Override::List(ListKind::Map {
        keys: keys.iter().map(|k| (*k).to_string()).collect(),
        key_defaults: defaults.iter().map(|(k, v)| ((*k).to_string(), v.clone())).collect(),
    })
}

/// The list and map types of the served kinds that are not atomic lists or granular maps.
fn overrides() -> Overrides {
    let mut table = BTreeMap::new();
    table.insert((OBJECT_META_DEFINITION, "finalizers"), Override::List(ListKind::Set));
    table.insert((OBJECT_META_DEFINITION, "ownerReferences"), map_list(&["uid"], &[]));
    table.insert(
        ("io.k8s.api.core.v1.ServiceSpec", "ports"),
        map_list(&["port", "protocol"], &[("protocol", json!("TCP"))]),
    );
    table.insert(("io.k8s.api.core.v1.ServiceSpec", "selector"), Override::Atomic);
    table.insert(
        ("io.k8s.api.core.v1.ServiceStatus", "conditions"),
        map_list(&["type"], &[]),
    );
    table.insert(
        ("io.k8s.api.core.v1.NamespaceStatus", "conditions"),
        map_list(&["type"], &[]),
    );
    table.insert(
        ("io.k8s.api.core.v1.ServiceAccount", "secrets"),
        map_list(&["name"], &[]),
    );
    // Deployments and their pod template (`k8s.io/api/core/v1` list types).
    for (definition, field, keys) in [
        ("io.k8s.api.core.v1.PodSpec", "containers", &["name"][..]),
        ("io.k8s.api.core.v1.PodSpec", "initContainers", &["name"][..]),
        ("io.k8s.api.core.v1.PodSpec", "volumes", &["name"][..]),
        ("io.k8s.api.core.v1.PodSpec", "imagePullSecrets", &["name"][..]),
        ("io.k8s.api.core.v1.Container", "env", &["name"][..]),
        ("io.k8s.api.core.v1.Container", "volumeMounts", &["mountPath"][..]),
        ("io.k8s.api.apps.v1.DeploymentStatus", "conditions", &["type"][..]),
    ] {
        table.insert((definition, field), map_list(keys, &[]));
    }
    table.insert(
        ("io.k8s.api.core.v1.Container", "ports"),
        map_list(&["containerPort", "protocol"], &[("protocol", json!("TCP"))]),
    );
    table.insert(
        (
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus",
            "conditions",
        ),
        map_list(&["type"], &[]),
    );
    table
}

static OVERRIDES: LazyLock<Overrides> = LazyLock::new(overrides);

/// Converts the generated schema of `T` into a shape, typing every ObjectMeta reference as `object_meta`.
fn shape_of<T: JsonSchema>(object_meta: Option<&Shape>) -> Shape {
    let schema = schemars::schema_for!(T);
    let root = schema.as_value();
    let empty = serde_json::Map::new();
    let definitions = root.get("$defs").and_then(Value::as_object).unwrap_or(&empty);
    let name = T::schema_name();
    let mut converter = Converter::with_definitions(definitions, &OVERRIDES, ATOMIC_DEFINITIONS, object_meta);
    // The generated schemas are well-formed objects with resolvable references; a failure here is a bug in
    // this table or an incompatible k8s-openapi, which the unit tests catch, so fall back to untyped content.
    converter.convert(root, &name, Some(&name)).unwrap_or(Shape::Untyped)
}

static OBJECT_META: LazyLock<Shape> =
    LazyLock::new(|| shape_of::<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>(None));

/// The shape of ObjectMeta.
pub(crate) fn object_meta() -> &'static Shape {
    &OBJECT_META
}

/// `(group, version, kind)` of a served built-in kind.
type Gvk = (&'static str, &'static str, &'static str);

static BUILTINS: LazyLock<Vec<(Gvk, Shape)>> = LazyLock::new(|| {
    use k8s_openapi::api::{admissionregistration, apps, coordination, core, events, rbac};
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions;
    let meta = Some(object_meta());
    vec![
        (("", "v1", "Namespace"), shape_of::<core::v1::Namespace>(meta)),
        (("", "v1", "Secret"), shape_of::<core::v1::Secret>(meta)),
        (("", "v1", "ConfigMap"), shape_of::<core::v1::ConfigMap>(meta)),
        (("", "v1", "Service"), shape_of::<core::v1::Service>(meta)),
        (("", "v1", "ServiceAccount"), shape_of::<core::v1::ServiceAccount>(meta)),
        (("", "v1", "Event"), shape_of::<core::v1::Event>(meta)),
        (("events.k8s.io", "v1", "Event"), shape_of::<events::v1::Event>(meta)),
        (
            ("coordination.k8s.io", "v1", "Lease"),
            shape_of::<coordination::v1::Lease>(meta),
        ),
        (
            ("rbac.authorization.k8s.io", "v1", "Role"),
            shape_of::<rbac::v1::Role>(meta),
        ),
        (
            ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
            shape_of::<rbac::v1::RoleBinding>(meta),
        ),
        (
            ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
            shape_of::<rbac::v1::ClusterRole>(meta),
        ),
        (
            ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"),
            shape_of::<rbac::v1::ClusterRoleBinding>(meta),
        ),
        (
            ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            shape_of::<apiextensions::v1::CustomResourceDefinition>(meta),
        ),
        (("apps", "v1", "Deployment"), shape_of::<apps::v1::Deployment>(meta)),
        (
            ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy"),
            shape_of::<admissionregistration::v1::ValidatingAdmissionPolicy>(meta),
        ),
        (
            ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding"),
            shape_of::<admissionregistration::v1::ValidatingAdmissionPolicyBinding>(meta),
        ),
    ]
});

/// The shape of a served built-in kind.
pub(crate) fn shape(group: &str, version: &str, kind: &str) -> Option<&'static Shape> {
    BUILTINS
        .iter()
        .find(|((g, v, k), _)| *g == group && *v == version && *k == kind)
        .map(|(_, shape)| shape)
}

/// What Go's zero value of a kind serializes to (without apiVersion/kind), for `api_version` as the request
/// names it (`v1`, `group/version`). Custom resources (and unknown kinds) start from an empty object.
pub(crate) fn zero_object(api_version: &str, kind: &str) -> Value {
    let group = api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
    let meta = json!({"creationTimestamp": null});
    match (group, kind) {
        ("", "Namespace") => json!({"metadata": meta, "spec": {}, "status": {}}),
        ("", "Service") => json!({"metadata": meta, "spec": {}, "status": {"loadBalancer": {}}}),
        ("", "Secret" | "ConfigMap" | "ServiceAccount") => json!({"metadata": meta}),
        ("", "Event") => json!({
            "metadata": meta, "involvedObject": {}, "source": {}, "firstTimestamp": null,
            "lastTimestamp": null, "eventTime": null, "reportingComponent": "", "reportingInstance": ""
        }),
        ("events.k8s.io", "Event") => json!({
            "metadata": meta, "eventTime": null, "reportingController": "", "reportingInstance": "",
            "regarding": {}, "deprecatedSource": {}, "deprecatedFirstTimestamp": null,
            "deprecatedLastTimestamp": null
        }),
        ("coordination.k8s.io", "Lease") => json!({"metadata": meta, "spec": {}}),
        ("apps", "Deployment") => json!({
            "metadata": meta,
            "spec": {"selector": null, "template": {"metadata": {"creationTimestamp": null}, "spec": {"containers": null}},
                     "strategy": {}},
            "status": {}
        }),
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => json!({"metadata": meta, "rules": null}),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            json!({"metadata": meta, "roleRef": {"apiGroup": "", "kind": "", "name": ""}})
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => json!({
            "metadata": meta,
            "spec": {"group": "", "names": {"plural": "", "kind": ""}, "scope": "", "versions": null},
            "status": {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": null}
        }),
        _ => json!({}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at<'s>(shape: &'s Shape, path: &[&str]) -> &'s Shape {
        let mut node = shape;
        for name in path {
            node = match node {
                Shape::Struct { fields, .. } => fields.get(*name).unwrap_or_else(|| panic!("no field {name}")),
                Shape::List { items, .. } if *name == "[]" => items,
                Shape::Map { values, .. } => values,
                other => panic!("cannot descend into {other:?} at {name}"),
            };
        }
        node
    }

    #[test]
    fn every_served_kind_has_a_typed_shape() {
        for ((group, version, kind), _) in BUILTINS.iter() {
            let shape = Shape::builtin(group, version, kind).unwrap();
            assert!(
                matches!(shape, Shape::Struct { rest: None, .. }),
                "{kind} is not a closed struct"
            );
            assert_eq!(at(shape, &["metadata"]), object_meta(), "{kind} metadata");
            assert_eq!(at(shape, &["apiVersion"]), &Shape::Scalar);
        }
        assert!(Shape::builtin("batch", "v1", "Job").is_none());
    }

    #[test]
    fn object_meta_follows_kubernetes() {
        let meta = object_meta();
        assert!(matches!(
            at(meta, &["finalizers"]),
            Shape::List {
                kind: ListKind::Set,
                ..
            }
        ));
        assert!(
            matches!(at(meta, &["ownerReferences"]), Shape::List { kind: ListKind::Map { keys, .. }, .. } if keys == &vec!["uid".to_string()])
        );
        assert!(matches!(
            at(meta, &["ownerReferences", "[]"]),
            Shape::Struct { atomic: true, .. }
        ));
        assert!(matches!(
            at(meta, &["managedFields"]),
            Shape::List {
                kind: ListKind::Atomic,
                ..
            }
        ));
        assert!(matches!(at(meta, &["labels"]), Shape::Map { atomic: false, .. }));
        assert_eq!(at(meta, &["creationTimestamp"]), &Shape::Scalar);
    }

    #[test]
    fn table_types_are_applied() {
        let service = Shape::builtin("", "v1", "Service").unwrap();
        let Shape::List {
            kind: ListKind::Map { keys, key_defaults },
            ..
        } = at(service, &["spec", "ports"])
        else {
            panic!("ports is not a list-map");
        };
        assert_eq!(keys, &vec!["port".to_string(), "protocol".to_string()]);
        assert_eq!(key_defaults.get("protocol"), Some(&json!("TCP")));
        assert_eq!(at(service, &["spec", "ports", "[]", "targetPort"]), &Shape::Scalar);
        assert!(matches!(
            at(service, &["spec", "selector"]),
            Shape::Map { atomic: true, .. }
        ));
        let secret = Shape::builtin("", "v1", "Secret").unwrap();
        assert!(matches!(at(secret, &["data"]), Shape::Map { atomic: false, .. }));
        let role = Shape::builtin("rbac.authorization.k8s.io", "v1", "Role").unwrap();
        assert!(matches!(
            at(role, &["rules"]),
            Shape::List {
                kind: ListKind::Atomic,
                ..
            }
        ));
        let binding = Shape::builtin("rbac.authorization.k8s.io", "v1", "RoleBinding").unwrap();
        assert!(matches!(at(binding, &["roleRef"]), Shape::Struct { atomic: true, .. }));
        let crd = Shape::builtin("apiextensions.k8s.io", "v1", "CustomResourceDefinition").unwrap();
        assert!(matches!(
            at(crd, &["spec", "versions"]),
            Shape::List {
                kind: ListKind::Atomic,
                ..
            }
        ));
        assert!(matches!(
            at(crd, &["status", "conditions"]),
            Shape::List {
                kind: ListKind::Map { .. },
                ..
            }
        ));
        let sa = Shape::builtin("", "v1", "ServiceAccount").unwrap();
        assert!(matches!(
            at(sa, &["imagePullSecrets"]),
            Shape::List {
                kind: ListKind::Atomic,
                ..
            }
        ));
    }

    #[test]
    fn zero_objects_hold_go_non_pointer_structs() {
        assert_eq!(zero_object("v1", "Service")["status"], json!({"loadBalancer": {}}));
        assert_eq!(zero_object("example.com/v1", "Gizmo"), json!({}));
        assert_eq!(
            zero_object("rbac.authorization.k8s.io/v1", "RoleBinding")["roleRef"]["name"],
            json!("")
        );
    }
}
