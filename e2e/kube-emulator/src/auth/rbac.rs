//! The RBAC authorizer (`plugin/pkg/auth/authorizer/rbac`): rule matching, rule resolution from bindings,
//! and a snapshot of the RBAC objects rebuilt only when one of them changes.
//!
//! Aggregated ClusterRoles are resolved here from their `aggregationRule` (the union of the rules of the
//! ClusterRoles their selectors match) rather than from the stored `rules`, which the aggregation controller
//! ([`super::aggregation`]) writes for display. Decisions therefore never wait on that controller, and every
//! rule keeps its provenance: the role it was written in and its index there.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::super::meta;
use super::super::resources::GroupResource;
use super::super::selectors::LabelSelector;
use super::super::store::Store;
use super::{Attributes, UserInfo};

/// The RBAC API group.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// `rbac.authorization.k8s.io` resources, by plural.
pub fn rbac_resource(plural: &str) -> GroupResource {
    GroupResource::new(RBAC_GROUP, plural)
}

/// One `PolicyRule`.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct PolicyRule {
    /// Verbs (`*` for all).
    pub verbs: Vec<String>,
    /// API groups (`*` for all, empty string for core).
    pub api_groups: Vec<String>,
    /// Resources, `resource/subresource`, `*` or `*/subresource`.
    pub resources: Vec<String>,
    /// Object names the rule is limited to; empty for any.
    pub resource_names: Vec<String>,
    /// Non-resource URLs (exact, `*`, or a prefix ending in `*`).
    pub non_resource_urls: Vec<String>,
}

fn strings(value: Option<&Value>) -> Vec<String> {
    meta::string_list(value)
}

impl PolicyRule {
    /// Reads a rule from its JSON form.
    pub fn from_value(rule: &Value) -> Self {
        PolicyRule {
            verbs: strings(rule.get("verbs")),
            api_groups: strings(rule.get("apiGroups")),
            resources: strings(rule.get("resources")),
            resource_names: strings(rule.get("resourceNames")),
            non_resource_urls: strings(rule.get("nonResourceURLs")),
        }
    }

    /// The rules of a Role or ClusterRole object.
    pub fn list_of(role: &Value) -> Vec<PolicyRule> {
        role.get("rules")
            .and_then(Value::as_array)
            .map(|rules| rules.iter().map(PolicyRule::from_value).collect())
            .unwrap_or_default()
    }

    /// The JSON form, with the fields kube-apiserver serializes (empty lists omitted).
    pub fn to_value(&self) -> Value {
        let mut map = serde_json::Map::new();
        let mut put = |key: &str, list: &[String]| {
            if !list.is_empty() {
                map.insert(key.into(), Value::from(list.to_vec()));
            }
        };
        put("verbs", &self.verbs);
        put("apiGroups", &self.api_groups);
        put("resources", &self.resources);
        put("resourceNames", &self.resource_names);
        put("nonResourceURLs", &self.non_resource_urls);
        if !map.contains_key("verbs") {
            map.insert("verbs".into(), Value::Array(Vec::new()));
        }
        Value::Object(map)
    }

    /// `RuleAllows`: whether this rule allows the request.
    pub fn allows(&self, attributes: &Attributes) -> bool {
        match attributes {
            Attributes::Resource(r) => {
                verb_matches(&self.verbs, &r.verb)
                    && has_or_all(&self.api_groups, &r.group)
                    && resource_matches(&self.resources, &r.combined_resource(), &r.subresource)
                    && (self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == &r.name))
            }
            Attributes::NonResource { verb, path } => {
                verb_matches(&self.verbs, verb) && self.non_resource_urls.iter().any(|url| url_matches(url, path))
            }
        }
    }

    /// `rbacv1helpers.CompactString`: `{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`.
    pub fn compact_string(&self) -> String {
        let mut parts = Vec::new();
        let quoted = |list: &[String]| {
            let items: Vec<String> = list.iter().map(|s| format!("{s:?}")).collect();
            format!("[{}]", items.join(" "))
        };
        for (label, list) in [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ] {
            if !list.is_empty() {
                parts.push(format!("{label}:{}", quoted(list)));
            }
        }
        format!("{{{}}}", parts.join(", "))
    }
}

fn verb_matches(verbs: &[String], verb: &str) -> bool {
    verbs.iter().any(|v| v == "*" || v == verb)
}

fn has_or_all(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v == "*" || v == value)
}

