//! A realm of its own on the run's real Keycloak for one test, behind a [`FaultProxy`]: the manager is given the
//! proxy's URL and an administrator made for the test, while the test seeds and reads the realm directly through
//! Keycloak's admin API (uncounted, unfaulted). The realm and the administrator are deleted when it is dropped.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use emulator_kit::tls::ServerCert;
use reqwest::Method;
use serde_json::{Value, json};
use substrate::{KeycloakEndpoint, Substrate};

use super::fault_proxy::{FaultProxy, keycloak_route};

/// Which of the run's two Keycloaks a realm lives on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Flavour {
    /// Default features (standard token exchange, fine-grained admin permissions v2).
    #[default]
    Default,
    /// The v1 token-exchange and fine-grained-authz preview features (legacy token exchange).
    V1,
}

/// How to set up a test realm.
#[derive(Default)]
pub struct RealmSetup<'a> {
    /// The realm's name (tests sharing a Keycloak make it unique with [`unique_realm`]).
    pub name: &'a str,
    /// Which Keycloak.
    pub flavour: Flavour,
    /// Serve the proxy over HTTPS with this certificate.
    pub tls: Option<&'a ServerCert>,
    /// The test administrator's password (a distinctive one lets a test check it never reaches a log).
    pub admin_password: &'a str,
}

/// A realm name no other test of the run uses: `prefix`, this process and a time-derived suffix.
pub fn unique_realm(prefix: &str) -> String {
    format!("{prefix}-{}-{}", std::process::id(), super::cluster::unique_suffix())
}

/// The password every user [`TestRealm::create_user`] makes has: `<username>-password`.
pub fn password_of(username: &str) -> String {
    format!("{username}-password")
}

/// One node of a realm's group tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupNode {
    /// The group's path (`/parent/child`).
    pub path: String,
    /// Usernames of its direct members, sorted.
    pub members: Vec<String>,
    /// Its subgroups.
    pub children: Vec<GroupNode>,
}

/// A realm of its own for one test; see the module documentation.
pub struct TestRealm {
    endpoint: KeycloakEndpoint,
    name: String,
    admin_username: String,
    admin_password: String,
    proxy: FaultProxy,
    http: reqwest::Client,
    token: Mutex<Option<(String, Instant)>>,
}

/// A master-realm token is valid for 60 s; one older than this is fetched again.
const TOKEN_REUSE: Duration = Duration::from_secs(45);

/// The run's Keycloak of `flavour` (started by `substrate run`).
pub fn run_endpoint(flavour: Flavour) -> KeycloakEndpoint {
    let substrate = Substrate::from_env().unwrap_or_else(|e| panic!("{e}"));
    let endpoint = match flavour {
        Flavour::Default => substrate.keycloak,
        Flavour::V1 => substrate.keycloak_v1,
    };
    endpoint.unwrap_or_else(|| {
        panic!(
            "the substrate runs without the {flavour:?} Keycloak: run the tests under `substrate run --keycloak both`"
        )
    })
}

impl TestRealm {
    /// Creates the realm on the run's Keycloak of `setup.flavour` (see [`TestRealm::create_on`]).
    pub async fn create(setup: RealmSetup<'_>) -> TestRealm {
        Self::create_on(run_endpoint(setup.flavour), setup).await
    }

    /// Creates the realm on the Keycloak at `endpoint` (enabled, otherwise Keycloak's defaults), an
    /// administrator of the master realm for it, and the proxy in front of the server.
    pub async fn create_on(endpoint: KeycloakEndpoint, setup: RealmSetup<'_>) -> TestRealm {
        let name = setup.name.to_string();
        let proxy = FaultProxy::start(&endpoint.url, keycloak_route, setup.tls)
            .await
            .unwrap_or_else(|e| panic!("start the Keycloak fault proxy: {e}"));
        let realm = TestRealm {
            admin_username: format!("admin-{name}"),
            admin_password: setup.admin_password.to_string(),
            endpoint,
            name,
            proxy,
            http: reqwest::Client::builder()
                // Creating a realm took over 30 s on a busy 2-core machine.
                .timeout(Duration::from_secs(90))
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("an HTTP client"),
            token: Mutex::new(None),
        };
        let (status, body) = realm
            .call(
                Method::POST,
                "/admin/realms",
                Some(json!({"realm": realm.name, "enabled": true})),
            )
            .await;
        assert_eq!(status, 201, "create realm {}: {body}", realm.name);
        realm.create_test_admin().await;
        realm
    }

