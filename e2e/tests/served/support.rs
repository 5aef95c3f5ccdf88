//! The world of one served test: a gateway namespace and an app namespace of its own on the shared control plane,
//! the public Gateway (Envoy Gateway's GatewayClass) in it, a backend answering on this machine and reached
//! through a Service with a hand-made EndpointSlice (no kubelet runs Pods here), and the manager.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::HeaderMap;
use crds::nebari::NebariApp;
pub use e2e::fixtures::kinds::{certificates, gateways, http_routes};
use e2e::harness::browser::{Browser, BrowserOptions};
use e2e::harness::keycloak::{Flavour, RealmSetup, TestRealm};
use e2e::harness::{Deadline, ManagerOptions, ManagerProcess, TestCluster, conditions, wait_until};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret, Service, ServicePort, ServiceSpec};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use kube::discovery::ApiResource;
use serde_json::{Value, json};
use substrate::{NetworkingEndpoint, Substrate};

/// The public shared Gateway's name (the operator's default).
pub const PUBLIC_GATEWAY: &str = "nebari-gateway";
/// The backend Service every app routes to, and its port.
pub const SERVICE: &str = "web";
/// See [`SERVICE`].
pub const SERVICE_PORT: i32 = 8080;
/// The Keycloak admin credentials Secret the manager reads, and its namespace.
const ADMIN_SECRET: (&str, &str) = ("keycloak", "nebari-realm-admin-credentials");
/// The domain of the apps' hostnames: never in DNS, mapped to this machine by the clients.
pub const SERVED_DOMAIN: &str = "served.test";
/// The ports the Gateway's Envoy binds on the machine.
const GATEWAY_PORTS: [u16; 2] = [80, 443];

/// What the backend saw of one request.
#[derive(Clone, Debug)]
pub struct Seen {
    /// The request's path.
    pub path: String,
    /// Its headers.
    pub headers: HeaderMap,
}

/// A backend on this machine: answers every request with a page naming the test, and records what it received.
pub struct Backend {
    /// The port it listens on (all addresses).
    pub port: u16,
    /// The page it serves.
    pub page: String,
    /// What it received (read with [`Backend::seen`]).
    received: Arc<Mutex<Vec<Seen>>>,
    _server: tokio::task::JoinHandle<()>,
}

impl Backend {
    async fn start(page: String) -> Self {
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let (record, body) = (seen.clone(), page.clone());
        let app = axum::Router::new().fallback(move |uri: axum::http::Uri, headers: HeaderMap| {
            let (record, body) = (record.clone(), body.clone());
            async move {
                record.lock().unwrap_or_else(|p| p.into_inner()).push(Seen {
                    path: uri.path().to_string(),
                    headers,
                });
                axum::response::Html(body)
            }
        });
        let listener = tokio::net::TcpListener::bind("0.0.0.0:0")
            .await
            .expect("bind the backend");
        let port = listener.local_addr().expect("the backend's address").port();
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Backend {
            port,
            page,
            received: seen,
            _server: server,
        }
    }