/// `ResourceMatches`: `*`, the exact `resource[/subresource]`, or `*/<subresource>`.
fn resource_matches(rule_resources: &[String], combined: &str, subresource: &str) -> bool {
    rule_resources.iter().any(|rule| {
        rule == "*"
            || rule == combined
            || (!subresource.is_empty() && rule.strip_prefix("*/").is_some_and(|sub| sub == subresource))
    })
}

/// `NonResourceURLMatches`: `*`, exact, or a prefix ending in `*`.
fn url_matches(rule: &str, path: &str) -> bool {
    rule == "*" || rule == path || rule.strip_suffix('*').is_some_and(|prefix| path.starts_with(prefix))
}

/// Where a rule was written: which Role or ClusterRole, and its index in that role's `rules`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RuleSource {
    /// `Role` or `ClusterRole`.
    pub kind: String,
    /// The Role's namespace; empty for ClusterRoles.
    pub namespace: String,
    /// The role's name.
    pub name: String,
    /// The rule's index in the role's `rules`.
    pub index: usize,
}

impl fmt::Display for RuleSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{}/{}#{}", self.kind, self.name, self.index)
        } else {
            write!(f, "{}/{}/{}#{}", self.kind, self.namespace, self.name, self.index)
        }
    }
}

/// A rule with its provenance.
#[derive(Clone, Debug, PartialEq)]
pub struct SourcedRule {
    /// The rule.
    pub rule: PolicyRule,
    /// Where it was written.
    pub source: RuleSource,
}

/// A binding's subject.
#[derive(Clone, Debug, PartialEq)]
pub struct Subject {
    /// `User`, `Group` or `ServiceAccount`.
    pub kind: String,
    /// The name.
    pub name: String,
    /// The ServiceAccount's namespace (may be empty in a RoleBinding: the binding's namespace then).
    pub namespace: String,
}

impl Subject {
    fn applies_to(&self, user: &UserInfo, binding_namespace: &str) -> bool {
        match self.kind.as_str() {
            "User" => user.name == self.name,
            "Group" => user.groups.iter().any(|g| g == &self.name),
            "ServiceAccount" => {
                let namespace = if self.namespace.is_empty() {
                    binding_namespace
                } else {
                    &self.namespace
                };
                !namespace.is_empty() && user.name == format!("system:serviceaccount:{namespace}:{}", self.name)
            }
            _ => false,
        }
    }

    /// `describeSubject`: `User "x"`, `Group "x"`, `ServiceAccount "name/namespace"`.
    fn describe(&self, binding_namespace: &str) -> String {
        match self.kind.as_str() {
            "ServiceAccount" => {
                let namespace = if self.namespace.is_empty() {
                    binding_namespace
                } else {
                    &self.namespace
                };
                format!("ServiceAccount \"{}/{namespace}\"", self.name)
            }
            kind => format!("{kind} \"{}\"", self.name),
        }
    }
}

/// A RoleBinding or ClusterRoleBinding.
#[derive(Clone, Debug, PartialEq)]
pub struct Binding {
    /// The binding's namespace; empty for ClusterRoleBindings.
    pub namespace: String,
    /// The binding's name.
    pub name: String,
    /// `roleRef.kind`: `Role` or `ClusterRole`.
    pub role_kind: String,
    /// `roleRef.name`.
    pub role_name: String,
    /// Who the binding is for.
    pub subjects: Vec<Subject>,
}

