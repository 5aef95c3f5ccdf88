//! The KeystoneApplicationCredential controller: keeps one OpenStack service user's Keystone application
//! credential in an immutable Secret and rotates it before it expires, never minting two credentials for one
//! rotation.
//!
//! `reconcile.rs` is the sequence of steps; the things it produces live in their own files: the credential in
//! Keystone (`credential.rs`, made exactly-once by the creation record of `pending.rs`), its Secret
//! (`secret.rs`), the schedule (`rotation.rs`) and the status (`status.rs`). Keystone is found by `endpoint.rs`;
//! deletion is `deletion.rs`.
//!
//! Watches: the credentials themselves; Secrets by metadata only (owned credential Secrets, and password Secrets
//! a credential names — their data never reaches the manager through the watch); KeystoneAPIs (any change
//! re-checks every credential, as they are rare and a pass that has nothing to do is cheap). Besides watches, a
//! reconcile asks to run again exactly when the next rotation is due. The Secret watch also keeps the metadata
//! of the credential Secrets (labelled with their service) so a pass finds them without a list.

pub mod credential;
pub mod deletion;
pub mod endpoint;
pub mod error;
pub mod metrics;
pub mod orphans;
pub mod password;
pub mod pending;
pub mod reconcile;
pub mod rotation;
pub mod secret;
pub mod status;

use framework::metrics::ObjectGauge;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use std::sync::Arc;
use std::time::Duration;

use crds::keystone::{KeystoneAPI, KeystoneApplicationCredential};
use framework::clock::{Clock, OffsetClock, SystemClock};
use framework::finalizer::FinalizerSpec;
use framework::http::HttpSettings;
use framework::object_cache::ObjectCache;
use framework::runner::{Context, Outcome, Reconciler, Running, Runtime, Scope, StartError};
use framework::triggers::Triggers;
use futures::{Stream, StreamExt, TryStreamExt};
use jiff::SignedDuration;
use k8s_openapi::api::core::v1::Secret;
use kube::api::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};

use crate::keystone::{Endpoint, KeystoneClient};
use error::AcError;

/// The controller's name (`--controllers`, metrics, events).
pub const NAME: &str = "keystoneapplicationcredential";
/// The finalizer on KeystoneApplicationCredentials (keystone-operator's name, so a running system is taken over).
pub const FINALIZER: &str = "openstack.org/applicationcredential";

/// Settings of the KeystoneApplicationCredential controller.
#[derive(Debug, Clone)]
pub struct KeystoneApplicationCredentialSettings {
    /// Keystone base URL used when the KeystoneAPI kind (keystone-operator) is not installed; where it is, each
    /// namespace's KeystoneAPI names Keystone.
    pub fallback_url: Option<String>,
    /// What the certificate of `fallback_url` is verified against.
    pub fallback_trust: framework::trust::TrustSettings,
    /// Domain of the service users.
    pub user_domain: String,
    /// Project the service users' tokens are scoped to (application credentials belong to it).
    pub project: String,
    /// Domain of that project.
    pub project_domain: String,
    /// How long one Keystone request may take.
    pub request_timeout: Duration,
    /// TEST ONLY: runs the controller's clock this many seconds ahead (or behind).
    pub test_clock_offset_seconds: i64,
    /// The sweep for credentials whose object is gone.
    pub orphans: orphans::CredentialOrphanSettings,
}

/// The controller: its Keystone client, token scope, fallback endpoint and clock.
pub struct ApplicationCredentialController {
    keystone: KeystoneClient,
    scope: credential::Scope,
    fallback_endpoint: Option<Endpoint>,
    clock: Arc<dyn Clock>,
    metrics: metrics::CredentialMetrics,
    orphans: orphans::CredentialSweep,
    /// The KeystoneAPIs as their watch saw them, so a pass finds its endpoint without a list.
    keystone_apis: ObjectCache<KeystoneAPI>,
    /// The credential Secrets (and creation records) as the Secret watch saw them: names, owners, finalizers
    /// and expiry, so a pass finds them without a list.
    credential_secrets: ObjectCache<PartialObjectMeta<Secret>>,
}

