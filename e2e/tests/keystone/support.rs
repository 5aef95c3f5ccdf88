//! The world of one KeystoneApplicationCredential test: its own API emulator and namespace, the process's real
//! Keystone with a service user of its own, the password Secret, a Ready KeystoneAPI pointing at Keystone (or
//! at a breakable proxy in front of it), and the real `manager` running the controller.

use crds::keystone::KeystoneApplicationCredential;
use e2e::harness::{Deadline, ManagerOptions, ManagerProcess, TestCluster, conditions, metrics, wait_until};
use e2e::keystone::sample::{install_keystone_api_crd, publish_keystone_api, write_password_secret};
use e2e::keystone::{KeystoneAdmin, KeystoneProxy, KeystoneServer, ServiceAccount, shared};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::PartialObjectMeta;
use serde_json::Value;

/// The credential every test creates (its service is `barbican`, so its Secrets are `ac-barbican-*-secret`).
pub const CREDENTIAL: &str = "ac-barbican";
/// The controller name in metrics.
pub const CONTROLLER: &str = "keystoneapplicationcredential";
/// Name of the password Secret.
pub const PASSWORD_SECRET: &str = "osp-secret";
/// Key of the password in it.
pub const PASSWORD_KEY: &str = "BarbicanPassword";
/// Name of the KeystoneAPI.
pub const KEYSTONE_API: &str = "keystone";
/// Label on every credential Secret of the service.
pub const SERVICE_SELECTOR: &str = "application-credential-service=barbican";

/// What to set up besides the cluster and Keystone.
pub struct Setup {
    /// Install keystone-operator's KeystoneAPI kind (a fixture CRD).
    pub keystone_api_kind: bool,
    /// Publish a Ready KeystoneAPI (needs the kind).
    pub keystone_api: bool,
    /// Write the password Secret with the right password.
    pub password_secret: bool,
    /// Put a breakable proxy between the manager and Keystone.
    pub proxy: bool,
    /// Roles the service user holds in the `service` project.
    pub user_roles: &'static [&'static str],
    /// Extra manager flags.
    pub manager_args: Vec<String>,
    /// Start the manager.
    pub manager: bool,
    /// Run the manager as the namespaced install (`manifests/overlays/namespaced`: Roles only, watching the
    /// overlay's example namespace, which then is the test's namespace).
    pub namespaced: bool,
    /// The manager reaches the API through a fault proxy ([`TestCluster::api_faults`]), for tests that fail,
    /// delay or count its requests.
    pub api_faults: bool,
}

/// The namespace the namespaced overlay watches.
pub const NAMESPACED_INSTALL_NAMESPACE: &str = "tenant-a";

impl Default for Setup {
    fn default() -> Self {
        Self {
            keystone_api_kind: true,
            keystone_api: true,
            password_secret: true,
            proxy: false,
            user_roles: &["service"],
            manager_args: Vec::new(),
            api_faults: false,
            manager: true,
            namespaced: false,
        }
    }
}

/// One test's world.
pub struct World {
    /// The manager (when started); declared first so it is dropped (and its log printed on failure) before the
    /// cluster's scratch directory holding that log is removed.
    pub manager: Option<ManagerProcess>,
    /// The control plane.
    pub cluster: TestCluster,
    /// The process's Keystone.
    pub keystone: &'static KeystoneServer,
    /// Keystone's administrator.
    pub admin: KeystoneAdmin,
    /// The test's namespace.
    pub namespace: String,
    /// The test's service user.
    pub user: ServiceAccount,
    /// The proxy in front of Keystone, when asked for.
    pub proxy: Option<KeystoneProxy>,
    /// Whether the manager runs as the namespaced install.
    pub namespaced: bool,
}

fn unique(prefix: &str) -> String {
    format!("{prefix}-{:08x}", rand::random::<u32>())
}

impl World {
    /// Sets up a world.
    pub async fn start(setup: Setup) -> World {
        let keystone = shared::keystone().await;
        let cluster = if setup.api_faults {
            TestCluster::start_behind_fault_proxy().await
        } else {
            TestCluster::start().await
        };
        cluster.install_crds(&crds::all()).await;
        if setup.keystone_api_kind {
            install_keystone_api_crd(&cluster.client())
                .await
                .expect("install the KeystoneAPI CRD");
        }
        let namespace = if setup.namespaced {
            cluster.create_namespace_named(NAMESPACED_INSTALL_NAMESPACE, &[]).await;
            for other in ["envoy-gateway-system", "keycloak"] {
                cluster.create_namespace_named(other, &[]).await;
            }
            NAMESPACED_INSTALL_NAMESPACE.to_string()
        } else {
            cluster.create_namespace("appcred").await
        };
        let admin = KeystoneAdmin::login(keystone)
            .await
            .expect("log in to Keystone as admin");
        let user = admin
            .create_user(&unique("svc"), &unique("pw"), "service", setup.user_roles)
            .await
            .expect("create the service user");
        let proxy = if setup.proxy {
            Some(
                KeystoneProxy::start(keystone.url())
                    .await
                    .expect("start the Keystone proxy"),
            )
        } else {
            None
        };
        let mut world = World {
            manager: None,
            cluster,
            keystone,
            admin,
            namespace,
            user,
            proxy,
            namespaced: setup.namespaced,
        };
        if setup.password_secret {
            world.write_password(&world.user.password.clone()).await;
        }
        if setup.keystone_api {
            world.publish_keystone_api(true, "Setup complete").await;
        }
        if setup.manager {
            world.start_manager(setup.manager_args).await;
        }
        world
    }

