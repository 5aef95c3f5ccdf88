//! `manager takeover-check`: before a cut-over, which objects this operator would refuse when started with the
//! flags given, and what would keep each working. The replaced operators accepted things this one refuses by
//! default (client scopes and mapper types outside the allow-lists, members added to groups an app did not
//! create, role templates outside the Rancher policy); the check reads the cluster and Keycloak, changes
//! nothing, and lists every such object with the refusal it would get and the flag that allows it, where a
//! flag would. Run it with the same flags (or environment) the manager is going to run with.

use kube::api::{Api, ListParams};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;

use crds::nebari::{AuthProvider, NebariApp};
use crds::rancher::ManagedRancherProject;

use super::cli::Cli;
use crate::keycloak::{KeycloakError, RealmClient};
use crate::nebari_app::NebariAppSettings;
use crate::nebari_app::auth_policy;
use crate::nebari_app::keycloak_groups::{self, GroupRefusal};
use crate::nebari_app::keycloak_sync::{Ownership, ownership};
use crate::nebari_app::naming::AppNames;
use crate::rancher_project::desired::desired;
use crate::rancher_project::policy::RancherPolicy;

/// One object this operator would refuse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// `NebariApp` or `ManagedRancherProject`.
    pub kind: &'static str,
    /// `namespace/name`.
    pub object: String,
    /// The condition it would get: `<type>=False/<reason>`.
    pub condition: String,
    /// The condition's message.
    pub message: String,
    /// The flag that would allow it, or what to change in the object when no flag would.
    pub remedy: String,
}