    /// The requests it received so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.received.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// One served test's world.
pub struct World {
    /// The manager; declared first so it is dropped (printing its log on failure) before the rest goes away.
    pub manager: Option<ManagerProcess>,
    /// The shared control plane.
    pub cluster: TestCluster,
    /// Envoy Gateway and cert-manager as the substrate started them.
    pub networking: NetworkingEndpoint,
    /// The namespace of the Gateway, the Certificates and their Secrets.
    pub gateway_namespace: String,
    /// The app namespace.
    pub namespace: String,
    /// A suffix unique to this test, in namespaces and hostnames.
    pub suffix: String,
    /// The backend.
    pub backend: Backend,
    /// A realm of the test's own on the run's Keycloak, for apps with auth.
    pub keycloak: Option<TestRealm>,
    /// Namespaces of other tenants ([`World::tenant`]), removed with the world.
    tenants: Mutex<Vec<String>>,
}

/// This machine's address that other hosts would reach it on: the backend's endpoint (an EndpointSlice may not
/// name a loopback address).
fn machine_address() -> IpAddr {
    let socket = UdpSocket::bind("0.0.0.0:0").expect("bind a UDP socket");
    // Connecting a UDP socket sends nothing; it only picks the route and so the source address.
    socket
        .connect("192.0.2.1:9")
        .expect("this machine has no route off loopback; the served tests need a non-loopback address");
    let address = socket.local_addr().expect("the local address").ip();
    assert!(
        !address.is_loopback(),
        "this machine's only address is loopback; the served tests need a non-loopback address for the backend"
    );
    address
}

/// Whether something accepts connections on `port` of loopback.
fn listening(port: u16) -> bool {
    TcpStream::connect_timeout(&SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_millis(300)).is_ok()
}

/// Waits until no Envoy of an earlier test holds the Gateway ports (they share a port with a new one otherwise).
async fn wait_ports_free(what: &str) {
    wait_until(what, Deadline::secs(60), || async {
        let busy: Vec<u16> = GATEWAY_PORTS.into_iter().filter(|p| listening(*p)).collect();
        if busy.is_empty() {
            Ok(Some(()))
        } else {
            Err(format!("ports {busy:?} still accept connections"))
        }
    })
    .await
}

impl World {
    /// Sets up a world: namespaces, the Gateway, the backend and its Service; with `keycloak`, a realm on the run's
    /// Keycloak and the admin Secret the manager reads.
    pub async fn start(keycloak: bool) -> World {
        let substrate = Substrate::from_env().unwrap_or_else(|e| panic!("{e}"));
        let networking = substrate.networking.clone().unwrap_or_else(|| {
            panic!(
                "the substrate runs without Envoy Gateway and cert-manager: start it with `substrate run --networking \
                 -- …` (e2e/test.sh does)"
            )
        });
        let cluster = TestCluster::on_substrate().await;
        // A test that failed left its Gateway, and Envoy Gateway keeps its Envoy running: remove those first.
        let all_gateways: Api<DynamicObject> = Api::all_with(cluster.client(), &gateways());
        for gateway in all_gateways
            .list(&Default::default())
            .await
            .expect("list Gateways")
            .items
        {
            if gateway.data["spec"]["gatewayClassName"] == networking.gateway_class.as_str() {
                let namespace = gateway.metadata.namespace.clone().unwrap_or_default();
                let name = gateway.metadata.name.clone().unwrap_or_default();
                let _ = Api::<DynamicObject>::namespaced_with(cluster.client(), &namespace, &gateways())
                    .delete(&name, &DeleteParams::default())
                    .await;
            }
        }
        wait_ports_free("an earlier test's Envoy to release ports 80 and 443").await;
        // Only this project's CRDs: the substrate installed the Gateway API, Envoy Gateway and cert-manager ones.
        cluster.install_crds(&crds::all()).await;
        let suffix = e2e::harness::cluster::unique_suffix();
        let gateway_namespace = format!("gw-{suffix}");
        let namespace = format!("team-{suffix}");
        cluster.create_namespace_named(&gateway_namespace, &[]).await;
        cluster
            .create_namespace_named(&namespace, &[("nebari.dev/managed", "true")])
            .await;
        let backend = Backend::start(format!("<html><body>served backend {suffix}</body></html>")).await;
        let keycloak = if keycloak {
            let realm = e2e::harness::keycloak::unique_realm("served");
            let admin_password = format!("served-{realm}");
            Some(
                TestRealm::create(RealmSetup {
                    name: &realm,
                    flavour: Flavour::Default,
                    tls: None,
                    admin_password: &admin_password,
                })
                .await,
            )
        } else {
            None
        };
        let world = World {
            manager: None,
            cluster,
            networking,
            gateway_namespace,
            namespace,
            suffix,
            backend,
            keycloak,
            tenants: Mutex::default(),
        };
        world.write_admin_secret().await;
        world.create_backend_service().await;
        world.create_gateway().await;
        world
    }

