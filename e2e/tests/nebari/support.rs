//! The world of one NebariApp test: its own API emulator with the NebariApp and third-party CRDs, the two shared
//! Gateways (with a listener another tool owns), an opted-in namespace with the backend Service, a realm of its own
//! on the run's real Keycloak (behind a fault proxy) and the admin credentials Secret, and the real `manager` running only the
//! NebariApp controller. The test plays cert-manager through `e2e::fixtures::standins`; a stand-in Envoy Gateway
//! (`e2e::fixtures::envoy_gateway`) reports on routes, policies and listeners.

use std::collections::BTreeMap;

use crds::nebari::NebariApp;
use e2e::fixtures::envoy_gateway::EnvoyGateway;
pub use e2e::fixtures::kinds::{certificates, gateways, http_routes, security_policies};
use e2e::fixtures::{standins, third_party_crds};
use e2e::harness::keycloak::{Flavour, RealmSetup, TestRealm};
use e2e::harness::kubectl::Kubectl;
use e2e::harness::{Deadline, ManagerOptions, ManagerProcess, TestCluster, conditions, events, wait_until};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret, Service};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use kube::discovery::ApiResource;
use serde_json::{Value, json};

/// Namespace of the shared Gateways, Certificates and TLS Secrets (the operator's default).
pub const GATEWAY_NAMESPACE: &str = "envoy-gateway-system";
/// The public shared Gateway.
pub const PUBLIC_GATEWAY: &str = "nebari-gateway";
/// The internal shared Gateway.
pub const INTERNAL_GATEWAY: &str = "nebari-internal-gateway";
/// The ClusterIssuer handed to the manager when a test wants issued certificates.
pub const CLUSTER_ISSUER: &str = "e2e-issuer";
/// The browser-facing Keycloak URL handed to the manager.
pub const KEYCLOAK_EXTERNAL_URL: &str = "https://keycloak.example.com";
/// The admin credentials Secret the manager reads.
pub const ADMIN_SECRET: &str = "nebari-realm-admin-credentials";
/// Its namespace.
pub const ADMIN_SECRET_NAMESPACE: &str = "keycloak";
/// The Keycloak administrator's password: distinctive, so a test can tell it never reaches a log.
pub const ADMIN_PASSWORD: &str = "e2e-admin-password-5f2c91";
/// The listener Argo CD (another field manager) owns on both shared Gateways.
pub const ARGOCD_LISTENER: &str = "argocd-server";
/// The field manager of that listener.
pub const ARGOCD_MANAGER: &str = "argocd";
/// The backend Service every test app routes to, and its port.
pub const SERVICE: &str = "web";
/// See [`SERVICE`].
pub const SERVICE_PORT: i32 = 8080;
/// The controller name in metrics.
const CONTROLLER: &str = "nebariapp";

/// What to set up besides the cluster, the Gateways and Keycloak.
pub struct Setup {
    /// Label the test namespace `nebari.dev/managed=true`.
    pub opted_in: bool,
    /// Create the backend Service.
    pub service: bool,
    /// Give the manager a ClusterIssuer (apps then get a Certificate and a listener of their own).
    pub cluster_issuer: bool,
    /// Start the manager.
    pub manager: bool,
    /// Run the manager as the namespaced install (`manifests/overlays/namespaced`: Roles only, watching the
    /// overlay's example namespace, which then is the test's namespace).
    pub namespaced: bool,
    /// Further flags for the manager (policies).
    pub manager_args: Vec<String>,
    /// Keycloak serves HTTPS with a certificate of a CA made for the test (`World::ca_pem`).
    pub keycloak_tls: bool,
    /// The realm lives on the Keycloak with the v1 token-exchange and fine-grained-authz preview features.
    pub keycloak_v1: bool,
    /// The manager reaches the API through a fault proxy ([`TestCluster::api_faults`]), for tests that fail,
    /// delay or count its requests.
    pub api_faults: bool,
}

/// The namespace the namespaced overlay watches.
pub const NAMESPACED_INSTALL_NAMESPACE: &str = "tenant-a";

