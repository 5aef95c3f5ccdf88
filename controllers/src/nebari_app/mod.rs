//! The NebariApp controller: exposes an application through Gateway API routes, secures it with TLS on the
//! shared Gateway, and protects it with OIDC (an Envoy Gateway SecurityPolicy and Keycloak clients).
//!
//! `reconcile.rs` is the sequence of steps; each step lives in the file named after what it produces
//! (`prerequisites.rs`, `tls.rs`, `auth.rs`, `route.rs`), and the objects are built by pure functions in the
//! files named after them (`route.rs`, `tls.rs`, `listener.rs`, `security_policy.rs`, `oidc_secret.rs`,
//! `rbac.rs`, `discovery.rs`); Keycloak provisioning is `keycloak_sync.rs`, deletion `cleanup.rs`.
//!
//! Watches drive every reconcile: the app's own children (routes, policy, Secret, RBAC), its namespace (the
//! opt-in label), its backend Service, its Certificate, a user-provided TLS Secret, its `clientSecretRef`
//! Secret and the shared Gateways. Secrets are watched by metadata only (`framework::metadata`): their data
//! never reaches the manager through a watch, reconciles read the one they need. There is no periodic polling.

pub mod acceptance;
pub mod auth;
pub mod auth_hash;
pub mod auth_policy;
pub mod cleanup;
pub mod discovery;
pub mod error;
pub mod health;
pub mod hostname;
pub mod keycloak_groups;
pub mod keycloak_sync;
pub mod listener;
pub mod naming;
pub mod oidc_secret;
pub mod orphans;
pub mod prerequisites;
pub mod rbac;
pub mod reconcile;
pub mod route;
pub mod security_policy;
pub mod settings;
pub mod status;
pub mod tls;
pub mod tls_plan;
pub mod token_exchange;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use std::sync::Arc;

use crds::nebari::NebariApp;
use crds::thirdparty::cert_manager::Certificate;
use crds::thirdparty::envoy_gateway::SecurityPolicy;
use framework::child_cache::ChildCache;
use framework::children::{ChildConfig, ChildKinds, ChildSet, Placement};
use framework::clock::{Clock, SystemClock};
use framework::finalizer::FinalizerSpec;
use framework::index::KeyIndex;
use framework::object_cache::ObjectCache;
use framework::peers::Peers;
use framework::runner::{Context, Outcome, Reconciler, Running, Runtime, Scope, StartError};
use framework::triggers::Triggers;
use gateway_api::gateways::Gateway;
use gateway_api::httproutes::HttpRoute;
use k8s_openapi::api::core::v1::{Namespace, Secret, Service};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::ResourceExt;
use kube::api::{Api, PartialObjectMeta};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;

use crate::keycloak::KeycloakClient;
use error::NebariAppError;
pub use settings::NebariAppSettings;

/// The controller's name (`--controllers`, metrics, events).
pub const NAME: &str = "nebariapp";
/// Our finalizer on NebariApps.
pub const FINALIZER: &str = "reconcilers.nebari.dev/finalizer";
/// nebari-operator's finalizer, taken over.
pub const LEGACY_FINALIZER: &str = "apps.nebari.dev/finalizer";
/// The namespace label that opts a namespace into NebariApp management.
pub const OPT_IN_LABEL: &str = "nebari.dev/managed";
/// Annotation forcing Keycloak re-provisioning; removed once done.
pub const FORCE_REPROVISION_ANNOTATION: &str = "nebari.dev/force-reprovision";
/// Annotation letting an admin delete an app without external (Keycloak) cleanup, e.g. when Keycloak is gone.
pub const SKIP_EXTERNAL_CLEANUP_ANNOTATION: &str = "nebari.dev/skip-external-cleanup";
/// `app.kubernetes.io/managed-by` on children (the original operator's value, so existing selectors keep working).
pub const MANAGED_BY: &str = "nebari-operator";
/// Annotation naming a child's owning app (for children in the gateway namespace, which no ownerReference can
/// reach).
pub const OWNER_ANNOTATION: &str = "nebari.dev/owner";
/// Annotation holding the hash of the content last applied to a child (what tells an unchanged child apart).
pub const HASH_ANNOTATION: &str = "nebari.dev/applied-hash";

