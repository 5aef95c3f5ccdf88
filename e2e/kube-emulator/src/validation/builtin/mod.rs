//! Validation and defaulting of the built-in kinds the emulator serves, with
//! kube-apiserver's texts.
//!
//! A create gets the kind's own validation (which starts with its ObjectMeta rules). An update gets, as
//! `rest.BeforeUpdate` does, the checks common to every kind (ObjectMeta with URL-path-segment names, the
//! immutable identity fields) followed by the kind's update validation; kube-apiserver reports some
//! ObjectMeta problems from both, and so does this (the aggregate message drops the repeats).

mod config_map;
mod deployment;
mod event;
mod lease;
mod namespace;
mod rbac;
mod secret;
mod service;

use serde_json::Value;

use super::crd::definition;
use super::{FieldError, Findings, names, object_meta};

pub use service::default_service;

/// The kinds with their own rules, by `(group, kind)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Namespace,
    Secret,
    ConfigMap,
    Service,
    ServiceAccount,
    CoreEvent,
    EventsEvent,
    Lease,
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
    CustomResourceDefinition,
    Deployment,
}

impl Kind {
    fn of(group: &str, kind: &str) -> Option<Self> {
        Some(match (group, kind) {
            ("", "Namespace") => Kind::Namespace,
            ("", "Secret") => Kind::Secret,
            ("", "ConfigMap") => Kind::ConfigMap,
            ("", "Service") => Kind::Service,
            ("", "ServiceAccount") => Kind::ServiceAccount,
            ("", "Event") => Kind::CoreEvent,
            ("events.k8s.io", "Event") => Kind::EventsEvent,
            ("coordination.k8s.io", "Lease") => Kind::Lease,
            ("rbac.authorization.k8s.io", "Role") => Kind::Role,
            ("rbac.authorization.k8s.io", "ClusterRole") => Kind::ClusterRole,
            ("rbac.authorization.k8s.io", "RoleBinding") => Kind::RoleBinding,
            ("rbac.authorization.k8s.io", "ClusterRoleBinding") => Kind::ClusterRoleBinding,
            ("apiextensions.k8s.io", "CustomResourceDefinition") => Kind::CustomResourceDefinition,
            ("apps", "Deployment") => Kind::Deployment,
            _ => return None,
        })
    }

    fn namespaced(self) -> bool {
        !matches!(
            self,
            Kind::Namespace | Kind::ClusterRole | Kind::ClusterRoleBinding | Kind::CustomResourceDefinition
        )
    }
}

/// Validates a write of a built-in object. `group` is the API group of the request (events arrive as
/// core `Event` or `events.k8s.io` `Event`, each in its own field names); `old` is `None` on create.
/// Unknown kinds pass.
pub fn validate_builtin(group: &str, kind: &str, new: &Value, old: Option<&Value>) -> Findings {
    let Some(kind) = Kind::of(group, kind) else {
        return Findings::default();
    };
    let errors = match old {
        None => validate_create(kind, new),
        Some(old) => {
            let mut errors = object_meta::validate_common_update(new, old, kind.namespaced());
            errors.extend(validate_update(kind, new, old));
            errors
        }
    };
    Findings {
        errors,
        warnings: Vec::new(),
    }
}

fn meta(obj: &Value, kind: Kind, name_fn: object_meta::NameFn<'_>) -> Vec<FieldError> {
    object_meta::validate_object_meta(obj, kind.namespaced(), name_fn)
}

fn validate_create(kind: Kind, obj: &Value) -> Vec<FieldError> {
    match kind {
        Kind::Namespace => namespace::validate(obj),
        Kind::Secret => secret::validate(obj),
        Kind::ConfigMap => config_map::validate(obj),
        Kind::Service => service::validate(obj),
        Kind::ServiceAccount => meta(obj, kind, &names::name_is_dns_subdomain),
        Kind::CoreEvent => event::validate_core(obj),
        Kind::EventsEvent => event::validate_events(obj),
        Kind::Lease => lease::validate(obj),
        Kind::Role | Kind::ClusterRole => rbac::validate_role(obj, kind == Kind::Role),
        Kind::RoleBinding | Kind::ClusterRoleBinding => rbac::validate_binding(obj, kind == Kind::RoleBinding),
        Kind::CustomResourceDefinition => definition::validate_crd(obj),
        Kind::Deployment => deployment::validate(obj),
    }
}

fn validate_update(kind: Kind, new: &Value, old: &Value) -> Vec<FieldError> {
    match kind {
        Kind::Namespace => object_meta::validate_object_meta_update(new, old),
        Kind::Secret => secret::validate_update(new, old),
        Kind::ConfigMap => config_map::validate_update(new, old),
        Kind::Service => {
            let mut errs = object_meta::validate_object_meta_update(new, old);
            errs.extend(service::validate(new));
            errs
        }
        Kind::ServiceAccount | Kind::Lease => {
            let mut errs = object_meta::validate_object_meta_update(new, old);
            errs.extend(validate_create(kind, new));
            errs
        }
        Kind::CoreEvent => event::validate_core(new),
        Kind::EventsEvent => event::validate_events_update(new, old),
        Kind::Role | Kind::ClusterRole => {
            let mut errs = object_meta::validate_object_meta_update(new, old);
            errs.extend(rbac::validate_role(new, kind == Kind::Role));
            errs
        }
        Kind::RoleBinding | Kind::ClusterRoleBinding => {
            rbac::validate_binding_update(new, old, kind == Kind::RoleBinding)
        }
        Kind::CustomResourceDefinition => definition::validate_crd_update(new, old),
        Kind::Deployment => {
            let mut errs = object_meta::validate_object_meta_update(new, old);
            errs.extend(deployment::validate(new));
            errs
        }
    }
}

/// Applies the defaults kube-apiserver sets on a built-in object before validation (Secret `type` and
/// `stringData`, Service fields, RBAC subject groups, CRD names and conversion).
pub fn default_builtin(group: &str, kind: &str, obj: &mut Value) {
    match Kind::of(group, kind) {
        Some(Kind::Secret) => secret::default(obj),
        Some(Kind::Service) => default_service(obj),
        Some(Kind::RoleBinding | Kind::ClusterRoleBinding) => rbac::default_binding(obj),
        Some(Kind::CustomResourceDefinition) => definition::default_crd(obj),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn namespace_names_are_dns_labels_and_unknown_kinds_pass() {
        let errs = validate_builtin("", "Namespace", &json!({"metadata": {"name": "team.a"}}), None).errors;
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].to_string(),
            "metadata.name: Invalid value: \"team.a\": must not contain dots"
        );
        assert!(validate_builtin("example.com", "Thing", &json!({}), None).is_valid());
    }

    #[test]
    fn updates_run_the_common_checks_first() {
        let old = json!({"metadata": {"name": "sa", "namespace": "ns", "uid": "1", "resourceVersion": "2"}});
        let mut new = old.clone();
        new["metadata"]["uid"] = json!("2");
        let errs = validate_builtin("", "ServiceAccount", &new, Some(&old)).errors;
        let texts: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(
            texts,
            vec![
                "metadata.uid: Invalid value: \"2\": field is immutable",
                "metadata.uid: Invalid value: \"2\": field is immutable",
            ]
        );
    }
}