impl Binding {
    /// Reads a binding object.
    pub fn from_value(obj: &Value) -> Self {
        let subjects = obj
            .get("subjects")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .map(|s| Subject {
                        kind: s.get("kind").and_then(Value::as_str).unwrap_or_default().to_string(),
                        name: s.get("name").and_then(Value::as_str).unwrap_or_default().to_string(),
                        namespace: s
                            .get("namespace")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Binding {
            namespace: meta::namespace(obj).to_string(),
            name: meta::name(obj).to_string(),
            role_kind: obj
                .pointer("/roleRef/kind")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            role_name: obj
                .pointer("/roleRef/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            subjects,
        }
    }

    /// `ClusterRoleBinding "x"` or `RoleBinding "x/ns"`, as RBAC reasons name bindings.
    pub fn describe(&self) -> String {
        if self.namespace.is_empty() {
            format!("ClusterRoleBinding \"{}\"", self.name)
        } else {
            format!("RoleBinding \"{}/{}\"", self.name, self.namespace)
        }
    }

    fn subject_for(&self, user: &UserInfo) -> Option<&Subject> {
        self.subjects.iter().find(|s| s.applies_to(user, &self.namespace))
    }
}

/// Why a request was allowed: the binding, the bound role, and the rule (with its source role).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Grant {
    /// `ClusterRoleBinding/name` or `RoleBinding/ns/name`.
    pub binding: String,
    /// `ClusterRole/name` or `Role/ns/name`: the role the binding references.
    pub role: String,
    /// The rule that matched (for an aggregated ClusterRole, the role it was written in).
    pub rule: Option<RuleSource>,
}

/// An authorization result.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verdict {
    /// Allowed or not (RBAC never denies outright; "not allowed" is no opinion).
    pub allowed: bool,
    /// `RBAC: allowed by …` on allow; empty on a plain denial; resolution errors otherwise.
    pub reason: String,
    /// What allowed it.
    pub grant: Option<Grant>,
}

/// The RBAC objects at one moment, indexed for authorization.
#[derive(Debug, Default)]
pub struct RbacSnapshot {
    cluster_roles: HashMap<String, Arc<Vec<SourcedRule>>>,
    roles: HashMap<(String, String), Arc<Vec<SourcedRule>>>,
    cluster_bindings: Vec<Binding>,
    bindings: HashMap<String, Vec<Binding>>,
}

/// The stored Roles, ClusterRoles and bindings a snapshot is built from.
#[derive(Default)]
pub struct RbacObjects {
    /// ClusterRoles.
    pub cluster_roles: Vec<Arc<Value>>,
    /// Roles.
    pub roles: Vec<Arc<Value>>,
    /// ClusterRoleBindings.
    pub cluster_bindings: Vec<Arc<Value>>,
    /// RoleBindings.
    pub bindings: Vec<Arc<Value>>,
}

impl RbacObjects {
    /// Reads them through `range` (a store read view or a write transaction).
    pub fn read(range: impl Fn(&GroupResource) -> Vec<Arc<Value>>) -> Self {
        RbacObjects {
            cluster_roles: range(&rbac_resource("clusterroles")),
            roles: range(&rbac_resource("roles")),
            cluster_bindings: range(&rbac_resource("clusterrolebindings")),
            bindings: range(&rbac_resource("rolebindings")),
        }
    }
}

/// The label selectors of a ClusterRole's `aggregationRule`, if it has any.
pub fn aggregation_selectors(cluster_role: &Value) -> Option<Vec<LabelSelector>> {
    let selectors = cluster_role
        .pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)?;
    if selectors.is_empty() {
        return None;
    }
    Some(selectors.iter().map(LabelSelector::from_object).collect())
}

/// The rules of every ClusterRole, aggregated ones resolved (nested aggregation included, cycles cut).
pub fn resolve_cluster_roles(cluster_roles: &[Arc<Value>]) -> HashMap<String, Vec<SourcedRule>> {
    let by_name: BTreeMap<String, &Arc<Value>> = cluster_roles
        .iter()
        .map(|role| (meta::name(role).to_string(), role))
        .collect();
    let mut resolved = HashMap::new();
    for name in by_name.keys() {
        let mut visiting = BTreeSet::new();
        let rules = resolve_one(name, &by_name, &mut visiting);
        resolved.insert(name.clone(), rules);
    }
    resolved
}

fn own_rules(kind: &str, namespace: &str, role: &Value) -> Vec<SourcedRule> {
    PolicyRule::list_of(role)
        .into_iter()
        .enumerate()
        .map(|(index, rule)| SourcedRule {
            rule,
            source: RuleSource {
                kind: kind.to_string(),
                namespace: namespace.to_string(),
                name: meta::name(role).to_string(),
                index,
            },
        })
        .collect()
}

fn resolve_one(
    name: &str,
    by_name: &BTreeMap<String, &Arc<Value>>,
    visiting: &mut BTreeSet<String>,
) -> Vec<SourcedRule> {
    let Some(role) = by_name.get(name) else {
        return Vec::new();
    };
    let Some(selectors) = aggregation_selectors(role) else {
        return own_rules("ClusterRole", "", role);
    };
    if !visiting.insert(name.to_string()) {
        return Vec::new();
    }
    // The aggregation controller orders the union by role name and drops rules already present.
    let mut rules: Vec<SourcedRule> = Vec::new();
    for (other_name, other) in by_name {
        if other_name == name {
            continue;
        }
        let labels = meta::labels(other);
        if !selectors.iter().any(|s| s.matches(&labels)) {
            continue;
        }
        for rule in resolve_one(other_name, by_name, visiting) {
            if !rules.iter().any(|r| r.rule == rule.rule) {
                rules.push(rule);
            }
        }
    }
    visiting.remove(name);
    rules
}