    /// Starts the manager running only the NebariApp controller, as its shipped ServiceAccount, with TLS from the
    /// substrate's CA ClusterIssuer, and Keycloak when the world has a realm. The manager reaches Keycloak through
    /// the realm's fault proxy; the gateway and the client reach Keycloak itself, whose URL is its tokens' issuer.
    pub async fn start_manager(&mut self) {
        self.start_manager_with_gateway_issuer(None).await;
    }

    /// [`Self::start_manager`], with the issuer URL the gateway is given (`--keycloak-issuer-url`) replaced.
    pub async fn start_manager_with_gateway_issuer(&mut self, issuer: Option<String>) {
        let mut args = vec![
            format!("--nebari-gateway-namespace={}", self.gateway_namespace),
            format!("--nebari-cluster-issuer={}", self.networking.cluster_issuer),
        ];
        match &self.keycloak {
            None => args.push("--keycloak-enabled=false".to_string()),
            Some(realm) => args.extend([
                format!("--keycloak-url={}", realm.url()),
                format!("--keycloak-realm={}", realm.realm()),
                format!("--keycloak-admin-secret-name={}", ADMIN_SECRET.1),
                format!("--keycloak-admin-secret-namespace={}", ADMIN_SECRET.0),
                // Envoy calls the token endpoint, which Envoy Gateway accepts only at a domain name (it makes a DNS
                // cluster of it); the browser-facing endpoints stay at Keycloak's own URL, its cookies' host.
                format!(
                    "--keycloak-issuer-url={}",
                    issuer
                        .clone()
                        .unwrap_or_else(|| realm.direct_url().replace("127.0.0.1", "localhost"))
                ),
                format!("--keycloak-external-url={}", realm.direct_url()),
                "--keycloak-api-timeout-seconds=5".to_string(),
            ]),
        }
        let options = ManagerOptions::controllers(&["nebariapp"], None, args);
        self.manager = Some(ManagerProcess::start(&self.cluster, options).await);
    }

