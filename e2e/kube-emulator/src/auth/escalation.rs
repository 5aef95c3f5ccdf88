//! Privilege-escalation prevention on RBAC writes (`pkg/registry/rbac`): a user may write a Role or
//! ClusterRole only with permissions it already holds (or the `escalate` verb), and a binding only to a role
//! whose permissions it holds (or the `bind` verb on that role). `system:masters` is exempt.

use serde_json::Value;

use super::super::meta;
use super::super::status::ApiError;
use super::rbac::{PolicyRule, RBAC_GROUP, aggregation_selectors, rbac_resource};
use super::{Access, Attributes, ResourceAttributes};

/// One RBAC object being written.
pub struct RbacWrite<'a> {
    /// `Role`, `ClusterRole`, `RoleBinding` or `ClusterRoleBinding`.
    pub kind: &'a str,
    /// The name in the request URL (empty on a POST create).
    pub request_name: &'a str,
    /// The object's namespace (empty for cluster-scoped kinds).
    pub namespace: &'a str,
    /// The object before the write; `None` on create.
    pub old: Option<&'a Value>,
    /// The object as it would be stored.
    pub new: &'a Value,
}

/// Refuses the write when it would grant what the writer does not hold.
pub fn check(access: &Access, write: &RbacWrite<'_>) -> Result<(), ApiError> {
    if access.user.is_master() {
        return Ok(());
    }
    if let Some(old) = write.old
        && only_gc_fields_changed(old, write.new)
    {
        return Ok(());
    }
    match write.kind {
        "Role" | "ClusterRole" => check_role(access, write),
        "RoleBinding" | "ClusterRoleBinding" => check_binding(access, write),
        _ => Ok(()),
    }
}

/// `IsOnlyMutatingGCFields`: only ownerReferences or finalizers differ.
fn only_gc_fields_changed(old: &Value, new: &Value) -> bool {
    let strip = |obj: &Value| {
        let mut copy = obj.clone();
        if let Some(metadata) = copy.get_mut("metadata").and_then(Value::as_object_mut) {
            for key in [
                "ownerReferences",
                "finalizers",
                "managedFields",
                "resourceVersion",
                "generation",
            ] {
                metadata.remove(key);
            }
        }
        copy
    };
    strip(old) == strip(new)
}

fn plural(kind: &str) -> &'static str {
    match kind {
        "Role" => "roles",
        "ClusterRole" => "clusterroles",
        "RoleBinding" => "rolebindings",
        _ => "clusterrolebindings",
    }
}

fn check_role(access: &Access, write: &RbacWrite<'_>) -> Result<(), ApiError> {
    let resource = plural(write.kind);
    let escalate = Attributes::Resource(ResourceAttributes {
        verb: "escalate".into(),
        group: RBAC_GROUP.into(),
        resource: resource.into(),
        subresource: String::new(),
        namespace: write.namespace.into(),
        name: write.request_name.into(),
    });
    if access.probe(&escalate).allowed {
        return Ok(());
    }
    let name = meta::name(write.new);
    let gr = rbac_resource(resource);
    confirm_no_escalation(access, write.namespace, &PolicyRule::list_of(write.new))
        .map_err(|detail| ApiError::forbidden(&gr, name, &detail))?;
    let aggregates = aggregation_selectors(write.new).is_some() || write.old.and_then(aggregation_selectors).is_some();
    if write.kind == "ClusterRole" && aggregates {
        let full_authority = [
            PolicyRule {
                verbs: vec!["*".into()],
                api_groups: vec!["*".into()],
                resources: vec!["*".into()],
                ..PolicyRule::default()
            },
            PolicyRule {
                verbs: vec!["*".into()],
                non_resource_urls: vec!["*".into()],
                ..PolicyRule::default()
            },
        ];
        if confirm_no_escalation(access, "", &full_authority).is_err() {
            return Err(ApiError::forbidden(
                &gr,
                name,
                "must have cluster-admin privileges to use the aggregationRule",
            ));
        }
    }
    Ok(())
}