/// The NebariApp controller with its settings and Keycloak client.
pub struct NebariAppController {
    /// Manager settings.
    pub settings: NebariAppSettings,
    /// The shared Keycloak admin client.
    pub keycloak: KeycloakClient,
    /// The clock (for condition times).
    pub clock: Arc<dyn Clock>,
    /// Every namespace's apps, for deciding who owns a hostname.
    pub peers: Peers<NebariApp>,
    /// Which token exchange the server has (`--keycloak-token-exchange=auto`).
    pub token_exchange: token_exchange::Detector,
    /// The health checks of the apps on the landing page.
    pub health: Arc<health::Prober>,
    /// The sweep of Keycloak clients whose app is gone.
    pub orphans: Arc<orphans::OrphanSweep>,
    /// The apps' children as the watches saw them, so pruning lists nothing.
    pub children: ChildCache,
    /// Namespaces (for the opt-in label), Services and the shared Gateways as their watches saw them, so a pass
    /// reads them without a request.
    pub seen: Seen,
}

/// The watched objects reconciles read from the watches' caches.
#[derive(Clone, Default)]
pub struct Seen {
    /// Namespaces, labels only (watched only when the whole cluster is).
    pub namespaces: ObjectCache<Namespace>,
    /// Services, without annotations or status.
    pub services: ObjectCache<Service>,
    /// The Gateways of the gateway namespace.
    pub gateways: ObjectCache<Gateway>,
}

impl NebariAppController {
    /// Builds the controller from its settings.
    pub fn new(
        settings: NebariAppSettings,
        kube: kube::Client,
        metrics: Option<framework::metrics::Metrics>,
    ) -> Result<Self, StartError> {
        let health = health::Prober::new(settings.health_checks.clone(), metrics.as_ref()).map_err(|e| StartError {
            controller: NAME,
            message: e.to_string(),
        })?;
        let orphans =
            orphans::OrphanSweep::new(settings.orphans.clone(), metrics.as_ref()).map_err(|e| StartError {
                controller: NAME,
                message: e.to_string(),
            })?;
        let keycloak = settings.keycloak.client(kube, metrics).map_err(|e| StartError {
            controller: NAME,
            message: e.to_string(),
        })?;
        Ok(Self {
            settings,
            keycloak,
            clock: Arc::new(SystemClock),
            peers: Peers::with_index(KeyIndex::new(peer_keys)),
            token_exchange: token_exchange::Detector::default(),
            health: Arc::new(health),
            orphans: Arc::new(orphans),
            children: ChildCache::new(MANAGED_BY, OWNER_ANNOTATION)
                .with_hash_annotation(HASH_ANNOTATION)
                .with_status::<HttpRoute>(acceptance::trim_status)
                .with_status::<SecurityPolicy>(acceptance::trim_status),
            seen: Seen::default(),
        })
    }

    /// Every kind of child an app has, and where: what pruning covers.
    fn child_kinds(&self) -> ChildKinds {
        ChildKinds::new()
            .with::<HttpRoute>(Placement::OwnerNamespace)
            .with::<SecurityPolicy>(Placement::OwnerNamespace)
            .with::<Secret>(Placement::OwnerNamespace)
            .with::<Role>(Placement::OwnerNamespace)
            .with::<RoleBinding>(Placement::OwnerNamespace)
            .with::<Certificate>(Placement::Namespace(self.settings.gateway_namespace.clone()))
    }

    /// The set collecting this reconcile's children.
    pub fn child_set(&self, ctx: &Context, app: &NebariApp) -> Result<ChildSet, NebariAppError> {
        let config = ChildConfig {
            field_manager: ctx.field_manager.clone(),
            managed_by: MANAGED_BY.to_string(),
            owner_annotation: OWNER_ANNOTATION.to_string(),
            hash_annotation: HASH_ANNOTATION.to_string(),
            kinds: self.child_kinds(),
            cache: Some(self.children.clone()),
        };
        ChildSet::new(ctx.client.clone(), config, app, NAME)
            .ok_or_else(|| NebariAppError::Invalid("the NebariApp has no uid yet".to_string()))
    }
}

impl Reconciler for NebariAppController {
    type Resource = NebariApp;
    type Error = NebariAppError;

