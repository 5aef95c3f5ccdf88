//! Reading the real apiserver's audit log: who was refused what (the real counterpart of the emulator's decision
//! log), for the harness's "no unexpected Forbidden" check.

use std::path::Path;

use serde_json::Value;

/// One request the authorizer refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The user name.
    pub user: String,
    /// The Kubernetes verb.
    pub verb: String,
    /// The request URI.
    pub path: String,
    /// A message in the shape of the apiserver's Forbidden message.
    pub message: String,
}

/// The requests of `user` that the authorizer refused, in the log's order. The message is rebuilt in the shape of
/// the apiserver's Forbidden message (`<resource>.<group> "<name>" is forbidden: User "<user>" cannot <verb>
/// resource …`; the audit log keeps no response bodies), so the substrings tests declare as expected match either
/// source.
pub fn forbidden_for(audit_log: &Path, user: &str) -> Vec<Refusal> {
    let Ok(text) = std::fs::read_to_string(audit_log) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event.pointer("/user/username").and_then(Value::as_str) == Some(user))
        .filter(|event| {
            event.pointer("/annotations/authorization.k8s.io~1decision").and_then(Value::as_str) == Some("forbid")
        })
        .map(|event| {
            let field = |pointer: &str| event.pointer(pointer).and_then(Value::as_str).unwrap_or("").to_string();
            let resource = field("/objectRef/resource");
            let group = field("/objectRef/apiGroup");
            let namespace = field("/objectRef/namespace");
            let name = field("/objectRef/name");
            let subresource = field("/objectRef/subresource");
            let verb = field("/verb");
            // The apiserver's own shape: `<resource>[.<group>] ["<name>"] is forbidden: User … cannot <verb>
            // resource "<resource>[/<subresource>]" in API group "<group>" (in the namespace "<ns>" | at the
            // cluster scope)`.
            let qualified = if group.is_empty() { resource.clone() } else { format!("{resource}.{group}") };
            let object = if name.is_empty() { qualified } else { format!("{qualified} \"{name}\"") };
            let full_resource = if subresource.is_empty() { resource.clone() } else { format!("{resource}/{subresource}") };
            let mut message = format!(
                "{object} is forbidden: User \"{user}\" cannot {verb} resource \"{full_resource}\" in API group \"{group}\""
            );
            if namespace.is_empty() {
                message.push_str(" at the cluster scope");
            } else {
                message.push_str(&format!(" in the namespace \"{namespace}\""));
            }
            Refusal {
                user: user.to_string(),
                verb,
                path: field("/requestURI"),
                message,
            }
        })
        .collect()
}

/// The completed requests in the audit log (every user but the control plane's own, which the audit policy
/// leaves out), as `(verb, group, resource, subresource)`.
fn completed(audit_log: &Path) -> Vec<(String, String, String, String)> {
    let Ok(text) = std::fs::read_to_string(audit_log) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event.get("stage").and_then(Value::as_str) == Some("ResponseComplete"))
        .map(|event| {
            let field = |pointer: &str| event.pointer(pointer).and_then(Value::as_str).unwrap_or("").to_string();
            (
                field("/verb"),
                field("/objectRef/apiGroup"),
                field("/objectRef/resource"),
                field("/objectRef/subresource"),
            )
        })
        .collect()
}

/// How many requests with this verb on this group, resource and subresource (`""` for none) completed so far:
/// the real counterpart of the emulator's request counters.
pub fn count(audit_log: &Path, verb: &str, group: &str, resource: &str, subresource: &str) -> u64 {
    completed(audit_log)
        .iter()
        .filter(|(v, g, r, s)| v == verb && g == group && r == resource && s == subresource)
        .count() as u64
}

/// How many write requests (create, update, patch, delete, deletecollection) completed so far.
pub fn writes(audit_log: &Path) -> u64 {
    completed(audit_log)
        .iter()
        .filter(|(verb, ..)| {
            matches!(
                verb.as_str(),
                "create" | "update" | "patch" | "delete" | "deletecollection"
            )
        })
        .count() as u64
}

/// One authorization decision the audit log records.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Decision {
    /// The user name.
    pub user: String,
    /// The Kubernetes verb (or the HTTP verb's lower-case name for a non-resource path).
    pub verb: String,
    /// The API group (`""` for core).
    pub group: String,
    /// The resource, `resource/subresource` for a subresource.
    pub resource: String,
    /// The namespace (`""` for cluster scope).
    pub namespace: String,
    /// The path of a non-resource request.
    pub path: String,
    /// The object's name (empty for collections and creates by POST).
    pub name: String,
    /// Whether the authorizer allowed it.
    pub allowed: bool,
    /// The authorizer's reason (`RBAC: allowed by ClusterRoleBinding "…" of ClusterRole "…" to …`).
    pub reason: String,
}

/// Every authorization decision the audit log records (one per request that reached the authorizer), as the user
/// the request acted as (the impersonated user, when an administrator impersonated one).
///
/// The log records the authorizer's answer for the request's own verb only. One further check follows from it for
/// sure and is added: an apply (`patch`) answered `201 Created` was also authorized to `create`. Checks made inside
/// admission (OwnerReferencesPermissionEnforcement's `update <owner>/finalizers`) leave no trace here.
pub fn decisions(audit_log: &Path) -> Vec<Decision> {
    let Ok(text) = std::fs::read_to_string(audit_log) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event.get("stage").and_then(Value::as_str) == Some("ResponseComplete"))
        .filter_map(|event| {
            let field = |pointer: &str| event.pointer(pointer).and_then(Value::as_str).unwrap_or("").to_string();
            let decision = field("/annotations/authorization.k8s.io~1decision");
            if decision.is_empty() {
                return None;
            }
            let resource = field("/objectRef/resource");
            let subresource = field("/objectRef/subresource");
            let path = if event.get("objectRef").is_none() {
                field("/requestURI")
            } else {
                String::new()
            };
            let user = match field("/impersonatedUser/username") {
                impersonated if !impersonated.is_empty() => impersonated,
                _ => field("/user/username"),
            };
            let decision = Decision {
                user,
                verb: field("/verb"),
                group: field("/objectRef/apiGroup"),
                resource: if subresource.is_empty() {
                    resource
                } else {
                    format!("{resource}/{subresource}")
                },
                namespace: field("/objectRef/namespace"),
                path,
                name: field("/objectRef/name"),
                allowed: decision == "allow",
                reason: field("/annotations/authorization.k8s.io~1reason"),
            };
            let created = event.pointer("/responseStatus/code").and_then(Value::as_u64) == Some(201);
            let also = (decision.verb == "patch" && created).then(|| Decision {
                verb: "create".into(),
                ..decision.clone()
            });
            Some(std::iter::once(decision).chain(also))
        })
        .flatten()
        .collect()
}

/// Completed requests so far, counted per `(verb, group, resource, subresource)`.
pub fn counts(audit_log: &Path) -> Vec<((String, String, String, String), u64)> {
    let mut counted: std::collections::BTreeMap<(String, String, String, String), u64> = Default::default();
    for key in completed(audit_log) {
        *counted.entry(key).or_default() += 1;
    }
    counted.into_iter().collect()
}