impl Default for Setup {
    fn default() -> Self {
        Self {
            opted_in: true,
            service: true,
            cluster_issuer: false,
            api_faults: false,
            manager: true,
            namespaced: false,
            manager_args: Vec::new(),
            keycloak_tls: false,
            keycloak_v1: false,
        }
    }
}

/// One test's world.
pub struct World {
    /// The manager; declared first so it is dropped (printing its log on failure) before the rest goes away.
    pub manager: Option<ManagerProcess>,
    /// The test's realm on the real Keycloak, and the fault proxy the manager reaches it through.
    pub keycloak: TestRealm,
    /// The stand-in Envoy Gateway, reporting on routes, policies and listeners (accepting unless told otherwise).
    pub envoy_gateway: EnvoyGateway,
    /// The control plane.
    pub cluster: TestCluster,
    /// The test's (app) namespace.
    pub namespace: String,
    /// Whether the manager runs as the namespaced install.
    pub namespaced: bool,
    /// Further flags for the manager.
    pub manager_args: Vec<String>,
    /// The CA that issued Keycloak's certificate (with `Setup::keycloak_tls`).
    pub ca_pem: Option<String>,
}

/// Secrets (as JSON, for [`World::wait_object`]).
pub fn secrets() -> ApiResource {
    ApiResource::erase::<Secret>(&())
}

/// A shared Gateway with the platform's `http` and `https` listeners.
fn shared_gateway(name: &str) -> Value {
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": name, "namespace": GATEWAY_NAMESPACE},
        "spec": {
            "gatewayClassName": "envoy-gateway",
            "listeners": [
                {"name": "http", "port": 80, "protocol": "HTTP", "allowedRoutes": {"namespaces": {"from": "All"}}},
                {"name": "https", "port": 443, "protocol": "HTTPS", "hostname": "*.example.com",
                 "tls": {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": "nebari-gateway-tls"}]},
                 "allowedRoutes": {"namespaces": {"from": "All"}}},
            ],
        },
    })
}

