//! The Role and RoleBinding `<app>-oidc-secret-reader`: only the app's ServiceAccount may read its OIDC Secret.

use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::api::ObjectMeta;

use super::naming::AppNames;

/// The Role granting `get` on exactly the OIDC Secret.
pub fn secret_reader_role(names: &AppNames, secret_name: &str) -> Role {
    Role {
        metadata: ObjectMeta {
            name: Some(names.secret_reader()),
            namespace: Some(names.namespace.clone()),
            ..Default::default()
        },
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["secrets".to_string()]),
            resource_names: Some(vec![secret_name.to_string()]),
            verbs: vec!["get".to_string()],
            ..Default::default()
        }]),
    }
}

/// The RoleBinding of that Role to the app's ServiceAccount.
pub fn secret_reader_binding(names: &AppNames, service_account: &str) -> RoleBinding {
    RoleBinding {
        metadata: ObjectMeta {
            name: Some(names.secret_reader()),
            namespace: Some(names.namespace.clone()),
            ..Default::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_string(),
            kind: "Role".to_string(),
            name: names.secret_reader(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".to_string(),
            name: service_account.to_string(),
            namespace: Some(names.namespace.clone()),
            ..Default::default()
        }]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_grants_get_on_the_one_secret_and_binds_the_service_account() {
        let names = AppNames::new("team", "web");
        let role = secret_reader_role(&names, "web-oidc-client");
        let rule = &role.rules.as_ref().expect("rules")[0];
        assert_eq!(rule.verbs, vec!["get"]);
        assert_eq!(rule.resource_names, Some(vec!["web-oidc-client".to_string()]));
        let binding = secret_reader_binding(&names, "web-sa");
        assert_eq!(binding.role_ref.name, "web-oidc-secret-reader");
        assert_eq!(binding.subjects.as_ref().expect("subjects")[0].name, "web-sa");
    }
}
