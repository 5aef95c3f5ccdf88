//! Reading the real apiserver's audit log: who was refused what, how many requests of each kind were served, and
//! every authorization decision (the real counterparts of the emulator's decision log and request counters).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

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

/// `(verb, group, resource, subresource)`: what the request counters count by.
pub type RequestKey = (String, String, String, String);

/// The part of an audit event (`audit.k8s.io/v1` Event, JSON lines) read here.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Event {
    stage: String,
    verb: String,
    request_uri: String,
    user: UserInfo,
    impersonated_user: Option<UserInfo>,
    object_ref: Option<ObjectRef>,
    response_status: ResponseStatus,
    annotations: BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct UserInfo {
    username: String,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ObjectRef {
    resource: String,
    subresource: String,
    namespace: String,
    name: String,
    api_group: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ResponseStatus {
    code: u16,
    message: String,
}

impl Event {
    /// The user the request acted as (the impersonated one, when an administrator impersonated a user).
    fn acting_user(&self) -> &str {
        self.impersonated_user
            .as_ref()
            .map_or(&self.user.username, |u| &u.username)
    }

    fn object(&self) -> &ObjectRef {
        static NONE: ObjectRef = ObjectRef {
            resource: String::new(),
            subresource: String::new(),
            namespace: String::new(),
            name: String::new(),
            api_group: String::new(),
        };
        self.object_ref.as_ref().unwrap_or(&NONE)
    }

    fn decision(&self) -> Option<&str> {
        self.annotations
            .get("authorization.k8s.io/decision")
            .map(String::as_str)
    }
}

/// The completed requests of the log (every user but the control plane's own, which the audit policy leaves out).
fn completed(audit_log: &Path) -> Vec<Event> {
    let Ok(text) = std::fs::read_to_string(audit_log) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| serde_json::from_str::<Event>(line).ok())
        .filter(|event| event.stage == "ResponseComplete")
        .collect()
}

/// The requests of `user` that the authorizer refused, in the log's order. The message is rebuilt in the shape of
/// the apiserver's Forbidden message (`<resource>.<group> "<name>" is forbidden: User "<user>" cannot <verb>
/// resource …`; the audit log keeps no response bodies), so the substrings tests declare as expected match either
/// source. A request the authorizer allowed but admission answered 403 (`OwnerReferencesPermissionEnforcement`
/// refusing an owner reference) is a refusal too, with the apiserver's own message.
pub fn forbidden_for(audit_log: &Path, user: &str) -> Vec<Refusal> {
    completed(audit_log)
        .iter()
        .filter(|event| {
            event.acting_user() == user && (event.decision() == Some("forbid") || event.response_status.code == 403)
        })
        .map(|event| {
            let o = event.object();
            let qualified = if o.api_group.is_empty() {
                o.resource.clone()
            } else {
                format!("{}.{}", o.resource, o.api_group)
            };
            let object = if o.name.is_empty() {
                qualified
            } else {
                format!("{qualified} \"{}\"", o.name)
            };
            let full_resource = if o.subresource.is_empty() {
                o.resource.clone()
            } else {
                format!("{}/{}", o.resource, o.subresource)
            };
            let scope = if o.namespace.is_empty() {
                "at the cluster scope".to_string()
            } else {
                format!("in the namespace \"{}\"", o.namespace)
            };
            let by_admission = event.decision() != Some("forbid") && !event.response_status.message.is_empty();
            Refusal {
                user: user.to_string(),
                verb: event.verb.clone(),
                path: event.request_uri.clone(),
                message: if by_admission {
                    event.response_status.message.clone()
                } else {
                    format!(
                    "{object} is forbidden: User \"{user}\" cannot {} resource \"{full_resource}\" in API group \"{}\" \
                     {scope}",
                    event.verb, o.api_group
                )
                },
            }
        })
        .collect()
}

/// Completed requests so far, counted per `(verb, group, resource, subresource)`.
pub fn counts(audit_log: &Path) -> Vec<(RequestKey, u64)> {
    let mut counted: BTreeMap<RequestKey, u64> = BTreeMap::new();
    for event in completed(audit_log) {
        let o = event.object();
        let key = (
            event.verb.clone(),
            o.api_group.clone(),
            o.resource.clone(),
            o.subresource.clone(),
        );
        *counted.entry(key).or_default() += 1;
    }
    counted.into_iter().collect()
}

/// Every authorization decision the audit log records (one per request that reached the authorizer), as the user
/// the request acted as.
///
/// The log records the authorizer's answer for the request's own verb only. One further check follows from it for
/// sure and is added: an apply (`patch`) answered `201 Created` was also authorized to `create`. Checks made inside
/// admission (OwnerReferencesPermissionEnforcement's `update <owner>/finalizers`) leave no trace here.
pub fn decisions(audit_log: &Path) -> Vec<Decision> {
    completed(audit_log)
        .iter()
        .filter_map(|event| {
            let verdict = event.decision()?;
            let o = event.object();
            let decision = Decision {
                user: event.acting_user().to_string(),
                verb: event.verb.clone(),
                group: o.api_group.clone(),
                resource: if o.subresource.is_empty() {
                    o.resource.clone()
                } else {
                    format!("{}/{}", o.resource, o.subresource)
                },
                namespace: o.namespace.clone(),
                path: if event.object_ref.is_none() {
                    event.request_uri.clone()
                } else {
                    String::new()
                },
                name: o.name.clone(),
                allowed: verdict == "allow",
                reason: event
                    .annotations
                    .get("authorization.k8s.io/reason")
                    .cloned()
                    .unwrap_or_default(),
            };
            let also = (decision.verb == "patch" && event.response_status.code == 201).then(|| Decision {
                verb: "create".into(),
                ..decision.clone()
            });
            Some(std::iter::once(decision).chain(also))
        })
        .flatten()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_give_refusals_counts_and_decisions_as_the_user_acted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("audit.log");
        let events = [
            r#"{"stage":"ResponseComplete","verb":"get","requestURI":"/apis/g.io/v1/namespaces/a/things/x","user":{"username":"admin"},"impersonatedUser":{"username":"bob"},"objectRef":{"resource":"things","namespace":"a","name":"x","apiGroup":"g.io"},"responseStatus":{"code":403},"annotations":{"authorization.k8s.io/decision":"forbid"}}"#,
            r#"{"stage":"ResponseComplete","verb":"patch","requestURI":"/api/v1/namespaces/a/secrets/s","user":{"username":"bob"},"objectRef":{"resource":"secrets","namespace":"a","name":"s"},"responseStatus":{"code":201},"annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"RBAC: allowed"}}"#,
            r#"{"stage":"ResponseStarted","verb":"watch","user":{"username":"bob"},"objectRef":{"resource":"secrets"}}"#,
        ];
        std::fs::write(&log, events.join("\n")).expect("write");
        let refused = forbidden_for(&log, "bob");
        assert_eq!(refused.len(), 1);
        assert_eq!(
            refused[0].message,
            "things.g.io \"x\" is forbidden: User \"bob\" cannot get resource \"things\" in API group \"g.io\" in the \
             namespace \"a\""
        );
        assert_eq!(
            counts(&log),
            vec![
                (("get".into(), "g.io".into(), "things".into(), String::new()), 1),
                (("patch".into(), String::new(), "secrets".into(), String::new()), 1),
            ]
        );
        let verbs: Vec<String> = decisions(&log)
            .into_iter()
            .filter(|d| d.allowed)
            .map(|d| d.verb)
            .collect();
        assert_eq!(
            verbs,
            ["patch", "create"],
            "an apply that created was also authorized to create"
        );
    }
}