/// The listener Argo CD applies to a shared Gateway for `hostname`.
pub fn argocd_listener(hostname: &str) -> Value {
    json!({
        "name": ARGOCD_LISTENER,
        "hostname": hostname,
        "port": 443,
        "protocol": "HTTPS",
        "tls": {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": "argocd-tls"}]},
        "allowedRoutes": {"namespaces": {"from": "Same"}},
    })
}

impl World {
    /// Sets up a world.
    pub async fn start(setup: Setup) -> World {
        let ca = setup
            .keycloak_tls
            .then(|| emulator_kit::tls::TestCa::new("e2e private CA").expect("a test CA"));
        let certificate = ca
            .as_ref()
            .map(|ca| ca.issue_server_cert("keycloak", &[]).expect("a server certificate"));
        let realm = e2e::harness::keycloak::unique_realm("nebari");
        let keycloak = TestRealm::create(RealmSetup {
            name: &realm,
            flavour: if setup.keycloak_v1 {
                Flavour::V1
            } else {
                Flavour::Default
            },
            tls: certificate.as_ref(),
            admin_password: ADMIN_PASSWORD,
        })
        .await;
        let cluster = if setup.api_faults {
            TestCluster::start_behind_fault_proxy().await
        } else {
            TestCluster::start().await
        };
        let mut all = crds::all();
        all.extend(third_party_crds::for_nebari());
        cluster.install_crds(&all).await;
        cluster.create_namespace_named(GATEWAY_NAMESPACE, &[]).await;
        cluster.create_namespace_named(ADMIN_SECRET_NAMESPACE, &[]).await;
        let namespace = if setup.namespaced {
            cluster.create_namespace_named(NAMESPACED_INSTALL_NAMESPACE, &[]).await;
            NAMESPACED_INSTALL_NAMESPACE.to_string()
        } else {
            // Without a `-`, the names in the gateway namespace keep nebari-operator's form (`tls-web-<ns>`).
            let namespace = format!("team{}", e2e::harness::cluster::unique_suffix());
            cluster.create_namespace_named(&namespace, &[]).await;
            namespace
        };
        let envoy_gateway = EnvoyGateway::start(cluster.client());
        let mut world = World {
            manager: None,
            keycloak,
            envoy_gateway,
            cluster,
            namespace,
            namespaced: setup.namespaced,
            manager_args: setup.manager_args,
            ca_pem: ca.as_ref().map(emulator_kit::tls::TestCa::cert_pem),
        };
        world.write_admin_secret().await;
        world.create_gateways().await;
        if setup.opted_in {
            world.opt_in().await;
        }
        if setup.service {
            world.create_service(SERVICE_PORT).await;
        }
        if setup.manager {
            world.start_manager(setup.cluster_issuer).await;
        }
        world
    }

    /// Starts the manager running only the NebariApp controller.
    pub async fn start_manager(&mut self, cluster_issuer: bool) {
        let args = self.manager_flags(cluster_issuer);
        let watched = self.namespaced.then_some(NAMESPACED_INSTALL_NAMESPACE);
        let options = ManagerOptions::controllers(&[CONTROLLER], watched, args);
        self.manager = Some(ManagerProcess::start(&self.cluster, options).await);
    }

    /// The NebariApp flags the test's manager runs with (for subcommands that must see the same settings).
    pub fn manager_flags(&self, cluster_issuer: bool) -> Vec<String> {
        let mut args = vec![
            format!("--keycloak-url={}", self.keycloak.url()),
            format!("--keycloak-realm={}", self.keycloak.realm()),
            format!("--keycloak-admin-secret-name={ADMIN_SECRET}"),
            format!("--keycloak-admin-secret-namespace={ADMIN_SECRET_NAMESPACE}"),
            format!("--keycloak-external-url={KEYCLOAK_EXTERNAL_URL}"),
            "--keycloak-api-timeout-seconds=5".to_string(),
            format!("--nebari-gateway-namespace={GATEWAY_NAMESPACE}"),
        ];
        if cluster_issuer {
            args.push(format!("--nebari-cluster-issuer={CLUSTER_ISSUER}"));
        }
        args.extend(self.manager_args.iter().cloned());
        args
    }

    /// The running manager.
    pub fn manager(&self) -> &ManagerProcess {
        self.manager.as_ref().expect("the manager was started")
    }

    /// The running manager, to change what the harness expects of it.
    pub fn manager_mut(&mut self) -> &mut ManagerProcess {
        self.manager.as_mut().expect("the manager was started")
    }

    async fn write_admin_secret(&self) {
        let (username, password) = self.keycloak.admin_credentials();
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(ADMIN_SECRET.into()),
                ..Default::default()
            },
            data: Some(BTreeMap::from([
                ("username".to_string(), ByteString(username.as_bytes().to_vec())),
                ("password".to_string(), ByteString(password.as_bytes().to_vec())),
            ])),
            ..Default::default()
        };
        let api: Api<Secret> = Api::namespaced(self.cluster.client(), ADMIN_SECRET_NAMESPACE);
        api.create(&PostParams::default(), &secret)
            .await
            .expect("create the Keycloak admin Secret");
    }

    /// Creates (or re-creates) the two shared Gateways with Argo CD's listener, programmed.
    pub async fn create_gateways(&self) {
        let api = standins::gateways(&self.cluster.client(), GATEWAY_NAMESPACE);
        for name in [PUBLIC_GATEWAY, INTERNAL_GATEWAY] {
            api.patch(
                name,
                &PatchParams::apply("platform-admin"),
                &Patch::Apply(&shared_gateway(name)),
            )
            .await
            .unwrap_or_else(|e| panic!("create Gateway {name}: {e}"));
            self.apply_argocd_listener(name, "argocd.example.com")
                .await
                .expect("apply the Argo CD listener");
            standins::program_gateway(&self.cluster.client(), GATEWAY_NAMESPACE, name)
                .await
                .unwrap_or_else(|e| panic!("program Gateway {name}: {e}"));
        }
    }

    /// Applies Argo CD's listener (its own field manager) to `gateway`.
    pub async fn apply_argocd_listener(&self, gateway: &str, hostname: &str) -> Result<(), kube::Error> {
        let body = json!({
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "Gateway",
            "metadata": {"name": gateway, "namespace": GATEWAY_NAMESPACE},
            "spec": {"listeners": [argocd_listener(hostname)]},
        });
        standins::gateways(&self.cluster.client(), GATEWAY_NAMESPACE)
            .patch(gateway, &PatchParams::apply(ARGOCD_MANAGER), &Patch::Apply(&body))
            .await
            .map(|_| ())
    }

    /// Labels the test namespace `nebari.dev/managed=true`.
    pub async fn opt_in(&self) {
        let api: Api<Namespace> = Api::all(self.cluster.client());
        let patch = json!({"metadata": {"labels": {"nebari.dev/managed": "true"}}});
        api.patch(&self.namespace, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("label the namespace");
    }

    /// Plays cert-manager for the Certificate `name` of the gateway namespace: waits until the operator made it,
    /// then issues it; returns the Certificate as it was before issuance.
    pub async fn issue_certificate(&self, name: &str) -> Value {
        let certificate = self
            .wait_object(&certificates(), GATEWAY_NAMESPACE, name, |_| true)
            .await;
        standins::issue_certificate(&self.cluster.client(), GATEWAY_NAMESPACE, name)
            .await
            .unwrap_or_else(|e| panic!("issue Certificate {name}: {e}"));
        certificate
    }

    /// Sets up another tenant: namespace `namespace` opted in with the backend Service, and a kubectl acting as a
    /// user who may write NebariApps there and nothing else (as a namespace's editor would).
    pub async fn tenant(&self, namespace: &str) -> Kubectl {
        self.cluster
            .create_namespace_named(namespace, &[("nebari.dev/managed", "true")])
            .await;
        let service = sandbox::surroundings::nebari::backend_service(SERVICE, namespace, SERVICE_PORT);
        Api::<Service>::namespaced(self.cluster.client(), namespace)
            .create(&PostParams::default(), &service)
            .await
            .expect("create the tenant's backend Service");
        let user = format!("tenant-of-{namespace}");
        let rbac = format!(
            r#"{{"apiVersion": "v1", "kind": "List", "items": [
              {{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {{"name": "nebariapp-editor", "namespace": "{namespace}"}},
                "rules": [{{"apiGroups": ["reconcilers.nebari.dev"], "resources": ["nebariapps"],
                           "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}}]}},
              {{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {{"name": "nebariapp-editor", "namespace": "{namespace}"}},
                "roleRef": {{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "nebariapp-editor"}},
                "subjects": [{{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "{user}"}}]}}]}}"#
        );
        self.cluster.kubectl().apply(&rbac).await;
        self.cluster.kubectl_as(&user, &["system:authenticated"])
    }

    /// The NebariApps of `namespace`.
    pub fn apps_in(&self, namespace: &str) -> Api<NebariApp> {
        Api::namespaced(self.cluster.client(), namespace)
    }

    /// Creates the backend Service exposing `port`.
    pub async fn create_service(&self, port: i32) {
        let service = sandbox::surroundings::nebari::backend_service(SERVICE, &self.namespace, port);
        self.services()
            .create(&PostParams::default(), &service)
            .await
            .expect("create the backend Service");
    }

    /// The Services of the test namespace.
    pub fn services(&self) -> Api<Service> {
        Api::namespaced(self.cluster.client(), &self.namespace)
    }

    /// A NebariApp document named `name` with `spec` (hostname `<name>.example.com` and the backend Service are
    /// filled in unless `spec` sets them).
    pub fn app_document(&self, name: &str, spec: Value) -> Value {
        self.app_document_in(&self.namespace, name, spec)
    }

    /// [`Self::app_document`] in `namespace`.
    pub fn app_document_in(&self, namespace: &str, name: &str, spec: Value) -> Value {
        let mut full = json!({
            "hostname": format!("{name}.example.com"),
            "service": {"name": SERVICE, "port": SERVICE_PORT},
        });
        if let (Some(full), Some(extra)) = (full.as_object_mut(), spec.as_object()) {
            for (key, value) in extra {
                full.insert(key.clone(), value.clone());
            }
        }
        json!({
            "apiVersion": "reconcilers.nebari.dev/v1",
            "kind": "NebariApp",
            "metadata": {"name": name, "namespace": namespace},
            "spec": full,
        })
    }

    /// `kubectl apply` of a NebariApp, as a user would (fields left out of a re-apply are removed).
    pub async fn apply_app(&self, name: &str, spec: Value) {
        let document = self.app_document(name, spec);
        self.cluster.kubectl().apply(&document.to_string()).await;
    }

    /// The NebariApps of the test namespace.
    pub fn apps(&self) -> Api<NebariApp> {
        Api::namespaced(self.cluster.client(), &self.namespace)
    }

    /// The app as stored.
    pub async fn app(&self, name: &str) -> NebariApp {
        self.apps()
            .get(name)
            .await
            .unwrap_or_else(|e| panic!("read NebariApp {name}: {e}"))
    }

    /// Merges `annotations` into the app's metadata (a `null` value removes one).
    pub async fn annotate_app(&self, name: &str, annotations: Value) {
        let patch = json!({"metadata": {"annotations": annotations}});
        self.apps()
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("annotate the app");
    }

    /// Deletes the app (the finalizer then runs).
    pub async fn delete_app(&self, name: &str) {
        self.apps()
            .delete(name, &DeleteParams::default())
            .await
            .expect("delete the app");
    }

    /// Waits until the app is Ready for its current generation; returns it.
    pub async fn wait_ready(&self, name: &str) -> NebariApp {
        conditions::wait_ready(&self.apps(), name).await
    }

    /// Waits until condition `type_` of the app has `status` and `reason`; returns its message.
    pub async fn wait_condition(&self, name: &str, type_: &str, status: &str, reason: &str) -> String {
        conditions::wait_for(&self.apps(), name, type_, status, reason, "").await
    }

    /// Waits until condition `type_` of the app has `status`, `reason` and a message containing `needle`;
    /// returns the message.
    pub async fn wait_condition_containing(
        &self,
        name: &str,
        type_: &str,
        status: &str,
        reason: &str,
        needle: &str,
    ) -> String {
        conditions::wait_for(&self.apps(), name, type_, status, reason, needle).await
    }

    /// A namespaced object of `resource` as JSON, if it exists.
    pub async fn object(&self, resource: &ApiResource, namespace: &str, name: &str) -> Option<Value> {
        let api: Api<DynamicObject> = Api::namespaced_with(self.cluster.client(), namespace, resource);
        let object = api
            .get_opt(name)
            .await
            .unwrap_or_else(|e| panic!("read {} {namespace}/{name}: {e}", resource.kind));
        object.map(|o| serde_json::to_value(o).expect("objects serialize"))
    }

    /// Waits until that object exists (and `check` accepts it); returns it.
    pub async fn wait_object(
        &self,
        resource: &ApiResource,
        namespace: &str,
        name: &str,
        check: impl Fn(&Value) -> bool,
    ) -> Value {
        let api: Api<DynamicObject> = Api::namespaced_with(self.cluster.client(), namespace, resource);
        let check = &check;
        wait_until(
            &format!("{} {namespace}/{name}", resource.kind),
            Deadline::secs(30),
            || {
                let api = api.clone();
                async move {
                    match api.get_opt(name).await.map_err(|e| e.to_string())? {
                        Some(object) => {
                            let value = serde_json::to_value(object).map_err(|e| e.to_string())?;
                            if check(&value) {
                                Ok(Some(value))
                            } else {
                                Err(value.to_string())
                            }
                        }
                        None => Err("absent".to_string()),
                    }
                }
            },
        )
        .await
    }

    /// Waits until that object is gone.
    pub async fn wait_object_gone(&self, resource: &ApiResource, namespace: &str, name: &str) {
        let api: Api<DynamicObject> = Api::namespaced_with(self.cluster.client(), namespace, resource);
        wait_until(
            &format!("{} {namespace}/{name} to be deleted", resource.kind),
            Deadline::secs(30),
            || {
                let api = api.clone();
                async move {
                    match api.get_opt(name).await.map_err(|e| e.to_string())? {
                        Some(_) => Err("still there".to_string()),
                        None => Ok(Some(())),
                    }
                }
            },
        )
        .await
    }

    /// A typed object of the test namespace, if it exists.
    pub async fn typed<K>(&self, name: &str) -> Option<K>
    where
        K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        let api: Api<K> = Api::namespaced(self.cluster.client(), &self.namespace);
        api.get_opt(name).await.unwrap_or_else(|e| panic!("read {name}: {e}"))
    }

    /// Waits until a typed object of the test namespace is gone.
    pub async fn wait_typed_gone<K>(&self, name: &str)
    where
        K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        let api: Api<K> = Api::namespaced(self.cluster.client(), &self.namespace);
        wait_until(
            &format!("{} {name} to be deleted", K::kind(&())),
            Deadline::secs(30),
            || {
                let api = api.clone();
                async move {
                    match api.get_opt(name).await.map_err(|e| e.to_string())? {
                        Some(_) => Err("still there".to_string()),
                        None => Ok(Some(())),
                    }
                }
            },
        )
        .await
    }

    /// The string values of a Secret of the test namespace.
    pub async fn secret_data(&self, name: &str) -> Option<BTreeMap<String, String>> {
        let secret: Secret = self.typed(name).await?;
        Some(
            secret
                .data
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned()))
                .collect(),
        )
    }

    /// A shared Gateway as JSON.
    pub async fn gateway(&self, name: &str) -> Value {
        self.object(&gateways(), GATEWAY_NAMESPACE, name)
            .await
            .unwrap_or_else(|| panic!("Gateway {name} exists"))
    }

    /// The names of a shared Gateway's listeners, in order.
    pub async fn listener_names(&self, gateway: &str) -> Vec<String> {
        listener_names(&self.gateway(gateway).await)
    }

    /// Waits until `gateway`'s listener names satisfy `check`; returns the Gateway.
    pub async fn wait_listeners(&self, gateway: &str, check: impl Fn(&[String]) -> bool) -> Value {
        self.wait_object(&gateways(), GATEWAY_NAMESPACE, gateway, |g| check(&listener_names(g)))
            .await
    }

    /// The events about the app `name`, oldest first.
    pub async fn events(&self, name: &str) -> Vec<Event> {
        events::about(&self.cluster.client(), &self.namespace, name).await
    }

    /// Waits for an event with `reason` about the app; returns its note.
    pub async fn wait_event(&self, name: &str, reason: &str) -> String {
        events::wait_for(&self.cluster.client(), &self.namespace, name, reason).await
    }

    /// The client secret of the app `app`'s confidential client, from its OIDC Secret.
    pub async fn client_secret(&self, app: &str) -> String {
        self.secret_data(&format!("{app}-oidc-client"))
            .await
            .and_then(|d| d.get("client-secret").cloned())
            .unwrap_or_else(|| panic!("{app}'s client secret"))
    }

    /// The test's Keycloak realm.
    pub fn realm(&self) -> &str {
        self.keycloak.realm()
    }

    /// The full Keycloak representation of a client of the realm.
    pub async fn keycloak_client(&self, client_id: &str) -> Option<Value> {
        self.keycloak.client(client_id).await
    }

    /// Keycloak requests the manager made so far (counted by the proxy).
    pub fn keycloak_requests(&self) -> u64 {
        self.keycloak.proxy().total()
    }

    /// API writes served so far.
    pub fn writes(&self) -> u64 {
        self.write_breakdown().values().sum()
    }

    /// API writes served so far, by `verb resource[/subresource]`, without the stand-in Envoy Gateway's status
    /// writes (the operator never writes the status of routes, policies or Gateways).
    pub fn write_breakdown(&self) -> BTreeMap<String, u64> {
        let mut rows = BTreeMap::new();
        for row in self.cluster.request_counts() {
            let gateway_status = row.subresource == "status"
                && matches!(row.resource.as_str(), "httproutes" | "securitypolicies" | "gateways");
            if !gateway_status && row.is_write() {
                let sub = if row.subresource.is_empty() {
                    String::new()
                } else {
                    format!("/{}", row.subresource)
                };
                *rows.entry(format!("{} {}{sub}", row.verb, row.resource)).or_default() += row.count;
            }
        }
        rows
    }

    /// Keycloak requests served so far, by `METHOD route`.
    pub fn keycloak_breakdown(&self) -> BTreeMap<String, u64> {
        self.keycloak.proxy().counters()
    }

    /// Reconciles finished so far.
    pub async fn reconciles(&self) -> u64 {
        self.manager().reconciles(CONTROLLER).await
    }

    /// Waits until the controller is idle; returns the reconcile count.
    pub async fn wait_idle(&self) -> u64 {
        self.manager().wait_idle(CONTROLLER).await
    }

    /// Triggers a reconcile of the app that should change nothing (an annotation on its backend Service) and
    /// returns (API writes, Keycloak requests) it caused, not counting the test's own annotation.
    pub async fn measure_noop_reconcile(&self, what: &str) -> (u64, u64) {
        let reconciles = self.wait_idle().await;
        let (writes, calls) = (self.writes(), self.keycloak_requests());
        let patch = json!({"metadata": {"annotations": {"e2e.nebari.dev/touched": format!("{reconciles}")}}});
        self.services()
            .patch(SERVICE, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("touch the Service");
        wait_until(
            "the Service change to trigger a reconcile",
            Deadline::secs(15),
            || async move {
                let now = self.reconciles().await;
                Ok((now > reconciles).then_some(()))
            },
        )
        .await;
        self.wait_idle().await;
        let figures = (self.writes() - writes - 1, self.keycloak_requests() - calls);
        eprintln!(
            "MEASURE {what}: no-op reconcile: {} API writes, {} Keycloak requests",
            figures.0, figures.1
        );
        figures
    }
}

