//! RBAC (`ValidateRole`, `ValidateClusterRole`, `ValidateRoleBinding`, ...): names are URL path segments,
//! rules need verbs and api groups/resources (or non-resource URLs on cluster roles), bindings need a
//! valid `roleRef` and subjects, and `roleRef` cannot change.

use serde_json::{Value, json};

use super::super::go_format::{BadValue, quote};
use super::super::{FieldError, names, object_meta, path};

const GROUP: &str = "rbac.authorization.k8s.io";

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// `ValidateRole` / `ValidateClusterRole`.
pub fn validate_role(obj: &Value, namespaced: bool) -> Vec<FieldError> {
    let mut errs = object_meta::validate_object_meta(obj, namespaced, &names::name_is_path_segment);
    for (i, rule) in obj
        .get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = path::index("rules", i);
        let list = |key: &str| strings(rule.get(key));
        if list("verbs").is_empty() {
            errs.push(FieldError::required(
                path::child(&at, "verbs"),
                "verbs must contain at least one value",
            ));
        }
        let urls = list("nonResourceURLs");
        if !urls.is_empty() {
            if namespaced {
                errs.push(FieldError::invalid(
                    path::child(&at, "nonResourceURLs"),
                    BadValue::string_slice(&urls),
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            if !list("apiGroups").is_empty() || !list("resources").is_empty() || !list("resourceNames").is_empty() {
                errs.push(FieldError::invalid(
                    path::child(&at, "nonResourceURLs"),
                    BadValue::string_slice(&urls),
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if list("apiGroups").is_empty() {
            errs.push(FieldError::required(
                path::child(&at, "apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if list("resources").is_empty() {
            errs.push(FieldError::required(
                path::child(&at, "resources"),
                "resource rules must supply at least one resource",
            ));
        }
    }
    errs
}

/// Defaults subjects' `apiGroup` (`rbac.authorization.k8s.io` for users and groups) and `roleRef.apiGroup`.
pub fn default_binding(obj: &mut Value) {
    if let Some(Value::Array(subjects)) = obj.get_mut("subjects") {
        for subject in subjects.iter_mut().filter_map(Value::as_object_mut) {
            if subject
                .get("apiGroup")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                // Users and groups default to the RBAC group; a ServiceAccount's empty apiGroup is Go's zero
                // value, which `omitempty` leaves out of the stored object.
                match subject.get("kind").and_then(Value::as_str) {
                    Some("User" | "Group") => {
                        subject.insert("apiGroup".into(), json!(GROUP));
                    }
                    _ => {
                        subject.remove("apiGroup");
                    }
                }
            }
        }
    }
    if let Some(role_ref) = obj.get_mut("roleRef").and_then(Value::as_object_mut)
        && role_ref
            .get("apiGroup")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        role_ref.insert("apiGroup".into(), json!(GROUP));
    }
}

/// `ValidateRoleBinding` / `ValidateClusterRoleBinding`.
pub fn validate_binding(obj: &Value, namespaced: bool) -> Vec<FieldError> {
    let mut errs = object_meta::validate_object_meta(obj, namespaced, &names::name_is_path_segment);
    let role_ref = |key: &str| {
        obj.pointer(&format!("/roleRef/{key}"))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    if role_ref("apiGroup") != GROUP {
        errs.push(FieldError::not_supported(
            "roleRef.apiGroup",
            role_ref("apiGroup"),
            &[GROUP],
        ));
    }
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&role_ref("kind")) {
        errs.push(FieldError::not_supported("roleRef.kind", role_ref("kind"), kinds));
    }
    let name = role_ref("name");
    if name.is_empty() {
        errs.push(FieldError::required("roleRef.name", ""));
    } else {
        for msg in names::name_is_path_segment(name, false) {
            errs.push(FieldError::invalid("roleRef.name", name, &msg));
        }
    }
    for (i, subject) in obj
        .get("subjects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = path::index("subjects", i);
        let text = |key: &str| subject.get(key).and_then(Value::as_str).unwrap_or("");
        if text("name").is_empty() {
            errs.push(FieldError::required(path::child(&at, "name"), ""));
        }
        match text("kind") {
            "ServiceAccount" => {
                if !text("name").is_empty() {
                    for msg in names::name_is_dns_subdomain(text("name"), false) {
                        errs.push(FieldError::invalid(path::child(&at, "name"), text("name"), &msg));
                    }
                }
                if !text("apiGroup").is_empty() {
                    errs.push(FieldError::not_supported(
                        path::child(&at, "apiGroup"),
                        text("apiGroup"),
                        &[""],
                    ));
                }
                if !namespaced && text("namespace").is_empty() {
                    errs.push(FieldError::required(path::child(&at, "namespace"), ""));
                }
            }
            "User" | "Group" => {
                if text("apiGroup") != GROUP {
                    errs.push(FieldError::not_supported(
                        path::child(&at, "apiGroup"),
                        text("apiGroup"),
                        &[GROUP],
                    ));
                }
            }
            other => errs.push(FieldError::not_supported(
                path::child(&at, "kind"),
                other,
                &["ServiceAccount", "User", "Group"],
            )),
        }
    }
    errs
}

/// `%#v` of an `rbac.RoleRef`.
fn go_role_ref(obj: &Value) -> BadValue {
    let text = |key: &str| {
        quote(
            obj.pointer(&format!("/roleRef/{key}"))
                .and_then(Value::as_str)
                .unwrap_or(""),
        )
    };
    BadValue::raw(format!(
        "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
        text("apiGroup"),
        text("kind"),
        text("name")
    ))
}

/// `ValidateRoleBindingUpdate`: the binding rules, ObjectMeta update, and `roleRef` immutability.
pub fn validate_binding_update(new: &Value, old: &Value, namespaced: bool) -> Vec<FieldError> {
    let mut errs = validate_binding(new, namespaced);
    errs.extend(object_meta::validate_object_meta_update(new, old));
    if new.get("roleRef") != old.get("roleRef") {
        errs.push(FieldError::invalid(
            "roleRef",
            go_role_ref(new),
            "cannot change roleRef",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn binding(role: &str) -> Value {
        let mut b = json!({"metadata": {"name": "b", "namespace": "ns", "resourceVersion": "1"},
            "roleRef": {"kind": "Role", "name": role}, "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}, {"kind": "User", "name": "alice"}]});
        default_binding(&mut b);
        b
    }

    #[test]
    fn bindings_default_and_validate() {
        let b = binding("reader");
        assert_eq!(b["roleRef"]["apiGroup"], GROUP);
        assert_eq!(b["subjects"][1]["apiGroup"], GROUP);
        assert!(
            validate_binding(&b, true).is_empty(),
            "{:?}",
            texts(&validate_binding(&b, true))
        );
        let mut cluster = b.clone();
        cluster["metadata"] = json!({"name": "b"});
        cluster["subjects"][0]["namespace"] = json!("");
        assert_eq!(
            texts(&validate_binding(&cluster, false)),
            vec![
                "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"",
                "subjects[0].namespace: Required value",
            ]
        );
    }

    #[test]
    fn role_ref_is_immutable() {
        let old = binding("reader");
        let new = binding("writer");
        assert_eq!(
            texts(&validate_binding_update(&new, &old, true)),
            vec![
                "roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"Role\", Name:\"writer\"}: cannot change roleRef"
            ]
        );
    }

    #[test]
    fn rules_need_verbs_and_targets() {
        let role = json!({"metadata": {"name": "r", "namespace": "ns"}, "rules": [{"apiGroups": [""], "resources": ["pods"]}, {"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]});
        assert_eq!(
            texts(&validate_role(&role, true)),
            vec![
                "rules[0].verbs: Required value: verbs must contain at least one value",
                "rules[1].nonResourceURLs: Invalid value: []string{\"/healthz\"}: namespaced rules cannot apply to non-resource URLs",
            ]
        );
    }
}