    async fn create_test_admin(&self) {
        let (status, body) = self
            .call(
                Method::POST,
                "/admin/realms/master/users",
                Some(json!({
                    "username": self.admin_username, "enabled": true,
                    "email": format!("{}@example.com", self.admin_username), "emailVerified": true,
                    "firstName": "Test", "lastName": "Administrator",
                    "credentials": [{"type": "password", "value": self.admin_password, "temporary": false}],
                })),
            )
            .await;
        assert_eq!(status, 201, "create the test administrator: {body}");
        let id = self.test_admin_id().await;
        let (_, role) = self.call(Method::GET, "/admin/realms/master/roles/admin", None).await;
        let (status, body) = self
            .call(
                Method::POST,
                &format!("/admin/realms/master/users/{id}/role-mappings/realm"),
                Some(json!([role])),
            )
            .await;
        assert_eq!(status, 204, "make the test user an administrator: {body}");
    }

    /// The realm's name.
    pub fn realm(&self) -> &str {
        &self.name
    }

    /// The URL the manager is given: the proxy's.
    pub fn url(&self) -> &str {
        self.proxy.url()
    }

    /// Keycloak's own URL, also the issuer host of its tokens.
    pub fn direct_url(&self) -> &str {
        &self.endpoint.url
    }

    /// The proxy in front of the server: faults and request counts.
    pub fn proxy(&self) -> &FaultProxy {
        &self.proxy
    }

    /// The test administrator (a master-realm administrator made for this test): username and password.
    pub fn admin_credentials(&self) -> (&str, &str) {
        (&self.admin_username, &self.admin_password)
    }

    async fn master_token(&self) -> String {
        if let Some((token, at)) = self.token.lock().expect("token cache").clone()
            && at.elapsed() < TOKEN_REUSE
        {
            return token;
        }
        let form = [
            ("grant_type", "password"),
            ("client_id", "admin-cli"),
            ("username", self.endpoint.admin_username.as_str()),
            ("password", self.endpoint.admin_password.as_str()),
        ];
        let body: Value = self
            .http
            .post(format!(
                "{}/realms/master/protocol/openid-connect/token",
                self.endpoint.url
            ))
            .form(&form)
            .send()
            .await
            .expect("Keycloak's token endpoint answers")
            .json()
            .await
            .expect("token JSON");
        let token = body["access_token"]
            .as_str()
            .unwrap_or_else(|| panic!("no admin token: {body}"))
            .to_string();
        *self.token.lock().expect("token cache") = Some((token.clone(), Instant::now()));
        token
    }

