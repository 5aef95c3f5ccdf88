//! Counting what exists outside the operator — Keycloak clients and groups, Rancher projects and bindings,
//! Keystone application credentials, listeners on the shared Gateways — and inside the cluster, so the chaos run
//! can say how many duplicates, orphans and unrecorded objects there are.

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine;
use serde_json::Value;

use crate::Sandbox;
use crate::surroundings::nebari::GATEWAY_NAMESPACE;
use e2e::harness::keycloak::GroupNode;
use e2e::keystone::admin::KeystoneAdmin;
use e2e::keystone::sample::names as keystone_names;

/// What exists at one moment, by the names that identify each thing.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// `clientId`s in the NebariApp realm.
    pub keycloak_clients: Vec<String>,
    /// Group paths in the ManagedRancherProject realm (a path twice is a duplicate group).
    pub keycloak_groups: Vec<String>,
    /// Members of each group path there.
    pub group_members: BTreeMap<String, Vec<String>>,
    /// Rancher projects: id → (cluster, display name, owner annotation).
    pub rancher_projects: BTreeMap<String, (String, String, String)>,
    /// Rancher project role template bindings: id → (project, role, subject).
    pub rancher_bindings: BTreeMap<String, (String, String, String)>,
    /// Rancher cluster role template bindings, by id.
    pub rancher_cluster_bindings: BTreeSet<String>,
    /// The service user's application credentials in Keystone: id → description.
    pub keystone_credentials: BTreeMap<String, String>,
    /// Listener names of each shared Gateway (`<gateway>/<listener>`).
    pub gateway_listeners: BTreeSet<String>,
    /// Every object in the cluster (`resource namespace/name`), Events and Leases left out.
    pub cluster_objects: BTreeSet<String>,
    /// The application-credential ids the cluster's Secrets hold (`AC_ID`), with the Secret's name.
    pub recorded_credentials: BTreeMap<String, String>,
}

fn walk(nodes: &[GroupNode], groups: &mut Vec<String>, members: &mut BTreeMap<String, Vec<String>>) {
    for node in nodes {
        groups.push(node.path.clone());
        members.insert(node.path.clone(), node.members.clone());
        walk(&node.children, groups, members);
    }
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_string()
}

impl Snapshot {
    /// Reads every system now.
    pub async fn take(sandbox: &Sandbox) -> Result<Self, String> {
        let mut snapshot = Snapshot {
            keycloak_clients: sandbox.nebari_keycloak().client_ids().await,
            ..Snapshot::default()
        };
        let rancher = sandbox.rancher();
        let tree = rancher.keycloak.group_tree().await;
        walk(&tree, &mut snapshot.keycloak_groups, &mut snapshot.group_members);
        for project in rancher.rancher.projects() {
            snapshot.rancher_projects.insert(
                text(&project["id"]),
                (
                    text(&project["clusterId"]),
                    text(&project["name"]),
                    text(&project["annotations"]["waldur.io/owner"]),
                ),
            );
        }
        for binding in rancher.rancher.project_bindings() {
            let subject = [&binding["groupPrincipalId"], &binding["userPrincipalId"]]
                .into_iter()
                .map(text)
                .find(|s| !s.is_empty())
                .unwrap_or_default();
            snapshot.rancher_bindings.insert(
                text(&binding["id"]),
                (text(&binding["projectId"]), text(&binding["roleTemplateId"]), subject),
            );
        }
        snapshot.rancher_cluster_bindings = rancher
            .rancher
            .cluster_bindings()
            .iter()
            .map(|b| text(&b["id"]))
            .collect();

        let admin = KeystoneAdmin::login(sandbox.keystone_server())
            .await
            .map_err(|e| e.to_string())?;
        let user = admin
            .find_user(keystone_names::USER)
            .await
            .map_err(|e| e.to_string())?
            .ok_or("the Keystone service user is gone")?;
        for credential in admin.application_credentials(&user).await.map_err(|e| e.to_string())? {
            snapshot
                .keystone_credentials
                .insert(text(&credential["id"]), text(&credential["description"]));
        }

        for (resource, object) in sandbox.api().all_objects() {
            let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
            let name = object["metadata"]["name"].as_str().unwrap_or_default();
            if resource.resource == "gateways" && namespace == GATEWAY_NAMESPACE {
                for listener in object["spec"]["listeners"].as_array().into_iter().flatten() {
                    snapshot
                        .gateway_listeners
                        .insert(format!("{name}/{}", text(&listener["name"])));
                }
            }
            if resource.group.is_empty() && resource.resource == "secrets" {
                let id = object["data"]["AC_ID"]
                    .as_str()
                    .and_then(|e| base64::engine::general_purpose::STANDARD.decode(e).ok())
                    .and_then(|b| String::from_utf8(b).ok());
                if let Some(id) = id {
                    snapshot.recorded_credentials.insert(id, format!("{namespace}/{name}"));
                }
            }
            if resource.resource == "events" || resource.resource == "leases" {
                continue;
            }
            snapshot
                .cluster_objects
                .insert(format!("{} {namespace}/{name}", resource.resource));
        }
        Ok(snapshot)
    }
}

/// Entries of `items` that appear more than once, with their counts.
pub fn repeated<'a>(items: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let mut counts: BTreeMap<&String, usize> = BTreeMap::new();
    for item in items {
        *counts.entry(item).or_default() += 1;
    }
    counts
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(item, n)| format!("{item} ×{n}"))
        .collect()
}

/// What `after` has that `before` had not.
pub fn added<'a, T: Ord + Clone + 'a>(
    before: impl IntoIterator<Item = &'a T>,
    after: impl IntoIterator<Item = &'a T>,
) -> Vec<T> {
    let before: BTreeSet<&T> = before.into_iter().collect();
    after.into_iter().filter(|x| !before.contains(x)).cloned().collect()
}