impl ApplicationCredentialController {
    /// Builds the controller from its settings.
    pub fn new(
        settings: &KeystoneApplicationCredentialSettings,
        metrics: Option<framework::metrics::Metrics>,
        kube: Option<kube::Client>,
    ) -> Result<Self, StartError> {
        let invalid = |message: String| StartError {
            controller: NAME,
            message,
        };
        let http = HttpSettings {
            request_timeout: settings.request_timeout.max(Duration::from_secs(1)),
            ..HttpSettings::default()
        };
        let counters = metrics::CredentialMetrics::new(metrics.as_ref()).map_err(|e| invalid(e.to_string()))?;
        let sweep = orphans::CredentialSweep::new(settings.orphans.clone(), metrics.as_ref())
            .map_err(|e| invalid(e.to_string()))?;
        let keystone = KeystoneClient::new(http, metrics, kube).map_err(|e| invalid(e.to_string()))?;
        let fallback_endpoint = settings
            .fallback_url
            .as_deref()
            .map(|url| Endpoint::parse(url).map(|e| e.with_trust(settings.fallback_trust.clone())))
            .transpose()
            .map_err(|e| invalid(format!("--keystone-url: {e}")))?;
        let clock: Arc<dyn Clock> = match settings.test_clock_offset_seconds {
            0 => Arc::new(SystemClock),
            offset => {
                tracing::warn!(offset_seconds = offset, "test-only clock offset in use");
                Arc::new(OffsetClock::new(SignedDuration::from_secs(offset)))
            }
        };
        Ok(Self {
            keystone,
            scope: credential::Scope {
                user_domain: settings.user_domain.clone(),
                project: settings.project.clone(),
                project_domain: settings.project_domain.clone(),
            },
            fallback_endpoint,
            clock,
            metrics: counters,
            orphans: sweep,
            keystone_apis: ObjectCache::default(),
            credential_secrets: ObjectCache::only(secret::is_credential_secret),
        })
    }
}

impl Reconciler for ApplicationCredentialController {
    type Resource = KeystoneApplicationCredential;
    type Error = AcError;

    fn name(&self) -> &'static str {
        NAME
    }

    fn ready_condition(obj: &Self::Resource) -> Option<Condition> {
        framework::status::ready_condition::<Self>(obj)
    }

    const OBJECT_GAUGES: &'static [(&'static str, &'static str)] = metrics::OBJECT_GAUGES;

    fn object_gauges(obj: &Self::Resource) -> Vec<ObjectGauge> {
        metrics::object_gauges(obj, jiff::Timestamp::now())
    }

    fn finalizer(&self) -> Option<FinalizerSpec> {
        Some(FinalizerSpec {
            name: FINALIZER,
            legacy: &[],
        })
    }

    /// Editing `status.expiresAt` into the past asks for a rotation, as with keystone-operator.
    const STATUS_TRIGGERS: bool = true;

    fn watches(&self, triggers: Triggers<Self::Resource>, scope: &Scope) -> Triggers<Self::Resource> {
        let store = triggers.store();
        // Secrets only trigger reconciles (which read the one they need): every Secret in scope is watched, as a
        // password Secret may have any name, so the watch is metadata-only and never carries Secret data (see
        // `framework::metadata`; no kube `unstable-runtime` feature is needed for that). A password change
        // moves the Secret's resourceVersion, so it still triggers.
        let secrets = framework::metadata::scoped::<Secret>(scope);
        let keystone_apis: Api<KeystoneAPI> = scope.api();
        triggers
            .watches_cached(
                secrets,
                watcher::Config::default(),
                &self.credential_secrets,
                secret::strip_cached,
                move |secret| credentials_using(&store, &secret),
            )
            .reconcile_all_on(keystone_api_changes(keystone_apis, &self.keystone_apis))
    }

    async fn reconcile(&self, obj: Arc<Self::Resource>, ctx: &Context) -> Result<Outcome, Self::Error> {
        reconcile::reconcile(self, obj, ctx).await
    }

    async fn cleanup(&self, obj: Arc<Self::Resource>, ctx: &Context) -> Result<(), Self::Error> {
        deletion::release_secrets(&obj, ctx).await?;
        self.metrics
            .forget(&obj.namespace().unwrap_or_default(), &obj.name_any());
        Ok(())
    }
}

/// The credentials a Secret (its metadata) matters to: its owner (a credential Secret, not a creation record,
/// which only the pass that writes it reads), and every credential in its namespace that reads its password
/// from it.
fn credentials_using(
    store: &Store<KeystoneApplicationCredential>,
    secret: &PartialObjectMeta<Secret>,
) -> Vec<ObjectRef<KeystoneApplicationCredential>> {
    let namespace = secret.namespace().unwrap_or_default();
    let name = secret.name_any();
    let kind = KeystoneApplicationCredential::kind(&());
    let api_version = KeystoneApplicationCredential::api_version(&());
    let mut related: Vec<ObjectRef<KeystoneApplicationCredential>> = secret
        .owner_references()
        .iter()
        .filter(|owner| owner.kind == kind && owner.api_version == api_version)
        .filter(|owner| name != pending::record_name(crds::keystone::service_name(&owner.name)))
        .map(|owner| ObjectRef::new(&owner.name).within(&namespace))
        .collect();
    related.extend(
        store
            .state()
            .iter()
            .filter(|ac| ac.namespace().as_deref() == Some(namespace.as_str()) && ac.spec.secret == name)
            .map(|ac| ObjectRef::from_obj(ac.as_ref())),
    );
    related
}

