//! Authentication and authorization as kube-apiserver does them, so the shipped RBAC is what tests run under.
//!
//! Every request names a user by bearer token ([`authn`]), may act as another user when allowed to
//! impersonate ([`impersonation`]), and is then authorized by the RBAC authorizer ([`rbac`]) against the
//! Roles, ClusterRoles and bindings in the store. Writes of RBAC objects pass the privilege-escalation check
//! ([`escalation`]); owner references with `blockOwnerDeletion` need `update` on the owner's finalizers
//! ([`owner_references`]). The access-review APIs ([`reviews`]) answer `kubectl auth can-i`. Every decision is
//! recorded ([`decisions`]) so a test can tell which rule of which role allowed what.

pub mod aggregation;
pub mod authn;
pub mod bootstrap;
pub mod decisions;
pub mod escalation;
pub mod impersonation;
pub mod owner_references;
pub mod rbac;
pub mod reviews;

use std::collections::BTreeMap;
use std::sync::Arc;

use super::resources::GroupResource;
use super::status::ApiError;

pub use authn::{ADMIN_TOKEN, Authenticator};
pub use decisions::{Decision, DecisionLog, DecisionLogFile, DecisionRow, ForbiddenResponse};
pub use rbac::{Authorizer, RbacSnapshot};

/// The group whose members bypass authorization (the admin kubeconfig's group).
pub const MASTERS_GROUP: &str = "system:masters";
/// The group every authenticated user is in.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";

/// Who a request is from, after authentication and impersonation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// The user name (`system:serviceaccount:<ns>:<name>` for ServiceAccounts).
    pub name: String,
    /// The uid (ServiceAccounts: the ServiceAccount's uid).
    pub uid: String,
    /// Groups, `system:authenticated` included.
    pub groups: Vec<String>,
    /// Extra attributes (impersonation's `Impersonate-Extra-*`).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// Whether the user bypasses authorization (`system:masters`).
    pub fn is_master(&self) -> bool {
        self.groups.iter().any(|g| g == MASTERS_GROUP)
    }

    /// The ServiceAccount `(namespace, name)` this user is, if it is one.
    pub fn service_account(&self) -> Option<(&str, &str)> {
        let rest = self.name.strip_prefix("system:serviceaccount:")?;
        rest.split_once(':')
    }

    /// The user of a ServiceAccount, with the groups kube-apiserver gives it.
    pub fn for_service_account(namespace: &str, name: &str, uid: &str) -> Self {
        UserInfo {
            name: format!("system:serviceaccount:{namespace}:{name}"),
            uid: uid.to_string(),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                AUTHENTICATED_GROUP.into(),
            ],
            extra: BTreeMap::new(),
        }
    }
}

/// What a resource request asks to do: the attributes RBAC is asked about.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceAttributes {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, or a special verb
    /// (`impersonate`, `bind`, `escalate`).
    pub verb: String,
    /// The API group (empty for core).
    pub group: String,
    /// The plural resource.
    pub resource: String,
    /// The subresource, or empty.
    pub subresource: String,
    /// The namespace, or empty for cluster scope.
    pub namespace: String,
    /// The object name, or empty for collections and POST creates.
    pub name: String,
}

impl ResourceAttributes {
    /// `resource` or `resource/subresource`, as rules name it.
    pub fn combined_resource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }
}

/// What a request asks: a resource or a non-resource path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attributes {
    /// A resource request.
    Resource(ResourceAttributes),
    /// A non-resource request (`/version`, `/apis`, `/healthz`…).
    NonResource {
        /// The lowercase HTTP method (`get`).
        verb: String,
        /// The URL path.
        path: String,
    },
}

impl Attributes {
    /// The verb.
    pub fn verb(&self) -> &str {
        match self {
            Attributes::Resource(r) => &r.verb,
            Attributes::NonResource { verb, .. } => verb,
        }
    }
}

/// The 403 kube-apiserver answers when RBAC denies a request (`responsewriters.Forbidden`).
pub fn forbidden(user: &UserInfo, attributes: &Attributes, reason: &str) -> ApiError {
    let suffix = if reason.is_empty() {
        String::new()
    } else {
        format!(": {reason}")
    };
    match attributes {
        Attributes::NonResource { verb, path } => {
            let message = format!(
                "forbidden: User \"{}\" cannot {verb} path \"{path}\"{suffix}",
                user.name
            );
            ApiError::with_reason(403, "Forbidden", message)
        }
        Attributes::Resource(r) => {
            let scope = if r.namespace.is_empty() {
                "at the cluster scope".to_string()
            } else {
                format!("in the namespace \"{}\"", r.namespace)
            };
            let detail = format!(
                "User \"{}\" cannot {} resource \"{}\" in API group \"{}\" {scope}{suffix}",
                user.name,
                r.verb,
                r.combined_resource(),
                r.group
            );
            ApiError::forbidden(&GroupResource::new(&r.group, &r.resource), &r.name, &detail)
        }
    }
}

/// What a handler needs to authorize the extra checks a write makes (apply-create, escalation, owner
/// references): who is asking, the RBAC state at the start of the request, and where decisions are recorded.
#[derive(Clone)]
pub struct Access {
    /// The requesting user.
    pub user: Arc<UserInfo>,
    /// The RBAC state the request is judged against.
    pub rbac: Arc<RbacSnapshot>,
    /// Where decisions are recorded.
    pub log: Arc<DecisionLog>,
}

impl Access {
    /// Asks RBAC whether the user may do `attributes` as one step of a larger check (the `escalate` or
    /// `bind` verb, the finalizers fast path). Only allowed answers are recorded: a denied probe is not a
    /// Forbidden answer, and what the request then gets is recorded where it is decided.
    pub fn probe(&self, attributes: &Attributes) -> Decision {
        let decision = self.rbac.authorize(&self.user, attributes);
        if decision.allowed {
            self.log.record(&self.user, attributes, &decision);
        }
        decision
    }

    /// Authorizes `attributes` as what decides the request's answer, recording the decision either way.
    pub fn authorize(&self, attributes: &Attributes) -> Decision {
        let decision = self.rbac.authorize(&self.user, attributes);
        self.log.record(&self.user, attributes, &decision);
        decision
    }

    /// Authorizes `attributes`, or answers kube-apiserver's 403.
    pub fn check(&self, attributes: &Attributes) -> Result<(), ApiError> {
        let decision = self.authorize(attributes);
        if decision.allowed {
            Ok(())
        } else {
            Err(forbidden(&self.user, attributes, &decision.reason))
        }
    }
}
