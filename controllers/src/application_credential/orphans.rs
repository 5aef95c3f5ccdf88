//! Keystone application credentials whose KeystoneApplicationCredential is gone. Deleting an object leaves its
//! credentials valid in Keystone until they expire (the seed's behaviour, see `deletion.rs`), so services that
//! still hold one keep working; but nothing manages them any more. A sweep every `--keystone-orphan-scan-seconds`
//! reports them (a warning in the log naming the credential and the object, and
//! `keystone_orphaned_application_credentials`) and, with `--keystone-orphaned-credentials=delete`, deletes those
//! orphaned for `--keystone-orphan-grace-seconds`. Deleting is not the default: a data-plane node may still
//! authenticate with a credential it copied.
//!
//! Whose a credential is: its description names the object (`… KeystoneApplicationCredential <ns>/<name> …` as
//! this operator writes it, `… AC CR <ns>/<name> …` as keystone-operator does); without a description, a name of
//! keystone-operator's pattern `ac-<service>-<5 characters>` belongs to the object `ac-<service>` of the namespace
//! the user was reached from. Any other credential (made by hand or by another tool) is never judged.
//!
//! The operator holds no Keystone admin credentials: a user's credentials can be listed only with the password a
//! live object names, so only users some live object still uses are looked at (a user whose every object is gone
//! cannot be; its credentials expire on their own). Only objects of the watched namespaces are judged.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crds::keystone::KeystoneApplicationCredential;
use framework::metrics::Metrics;
use framework::namespaces::WatchedNamespaces;
use framework::orphans::OrphanLedger;
use kube::ResourceExt;
use kube::api::ListParams;
use tokio_util::sync::CancellationToken;

use super::ApplicationCredentialController;
use crate::keystone::{ApplicationCredential, ServiceUser};
pub use crate::orphan_policy::OrphanPolicy;

/// Metric: application credentials whose KeystoneApplicationCredential is gone.
pub const ORPHANS_METRIC: &str = "keystone_orphaned_application_credentials";

/// How the sweep runs.
#[derive(Clone, Debug)]
pub struct CredentialOrphanSettings {
    /// Report or delete.
    pub policy: OrphanPolicy,
    /// How long a credential stays orphaned before it is deleted.
    pub grace: Duration,
    /// Time between sweeps.
    pub interval: Duration,
}

impl Default for CredentialOrphanSettings {
    fn default() -> Self {
        Self {
            policy: OrphanPolicy::Report,
            grace: Duration::from_secs(24 * 3600),
            interval: Duration::from_secs(3600),
        }
    }
}

/// The sweep's memory and gauge.
pub struct CredentialSweep {
    settings: CredentialOrphanSettings,
    ledger: OrphanLedger,
}

impl CredentialSweep {
    /// A sweep publishing its gauge in `metrics`.
    pub fn new(settings: CredentialOrphanSettings, metrics: Option<&Metrics>) -> Result<Self, prometheus::Error> {
        let ledger = OrphanLedger::new(
            ORPHANS_METRIC,
            "Keystone application credentials minted for a KeystoneApplicationCredential that no longer exists",
            metrics,
        )?;
        Ok(Self { settings, ledger })
    }
}

/// The object (`<namespace>/<name>`) a credential was minted for, when it says so (see the module docs);
/// `namespace` is where its user was reached from.
pub fn minted_for(credential: &ApplicationCredential, namespace: &str) -> Option<String> {
    if let Some(description) = credential.description.as_deref().filter(|d| !d.trim().is_empty()) {
        return ["KeystoneApplicationCredential ", "AC CR "].iter().find_map(|marker| {
            let rest = &description[description.find(marker)? + marker.len()..];
            let object = rest.split_whitespace().next()?;
            let (ns, name) = object.split_once('/')?;
            (!ns.is_empty() && !name.is_empty()).then(|| format!("{ns}/{name}"))
        });
    }
    let (object, suffix) = credential.name.rsplit_once('-')?;
    let generated = suffix.len() == 5 && suffix.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    (generated && object.len() > "ac-".len() && object.starts_with("ac-")).then(|| format!("{namespace}/{object}"))
}

/// Sweeps every interval until `shutdown` (the first look one interval after start: starting costs no Keystone
/// request).
pub async fn run(
    controller: Arc<ApplicationCredentialController>,
    client: kube::Client,
    namespaces: WatchedNamespaces,
    shutdown: CancellationToken,
) {
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(controller.orphans.settings.interval) => {}
        }
        if let Err(error) = sweep(&controller, &client, &namespaces).await {
            tracing::warn!(%error, "could not look for orphaned Keystone application credentials");
        }
    }
}