fn check_binding(access: &Access, write: &RbacWrite<'_>) -> Result<(), ApiError> {
    let role_kind = write
        .new
        .pointer("/roleRef/kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let role_name = write
        .new
        .pointer("/roleRef/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let role_resource = match role_kind {
        "ClusterRole" => "clusterroles",
        "Role" => "roles",
        _ => "",
    };
    if !role_resource.is_empty() {
        let bind = Attributes::Resource(ResourceAttributes {
            verb: "bind".into(),
            group: RBAC_GROUP.into(),
            resource: role_resource.into(),
            subresource: String::new(),
            namespace: write.namespace.into(),
            name: role_name.into(),
        });
        if access.probe(&bind).allowed {
            return Ok(());
        }
    }
    let rules = access
        .rbac
        .referenced_rules(role_kind, role_name, write.namespace)
        .ok_or_else(|| ApiError::not_found(&rbac_resource(role_resource), role_name))?;
    confirm_no_escalation(access, write.namespace, &rules)
        .map_err(|detail| ApiError::forbidden(&rbac_resource(plural(write.kind)), meta::name(write.new), &detail))
}

/// `ConfirmNoEscalation`: the detail of the Forbidden when the user's rules in `namespace` do not cover `rules`.
fn confirm_no_escalation(access: &Access, namespace: &str, rules: &[PolicyRule]) -> Result<(), String> {
    let (owner_rules, errors) = access.rbac.rules_for(&access.user, namespace);
    let missing: Vec<PolicyRule> = rules
        .iter()
        .flat_map(breakdown)
        .filter(|sub| !owner_rules.iter().any(|owner| covers(owner, sub)))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut lines: Vec<String> = compact(missing).iter().map(PolicyRule::compact_string).collect();
    lines.sort();
    lines.dedup();
    let groups: Vec<String> = access.user.groups.iter().map(|g| format!("{g:?}")).collect();
    let mut detail = format!(
        "user {:?} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
        access.user.name,
        groups.join(" "),
        lines.join("\n")
    );
    if !errors.is_empty() {
        detail.push_str(&format!("; resolution errors: [{}]", errors.join(" ")));
    }
    Err(detail)
}

/// `BreakdownRule`: one rule per group × resource × verb (× resource name), and per URL × verb.
fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut atoms = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let atom = |names: Vec<String>| PolicyRule {
                    verbs: vec![verb.clone()],
                    api_groups: vec![group.clone()],
                    resources: vec![resource.clone()],
                    resource_names: names,
                    non_resource_urls: Vec::new(),
                };
                if rule.resource_names.is_empty() {
                    atoms.push(atom(Vec::new()));
                } else {
                    atoms.extend(rule.resource_names.iter().map(|n| atom(vec![n.clone()])));
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            atoms.push(PolicyRule {
                verbs: vec![verb.clone()],
                non_resource_urls: vec![url.clone()],
                ..PolicyRule::default()
            });
        }
    }
    atoms
}

fn has_all(owner: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| owner.contains(w))
}

/// `ruleCovers`.
fn covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let star = |list: &[String]| list.iter().any(|v| v == "*");
    let verbs = star(&owner.verbs) || has_all(&owner.verbs, &sub.verbs);
    let groups = star(&owner.api_groups) || has_all(&owner.api_groups, &sub.api_groups);
    let resources = star(&owner.resources)
        || sub.resources.iter().all(|r| {
            owner.resources.contains(r)
                || r.split_once('/')
                    .is_some_and(|(_, subresource)| owner.resources.contains(&format!("*/{subresource}")))
        });
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    let urls = sub.non_resource_urls.iter().all(|url| {
        owner
            .non_resource_urls
            .iter()
            .any(|o| o == url || o.strip_suffix('*').is_some_and(|prefix| url.starts_with(prefix)))
    });
    verbs && groups && resources && names && urls
}