    /// An admin API call straight to Keycloak (`path` from the server root); status and JSON (`Null` if none).
    pub async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let token = self.master_token().await;
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.endpoint.url))
            .bearer_auth(token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("Keycloak's admin API answers");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// An admin API call on this realm made with `token` (someone's access token) instead of the test's admin
    /// login; the status Keycloak answers with.
    pub async fn admin_status_with(&self, token: &str, method: Method, path: &str) -> u16 {
        self.http
            .request(
                method,
                format!("{}/admin/realms/{}{path}", self.endpoint.url, self.name),
            )
            .bearer_auth(token)
            .send()
            .await
            .expect("Keycloak's admin API answers")
            .status()
            .as_u16()
    }

    /// An admin API call on this realm (`path` relative to `/admin/realms/<realm>`).
    pub async fn admin(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        self.call(method, &format!("/admin/realms/{}{path}", self.name), body)
            .await
    }

    async fn find_user(&self, realm: &str, username: &str) -> Option<Value> {
        let (status, users) = self
            .call(
                Method::GET,
                &format!("/admin/realms/{realm}/users?exact=true&username={username}"),
                None,
            )
            .await;
        assert_eq!(status, 200, "look up user {username}: {users}");
        users.as_array().and_then(|users| users.first().cloned())
    }

    // --- clients ---

    /// The client with this `clientId` as Keycloak represents it (attributes, protocol mappers, …).
    pub async fn client(&self, client_id: &str) -> Option<Value> {
        let (status, clients) = self
            .admin(Method::GET, &format!("/clients?clientId={client_id}"), None)
            .await;
        assert_eq!(status, 200, "look up client {client_id}: {clients}");
        clients
            .as_array()
            .and_then(|clients| clients.iter().find(|c| c["clientId"] == client_id).cloned())
    }

    /// Every client's `clientId`, sorted.
    pub async fn client_ids(&self) -> Vec<String> {
        let (status, clients) = self.admin(Method::GET, "/clients?max=1000", None).await;
        assert_eq!(status, 200, "list clients: {clients}");
        sorted_field(&clients, "clientId")
    }

    /// Creates a client from its representation (as another tool or a person would); returns its id.
    pub async fn create_client(&self, representation: Value) -> String {
        let (status, body) = self.admin(Method::POST, "/clients", Some(representation.clone())).await;
        assert_eq!(status, 201, "create client {representation}: {body}");
        let client_id = representation["clientId"].as_str().expect("a clientId");
        self.client(client_id).await.expect("the client exists")["id"]
            .as_str()
            .expect("an id")
            .to_string()
    }

    // --- users and groups ---

    /// Creates an enabled user with a complete profile and the password [`password_of`], a member of `groups`
    /// (paths); returns its id.
    pub async fn create_user(&self, username: &str, groups: &[&str]) -> String {
        let (status, body) = self
            .admin(
                Method::POST,
                "/users",
                Some(json!({
                    "username": username, "enabled": true,
                    "email": format!("{username}@example.com"), "emailVerified": true,
                    "firstName": username, "lastName": "Test",
                    "credentials": [{"type": "password", "value": password_of(username), "temporary": false}],
                    "groups": groups,
                })),
            )
            .await;
        assert_eq!(status, 201, "create user {username}: {body}");
        self.user_id(username).await.expect("the user exists")
    }

    /// A user's id.
    pub async fn user_id(&self, username: &str) -> Option<String> {
        let name = self.name.clone();
        self.find_user(&name, username)
            .await
            .and_then(|user| user["id"].as_str().map(str::to_string))
    }

    /// Creates a group at `path` (its parent must exist); returns its id.
    pub async fn create_group(&self, path: &str) -> String {
        let (parent, name) = path.rsplit_once('/').expect("a group path starts with /");
        let endpoint = if parent.is_empty() {
            "/groups".to_string()
        } else {
            let parent = self.group_id(parent).await.expect("the parent group exists");
            format!("/groups/{parent}/children")
        };
        let (status, body) = self.admin(Method::POST, &endpoint, Some(json!({"name": name}))).await;
        assert_eq!(status, 201, "create group {path}: {body}");
        self.group_id(path).await.expect("the group exists")
    }

    /// The id of the group at `path`.
    pub async fn group_id(&self, path: &str) -> Option<String> {
        let (status, group) = self.admin(Method::GET, &format!("/group-by-path{path}"), None).await;
        match status {
            200 => group["id"].as_str().map(str::to_string),
            404 => None,
            _ => panic!("look up group {path}: {status} {group}"),
        }
    }

    /// The group at `path` as Keycloak represents it (id, name, path, attributes, …); `None` when it does not
    /// exist.
    pub async fn group(&self, path: &str) -> Option<Value> {
        let id = self.group_id(path).await?;
        let (status, group) = self.admin(Method::GET, &format!("/groups/{id}"), None).await;
        match status {
            200 => Some(group),
            404 => None,
            _ => panic!("read group {path}: {status} {group}"),
        }
    }

    /// The attributes of the group at `path` (empty when it has none); `None` when the group does not exist.
    pub async fn group_attributes(&self, path: &str) -> Option<std::collections::BTreeMap<String, Vec<String>>> {
        let group = self.group(path).await?;
        Some(serde_json::from_value(group["attributes"].clone()).unwrap_or_default())
    }

    /// Replaces the attributes of the group at `path` (as a person or another tool might), keeping its name.
    pub async fn set_group_attributes(&self, path: &str, attributes: &std::collections::BTreeMap<String, Vec<String>>) {
        let group = self.group(path).await.expect("the group exists");
        let id = group["id"].as_str().expect("a group id");
        let (status, body) = self
            .admin(
                Method::PUT,
                &format!("/groups/{id}"),
                Some(json!({"name": group["name"], "attributes": attributes})),
            )
            .await;
        assert_eq!(status, 204, "set the attributes of {path}: {body}");
    }

    /// Usernames of the group's direct members, sorted; `None` when the group does not exist.
    pub async fn group_members(&self, path: &str) -> Option<Vec<String>> {
        let id = self.group_id(path).await?;
        let (status, members) = self
            .admin(Method::GET, &format!("/groups/{id}/members?max=1000"), None)
            .await;
        if status == 404 {
            return None;
        }
        assert_eq!(status, 200, "members of {path}: {members}");
        Some(sorted_field(&members, "username"))
    }

    /// Deletes the group at `path` (as a person might); whether it existed.
    pub async fn delete_group(&self, path: &str) -> bool {
        let Some(id) = self.group_id(path).await else {
            return false;
        };
        let (status, body) = self.admin(Method::DELETE, &format!("/groups/{id}"), None).await;
        assert!(status == 204 || status == 404, "delete group {path}: {status} {body}");
        status == 204
    }

    /// Makes `username` a member of the group at `path`.
    pub async fn add_membership(&self, username: &str, path: &str) {
        let user = self.user_id(username).await.expect("the user exists");
        let group = self.group_id(path).await.expect("the group exists");
        let (status, body) = self
            .admin(Method::PUT, &format!("/users/{user}/groups/{group}"), None)
            .await;
        assert_eq!(status, 204, "add {username} to {path}: {body}");
    }

    /// Gives `username` (a user of this realm, service-account users included) the `roles` of the client
    /// `client_id` (e.g. `realm-management`'s `realm-admin` or `view-users`), as an administrator would.
    pub async fn grant_client_roles(&self, username: &str, client_id: &str, roles: &[&str]) {
        let user = self
            .user_id(username)
            .await
            .unwrap_or_else(|| panic!("no user {username} in {}", self.name));
        let client = self
            .client(client_id)
            .await
            .unwrap_or_else(|| panic!("no client {client_id} in {}", self.name))["id"]
            .as_str()
            .expect("a client id")
            .to_string();
        let mut representations = Vec::new();
        for role in roles {
            let (status, representation) = self
                .admin(Method::GET, &format!("/clients/{client}/roles/{role}"), None)
                .await;
            assert_eq!(status, 200, "role {role} of {client_id}: {representation}");
            representations.push(representation);
        }
        let (status, body) = self
            .admin(
                Method::POST,
                &format!("/users/{user}/role-mappings/clients/{client}"),
                Some(Value::Array(representations)),
            )
            .await;
        assert_eq!(
            status, 204,
            "give {username} the roles {roles:?} of {client_id}: {body}"
        );
    }

    async fn test_admin_id(&self) -> String {
        self.find_user("master", &self.admin_username)
            .await
            .expect("the test administrator exists")["id"]
            .as_str()
            .expect("a user id")
            .to_string()
    }

    /// Ends every session of the test administrator (an administrator's "sign out"): the tokens already
    /// issued to it are refused from then on, which is how a test makes Keycloak reject a token the client
    /// under test still holds.
    pub async fn log_out_test_admin(&self) {
        let id = self.test_admin_id().await;
        let (status, body) = self
            .call(Method::POST, &format!("/admin/realms/master/users/{id}/logout"), None)
            .await;
        assert_eq!(status, 204, "log the test administrator out: {body}");
    }

    /// Paths of the groups `username` is a direct member of, sorted.
    pub async fn user_group_paths(&self, username: &str) -> Vec<String> {
        let Some(user) = self.user_id(username).await else {
            return Vec::new();
        };
        let (status, groups) = self
            .admin(Method::GET, &format!("/users/{user}/groups?max=1000"), None)
            .await;
        assert_eq!(status, 200, "groups of {username}: {groups}");
        sorted_field(&groups, "path")
    }

    /// The whole group tree with members, top-level groups and children sorted by name.
    pub async fn group_tree(&self) -> Vec<GroupNode> {
        let (status, top) = self.admin(Method::GET, "/groups?max=1000", None).await;
        assert_eq!(status, 200, "list groups: {top}");
        let mut nodes = Vec::new();
        for group in top.as_array().into_iter().flatten() {
            nodes.push(Box::pin(self.node(group)).await);
        }
        nodes.sort_by(|a, b| a.path.cmp(&b.path));
        nodes
    }

    async fn node(&self, group: &Value) -> GroupNode {
        let (id, path) = (
            group["id"].as_str().expect("a group id"),
            group["path"].as_str().expect("a group path").to_string(),
        );
        let members = self.group_members(&path).await.unwrap_or_default();
        let (status, children) = self
            .admin(Method::GET, &format!("/groups/{id}/children?max=1000"), None)
            .await;
        assert_eq!(status, 200, "children of {path}: {children}");
        let mut nodes = Vec::new();
        for child in children.as_array().into_iter().flatten() {
            nodes.push(Box::pin(self.node(child)).await);
        }
        nodes.sort_by(|a, b| a.path.cmp(&b.path));
        GroupNode {
            path,
            members,
            children: nodes,
        }
    }

    // --- fine-grained admin permissions (v1) ---

    async fn realm_management_authz(&self) -> String {
        let id = self
            .client("realm-management")
            .await
            .expect("every realm has realm-management")["id"]
            .as_str()
            .expect("an id")
            .to_string();
        format!("/clients/{id}/authz/resource-server")
    }

    /// Names of the authorization policies of the realm's admin permissions (empty where none were made).
    pub async fn policy_names(&self) -> Vec<String> {
        let authz = self.realm_management_authz().await;
        let (status, policies) = self.admin(Method::GET, &format!("{authz}/policy?max=1000"), None).await;
        if status == 404 || status == 501 {
            // Without fine-grained admin permissions v1 realm-management has no resource server.
            return Vec::new();
        }
        assert_eq!(status, 200, "list policies: {policies}");
        let mut names: Vec<String> = policies
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["type"] != "scope" && p["type"] != "resource")
            .filter_map(|p| p["name"].as_str().map(str::to_string))
            .collect();
        names.sort();
        names
    }

    /// A permission's decision strategy and the names of its policies, sorted.
    pub async fn permission_policies(&self, permission: &str) -> Option<(String, Vec<String>)> {
        let authz = self.realm_management_authz().await;
        let (status, found) = self
            .admin(Method::GET, &format!("{authz}/policy/search?name={permission}"), None)
            .await;
        if status != 200 {
            return None;
        }
        let id = found["id"].as_str()?;
        let strategy = found["decisionStrategy"].as_str().unwrap_or_default().to_string();
        let (status, associated) = self
            .admin(Method::GET, &format!("{authz}/policy/{id}/associatedPolicies"), None)
            .await;
        assert_eq!(status, 200, "policies of {permission}: {associated}");
        Some((strategy, sorted_field(&associated, "name")))
    }

    // --- logging in ---

    /// Logs `username` in to `client_id` the way a browser does (authorization-code flow: the login form, the
    /// redirect with a code, the code exchanged with the client's secret); returns the access token.
    pub async fn browser_login(&self, client_id: &str, client_secret: &str, username: &str) -> Result<String, String> {
        let client = self.client(client_id).await.ok_or(format!("no client {client_id}"))?;
        let redirect_uri = client["redirectUris"]
            .as_array()
            .and_then(|uris| uris.first())
            .and_then(Value::as_str)
            .ok_or(format!("client {client_id} has no redirect URI"))?
            .trim_end_matches('*')
            .to_string();
        let realm_url = format!("{}/realms/{}/protocol/openid-connect", self.endpoint.url, self.name);
        let page = self
            .http
            .get(format!("{realm_url}/auth"))
            .query(&[
                ("client_id", client_id),
                ("redirect_uri", redirect_uri.as_str()),
                ("response_type", "code"),
                ("scope", "openid"),
                ("state", "e2e"),
            ])
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let cookies = cookies_of(&page);
        let html = page.text().await.map_err(|e| e.to_string())?;
        let action = form_action(&html).ok_or_else(|| format!("no login form on the page: {html}"))?;
        let password = password_of(username);
        let submitted = self
            .http
            .post(action)
            .header(reqwest::header::COOKIE, cookies)
            .form(&[
                ("username", username),
                ("password", password.as_str()),
                ("credentialId", ""),
            ])
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let location = submitted
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|l| l.to_str().ok())
            .map(str::to_string);
        let Some(location) = location.filter(|l| l.starts_with(&redirect_uri)) else {
            let status = submitted.status();
            let text = submitted.text().await.unwrap_or_default();
            return Err(format!("login refused ({status}): {}", login_error(&text)));
        };
        let code = url::Url::parse(&location)
            .map_err(|e| e.to_string())?
            .query_pairs()
            .find(|(key, _)| key == "code")
            .map(|(_, code)| code.to_string())
            .ok_or_else(|| format!("no code in {location}"))?;
        let tokens: Value = self
            .http
            .post(format!("{realm_url}/token"))
            .form(&[
                ("grant_type", "authorization_code"),
                ("code", code.as_str()),
                ("redirect_uri", redirect_uri.as_str()),
                ("client_id", client_id),
                ("client_secret", client_secret),
            ])
            .send()
            .await
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())?;
        tokens["access_token"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("the code was not exchanged: {tokens}"))
    }
}