async fn sweep(
    controller: &ApplicationCredentialController,
    client: &kube::Client,
    namespaces: &WatchedNamespaces,
) -> Result<(), kube::Error> {
    let objects: Vec<KeystoneApplicationCredential> = namespaces.list(client, &ListParams::default()).await?;
    let live: BTreeSet<String> = objects
        .iter()
        .map(|o| format!("{}/{}", o.namespace().unwrap_or_default(), o.name_any()))
        .collect();
    // One look per Keystone user, reached through the first object that names it.
    let mut users: BTreeMap<(String, String), (String, ServiceUser)> = BTreeMap::new();
    for object in &objects {
        let namespace = object.namespace().unwrap_or_default();
        let key_of = |endpoint: &str| (endpoint.to_string(), object.spec.user_name.clone());
        let resolved =
            match super::endpoint::resolve(client, &namespace, controller.fallback_endpoint.as_ref(), None).await {
                Ok(resolved) => resolved,
                Err(error) => {
                    tracing::debug!(%error, %namespace, "no Keystone to look for orphaned credentials in");
                    continue;
                }
            };
        let key = key_of(resolved.endpoint.as_str());
        if users.contains_key(&key) {
            continue;
        }
        match super::credential::service_user(client, &controller.scope, object, &resolved).await {
            Ok(user) => {
                users.insert(key, (namespace, user));
            }
            Err(error) => tracing::debug!(%error, object = %object.name_any(), "cannot log in as its service user"),
        }
    }

    let settings = &controller.orphans.settings;
    let mut sweep = controller.orphans.ledger.sweep(Instant::now());
    for (namespace, user) in users.values() {
        let credentials = match controller.keystone.list_application_credentials(user).await {
            Ok(credentials) => credentials,
            Err(error) => {
                tracing::warn!(%error, user = %user.user_name, "could not list application credentials");
                continue;
            }
        };
        for credential in credentials {
            let Some(owner) = minted_for(&credential, namespace) else {
                continue;
            };
            let owner_namespace = owner.split_once('/').map_or("", |(ns, _)| ns);
            if !namespaces.contains(owner_namespace) || live.contains(&owner) {
                continue;
            }
            let sighting = sweep.observe(&credential.id, settings.grace);
            if sighting.first {
                tracing::warn!(
                    credential = %credential.id, name = %credential.name, user = %user.user_name, %owner,
                    "Keystone application credential of a KeystoneApplicationCredential that no longer exists"
                );
            }
            if settings.policy == OrphanPolicy::Delete && sighting.due {
                match controller
                    .keystone
                    .delete_application_credential(user, &credential.id)
                    .await
                {
                    Ok(_) => {
                        tracing::info!(credential = %credential.id, %owner, "deleted an orphaned application credential");
                        sweep.deleted(&credential.id);
                    }
                    Err(error) => {
                        tracing::warn!(credential = %credential.id, %error, "could not delete an orphaned credential")
                    }
                }
            }
        }
    }
    sweep.finish();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credential(name: &str, description: Option<&str>) -> ApplicationCredential {
        ApplicationCredential {
            id: "0123456789abcdef0123456789abcdef".into(),
            name: name.into(),
            description: description.map(str::to_string),
            expires_at: None,
            roles: vec![],
            unrestricted: false,
            access_rules: vec![],
        }
    }

    #[test]
    fn a_credential_belongs_to_the_object_its_description_or_generated_name_names() {
        let ours = credential(
            "ac-nova-k2x9q",
            Some("Created by platform-operator for KeystoneApplicationCredential openstack/ac-nova (user nova)"),
        );
        assert_eq!(minted_for(&ours, "elsewhere").as_deref(), Some("openstack/ac-nova"));
        let theirs = credential(
            "ac-nova-k2x9q",
            Some("Created by keystone-operator for AC CR openstack/ac-nova (user: nova)"),
        );
        assert_eq!(minted_for(&theirs, "elsewhere").as_deref(), Some("openstack/ac-nova"));
        assert_eq!(
            minted_for(&credential("ac-nova-k2x9q", None), "openstack").as_deref(),
            Some("openstack/ac-nova"),
            "keystone-operator's name pattern, in the namespace the user was reached from"
        );
        for foreign in [
            credential("laptop-k2x9q", None),
            credential("ac-nova", None),
            credential("ac-nova-K2X9Q", None),
            credential("ac--k2x9q", None),
            credential("ac-nova-k2x9q", Some("made by hand for testing")),
        ] {
            assert_eq!(minted_for(&foreign, "openstack"), None, "{foreign:?}");
        }
    }
}