/// `CompactRules`: atomic rules with the same single group, resource and name merge their verbs.
fn compact(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut merged: Vec<PolicyRule> = Vec::new();
    for rule in rules {
        let simple = rule.non_resource_urls.is_empty() && rule.api_groups.len() == 1 && rule.resources.len() == 1;
        if simple
            && let Some(existing) = merged.iter_mut().find(|m| {
                m.non_resource_urls.is_empty()
                    && m.api_groups == rule.api_groups
                    && m.resources == rule.resources
                    && m.resource_names == rule.resource_names
            })
        {
            for verb in rule.verbs {
                if !existing.verbs.contains(&verb) {
                    existing.verbs.push(verb);
                }
            }
            continue;
        }
        merged.push(rule);
    }
    merged
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::super::rbac::{RbacObjects, RbacSnapshot};
    use super::super::{DecisionLog, UserInfo};
    use super::*;

    fn access_with(rules: Value) -> Access {
        let objects = RbacObjects {
            cluster_roles: vec![Arc::new(
                json!({"kind":"ClusterRole","metadata":{"name":"op"},"rules":rules}),
            )],
            cluster_bindings: vec![Arc::new(json!({"kind":"ClusterRoleBinding","metadata":{"name":"op"},
                "roleRef":{"kind":"ClusterRole","name":"op"},"subjects":[{"kind":"User","name":"bob"}]}))],
            ..RbacObjects::default()
        };
        Access {
            user: Arc::new(UserInfo {
                name: "bob".into(),
                groups: vec!["system:authenticated".into()],
                ..UserInfo::default()
            }),
            rbac: Arc::new(RbacSnapshot::build(&objects)),
            log: Arc::new(DecisionLog::default()),
        }
    }

    fn role(rules: Value) -> Value {
        json!({"kind":"Role","metadata":{"name":"r1","namespace":"ns"},"rules":rules})
    }

    #[test]
    fn a_role_may_grant_only_what_the_writer_holds_and_the_forbidden_lists_the_rest() {
        let access = access_with(json!([{"verbs":["get"],"apiGroups":[""],"resources":["secrets"]}]));
        let ok = role(json!([{"verbs":["get"],"apiGroups":[""],"resources":["secrets"],"resourceNames":["x"]}]));
        fn write(new: &Value) -> RbacWrite<'_> {
            RbacWrite {
                kind: "Role",
                request_name: "r1",
                namespace: "ns",
                old: None,
                new,
            }
        }
        check(&access, &write(&ok)).expect("a narrower grant is fine");
        let too_much = role(json!([{"verbs":["get","list"],"apiGroups":[""],"resources":["secrets","pods"]}]));
        let err = check(&access, &write(&too_much)).expect_err("escalation");
        assert_eq!(err.code, 403);
        assert_eq!(
            err.message,
            "roles.rbac.authorization.k8s.io \"r1\" is forbidden: user \"bob\" (groups=[\"system:authenticated\"]) \
             is attempting to grant RBAC permissions not currently held:\n\
             {APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\" \"list\"]}\n\
             {APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"list\"]}"
        );
    }

    #[test]
    fn the_escalate_and_bind_verbs_lift_the_check() {
        let access = access_with(json!([
            {"verbs":["escalate"],"apiGroups":["rbac.authorization.k8s.io"],"resources":["roles"]},
            {"verbs":["bind"],"apiGroups":["rbac.authorization.k8s.io"],"resources":["clusterroles"],"resourceNames":["admin"]}
        ]));
        let big = role(json!([{"verbs":["*"],"apiGroups":["*"],"resources":["*"]}]));
        check(
            &access,
            &RbacWrite {
                kind: "Role",
                request_name: "r1",
                namespace: "ns",
                old: None,
                new: &big,
            },
        )
        .expect("escalate allows any role");
        let binding = json!({"kind":"RoleBinding","metadata":{"name":"b","namespace":"ns"},
            "roleRef":{"kind":"ClusterRole","name":"admin"},"subjects":[]});
        check(
            &access,
            &RbacWrite {
                kind: "RoleBinding",
                request_name: "b",
                namespace: "ns",
                old: None,
                new: &binding,
            },
        )
        .expect("bind on the role allows binding it even though it does not exist");
    }

    #[test]
    fn star_slash_subresource_covers_that_subresource_of_every_resource() {
        let owner = PolicyRule::from_value(&json!({"verbs":["update"],"apiGroups":["*"],"resources":["*/finalizers"]}));
        let sub =
            PolicyRule::from_value(&json!({"verbs":["update"],"apiGroups":["g"],"resources":["apps/finalizers"]}));
        assert!(covers(&owner, &sub));
        let plain = PolicyRule::from_value(&json!({"verbs":["update"],"apiGroups":["g"],"resources":["apps"]}));
        assert!(!covers(&plain, &sub), "apps does not cover apps/finalizers");
    }
}