    /// Starts the manager running only this controller.
    pub async fn start_manager(&mut self, extra: Vec<String>) {
        let watched = self.namespaced.then_some(NAMESPACED_INSTALL_NAMESPACE);
        let options = ManagerOptions::controllers(&[CONTROLLER], watched, extra);
        self.manager = Some(ManagerProcess::start(&self.cluster, options).await);
    }

    /// The running manager.
    pub fn manager(&mut self) -> &mut ManagerProcess {
        self.manager.as_mut().expect("the manager was started")
    }

    /// The Keystone URL the KeystoneAPI publishes (the proxy's when there is one).
    pub fn keystone_url(&self) -> String {
        self.proxy
            .as_ref()
            .map(KeystoneProxy::url)
            .unwrap_or_else(|| self.keystone.url().to_string())
    }

    /// Publishes the KeystoneAPI with the given readiness.
    pub async fn publish_keystone_api(&self, ready: bool, message: &str) {
        publish_keystone_api(
            &self.cluster.client(),
            &self.namespace,
            KEYSTONE_API,
            &self.keystone_url(),
            ready,
            message,
        )
        .await
        .expect("publish the KeystoneAPI");
    }

    /// Writes the password Secret.
    pub async fn write_password(&self, password: &str) {
        write_password_secret(
            &self.cluster.client(),
            &self.namespace,
            PASSWORD_SECRET,
            PASSWORD_KEY,
            password,
        )
        .await
        .expect("write the password Secret");
    }

    /// The credential's YAML with `spec_extra` appended to the spec (indented by four spaces).
    pub fn credential_yaml(&self, roles: &[&str], spec_extra: &str) -> String {
        let roles: String = roles.iter().map(|r| format!("    - {r}\n")).collect();
        format!(
            "apiVersion: keystone.openstack.org/v1beta1\nkind: KeystoneApplicationCredential\nmetadata:\n  name: {CREDENTIAL}\n  namespace: {}\nspec:\n  secret: {PASSWORD_SECRET}\n  passwordSelector: {PASSWORD_KEY}\n  userName: {}\n  roles:\n{roles}{spec_extra}",
            self.namespace, self.user.name
        )
    }

    /// `kubectl apply` of the credential.
    pub async fn apply_credential(&self, roles: &[&str], spec_extra: &str) {
        self.cluster
            .kubectl()
            .apply(&self.credential_yaml(roles, spec_extra))
            .await;
    }

    /// The credentials API of the test's namespace.
    pub fn credentials(&self) -> Api<KeystoneApplicationCredential> {
        Api::namespaced(self.cluster.client(), &self.namespace)
    }

    /// The Secrets API of the test's namespace.
    pub fn secrets(&self) -> Api<Secret> {
        Api::namespaced(self.cluster.client(), &self.namespace)
    }

    /// The credential as stored.
    pub async fn credential(&self) -> KeystoneApplicationCredential {
        self.credentials().get(CREDENTIAL).await.expect("read the credential")
    }

    /// Waits until the credential is Ready with a credential id other than `not`; returns it.
    pub async fn wait_ready(&self, not: Option<&str>) -> KeystoneApplicationCredential {
        let api = self.credentials();
        let not = not.map(str::to_string);
        wait_until("the credential to be Ready", Deadline::secs(60), || {
            let api = api.clone();
            let not = not.clone();
            async move {
                let ac = api.get(CREDENTIAL).await.map_err(|e| e.to_string())?;
                let status = ac.status.clone().unwrap_or_default();
                let ready = status
                    .conditions
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True");
                let fresh = status.ac_id.is_some() && status.ac_id != not;
                if ready && fresh {
                    Ok(Some(ac))
                } else {
                    Err(format!("{:?}", status.conditions))
                }
            }
        })
        .await
    }

    /// Waits until condition `type_` has `status` and `reason`; returns its message.
    pub async fn wait_condition(&self, type_: &str, status: &str, reason: &str) -> String {
        self.wait_condition_matching(type_, status, reason, |_| true).await
    }

    /// Waits until condition `type_` has `status`, `reason` and exactly `message`.
    pub async fn wait_condition_message(&self, type_: &str, status: &str, reason: &str, message: &str) {
        self.wait_condition_matching(type_, status, reason, |m| m == message)
            .await;
    }

