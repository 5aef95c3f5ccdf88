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

/// The requests of `user` that the authorizer refused, in the log's order. The message has the shape of the
/// apiserver's Forbidden message (`<resource> "<name>" is forbidden: User "<user>" cannot <verb> resource …`),
/// so the substrings tests declare as expected match either source.
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
            let verb = field("/verb");
            let mut message = format!(
                "{resource} \"{name}\" is forbidden: User \"{user}\" cannot {verb} resource \"{resource}\" in API group \"{group}\""
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
