//! The world of one ManagedRancherProject test: its own API emulator with the operator's CRDs, its own Rancher
//! emulator (cluster `c-m-glwxdksp`), a realm of its own on the run's real Keycloak behind a fault proxy (named
//! `waldur-…`, users alice, bob, carol), the credential Secrets, and the real `manager` running the two
//! controllers with a short resync interval.
//! Objects are written the way the Waldur plugin writes them: GET, then a full PUT (or a create).

use std::collections::BTreeMap;

use e2e::harness::fault_proxy::FaultProxy;
use e2e::harness::keycloak::{TestRealm, unique_realm};
use e2e::harness::{Deadline, ManagerOptions, ManagerProcess, TestCluster, conditions, events, wait_until};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::discovery::ApiResource;
use sandbox::surroundings::rancher::{ProjectSandbox, ProjectSandboxOptions, sandbox_prepare};
use serde_json::{Value, json};

/// The Rancher cluster every test uses.
pub const CLUSTER: &str = "c-m-glwxdksp";
/// A second cluster (inventory counts per cluster).
pub const OTHER_CLUSTER: &str = "c-m-other";
/// The parent group the plugin names for the cluster.
pub const PARENT: &str = "c_c-m-glwxdksp";
/// Where the objects live (as for the plugin).
pub const NAMESPACE: &str = "waldur-system";
/// Seconds between drift checks in the tests.
pub const RESYNC_SECONDS: u64 = 2;
/// The controller name in metrics.
const CONTROLLER: &str = "managedrancherproject";

/// What to set up besides the cluster and the emulators.
pub struct Setup {
    /// Users that exist in Keycloak (made in the test's realm).
    pub users: Vec<&'static str>,
    /// Extra manager flags.
    pub manager_args: Vec<String>,
    /// Start the manager.
    pub manager: bool,
    /// Give the manager the Keycloak settings (`--rancher-keycloak-*`); without them it runs without Keycloak.
    pub keycloak: bool,
    /// Rancher and Keycloak serve HTTPS with certificates of a CA made for the test (`World::ca_pem`).
    pub tls: bool,
    /// The manager reaches the API through a fault proxy ([`TestCluster::api_faults`]), for tests that fail,
    /// delay or count its requests.
    pub api_faults: bool,
}

impl Default for Setup {
    fn default() -> Self {
        Self {
            users: vec!["alice", "bob", "carol"],
            manager_args: Vec::new(),
            api_faults: false,
            manager: true,
            keycloak: true,
            tls: false,
        }
    }
}

/// One test's world.
pub struct World {
    /// The manager; declared first so it is dropped (printing its log on failure) before the rest.
    pub manager: Option<ManagerProcess>,
    /// Rancher, and the test's realm on the real Keycloak with its fault proxy.
    pub env: ProjectSandbox,
    /// The control plane.
    pub cluster: TestCluster,
    /// Whether the manager gets the Keycloak settings.
    pub keycloak_settings: bool,
    /// The CA that issued Rancher's and Keycloak's certificates (with `Setup::tls`).
    pub ca_pem: Option<String>,
}

/// The ManagedRancherProject kind as a dynamic resource (objects are written as the plugin writes them).
pub fn mrp_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("waldur.io", "v1alpha1", "ManagedRancherProject"),
        "managedrancherprojects",
    )
}

/// The RancherProjectInventory kind.
pub fn rpi_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("waldur.io", "v1alpha1", "RancherProjectInventory"),
        "rancherprojectinventories",
    )
}

/// The group name the plugin renders for a role of a Waldur resource project (its default template).
pub fn group_name(rp_uuid: &str, role: &str) -> String {
    format!("c_{CLUSTER}_{rp_uuid}_{role}")
}

/// The Keycloak path of a binding group under the parent.
pub fn group_path(group: &str) -> String {
    format!("/{PARENT}/{group}")
}

/// A binding as the plugin writes it: members by username.
pub fn binding(group: &str, role: &str, members: &[&str]) -> Value {
    let members: Vec<Value> = members
        .iter()
        .map(|m| json!({"userIdentifier": m, "lookupByID": false}))
        .collect();
    json!({"groupName": group, "rancherRole": role, "members": members})
}