    /// The realm's administrator as the Secret the manager reads (its namespace made when missing).
    async fn write_admin_secret(&self) {
        let Some(realm) = &self.keycloak else { return };
        let (namespace, name) = ADMIN_SECRET;
        let body = Namespace {
            metadata: ObjectMeta {
                name: Some(namespace.into()),
                ..Default::default()
            },
            ..Default::default()
        };
        Api::<Namespace>::all(self.cluster.client())
            .patch(namespace, &PatchParams::apply("e2e-served"), &Patch::Apply(&body))
            .await
            .expect("create the Keycloak admin Secret's namespace");
        let (username, password) = realm.admin_credentials();
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(namespace.into()),
                ..Default::default()
            },
            data: Some(BTreeMap::from([
                ("username".to_string(), ByteString(username.as_bytes().to_vec())),
                ("password".to_string(), ByteString(password.as_bytes().to_vec())),
            ])),
            ..Default::default()
        };
        Api::<Secret>::namespaced(self.cluster.client(), namespace)
            .patch(name, &PatchParams::apply("e2e-served").force(), &Patch::Apply(&secret))
            .await
            .expect("write the Keycloak admin Secret");
    }

    /// The public Gateway of Envoy Gateway's class, with a plain HTTP listener; the operator adds the apps' HTTPS
    /// listeners.
    async fn create_gateway(&self) {
        let gateway = json!({
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "Gateway",
            "metadata": {"name": PUBLIC_GATEWAY, "namespace": self.gateway_namespace},
            "spec": {
                "gatewayClassName": self.networking.gateway_class,
                "listeners": [
                    {"name": "http", "port": 80, "protocol": "HTTP", "allowedRoutes": {"namespaces": {"from": "All"}}},
                ],
            },
        });
        self.api(&gateways(), &self.gateway_namespace)
            .patch(
                PUBLIC_GATEWAY,
                &PatchParams::apply("platform-admin"),
                &Patch::Apply(&gateway),
            )
            .await
            .unwrap_or_else(|e| panic!("create Gateway {PUBLIC_GATEWAY}: {e}"));
    }

    /// Another tenant: namespace `<prefix>-<suffix>` opted in, with a backend of its own behind its `web` Service.
    pub async fn tenant(&self, prefix: &str) -> (String, Backend) {
        let namespace = format!("{prefix}-{}", self.suffix);
        self.cluster
            .create_namespace_named(&namespace, &[("nebari.dev/managed", "true")])
            .await;
        self.tenants
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(namespace.clone());
        let backend = Backend::start(format!("<html><body>{namespace}'s backend</body></html>")).await;
        self.create_backend_service_in(&namespace, backend.port).await;
        (namespace, backend)
    }

    async fn create_backend_service(&self) {
        self.create_backend_service_in(&self.namespace, self.backend.port).await;
    }

    /// The backend Service of `namespace` and, since no kubelet runs a Pod for it, an EndpointSlice naming the
    /// backend at `port` of this machine.
    async fn create_backend_service_in(&self, namespace: &str, port: u16) {
        let service = Service {
            metadata: ObjectMeta {
                name: Some(SERVICE.into()),
                namespace: Some(namespace.to_string()),
                ..Default::default()
            },
            spec: Some(ServiceSpec {
                ports: Some(vec![ServicePort {
                    name: Some("http".into()),
                    port: SERVICE_PORT,
                    target_port: Some(IntOrString::Int(i32::from(port))),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        Api::<Service>::namespaced(self.cluster.client(), namespace)
            .create(&PostParams::default(), &service)
            .await
            .expect("create the backend Service");
        let slice = EndpointSlice {
            metadata: ObjectMeta {
                name: Some(format!("{SERVICE}-backend")),
                namespace: Some(namespace.to_string()),
                labels: Some(BTreeMap::from([(
                    "kubernetes.io/service-name".to_string(),
                    SERVICE.to_string(),
                )])),
                ..Default::default()
            },
            address_type: "IPv4".into(),
            endpoints: vec![Endpoint {
                addresses: vec![machine_address().to_string()],
                ..Default::default()
            }],
            ports: Some(vec![EndpointPort {
                name: Some("http".into()),
                port: Some(i32::from(port)),
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
        };
        Api::<EndpointSlice>::namespaced(self.cluster.client(), namespace)
            .create(&PostParams::default(), &slice)
            .await
            .expect("create the backend's EndpointSlice");
    }

    /// A dynamic API for `resource` in `namespace`.
    pub fn api(&self, resource: &ApiResource, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.cluster.client(), namespace, resource)
    }

    /// The NebariApps of the app namespace.
    pub fn apps(&self) -> Api<NebariApp> {
        Api::namespaced(self.cluster.client(), &self.namespace)
    }

    /// The hostname of app `name`: unique to this test, resolved by the client, never by DNS.
    pub fn hostname(&self, name: &str) -> String {
        format!("{name}.{}.{SERVED_DOMAIN}", self.suffix)
    }

    /// Applies NebariApp `name` routing to the backend, with `spec` merged over the hostname and service.
    pub async fn apply_app(&self, name: &str, spec: Value) {
        self.apply_app_in(&self.namespace, name, spec).await;
    }

    /// [`Self::apply_app`] in `namespace`.
    pub async fn apply_app_in(&self, namespace: &str, name: &str, spec: Value) {
        let mut full = json!({
            "hostname": self.hostname(name),
            "service": {"name": SERVICE, "port": SERVICE_PORT},
        });
        if let (Some(full), Some(extra)) = (full.as_object_mut(), spec.as_object()) {
            for (key, value) in extra {
                full.insert(key.clone(), value.clone());
            }
        }
        let app = json!({
            "apiVersion": "reconcilers.nebari.dev/v1",
            "kind": "NebariApp",
            "metadata": {"name": name, "namespace": namespace},
            "spec": full,
        });
        self.cluster.kubectl().apply(&app.to_string()).await;
    }

    /// Waits (a real issuance and a real translation take seconds) until app `name` is Ready; returns it.
    pub async fn wait_app_ready(&self, name: &str) -> NebariApp {
        self.wait_app_ready_in(&self.namespace, name).await
    }

    /// [`Self::wait_app_ready`] in `namespace`.
    pub async fn wait_app_ready_in(&self, namespace: &str, name: &str) -> NebariApp {
        let apps: Api<NebariApp> = Api::namespaced(self.cluster.client(), namespace);
        wait_until(&format!("NebariApp {name} Ready"), Deadline::secs(120), || {
            let apps = apps.clone();
            async move {
                let app = apps.get(name).await.map_err(|e| e.to_string())?;
                if conditions::is_ready(&app) {
                    Ok(Some(app))
                } else {
                    Err(format!("{:?}", app.status.as_ref().map(|s| &s.conditions)))
                }
            }
        })
        .await
    }

    /// An HTTPS client that reaches `hostname` at this machine's Envoy and trusts only the substrate's issuer CA.
    pub fn https_client(&self, hostname: &str) -> reqwest::Client {
        self.client_builder(hostname).build().expect("an HTTPS client")
    }

    /// As [`Self::https_client`], reporting the certificate each response came over ([`reqwest::tls::TlsInfo`]).
    pub fn https_client_with_tls_info(&self, hostname: &str) -> reqwest::Client {
        self.client_builder(hostname)
            .tls_info(true)
            .build()
            .expect("an HTTPS client")
    }

    /// A headless Chromium of its own (no cookies shared with another) that trusts only the substrate's issuer CA
    /// and finds the tests' hostnames on this machine; its pictures go under `served/<suffix>/<person>`.
    pub async fn browser(&self, person: &str) -> Browser {
        Browser::start(BrowserOptions {
            name: format!("served-{}/{person}", self.suffix),
            trusted_ca: Some(self.networking.issuer_ca_cert.clone()),
            loopback_domains: vec![SERVED_DOMAIN.to_string()],
        })
        .await
    }

    fn client_builder(&self, hostname: &str) -> reqwest::ClientBuilder {
        let ca = std::fs::read(&self.networking.issuer_ca_cert).expect("read the issuer's CA");
        reqwest::Client::builder()
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(&ca).expect("the issuer's CA is PEM"))
            .resolve(hostname, SocketAddr::from(([127, 0, 0, 1], 443)))
            .timeout(Duration::from_secs(10))
    }

    /// Deletes the test's apps, then its Gateway, and waits until Envoy Gateway has stopped the Gateway's Envoy, so
    /// the next test finds the ports free. Called at the end of every test.
    pub async fn finish(mut self) {
        let tenants = self.tenants.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let namespaces: Vec<String> = std::iter::once(self.namespace.clone()).chain(tenants).collect();
        for namespace in &namespaces {
            let apps: Api<NebariApp> = Api::namespaced(self.cluster.client(), namespace);
            for app in apps.list(&Default::default()).await.expect("list the apps").items {
                let name = app.metadata.name.clone().unwrap_or_default();
                let _ = apps.delete(&name, &DeleteParams::default()).await;
                wait_until(&format!("NebariApp {name} gone"), Deadline::secs(60), || {
                    let apps = apps.clone();
                    let name = name.clone();
                    async move {
                        match apps.get_opt(&name).await {
                            Ok(None) => Ok(Some(())),
                            Ok(Some(_)) => Err("still there".to_string()),
                            Err(e) => Err(e.to_string()),
                        }
                    }
                })
                .await;
            }
        }
        self.manager.take();
        let _ = self
            .api(&gateways(), &self.gateway_namespace)
            .delete(PUBLIC_GATEWAY, &DeleteParams::default())
            .await;
        wait_ports_free("Envoy Gateway to stop the Gateway's Envoy").await;
        for namespace in namespaces.iter().chain([&self.gateway_namespace]) {
            let _ = Api::<Namespace>::all(self.cluster.client())
                .delete(namespace, &DeleteParams::default())
                .await;
        }
    }
}