/// A tick for every change of a KeystoneAPI (and after each full list). When the kind is not installed the
/// watch keeps failing quietly with backoff, without holding up the controller's other watches, and starts
/// working once the kind appears.
fn keystone_api_changes(
    api: Api<KeystoneAPI>,
    cache: &ObjectCache<KeystoneAPI>,
) -> impl Stream<Item = ()> + Send + 'static {
    let (mut writer, synced) = cache.feed(api.namespace());
    let watched = watcher(api, watcher::Config::default())
        .default_backoff()
        .modify(|keystone| keystone.managed_fields_mut().clear());
    watched
        .inspect_ok(move |event| {
            writer.apply(event);
            synced.observe(event);
        })
        .filter_map(|event| async move {
            match event {
                Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_) | watcher::Event::InitDone) => Some(()),
                Ok(watcher::Event::Init | watcher::Event::InitApply(_)) => None,
                Err(error) => {
                    tracing::debug!(%error, "KeystoneAPI watch failed (is the kind installed?)");
                    None
                }
            }
        })
}

/// Starts the controller with its settings.
pub fn start(runtime: &Runtime, settings: &KeystoneApplicationCredentialSettings) -> Result<Running, StartError> {
    let controller = Arc::new(ApplicationCredentialController::new(
        settings,
        Some(runtime.metrics.clone()),
        Some(runtime.client.clone()),
    )?);
    let namespaces = framework::namespaces::WatchedNamespaces::new(runtime.defaults.namespaces.clone());
    runtime.spawn_global_work(orphans::run(
        controller.clone(),
        runtime.client.clone(),
        namespaces,
        runtime.shutdown.clone(),
    ));
    Ok(framework::runner::start(controller, runtime))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::reflector;
    use serde_json::json;

    fn credential(name: &str, namespace: &str, password_secret: &str) -> KeystoneApplicationCredential {
        serde_json::from_value(json!({
            "apiVersion": "keystone.openstack.org/v1beta1", "kind": "KeystoneApplicationCredential",
            "metadata": {"name": name, "namespace": namespace, "uid": format!("uid-{name}")},
            "spec": {"secret": password_secret, "passwordSelector": "Password", "userName": "barbican",
                     "roles": ["service"]}
        }))
        .expect("credential")
    }

    fn secret_meta(name: &str, namespace: &str, owner: Option<&str>) -> PartialObjectMeta<Secret> {
        serde_json::from_value(json!({
            "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"name": name, "namespace": namespace, "ownerReferences": owner.map(|o| vec![json!({
                "apiVersion": "keystone.openstack.org/v1beta1", "kind": "KeystoneApplicationCredential",
                "name": o, "uid": format!("uid-{o}"), "controller": true})]).unwrap_or_default()}
        }))
        .expect("metadata")
    }

    fn names(refs: Vec<ObjectRef<KeystoneApplicationCredential>>) -> Vec<String> {
        let mut names: Vec<String> = refs
            .into_iter()
            .map(|r| format!("{}/{}", r.namespace.unwrap_or_default(), r.name))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_secret_maps_to_its_owner_and_to_the_credentials_reading_their_password_from_it() {
        let (store, mut writer) = reflector::store::<KeystoneApplicationCredential>();
        for ac in [
            credential("ac-barbican", "openstack", "osp-secret"),
            credential("ac-nova", "openstack", "osp-secret"),
            credential("ac-glance", "openstack", "glance-secret"),
            credential("ac-barbican", "other", "osp-secret"),
        ] {
            writer.apply_watcher_event(&watcher::Event::Apply(ac));
        }
        assert_eq!(
            names(credentials_using(&store, &secret_meta("osp-secret", "openstack", None))),
            ["openstack/ac-barbican", "openstack/ac-nova"],
            "password Secrets trigger the credentials of their namespace that name them"
        );
        assert_eq!(
            names(credentials_using(
                &store,
                &secret_meta("ac-glance-abcde-secret", "openstack", Some("ac-glance"))
            )),
            ["openstack/ac-glance"],
            "a credential Secret triggers its owner"
        );
        assert!(
            credentials_using(
                &store,
                &secret_meta("ac-glance-pending-credential", "openstack", Some("ac-glance"))
            )
            .is_empty(),
            "a creation record triggers nobody: only the pass that writes it reads it"
        );
        assert!(credentials_using(&store, &secret_meta("unrelated", "openstack", None)).is_empty());
    }
}