/// Why the check could not finish.
#[derive(Debug, thiserror::Error)]
pub enum TakeoverCheckError {
    /// The cluster could not be read.
    #[error("listing {kind}: {source}")]
    List {
        /// The kind being listed.
        kind: &'static str,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Keycloak could not be read.
    #[error("reading Keycloak: {0}")]
    Keycloak(#[from] KeycloakError),
}

/// Every object of the cluster the manager, run with `cli`'s flags, would refuse.
pub async fn check(client: kube::Client, cli: &Cli) -> Result<Vec<Finding>, TakeoverCheckError> {
    let mut findings = nebari_apps(&client, &cli.nebari_app.settings()).await?;
    let policy = cli.managed_rancher_project.project_settings().policy;
    findings.extend(rancher_projects(&client, &policy).await?);
    Ok(findings)
}

async fn list_all<K>(client: &kube::Client, kind: &'static str) -> Result<Vec<K>, TakeoverCheckError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let api: Api<K> = Api::all(client.clone());
    match api.list(&ListParams::default()).await {
        Ok(list) => Ok(list.items),
        // The kind is not installed: nothing of it to take over.
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(Vec::new()),
        Err(source) => Err(TakeoverCheckError::List { kind, source }),
    }
}

/// The NebariApps the NebariApp controller would refuse under `settings`.
async fn nebari_apps(client: &kube::Client, settings: &NebariAppSettings) -> Result<Vec<Finding>, TakeoverCheckError> {
    let apps: Vec<NebariApp> = list_all(client, "NebariApps").await?;
    let realm = if settings.keycloak_enabled && !apps.is_empty() {
        Some(settings.keycloak.realm_client(client.clone(), None)?)
    } else {
        None
    };
    let mut findings = Vec::new();
    for app in &apps {
        let names = AppNames::new(&app.namespace().unwrap_or_default(), &app.name_any());
        let mut finding = |condition: &str, message: String, remedy: String| {
            findings.push(Finding {
                kind: "NebariApp",
                object: names.owner(),
                condition: condition.to_string(),
                message,
                remedy,
            })
        };
        if app.spec.routing.is_some() && !settings.allowed_hostnames.allows(&names.namespace, &app.spec.hostname) {
            finding(
                "RoutingReady=False/HostnameNotAllowed",
                format!(
                    "hostname {} is not allowed for namespace {}",
                    app.spec.hostname, names.namespace
                ),
                format!(
                    "--nebari-allowed-hostnames with a pattern covering {}",
                    app.spec.hostname
                ),
            );
        }
        let Some(auth) = app.spec.auth.as_ref().filter(|auth| auth.enabled) else {
            continue;
        };
        let groups_named = auth.groups.as_ref().is_some_and(|groups| !groups.is_empty());
        if auth.enforce_at_gateway && auth.provider != AuthProvider::Keycloak && groups_named {
            finding(
                "AuthReady=False/GroupsNotEnforceable",
                "auth.groups can only be enforced at the gateway with the keycloak provider".to_string(),
                "no flag: set auth.enforceAtGateway: false (the app checks groups itself) or remove auth.groups"
                    .to_string(),
            );
            continue;
        }
        if auth.provider != AuthProvider::Keycloak || !auth.provision_client {
            continue;
        }
        if let Err(refusal) = auth_policy::check(auth, &names, &settings.keycloak_policy) {
            let remedy = refusal
                .remedy
                .unwrap_or_else(|| "no flag: change the app's auth settings".to_string());
            finding(&format!("AuthReady=False/{}", refusal.reason), refusal.message, remedy);
            continue;
        }
        let Some(realm) = &realm else {
            continue;
        };
        for (condition, message, remedy) in keycloak_refusals(realm, auth, &names, settings).await? {
            finding(&condition, message, remedy);
        }
    }
    Ok(findings)
}

/// What the app would be refused by what Keycloak already holds: a client under its id that it may not take
/// over, groups it may not use.
async fn keycloak_refusals(
    realm: &RealmClient,
    auth: &crds::nebari::AuthConfig,
    names: &AppNames,
    settings: &NebariAppSettings,
) -> Result<Vec<(String, String, String)>, TakeoverCheckError> {
    let policy = &settings.keycloak_policy;
    let mut refusals = Vec::new();
    let client_id = names.keycloak_client();
    if let Some(client) = realm.find_client(&client_id).await? {
        let remedy = match ownership(&client, names, policy.adopt_unowned_clients) {
            Ownership::Ours | Ownership::Adoptable => None,
            Ownership::Unowned if !policy.adopt_unowned_clients && names.derived_client_ids().contains(&client_id) => {
                Some("--keycloak-adopt-unowned-clients until every app is Ready".to_string())
            }
            Ownership::Unowned | Ownership::Foreign => Some("no flag: the client belongs to something else".into()),
        };
        if let Some(remedy) = remedy {
            refusals.push((
                "AuthReady=False/KeycloakClientNotOwned".to_string(),
                format!("Keycloak client {client_id} exists and is not this app's"),
                remedy,
            ));
        }
    }
    for (name, members) in keycloak_groups::wanted(auth) {
        let Some(group) = realm.find_top_level_group(&name).await? else {
            continue;
        };
        if let Err(refusal) = keycloak_groups::access(&group, names, &policy.group_patterns, !members.is_empty()) {
            let remedy = match refusal {
                GroupRefusal::NotFillable => format!("--keycloak-group-policy with {name} (or a pattern for it) added"),
                GroupRefusal::OtherNamespace => "no flag: rename the group in the app".to_string(),
            };
            refusals.push((
                format!("AuthReady=False/{}", keycloak_groups::GROUP_NOT_ALLOWED),
                refusal.message(&name),
                remedy,
            ));
        }
    }
    Ok(refusals)
}

/// The ManagedRancherProjects the controller would refuse under `policy`.
async fn rancher_projects(client: &kube::Client, policy: &RancherPolicy) -> Result<Vec<Finding>, TakeoverCheckError> {
    let projects: Vec<ManagedRancherProject> = list_all(client, "ManagedRancherProjects").await?;
    Ok(projects
        .iter()
        .filter_map(|project| {
            let refusal = policy.check(&project.spec.cluster_id, &desired(&project.spec)).err()?;
            Some(Finding {
                kind: "ManagedRancherProject",
                object: format!("{}/{}", project.namespace().unwrap_or_default(), project.name_any()),
                condition: "RancherProjectReady=False/NotAllowedByPolicy".to_string(),
                remedy: rancher_remedy(&refusal),
                message: refusal,
            })
        })
        .collect())
}

/// The Rancher policy flag a refusal message is about.
fn rancher_remedy(message: &str) -> String {
    let flag = if message.starts_with("cluster ") {
        "--rancher-allowed-clusters with the cluster added"
    } else if message.contains("for project bindings") {
        "--rancher-allowed-project-roles with the role template added"
    } else if message.contains("for cluster bindings") {
        "--rancher-allowed-cluster-roles with the role template added"
    } else {
        "--rancher-group-prefix matching the object's group names"
    };
    flag.to_string()
}

/// The findings as a table for a terminal (a header, one line per object), or a line saying there are none.
pub fn render(findings: &[Finding]) -> String {
    if findings.is_empty() {
        return "no object would be refused: nothing stands in the way of the cut-over\n".to_string();
    }
    let mut out = String::new();
    for finding in findings {
        out.push_str(&format!(
            "{} {}\n  would get: {}: {}\n  keeps working with: {}\n",
            finding.kind, finding.object, finding.condition, finding.message, finding.remedy
        ));
    }
    out.push_str(&format!("{} object(s) would be refused\n", findings.len()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rancher_refusal_names_its_flag() {
        let policy = RancherPolicy {
            allowed_clusters: vec!["c-1".into()],
            project_roles: vec!["project-member".into()],
            cluster_roles: vec!["cluster-member".into()],
            group_prefix: Some("c_".into()),
        };
        let refusal = policy.check_cluster("c-2").expect_err("another cluster");
        assert_eq!(
            rancher_remedy(&refusal),
            "--rancher-allowed-clusters with the cluster added"
        );
        assert!(rancher_remedy("role template x is not allowed for project bindings; allowed: y").contains("project"));
        assert!(rancher_remedy("role template x is not allowed for cluster bindings; allowed: y").contains("cluster"));
        assert!(rancher_remedy("Keycloak group g does not start with the required prefix c_").contains("prefix"));
    }

    #[test]
    fn the_report_says_what_each_object_would_get_and_what_keeps_it_working() {
        assert!(render(&[]).starts_with("no object would be refused"));
        let finding = Finding {
            kind: "NebariApp",
            object: "team/web".into(),
            condition: "AuthReady=False/ClientScopeNotAllowed".into(),
            message: "client scope x is not allowed".into(),
            remedy: "--keycloak-allowed-client-scopes with x added".into(),
        };
        let text = render(&[finding]);
        assert!(text.contains("NebariApp team/web"), "{text}");
        assert!(
            text.contains("keeps working with: --keycloak-allowed-client-scopes with x added"),
            "{text}"
        );
        assert!(text.ends_with("1 object(s) would be refused\n"), "{text}");
    }
}