/// A spec in the plugin's shape.
pub fn writer_spec(project_name: &str, rp_uuid: &str, bindings: Vec<Value>) -> Value {
    json!({
        "clusterId": CLUSTER,
        "projectName": project_name,
        "resourceUuid": "8598e0db5823407ea6e03d69d2ad68e9",
        "resourceProjectUuid": rp_uuid,
        "description": format!("{project_name} workspace"),
        "keycloak": {"enabled": true, "parentGroupName": PARENT, "roleBindings": bindings},
    })
}

/// The labels the plugin stamps.
pub fn writer_labels(rp_uuid: &str) -> Value {
    json!({"waldur.io/resource-uuid": "8598e0db5823407ea6e03d69d2ad68e9", "waldur.io/resource-project-uuid": rp_uuid})
}

/// A condition of an object (as JSON), by type.
pub fn condition<'a>(object: &'a Value, type_: &str) -> Option<&'a Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// The status entry of a project binding by group name.
pub fn binding_status<'a>(object: &'a Value, group: &str) -> Option<&'a Value> {
    object["status"]["keycloakRoleBindings"]
        .as_array()?
        .iter()
        .find(|b| b["groupName"] == group)
}

/// The `userIdentifier`s of a binding's synced members.
pub fn synced(object: &Value, group: &str) -> Vec<String> {
    binding_status(object, group)
        .and_then(|b| b["syncedMembers"].as_array())
        .map(|members| {
            members
                .iter()
                .filter_map(|m| m["userIdentifier"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The `userIdentifier`s of a binding's pending members.
pub fn pending(object: &Value, group: &str) -> Vec<String> {
    binding_status(object, group)
        .and_then(|b| b["pendingMembers"].as_array())
        .map(|members| {
            members
                .iter()
                .filter_map(|m| m["userIdentifier"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The object `name` as JSON, or why it cannot be read (for polling).
pub async fn get_json(api: &Api<DynamicObject>, name: &str) -> Result<Value, String> {
    api.get_opt(name)
        .await
        .map_err(|e| e.to_string())?
        .map(|o| serde_json::to_value(o).expect("serializes"))
        .ok_or_else(|| format!("no {name}"))
}

/// Whether an object is Ready for its current generation, in phase `Ready`.
pub fn is_ready(object: &Value) -> bool {
    object["status"]["phase"] == "Ready" && conditions::is_ready(object)
}

impl World {
    /// Sets up a world.
    pub async fn start(setup: Setup) -> World {
        let cluster = if setup.api_faults {
            TestCluster::start_behind_fault_proxy().await
        } else {
            TestCluster::start().await
        };
        cluster.install_crds(&crds::all()).await;
        let ca = setup
            .tls
            .then(|| emulator_kit::tls::TestCa::new("e2e private CA").expect("a test CA"));
        let issue = |name: &str| {
            ca.as_ref()
                .map(|ca| ca.issue_server_cert(name, &[]).expect("a server certificate"))
        };
        let (rancher_tls, keycloak_tls) = (issue("rancher"), issue("keycloak"));
        let env = sandbox_prepare(
            &cluster.client(),
            ProjectSandboxOptions {
                clusters: vec![CLUSTER.to_string(), OTHER_CLUSTER.to_string()],
                realm: unique_realm("waldur"),
                users: setup.users.iter().map(|u| u.to_string()).collect(),
                secret_namespace: NAMESPACE.to_string(),
                namespaces: vec![NAMESPACE.to_string()],
                rancher_tls,
                keycloak_tls,
                ..ProjectSandboxOptions::default()
            },
        )
        .await
        .expect("prepare Rancher and Keycloak");
        let mut world = World {
            manager: None,
            env,
            cluster,
            keycloak_settings: setup.keycloak,
            ca_pem: ca.as_ref().map(emulator_kit::tls::TestCa::cert_pem),
        };
        if setup.manager {
            world.start_manager(setup.manager_args).await;
        }
        world
    }

    /// Starts the manager running the ManagedRancherProject and RancherProjectInventory controllers.
    pub async fn start_manager(&mut self, extra: Vec<String>) {
        let options = self.manager_options(extra);
        self.manager = Some(ManagerProcess::start(&self.cluster, options).await);
    }

    /// How [`Self::start_manager`] runs the manager (for tests that run several).
    pub fn manager_options(&self, extra: Vec<String>) -> ManagerOptions {
        let mut args = vec![
            format!("--rancher-resync-interval-seconds={RESYNC_SECONDS}"),
            "--rancher-timeout-seconds=5".to_string(),
            "--rancher-keycloak-timeout-seconds=5".to_string(),
        ];
        let keycloak = self.keycloak_settings;
        args.extend(
            self.env
                .manager_args()
                .into_iter()
                .filter(|arg| keycloak || !arg.starts_with("--rancher-keycloak-")),
        );
        args.extend(extra);
        ManagerOptions::controllers(&[CONTROLLER, "rancherprojectinventory"], None, args)
    }

    /// The running manager.
    pub fn manager(&self) -> &ManagerProcess {
        self.manager.as_ref().expect("the manager was started")
    }

    /// The running manager, to restart it.
    pub fn manager_mut(&mut self) -> &mut ManagerProcess {
        self.manager.as_mut().expect("the manager was started")
    }

    /// The ManagedRancherProjects of the namespace.
    pub fn mrps(&self) -> Api<DynamicObject> {
        Api::namespaced_with(self.cluster.client(), NAMESPACE, &mrp_resource())
    }

    /// Writes an object the way the plugin does: GET, then a full PUT carrying only name, labels and the
    /// resourceVersion in its metadata (dropping finalizers and annotations), or a create.
    pub async fn write(&self, name: &str, spec: Value, labels: Value) {
        let api = self.mrps();
        for _ in 0..5 {
            let existing = api.get_opt(name).await.expect("read the object");
            let mut body = json!({
                "apiVersion": "waldur.io/v1alpha1",
                "kind": "ManagedRancherProject",
                "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
                "spec": spec,
            });
            let result = match existing {
                None => {
                    let object: DynamicObject = serde_json::from_value(body).expect("object");
                    api.create(&PostParams::default(), &object).await.map(|_| ())
                }
                Some(existing) => {
                    body["metadata"]["resourceVersion"] = json!(existing.metadata.resource_version);
                    let object: DynamicObject = serde_json::from_value(body).expect("object");
                    api.replace(name, &PostParams::default(), &object).await.map(|_| ())
                }
            };
            match result {
                Ok(()) => return,
                Err(kube::Error::Api(e)) if e.code == 409 => continue,
                Err(e) => panic!("write ManagedRancherProject {name}: {e}"),
            }
        }
        panic!("write ManagedRancherProject {name}: kept conflicting");
    }

    /// The object as JSON, if it exists.
    pub async fn get(&self, name: &str) -> Option<Value> {
        self.mrps()
            .get_opt(name)
            .await
            .unwrap_or_else(|e| panic!("read {name}: {e}"))
            .map(|o| serde_json::to_value(o).expect("objects serialize"))
    }

    /// Merges `patch` into the object (a user's edit).
    pub async fn merge(&self, name: &str, patch: Value) {
        self.mrps()
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap_or_else(|e| panic!("patch {name}: {e}"));
    }

    /// Waits until `check` accepts the object; returns it.
    pub async fn wait_for(&self, name: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        wait_until(&format!("{name}: {what}"), Deadline::secs(30), || {
            let check = &check;
            async move {
                match self.get(name).await {
                    Some(object) if check(&object) => Ok(Some(object)),
                    Some(object) => Err(object["status"].to_string()),
                    None => Err("no such object".to_string()),
                }
            }
        })
        .await
    }

    /// Waits until the object is Ready and returns the Rancher project id its status records.
    pub async fn wait_ready_project(&self, name: &str) -> String {
        let object = self.wait_ready(name).await;
        object["status"]["rancherProjectId"]
            .as_str()
            .expect("project id")
            .to_string()
    }

    /// Waits until the object is Ready for its current generation.
    pub async fn wait_ready(&self, name: &str) -> Value {
        self.wait_for(name, "Ready", is_ready).await
    }

    /// Deletes the object (cleanup then runs under the finalizer).
    pub async fn delete(&self, name: &str) {
        self.mrps()
            .delete(name, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("delete {name}: {e}"));
    }

    /// Waits until the object is gone.
    pub async fn wait_gone(&self, name: &str) {
        wait_until(&format!("{name} gone"), Deadline::secs(30), || async move {
            match self.get(name).await {
                None => Ok(Some(())),
                Some(object) => Err(object["status"].to_string()),
            }
        })
        .await
    }

    /// Waits for an event with `reason` about the object; returns its note.
    pub async fn wait_event(&self, name: &str, reason: &str) -> String {
        events::wait_for(&self.cluster.client(), NAMESPACE, name, reason).await
    }

    // --- Rancher ---

    /// The projects of the test cluster with this display name.
    pub fn projects_named(&self, name: &str) -> Vec<Value> {
        self.env.rancher.projects_named(CLUSTER, name)
    }

    /// The project with this id.
    pub fn project(&self, id: &str) -> Option<Value> {
        self.env.rancher.project(id)
    }

    /// The PRTBs of a project as `(groupPrincipalId, roleTemplateId)`.
    pub fn prtbs(&self, project_id: &str) -> Vec<(String, String)> {
        let mut found: Vec<(String, String)> = self
            .env
            .rancher
            .project_bindings()
            .iter()
            .filter(|b| b["projectId"] == project_id)
            .map(|b| {
                (
                    b["groupPrincipalId"].as_str().unwrap_or_default().to_string(),
                    b["roleTemplateId"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect();
        found.sort();
        found
    }

    /// The CRTBs of the test cluster as `(groupPrincipalId, roleTemplateId)`.
    pub fn crtbs(&self) -> Vec<(String, String)> {
        let mut found: Vec<(String, String)> = self
            .env
            .rancher
            .cluster_bindings()
            .iter()
            .filter(|b| b["clusterId"] == CLUSTER)
            .map(|b| {
                (
                    b["groupPrincipalId"].as_str().unwrap_or_default().to_string(),
                    b["roleTemplateId"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect();
        found.sort();
        found
    }

    /// Sends a request to Rancher as an administrator would by hand (not through the operator).
    pub async fn rancher_call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let request = reqwest::Client::new()
            .request(method, format!("{}{path}", self.env.rancher.url()))
            .header("authorization", format!("Bearer {}", self.env.rancher.admin_token()));
        let request = match body {
            Some(body) => request.json(&body),
            None => request,
        };
        let response = request.send().await.expect("Rancher answers");
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "Rancher {path}: {status} {body}");
        body
    }

    /// Rancher requests the operator made that change something.
    pub fn rancher_writes(&self) -> u64 {
        self.env
            .rancher
            .counters()
            .iter()
            .filter(|row| {
                matches!(
                    row.key.verb.as_str(),
                    "create" | "update" | "patch" | "delete" | "action"
                )
            })
            .map(|row| row.count)
            .sum()
    }

    /// Every Rancher request, by verb and resource.
    pub fn rancher_breakdown(&self) -> BTreeMap<String, u64> {
        self.env
            .rancher
            .counters()
            .iter()
            .map(|row| (format!("{} {}", row.key.verb, row.key.resource), row.count))
            .collect()
    }

    /// Every Rancher request.
    pub fn rancher_requests(&self) -> u64 {
        self.env.rancher.counters().iter().map(|row| row.count).sum()
    }

    // --- Keycloak ---

    /// The test's realm on the real Keycloak (read and seeded directly, uncounted).
    pub fn keycloak(&self) -> &TestRealm {
        &self.env.keycloak
    }

    /// The fault proxy the manager reaches Keycloak through (faults, outages and request counts).
    pub fn keycloak_proxy(&self) -> &FaultProxy {
        self.env.keycloak.proxy()
    }

    /// The test's realm.
    pub fn realm(&self) -> &str {
        self.env.keycloak.realm()
    }

    /// Usernames of the members of the group at `path`, or `None` when the group does not exist.
    pub async fn members(&self, path: &str) -> Option<Vec<String>> {
        self.env.keycloak.group_members(path).await
    }

    /// Whether the group at `path` exists.
    pub async fn group_exists(&self, path: &str) -> bool {
        self.env.keycloak.group_id(path).await.is_some()
    }

    /// The id of the group at `path`.
    pub async fn group_id(&self, path: &str) -> Option<String> {
        self.env.keycloak.group_id(path).await
    }

    /// A user's id.
    pub async fn user_id(&self, username: &str) -> Option<String> {
        self.env.keycloak.user_id(username).await
    }

    /// Paths of the groups `username` is a direct member of, sorted.
    pub async fn user_groups(&self, username: &str) -> Vec<String> {
        self.env.keycloak.user_group_paths(username).await
    }

    /// Keycloak admin API requests the manager made that change something (logins excluded).
    pub fn keycloak_writes(&self) -> u64 {
        self.keycloak_breakdown()
            .iter()
            .filter(|(key, _)| !key.starts_with("GET ") && admin_route(key))
            .map(|(_, count)| count)
            .sum()
    }

    /// Every Keycloak admin API request the manager made (logins excluded).
    pub fn keycloak_requests(&self) -> u64 {
        self.keycloak_breakdown()
            .iter()
            .filter(|(key, _)| admin_route(key))
            .map(|(_, count)| count)
            .sum()
    }

    /// Every Keycloak request the manager made, by `METHOD route` (logins included).
    pub fn keycloak_breakdown(&self) -> BTreeMap<String, u64> {
        self.keycloak_proxy().counters()
    }

    /// Resets the Rancher and Keycloak counters.
    pub fn reset_counters(&self) {
        self.env.rancher.reset_counters();
        self.keycloak_proxy().reset_counters();
    }

    /// Reconciles of ManagedRancherProjects finished so far.
    pub async fn reconciles(&self) -> u64 {
        self.manager().reconciles(CONTROLLER).await
    }

    /// Waits until the controller has finished `n` more reconciles than `since`.
    pub async fn wait_reconciles(&self, since: u64, n: u64) -> u64 {
        self.manager().wait_reconciles(CONTROLLER, since, n).await
    }
}

/// Whether a `METHOD route` counter key is of the admin API (not a login).
fn admin_route(key: &str) -> bool {
    key.split_once(' ')
        .is_some_and(|(_, route)| route.starts_with("/admin/"))
}

/// Waits until the group at `path` has exactly `members` (usernames, ordered).
pub async fn wait_members(world: &World, path: &str, members: &[&str]) {
    let wanted: Vec<String> = members.iter().map(|m| m.to_string()).collect();
    wait_keycloak(&format!("members of {path} = {members:?}"), || async {
        match world.members(path).await {
            Some(current) if current == wanted => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await
}

/// Waits until `check` holds for Keycloak's state (read through its admin API), polling.
pub async fn wait_keycloak<F, Fut>(what: &str, check: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    wait_until(what, Deadline::secs(30), || {
        let checked = check();
        async move { checked.await.map(Some) }
    })
    .await
}

/// Waits until `check` holds for the Rancher emulator's state, polling.
pub async fn wait_state(what: &str, check: impl Fn() -> Result<(), String>) {
    wait_until(what, Deadline::secs(30), || {
        let result = check();
        async move { result.map(Some) }
    })
    .await
}

impl World {
    /// Waits until the cluster's role bindings (`crtbs()`) are exactly `expected`.
    pub async fn wait_crtbs(&self, what: &str, expected: &[(String, String)]) {
        wait_state(what, || {
            let crtbs = self.crtbs();
            if crtbs == expected {
                Ok(())
            } else {
                Err(format!("{crtbs:?}"))
            }
        })
        .await;
    }
}

/// Replaces the spec of `object` with one PUT of the whole object (finalizers kept), conditional on its
/// resourceVersion: goes through while patches of the kind are held back by a fault.
pub async fn replace_spec(world: &World, mut object: Value, spec: Value) -> Result<(), kube::Error> {
    object["spec"] = spec;
    let name = object["metadata"]["name"].as_str().unwrap_or_default().to_string();
    let object: DynamicObject = serde_json::from_value(object).expect("an object");
    world
        .mrps()
        .replace(&name, &kube::api::PostParams::default(), &object)
        .await
        .map(|_| ())
}