impl RbacSnapshot {
    /// Indexes the RBAC objects.
    pub fn build(objects: &RbacObjects) -> Self {
        let cluster_roles = resolve_cluster_roles(&objects.cluster_roles)
            .into_iter()
            .map(|(name, rules)| (name, Arc::new(rules)))
            .collect();
        let roles = objects
            .roles
            .iter()
            .map(|role| {
                let key = (meta::namespace(role).to_string(), meta::name(role).to_string());
                let rules = own_rules("Role", &key.0, role);
                (key, Arc::new(rules))
            })
            .collect();
        let cluster_bindings = objects
            .cluster_bindings
            .iter()
            .map(|b| Binding::from_value(b))
            .collect();
        let mut bindings: HashMap<String, Vec<Binding>> = HashMap::new();
        for binding in &objects.bindings {
            let binding = Binding::from_value(binding);
            bindings.entry(binding.namespace.clone()).or_default().push(binding);
        }
        RbacSnapshot {
            cluster_roles,
            roles,
            cluster_bindings,
            bindings,
        }
    }

    /// The rules a binding grants, or the resolution error kube-apiserver reports for a missing role.
    fn role_rules(&self, binding: &Binding) -> Result<Arc<Vec<SourcedRule>>, String> {
        match binding.role_kind.as_str() {
            "ClusterRole" => self.cluster_roles.get(&binding.role_name).cloned().ok_or_else(|| {
                format!(
                    "clusterrole.rbac.authorization.k8s.io \"{}\" not found",
                    binding.role_name
                )
            }),
            "Role" => self
                .roles
                .get(&(binding.namespace.clone(), binding.role_name.clone()))
                .cloned()
                .ok_or_else(|| format!("role.rbac.authorization.k8s.io \"{}\" not found", binding.role_name)),
            other => Err(format!("unsupported role reference kind: {other:?}")),
        }
    }

    /// `VisitRulesFor`: the bindings that apply to `user` for a request in `namespace` (ClusterRoleBindings
    /// first, then the namespace's RoleBindings), each with the subject that matched.
    fn applicable<'a>(
        &'a self,
        user: &'a UserInfo,
        namespace: &str,
    ) -> impl Iterator<Item = (&'a Binding, &'a Subject)> {
        let namespaced = if namespace.is_empty() {
            None
        } else {
            self.bindings.get(namespace)
        };
        self.cluster_bindings
            .iter()
            .chain(namespaced.into_iter().flatten())
            .filter_map(move |binding| binding.subject_for(user).map(|subject| (binding, subject)))
    }

    /// Authorizes one request (`system:masters` bypasses RBAC, as the privileged-group authorizer does).
    pub fn authorize(&self, user: &UserInfo, attributes: &Attributes) -> Verdict {
        if user.is_master() {
            // The privileged-group authorizer: allowed without consulting RBAC (no grant to name).
            return Verdict {
                allowed: true,
                reason: String::new(),
                grant: None,
            };
        }
        let namespace = match attributes {
            Attributes::Resource(r) => r.namespace.as_str(),
            Attributes::NonResource { .. } => "",
        };
        let mut errors = Vec::new();
        for (binding, subject) in self.applicable(user, namespace) {
            let rules = match self.role_rules(binding) {
                Ok(rules) => rules,
                Err(error) => {
                    errors.push(error);
                    continue;
                }
            };
            if let Some(rule) = rules.iter().find(|r| r.rule.allows(attributes)) {
                let reason = format!(
                    "RBAC: allowed by {} of {} \"{}\" to {}",
                    binding.describe(),
                    binding.role_kind,
                    binding.role_name,
                    subject.describe(&binding.namespace)
                );
                let role = if binding.role_kind == "Role" {
                    format!("Role/{}/{}", binding.namespace, binding.role_name)
                } else {
                    format!("ClusterRole/{}", binding.role_name)
                };
                let binding_id = if binding.namespace.is_empty() {
                    format!("ClusterRoleBinding/{}", binding.name)
                } else {
                    format!("RoleBinding/{}/{}", binding.namespace, binding.name)
                };
                return Verdict {
                    allowed: true,
                    reason,
                    grant: Some(Grant {
                        binding: binding_id,
                        role,
                        rule: Some(rule.source.clone()),
                    }),
                };
            }
        }
        let reason = match errors.len() {
            0 => String::new(),
            1 => format!("RBAC: {}", errors[0]),
            _ => format!("RBAC: [{}]", errors.join(", ")),
        };
        Verdict {
            allowed: false,
            reason,
            grant: None,
        }
    }

    /// `RulesFor`: every rule that applies to `user` in `namespace` (cluster-wide rules when empty), plus the
    /// resolution errors met on the way.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        for (binding, _) in self.applicable(user, namespace) {
            match self.role_rules(binding) {
                Ok(found) => rules.extend(found.iter().map(|r| r.rule.clone())),
                Err(error) => errors.push(error),
            }
        }
        (rules, errors)
    }

    /// The rules of the role a binding would reference (`GetRoleReferenceRules`), or `None` if it is missing.
    pub fn referenced_rules(&self, role_kind: &str, role_name: &str, namespace: &str) -> Option<Vec<PolicyRule>> {
        let binding = Binding {
            namespace: namespace.to_string(),
            name: String::new(),
            role_kind: role_kind.to_string(),
            role_name: role_name.to_string(),
            subjects: Vec::new(),
        };
        self.role_rules(&binding)
            .ok()
            .map(|rules| rules.iter().map(|r| r.rule.clone()).collect())
    }
}