/// The names of a Gateway's listeners, in order.
pub fn listener_names(gateway: &Value) -> Vec<String> {
    gateway["spec"]["listeners"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| l["name"].as_str().map(str::to_string))
        .collect()
}

/// The listener `name` of a Gateway.
pub fn listener<'a>(gateway: &'a Value, name: &str) -> Option<&'a Value> {
    gateway["spec"]["listeners"]
        .as_array()?
        .iter()
        .find(|l| l["name"] == name)
}

/// The field managers of a Gateway's managedFields that own the listener `name`.
pub fn listener_owners(gateway: &Value, name: &str) -> Vec<String> {
    let key = format!("k:{{\"name\":\"{name}\"}}");
    let mut owners: Vec<String> = gateway["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|entry| entry["fieldsV1"]["f:spec"]["f:listeners"].get(&key).is_some())
        .filter_map(|entry| entry["manager"].as_str().map(str::to_string))
        .collect();
    owners.sort();
    owners
}

/// The condition `type_` of an app: (status, reason, message).
pub fn condition(app: &NebariApp, type_: &str) -> Option<(String, String, String)> {
    conditions::get(app, type_).map(|c| (c.status, c.reason, c.message))
}

/// What changed between two [`World::write_breakdown`]s.
pub fn breakdown_delta(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    after
        .iter()
        .filter_map(|(k, v)| {
            let delta = v - before.get(k).copied().unwrap_or(0);
            (delta > 0).then(|| (k.clone(), delta))
        })
        .collect()
}

/// The claims of a JWT (its payload, decoded without verifying the signature).
pub fn jwt_claims(token: &str) -> Value {
    use base64::Engine;
    let payload = token.split('.').nth(1).expect("a JWT");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("a base64url payload");
    serde_json::from_slice(&bytes).expect("JSON claims")
}