    fn name(&self) -> &'static str {
        NAME
    }

    fn ready_condition(obj: &Self::Resource) -> Option<Condition> {
        framework::status::ready_condition::<Self>(obj)
    }

    /// Conditions are read from the fresh copy each pass re-reads, never from the cache, except Ready's type,
    /// status and reason (the objects gauge and the health prober use them); the rest of the conditions were
    /// about half of each cached app (megabytes at 10,000 apps).
    fn trim_cached(app: &mut NebariApp) {
        if let Some(status) = app.status.as_mut() {
            status.conditions.retain(|c| c.type_ == framework::conditions::READY);
            for condition in &mut status.conditions {
                condition.message = String::new();
            }
        }
    }

    fn finalizer(&self) -> Option<FinalizerSpec> {
        Some(FinalizerSpec {
            name: FINALIZER,
            legacy: &[LEGACY_FINALIZER],
        })
    }

    fn watches(&self, triggers: Triggers<NebariApp>, scope: &Scope) -> Triggers<NebariApp> {
        let triggers = triggers.record_children(self.children.clone());
        let store = triggers.store();
        self.peers.register(store.clone(), scope.namespace());
        self.health.register(store.clone());
        self.orphans.register(store.clone());
        let managed =
            watcher::Config::default().labels(&format!("{}={MANAGED_BY}", framework::children::LABEL_MANAGED_BY));

        let gateway_ns = self.settings.gateway_namespace.clone();
        let certificates: Api<Certificate> = Api::namespaced(scope.client().clone(), &gateway_ns);
        let gateways: Api<Gateway> = Api::namespaced(scope.client().clone(), &gateway_ns);
        // Secrets only trigger reconciles, so they are watched by metadata only: user-provided TLS Secrets in the
        // gateway namespace, and `clientSecretRef` Secrets, which may have any name, in the apps' namespaces
        // (`framework::metadata`). The owned OIDC Secrets below need nothing: kube 4.2's `owns` is metadata-only.
        let tls_secrets = framework::metadata::namespaced::<Secret>(scope.client(), &gateway_ns);
        let client_secrets = framework::metadata::scoped::<Secret>(scope);
        let (by_namespace, by_service, by_gateway, by_tls_secret, by_client_secret, by_peer) = (
            store.clone(),
            store.clone(),
            store.clone(),
            store.clone(),
            store.clone(),
            store,
        );
        let apps: Api<NebariApp> = scope.api();
        // The peer index is fed by the cluster-wide watch of apps only: Peers reads it only then.
        let index = self.peers.index().filter(|_| scope.namespace().is_none()).cloned();
        let lookup = index.clone();
        let settings = self.settings.clone();
        // The opt-in label is watched on every Namespace when the whole cluster is watched. A namespaced install
        // holds no cluster-wide grant to watch Namespaces; its apps re-read the label instead (see reconcile).
        let triggers = if scope.namespace().is_none() {
            let namespaces: Api<Namespace> = Api::all(scope.client().clone());
            triggers.watches_cached(
                namespaces,
                watcher::Config::default(),
                &self.seen.namespaces,
                |ns| {
                    // Only the opt-in label is read.
                    ns.metadata.annotations = None;
                    ns.spec = None;
                    ns.status = None;
                },
                move |ns| apps_in_namespace(&by_namespace, &ns.name_any()),
            )
        } else {
            triggers
        };
        // Routes and policies are watched with their content: their status (the gateway's verdict, which the app
        // reports) is kept in the child cache, so a pass need not read them.
        triggers
            .owns_with_status(scope.api::<HttpRoute>(), managed.clone())
            .owns_with_status(scope.api::<SecurityPolicy>(), managed.clone())
            .owns(scope.api::<Secret>(), managed.clone())
            .owns(scope.api::<Role>(), managed.clone())
            .owns(scope.api::<RoleBinding>(), managed.clone())
            .watches_cached(
                scope.api::<Service>(),
                watcher::Config::default(),
                &self.seen.services,
                |svc| {
                    // Only the ports are read.
                    svc.metadata.annotations = None;
                    svc.status = None;
                },
                move |svc| apps_using_service(&by_service, &svc),
            )
            .watches(
                certificates,
                watcher::Config::default().labels(tls::APP_NAME_LABEL),
                |cert| app_of_certificate(&cert),
            )
            .watches_cached(
                gateways,
                watcher::Config::default(),
                &self.seen.gateways,
                |_| {},
                move |gw| apps_on_gateway(&by_gateway, &settings, &gw.name_any()),
            )
            .watches(tls_secrets, watcher::Config::default(), move |secret| {
                apps_serving_secret(&by_tls_secret, &secret.name_any())
            })
            .watches(client_secrets, watcher::Config::default(), move |secret| {
                apps_reading_client_secret(&by_client_secret, &secret)
            })
            .watches_with(
                apps,
                watcher::Config::default(),
                move |event| {
                    if let Some(index) = &index {
                        index.record(event);
                    }
                },
                move |changed| {
                    let mut affected = apps_with_token_exchange(&by_peer, lookup.as_ref());
                    affected.extend(apps_sharing_hostname(&by_peer, lookup.as_ref(), &changed));
                    affected
                },
            )
    }

    async fn reconcile(&self, app: Arc<NebariApp>, ctx: &Context) -> Result<Outcome, NebariAppError> {
        reconcile::reconcile(self, app, ctx).await
    }

    async fn cleanup(&self, app: Arc<NebariApp>, ctx: &Context) -> Result<(), NebariAppError> {
        cleanup::cleanup(self, app, ctx).await
    }
}