/// Hands out the current [`RbacSnapshot`], rebuilding it only when an RBAC object changed.
#[derive(Default)]
pub struct Authorizer {
    cached: Mutex<Option<(u64, Arc<RbacSnapshot>)>>,
}

impl Authorizer {
    /// The snapshot for the store's current RBAC state.
    pub fn snapshot(&self, store: &Store) -> Arc<RbacSnapshot> {
        let generation = store.read(|r| r.rbac_generation());
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((seen, snapshot)) = cached.as_ref()
            && *seen == generation
        {
            return snapshot.clone();
        }
        let (generation, objects) = store.read(|r| {
            let objects = RbacObjects::read(|gr| r.range(gr, None, None).into_iter().map(|(_, v)| v).collect());
            (r.rbac_generation(), objects)
        });
        let snapshot = Arc::new(RbacSnapshot::build(&objects));
        *cached = Some((generation, snapshot.clone()));
        snapshot
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::ResourceAttributes;
    use serde_json::json;

    fn rule(value: Value) -> PolicyRule {
        PolicyRule::from_value(&value)
    }

    fn resource(verb: &str, group: &str, resource: &str, sub: &str, ns: &str, name: &str) -> Attributes {
        Attributes::Resource(ResourceAttributes {
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            namespace: ns.into(),
            name: name.into(),
        })
    }

    fn sa(ns: &str, name: &str) -> UserInfo {
        UserInfo::for_service_account(ns, name, "uid")
    }

    #[test]
    fn resources_match_exactly_by_star_or_by_star_slash_subresource() {
        let status = rule(json!({"verbs":["patch"],"apiGroups":["g"],"resources":["*/status"]}));
        assert!(status.allows(&resource("patch", "g", "apps", "status", "ns", "a")));
        assert!(!status.allows(&resource("patch", "g", "apps", "", "ns", "a")));
        let plain = rule(json!({"verbs":["get"],"apiGroups":[""],"resources":["pods"]}));
        assert!(
            !plain.allows(&resource("get", "", "pods", "log", "ns", "p")),
            "pods does not cover pods/log"
        );
        let pods_star = rule(json!({"verbs":["get"],"apiGroups":[""],"resources":["pods/*"]}));
        assert!(
            !pods_star.allows(&resource("get", "", "pods", "log", "ns", "p")),
            "pods/* has no special meaning"
        );
        let all = rule(json!({"verbs":["*"],"apiGroups":["*"],"resources":["*"]}));
        assert!(all.allows(&resource("create", "x", "y", "z", "", "")));
    }

    #[test]
    fn resource_names_never_match_a_nameless_request() {
        let named =
            rule(json!({"verbs":["get","create"],"apiGroups":[""],"resources":["secrets"],"resourceNames":["a"]}));
        assert!(named.allows(&resource("get", "", "secrets", "", "ns", "a")));
        assert!(!named.allows(&resource("get", "", "secrets", "", "ns", "b")));
        assert!(!named.allows(&resource("create", "", "secrets", "", "ns", "")));
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_star_prefix() {
        let urls = rule(json!({"verbs":["get"],"nonResourceURLs":["/apis/*","/version"]}));
        let get = |path: &str| Attributes::NonResource {
            verb: "get".into(),
            path: path.into(),
        };
        assert!(urls.allows(&get("/apis/apps")));
        assert!(urls.allows(&get("/version")));
        assert!(!urls.allows(&get("/apis")));
        assert!(!urls.allows(&get("/version/x")));
    }

    fn snapshot(objects: Vec<Value>) -> RbacSnapshot {
        let mut all = RbacObjects::default();
        for obj in objects {
            let obj = Arc::new(obj);
            match obj["kind"].as_str() {
                Some("ClusterRole") => all.cluster_roles.push(obj),
                Some("Role") => all.roles.push(obj),
                Some("ClusterRoleBinding") => all.cluster_bindings.push(obj),
                _ => all.bindings.push(obj),
            }
        }
        RbacSnapshot::build(&all)
    }

    #[test]
    fn a_role_binding_to_a_cluster_role_grants_only_in_its_namespace() {
        let rbac = snapshot(vec![
            json!({"kind":"ClusterRole","metadata":{"name":"reader"},"rules":[{"verbs":["get"],"apiGroups":[""],"resources":["secrets"]}]}),
            json!({"kind":"RoleBinding","metadata":{"name":"rb","namespace":"a"},
                   "roleRef":{"kind":"ClusterRole","name":"reader"},"subjects":[{"kind":"ServiceAccount","name":"op"}]}),
        ]);
        let user = sa("a", "op");
        let allowed = rbac.authorize(&user, &resource("get", "", "secrets", "", "a", "s"));
        assert!(allowed.allowed);
        assert_eq!(
            allowed.reason,
            "RBAC: allowed by RoleBinding \"rb/a\" of ClusterRole \"reader\" to ServiceAccount \"op/a\""
        );
        assert!(
            !rbac
                .authorize(&user, &resource("get", "", "secrets", "", "b", "s"))
                .allowed
        );
        assert!(
            !rbac
                .authorize(&user, &resource("list", "", "secrets", "", "", ""))
                .allowed
        );
    }

    #[test]
    fn aggregated_cluster_roles_take_the_rules_of_the_roles_they_select_with_provenance() {
        let rbac = snapshot(vec![
            json!({"kind":"ClusterRole","metadata":{"name":"manager"},
                   "aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"agg":"true"}}]}}),
            json!({"kind":"ClusterRole","metadata":{"name":"part-a","labels":{"agg":"true"}},
                   "rules":[{"verbs":["get"],"apiGroups":[""],"resources":["configmaps"]},
                            {"verbs":["list"],"apiGroups":[""],"resources":["services"]}]}),
            json!({"kind":"ClusterRole","metadata":{"name":"other"},"rules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"]}]}),
            json!({"kind":"ClusterRoleBinding","metadata":{"name":"manager"},
                   "roleRef":{"kind":"ClusterRole","name":"manager"},
                   "subjects":[{"kind":"ServiceAccount","name":"op","namespace":"sys"}]}),
        ]);
        let user = sa("sys", "op");
        let verdict = rbac.authorize(&user, &resource("list", "", "services", "", "x", ""));
        assert!(verdict.allowed);
        let source = verdict.grant.and_then(|g| g.rule).expect("a rule");
        assert_eq!((source.name.as_str(), source.index), ("part-a", 1));
        assert!(
            !rbac
                .authorize(&user, &resource("delete", "", "services", "", "x", "s"))
                .allowed
        );
    }

    #[test]
    fn a_binding_to_a_missing_role_is_a_resolution_error_in_the_reason() {
        let rbac = snapshot(vec![json!({"kind":"ClusterRoleBinding","metadata":{"name":"b"},
            "roleRef":{"kind":"ClusterRole","name":"gone"},"subjects":[{"kind":"User","name":"bob"}]})]);
        let user = UserInfo {
            name: "bob".into(),
            ..UserInfo::default()
        };
        let verdict = rbac.authorize(&user, &resource("get", "", "pods", "", "", "p"));
        assert!(!verdict.allowed);
        assert_eq!(
            verdict.reason,
            "RBAC: clusterrole.rbac.authorization.k8s.io \"gone\" not found"
        );
    }

    #[test]
    fn compact_strings_quote_like_go() {
        let r = rule(json!({"verbs":["get","list"],"apiGroups":[""],"resources":["pods"]}));
        assert_eq!(
            r.compact_string(),
            "{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\" \"list\"]}"
        );
    }
}