    /// Waits until condition `type_` has `status` and `reason` and its message passes `check`; returns it.
    pub async fn wait_condition_matching(
        &self,
        type_: &str,
        status: &str,
        reason: &str,
        message: impl Fn(&str) -> bool,
    ) -> String {
        let api = self.credentials();
        let message = &message;
        wait_until(
            &format!("condition {type_}={status} ({reason})"),
            Deadline::secs(60),
            || {
                let api = api.clone();
                async move {
                    let ac = api.get(CREDENTIAL).await.map_err(|e| e.to_string())?;
                    match conditions::get(&ac, type_) {
                        Some(c) if c.status == status && c.reason == reason && message(&c.message) => {
                            Ok(Some(c.message))
                        }
                        other => Err(format!("{other:?}")),
                    }
                }
            },
        )
        .await
    }

    /// The service's credential Secrets (metadata), by name.
    pub async fn credential_secrets(&self) -> Vec<PartialObjectMeta<Secret>> {
        let list = self
            .secrets()
            .list_metadata(&kube::api::ListParams::default().labels(SERVICE_SELECTOR))
            .await
            .expect("list the credential Secrets");
        let mut items = list.items;
        items.sort_by_key(|s| s.metadata.name.clone());
        items
    }

    /// `AC_ID` and `AC_SECRET` of Secret `name`.
    pub async fn secret_credential(&self, name: &str) -> (String, String) {
        let secret = self
            .secrets()
            .get(name)
            .await
            .unwrap_or_else(|e| panic!("read Secret {name}: {e}"));
        let data = secret.data.unwrap_or_default();
        let text = |key: &str| {
            String::from_utf8(
                data.get(key)
                    .unwrap_or_else(|| panic!("Secret {name} has {key}"))
                    .0
                    .clone(),
            )
            .expect("UTF-8")
        };
        (text("AC_ID"), text("AC_SECRET"))
    }

    /// The service user's application credentials in Keystone.
    pub async fn keystone_credentials(&self) -> Vec<Value> {
        self.admin
            .application_credentials(&self.user.id)
            .await
            .expect("list the user's credentials in Keystone")
    }

    /// Asserts that the credential in Secret `name` logs in to Keystone.
    pub async fn assert_secret_authenticates(&self, name: &str) {
        let (id, secret) = self.secret_credential(name).await;
        let status = self
            .admin
            .authenticate_application_credential(&id, &secret)
            .await
            .expect("log in");
        assert_eq!(
            status.as_u16(),
            201,
            "the credential in Secret {name} must log in to Keystone"
        );
    }

    /// Keystone requests the manager made so far (from `external_api_requests_total{api="keystone"}`).
    pub async fn keystone_requests(&mut self) -> u64 {
        let metrics = self.manager().metrics().await;
        metrics::sum(&metrics, "external_api_requests_total", &[("api", "keystone")])
    }

    /// Credentials the manager minted for the test's credential for `reason`, from
    /// `keystone_application_credentials_created_total`.
    pub async fn credentials_created(&mut self, reason: &str) -> u64 {
        let namespace = self.namespace.clone();
        let metrics = self.manager().metrics().await;
        metrics::sum(
            &metrics,
            "keystone_application_credentials_created_total",
            &[("namespace", &namespace), ("name", CREDENTIAL), ("reason", reason)],
        )
    }

    /// The manager's `keystone_application_credential_seconds_until_rotation` for the test's credential.
    pub async fn seconds_until_rotation(&mut self) -> Option<f64> {
        let namespace = self.namespace.clone();
        let metrics = self.manager().metrics().await;
        let labels = format!("{{name=\"{CREDENTIAL}\",namespace=\"{namespace}\"}}");
        metrics
            .lines()
            .find_map(|line| {
                line.strip_prefix(&format!(
                    "keystone_application_credential_seconds_until_rotation{labels} "
                ))
            })
            .and_then(|value| value.trim().parse().ok())
    }

    /// Reconciles the manager finished so far.
    pub async fn reconciles(&mut self) -> u64 {
        self.manager().reconciles(CONTROLLER).await
    }
}

impl World {
    /// Asserts the controller waits for a watch rather than polling: once a reconcile has finished, none ended
    /// in an error (retried with backoff) or asked to be requeued.
    pub async fn assert_waiting_for_a_watch(&mut self) {
        let controller = ("controller", CONTROLLER);
        let manager: &ManagerProcess = self.manager();
        let metrics = wait_until("a reconcile to finish", Deadline::secs(10), || async move {
            let metrics = manager.metrics().await;
            let succeeded = metrics::sum(
                &metrics,
                "controller_runtime_reconcile_total",
                &[controller, ("result", "success")],
            );
            Ok((succeeded > 0).then_some(metrics))
        })
        .await;
        for result in ["error", "requeue", "requeue_after"] {
            let count = metrics::sum(
                &metrics,
                "controller_runtime_reconcile_total",
                &[controller, ("result", result)],
            );
            assert_eq!(
                count, 0,
                "while waiting, {count} reconciles ended with {result}: the controller polls"
            );
        }
    }
}