fn apps_in_namespace(store: &Store<NebariApp>, namespace: &str) -> Vec<ObjectRef<NebariApp>> {
    store
        .state()
        .iter()
        .filter(|app| app.namespace().as_deref() == Some(namespace))
        .map(|app| ObjectRef::from_obj(app.as_ref()))
        .collect()
}

fn apps_using_service(store: &Store<NebariApp>, service: &Service) -> Vec<ObjectRef<NebariApp>> {
    let namespace = service.namespace().unwrap_or_default();
    let name = service.name_any();
    store
        .state()
        .iter()
        .filter(|app| {
            let app_ns = app.namespace().unwrap_or_default();
            let svc_ns = app.spec.service.namespace.clone().unwrap_or(app_ns);
            app.spec.service.name == name && svc_ns == namespace
        })
        .map(|app| ObjectRef::from_obj(app.as_ref()))
        .collect()
}

fn app_of_certificate(cert: &Certificate) -> Option<ObjectRef<NebariApp>> {
    let labels = cert.labels();
    let name = labels.get(tls::APP_NAME_LABEL)?;
    let namespace = labels.get(tls::APP_NAMESPACE_LABEL)?;
    Some(ObjectRef::new(name).within(namespace))
}

fn apps_on_gateway(store: &Store<NebariApp>, settings: &NebariAppSettings, gateway: &str) -> Vec<ObjectRef<NebariApp>> {
    store
        .state()
        .iter()
        .filter(|app| app.spec.routing.is_some() && settings.gateway_name(app.spec.gateway) == gateway)
        .map(|app| ObjectRef::from_obj(app.as_ref()))
        .collect()
}

/// Apps whose listener serves a user-provided TLS Secret of this name (TLSReady reflects that Secret).
fn apps_serving_secret(store: &Store<NebariApp>, secret: &str) -> Vec<ObjectRef<NebariApp>> {
    store
        .state()
        .iter()
        .filter(|app| {
            let tls = app.spec.routing.as_ref().and_then(|r| r.tls.as_ref());
            tls.is_some_and(|t| t.enabled && t.secret_name.as_deref() == Some(secret))
        })
        .map(|app| ObjectRef::from_obj(app.as_ref()))
        .collect()
}

/// Apps with auth enabled whose `clientSecretRef` names this Secret (in their namespace): creating, fixing or
/// deleting it changes their AuthReady.
fn apps_reading_client_secret(
    store: &Store<NebariApp>,
    secret: &PartialObjectMeta<Secret>,
) -> Vec<ObjectRef<NebariApp>> {
    let namespace = secret.namespace();
    let name = secret.name_any();
    store
        .state()
        .iter()
        .filter(|app| {
            app.namespace() == namespace
                && app
                    .spec
                    .auth
                    .as_ref()
                    .is_some_and(|a| a.enabled && a.client_secret_ref.as_deref() == Some(name.as_str()))
        })
        .map(|app| ObjectRef::from_obj(app.as_ref()))
        .collect()
}

/// Apps granting token exchange: a change to any app may change their peer list (the hash then decides).
/// The peer index key of apps with token exchange turned on.
const TOKEN_EXCHANGE_KEY: &str = "token-exchange";

/// The peer index key of apps claiming `hostname` (hostnames compare without case).
pub fn hostname_key(hostname: &str) -> String {
    format!("hostname:{}", hostname.to_ascii_lowercase())
}

/// What the peer index files an app under: its hostname, and whether it exchanges tokens.
fn peer_keys(app: &NebariApp) -> Vec<String> {
    let mut keys = vec![hostname_key(&app.spec.hostname)];
    let exchanges = app
        .spec
        .auth
        .as_ref()
        .and_then(|a| a.token_exchange.as_ref())
        .is_some_and(|t| t.enabled);
    if exchanges {
        keys.push(TOKEN_EXCHANGE_KEY.to_string());
    }
    keys
}

/// The apps filed under `key` (from `index` once it has listed, else by scanning the cache).
fn apps_keyed(store: &Store<NebariApp>, index: Option<&KeyIndex<NebariApp>>, key: &str) -> Vec<ObjectRef<NebariApp>> {
    if let Some(found) = index.and_then(|index| index.get(key)) {
        return found;
    }
    store
        .state()
        .iter()
        .filter(|app| peer_keys(app).iter().any(|k| k == key))
        .map(|app| ObjectRef::from_obj(app.as_ref()))
        .collect()
}

