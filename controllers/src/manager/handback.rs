//! Handing objects back to a replaced operator (rollback): `manager handback <controller>` renames this
//! operator's finalizer on every object of the controller's kind back to the one the original operator
//! expects, so the original — started again — cleans up on deletion as it used to. Run it with the manager
//! stopped, as a cluster administrator; it changes nothing else (status, children and external objects keep the
//! shapes the originals read).

use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::json;

use crds::nebari::NebariApp;
use crds::rancher::ManagedRancherProject;

/// Whose objects to hand back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Original {
    /// NebariApps, to nebari-operator (`apps.nebari.dev/finalizer`).
    Nebariapp,
    /// ManagedRancherProjects, to rancher-keycloak-operator (kopf's `kopf.zalando.org/KopfFinalizerMarker`).
    Managedrancherproject,
    /// KeystoneApplicationCredentials, to keystone-operator: the finalizers are already its own; nothing to do.
    Keystoneapplicationcredential,
}

/// What a hand-back changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Handback {
    /// `namespace/name` of the objects whose finalizer was renamed.
    pub renamed: Vec<String>,
}

/// Renames the finalizers of every object of `original`'s kind.
pub async fn handback(client: kube::Client, original: Original) -> Result<Handback, kube::Error> {
    match original {
        Original::Nebariapp => {
            rename::<NebariApp>(
                client,
                crate::nebari_app::FINALIZER,
                crate::nebari_app::LEGACY_FINALIZER,
            )
            .await
        }
        Original::Managedrancherproject => {
            rename::<ManagedRancherProject>(
                client,
                crate::rancher_project::FINALIZER,
                crate::rancher_project::KOPF_FINALIZER,
            )
            .await
        }
        Original::Keystoneapplicationcredential => Ok(Handback::default()),
    }
}

async fn rename<K>(client: kube::Client, ours: &str, theirs: &str) -> Result<Handback, kube::Error>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let all: Api<K> = Api::all(client.clone());
    let mut report = Handback::default();
    for object in all.list(&ListParams::default()).await?.items {
        let finalizers = object.finalizers();
        if !finalizers.iter().any(|f| f == ours) {
            continue;
        }
        let mut renamed: Vec<String> = finalizers.iter().filter(|f| *f != ours).cloned().collect();
        if !renamed.iter().any(|f| f == theirs) {
            renamed.push(theirs.to_string());
        }
        let namespace = object.namespace().unwrap_or_default();
        let api: Api<K> = Api::namespaced(client.clone(), &namespace);
        // The resourceVersion makes a concurrent change fail the patch rather than be overwritten.
        let patch = json!({"metadata": {"finalizers": renamed, "resourceVersion": object.resource_version()}});
        api.patch(&object.name_any(), &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        report.renamed.push(format!("{namespace}/{}", object.name_any()));
    }
    Ok(report)
}