/// The `field` of every object in the JSON list `list`, sorted.
fn sorted_field(list: &Value, field: &str) -> Vec<String> {
    let mut values: Vec<String> = list
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item[field].as_str().map(str::to_string))
        .collect();
    values.sort();
    values
}

/// The `Cookie` header that sends back every cookie a response set.
fn cookies_of(response: &reqwest::Response) -> String {
    response
        .headers()
        .get_all(reqwest::header::SET_COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .filter_map(|cookie| cookie.split(';').next())
        .collect::<Vec<_>>()
        .join("; ")
}

/// The login form's target (HTML-escaped in the page).
fn form_action(html: &str) -> Option<String> {
    let start = html.find("id=\"kc-form-login\"")?;
    let rest = &html[start..];
    let action = rest.split("action=\"").nth(1)?.split('"').next()?;
    Some(action.replace("&amp;", "&"))
}

/// The error Keycloak shows on a refused login page, or the page's start.
fn login_error(html: &str) -> String {
    html.split("kc-feedback-text\">")
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .map_or_else(|| html.chars().take(300).collect(), |text| text.trim().to_string())
}

impl Drop for TestRealm {
    /// Deletes the realm and the test administrator, so a run's Keycloak holds only the realms of tests in
    /// flight. Runs on a thread of its own: the test's runtime may be ending.
    fn drop(&mut self) {
        let (url, username, password, realm, admin) = (
            self.endpoint.url.clone(),
            self.endpoint.admin_username.clone(),
            self.endpoint.admin_password.clone(),
            self.name.clone(),
            self.admin_username.clone(),
        );
        let cleanup = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
                return;
            };
            runtime.block_on(async move {
                let http = reqwest::Client::builder()
                    .timeout(Duration::from_secs(20))
                    .build()
                    .unwrap_or_default();
                let form = [
                    ("grant_type", "password"),
                    ("client_id", "admin-cli"),
                    ("username", username.as_str()),
                    ("password", password.as_str()),
                ];
                let Ok(response) = http
                    .post(format!("{url}/realms/master/protocol/openid-connect/token"))
                    .form(&form)
                    .send()
                    .await
                else {
                    return;
                };
                let Ok(body) = response.json::<Value>().await else {
                    return;
                };
                let Some(token) = body["access_token"].as_str() else {
                    return;
                };
                let _ = http
                    .delete(format!("{url}/admin/realms/{realm}"))
                    .bearer_auth(token)
                    .send()
                    .await;
                let found = http
                    .get(format!("{url}/admin/realms/master/users?exact=true&username={admin}"))
                    .bearer_auth(token)
                    .send()
                    .await;
                if let Ok(found) = found
                    && let Ok(users) = found.json::<Value>().await
                    && let Some(id) = users[0]["id"].as_str()
                {
                    let _ = http
                        .delete(format!("{url}/admin/realms/master/users/{id}"))
                        .bearer_auth(token)
                        .send()
                        .await;
                }
            });
        });
        // Best effort: a realm left behind costs memory in the run's Keycloak, not correctness.
        let _ = cleanup.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_login_form_target_is_read_unescaped() {
        let html = r#"<form id="kc-form-login" onsubmit="x" action="http://kc/realms/r/login-actions/authenticate?session_code=a&amp;execution=b" method="post">"#;
        assert_eq!(
            form_action(html).as_deref(),
            Some("http://kc/realms/r/login-actions/authenticate?session_code=a&execution=b")
        );
        assert_eq!(form_action("<html>no form</html>"), None);
    }

    #[test]
    fn a_refused_login_shows_keycloaks_message() {
        let html = r#"<span id="input-error" class="kc-feedback-text">Invalid username or password.</span>"#;
        assert_eq!(login_error(html), "Invalid username or password.");
    }
}