fn apps_with_token_exchange(
    store: &Store<NebariApp>,
    index: Option<&KeyIndex<NebariApp>>,
) -> Vec<ObjectRef<NebariApp>> {
    apps_keyed(store, index, TOKEN_EXCHANGE_KEY)
}

/// Apps (other than `changed`) claiming `changed`'s hostname: when an app appears, moves or goes, who owns its
/// hostname may change.
fn apps_sharing_hostname(
    store: &Store<NebariApp>,
    index: Option<&KeyIndex<NebariApp>>,
    changed: &NebariApp,
) -> Vec<ObjectRef<NebariApp>> {
    let itself = ObjectRef::from_obj(changed);
    apps_keyed(store, index, &hostname_key(&changed.spec.hostname))
        .into_iter()
        .filter(|app| *app != itself)
        .collect()
}

/// Starts the controller (the manager's registry entry).
pub fn start(runtime: &Runtime, mut settings: NebariAppSettings) -> Result<Running, StartError> {
    let namespaces = &runtime.defaults.namespaces;
    settings.orphans.watched = (!namespaces.is_empty()).then(|| namespaces.clone());
    let controller = NebariAppController::new(settings, runtime.client.clone(), Some(runtime.metrics.clone()))?;
    if controller.settings.keycloak_enabled {
        let (sweep, shutdown) = (controller.orphans.clone(), runtime.shutdown.clone());
        let realm = controller.keycloak.realm(&controller.settings.keycloak.realm);
        runtime.spawn_global_work(async move { sweep.run(realm, shutdown).await });
    }
    let events = framework::events::EventPublisher::new(
        runtime.client.clone(),
        &format!("{}-{NAME}", runtime.defaults.field_manager_prefix),
    );
    tokio::spawn(controller.health.clone().run(
        runtime.client.clone(),
        events,
        runtime.defaults.shard,
        runtime.shutdown.clone(),
    ));
    Ok(framework::runner::start(Arc::new(controller), runtime))
}

/// The app `team/web` at `web.example.com`, backed by Service `web` port 80, for unit tests.
#[cfg(test)]
pub(crate) fn example_app(routing: Option<crds::nebari::RoutingConfig>) -> NebariApp {
    let mut app = NebariApp::new(
        "web",
        crds::nebari::NebariAppSpec {
            hostname: "web.example.com".into(),
            service: crds::nebari::ServiceReference {
                name: "web".into(),
                port: 80,
                namespace: None,
            },
            routing: routing.map(Box::new),
            auth: None,
            gateway: Default::default(),
            service_account_name: None,
            landing_page: None,
        },
    );
    app.metadata.namespace = Some("team".into());
    app
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::reflector;
    use serde_json::json;

    fn app(name: &str, namespace: &str, auth: serde_json::Value) -> NebariApp {
        serde_json::from_value(json!({
            "apiVersion": "reconcilers.nebari.dev/v1", "kind": "NebariApp",
            "metadata": {"name": name, "namespace": namespace, "uid": format!("uid-{name}")},
            "spec": {"hostname": format!("{name}.example.com"), "service": {"name": "svc", "port": 80}, "auth": auth}
        }))
        .expect("app")
    }

    fn secret(name: &str, namespace: &str) -> PartialObjectMeta<Secret> {
        serde_json::from_value(json!({
            "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"name": name, "namespace": namespace}
        }))
        .expect("metadata")
    }

    #[test]
    fn a_client_secret_maps_to_the_apps_of_its_namespace_that_name_it_with_auth_on() {
        let (store, mut writer) = reflector::store::<NebariApp>();
        let generic =
            |reference: &str| json!({"enabled": true, "provider": "generic-oidc", "clientSecretRef": reference});
        for app in [
            app("web", "apps", generic("oidc")),
            app("api", "apps", generic("oidc")),
            app("docs", "apps", generic("other")),
            app("off", "apps", json!({"enabled": false, "clientSecretRef": "oidc"})),
            app("web", "elsewhere", generic("oidc")),
        ] {
            writer.apply_watcher_event(&watcher::Event::Apply(app));
        }
        let mut names: Vec<String> = apps_reading_client_secret(&store, &secret("oidc", "apps"))
            .into_iter()
            .map(|r| r.name)
            .collect();
        names.sort();
        assert_eq!(names, ["api", "web"]);
        assert!(apps_reading_client_secret(&store, &secret("unrelated", "apps")).is_empty());
    }
}
