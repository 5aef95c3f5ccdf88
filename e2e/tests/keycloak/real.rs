//! The shared Keycloak client against the real Keycloak 26 of the test run's substrate: each admin call the
//! controllers make, accepted and answered as they expect, and the token exchange they configure working for a
//! real token. Every test works in a realm of its own, so tests share the server without seeing each other.

use std::collections::BTreeMap;
use std::sync::Arc;

use controllers::keycloak::{
    ClientSpec, Credentials, DEVICE_GRANT_ATTRIBUTE, KeycloakClient, KeycloakConfig, PKCE_METHOD_ATTRIBUTE,
    RealmClient, StaticCredentials, TokenExchangeRequester,
};
use reqwest::Method;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};
use substrate::{KeycloakEndpoint, Substrate};

use crate::support::{fast_http, http};

/// Which of the run's two Keycloaks.
#[derive(Clone, Copy)]
enum Server {
    /// Default features (standard token exchange, v2).
    Default,
    /// The v1 token-exchange and fine-grained-permissions preview features.
    V1,
}

/// A realm of its own on a real Keycloak, and the operator's client for it.
struct RealRealm {
    endpoint: KeycloakEndpoint,
    name: String,
    realm: RealmClient,
}

fn endpoint(server: Server) -> KeycloakEndpoint {
    let substrate = Substrate::from_env().unwrap_or_else(|e| panic!("{e}"));
    let endpoint = match server {
        Server::Default => substrate.keycloak,
        Server::V1 => substrate.keycloak_v1,
    };
    endpoint.unwrap_or_else(|| panic!("the substrate runs without this Keycloak: start it with `--keycloak both`"))
}

async fn master_token(endpoint: &KeycloakEndpoint) -> String {
    let form = [
        ("grant_type", "password"),
        ("client_id", "admin-cli"),
        ("username", endpoint.admin_username.as_str()),
        ("password", endpoint.admin_password.as_str()),
    ];
    let body: Value = http()
        .post(format!("{}/realms/master/protocol/openid-connect/token", endpoint.url))
        .form(&form)
        .send()
        .await
        .expect("the token endpoint answers")
        .json()
        .await
        .expect("token JSON");
    body["access_token"]
        .as_str()
        .unwrap_or_else(|| panic!("no admin token: {body}"))
        .to_string()
}

impl RealRealm {
    /// Creates a realm named after `test` (unique per run) and a client of the operator's for it, logged in as
    /// the master realm's administrator (as the manager is when given the admin Secret).
    async fn create(server: Server, test: &str) -> Self {
        let endpoint = endpoint(server);
        let name = format!("{test}-{}", e2e::harness::cluster::unique_suffix());
        let token = master_token(&endpoint).await;
        let response = http()
            .post(format!("{}/admin/realms", endpoint.url))
            .bearer_auth(&token)
            .json(&json!({"realm": name, "enabled": true}))
            .send()
            .await
            .expect("create the realm");
        assert_eq!(response.status(), 201, "create realm {name}");
        let config = KeycloakConfig {
            http: fast_http(2),
            ..KeycloakConfig::new(endpoint.url.clone())
        };
        let credentials = Credentials::admin_password(
            endpoint.admin_username.clone(),
            SecretString::from(endpoint.admin_password.clone()),
        );
        let client = KeycloakClient::new(config, Arc::new(StaticCredentials(credentials)), None).expect("client");
        let realm = client.realm(&name);
        RealRealm { endpoint, name, realm }
    }

    /// An admin API call on this realm (`path` relative to `/admin/realms/<realm>`); returns status and JSON.
    async fn admin(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let token = master_token(&self.endpoint).await;
        let mut request = http()
            .request(
                method,
                format!("{}/admin/realms/{}{path}", self.endpoint.url, self.name),
            )
            .bearer_auth(token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("admin API answers");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// Creates an enabled user with a password; returns its id.
    async fn create_user(&self, username: &str, password: &str) -> String {
        let (status, _) = self
            .admin(
                Method::POST,
                "/users",
                Some(json!({
                    "username": username, "enabled": true, "email": format!("{username}@example.com"),
                    "emailVerified": true, "firstName": username, "lastName": "Test",
                    "credentials": [{"type": "password", "value": password, "temporary": false}],
                })),
            )
            .await;
        assert_eq!(status, 201, "create user {username}");
        self.realm
            .find_user_by_username(username)
            .await
            .expect("find the user")
            .expect("the user exists")
            .id
    }

    /// Posts a form to this realm's token endpoint; returns status and JSON.
    async fn token(&self, form: &[(&str, &str)]) -> (u16, Value) {
        let response = http()
            .post(format!(
                "{}/realms/{}/protocol/openid-connect/token",
                self.endpoint.url, self.name
            ))
            .form(form)
            .send()
            .await
            .expect("token endpoint answers");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }
}

/// The claims of a JWT (no signature check: the token came straight from the server).
fn claims(token: &str) -> Value {
    use base64::Engine;
    let payload = token.split('.').nth(1).expect("a JWT has a payload");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url payload");
    serde_json::from_slice(&bytes).expect("JSON claims")
}

#[tokio::test]
async fn clients_are_created_once_with_their_secrets_and_attributes_and_deleted() {
    let kc = RealRealm::create(Server::Default, "clients").await;
    let realm = &kc.realm;
    let spec = ClientSpec::confidential(
        "data-jupyter",
        Some(SecretString::from("a-32-character-secret-0123456789")),
    )
    .with_redirect_uris(vec!["https://jupyter.example/oauth2/callback".into()])
    .with_web_origins(vec!["https://jupyter.example".into()])
    .with_post_logout_redirect_uris(&["https://jupyter.example/*".into()]);
    let created = realm.ensure_client(&spec).await.expect("create");
    assert!(created.created);
    assert!(!created.value.public_client && created.value.standard_flow_enabled);
    assert!(!created.value.direct_access_grants_enabled);
    let again = realm.ensure_client(&spec).await.expect("find");
    assert!(!again.created, "the second ensure finds the client");
    assert_eq!(again.value.id, created.value.id);
    let secret = realm
        .client_secret(&created.value.id)
        .await
        .expect("secret")
        .expect("a confidential client has a secret");
    assert_eq!(secret.expose_secret(), "a-32-character-secret-0123456789");
    assert_eq!(realm.find_client("data-jupyter-spa").await.expect("lookup"), None);

    let spa = realm
        .ensure_client(&ClientSpec::spa("ns-app-spa"))
        .await
        .expect("spa")
        .value;
    assert!(spa.public_client && spa.standard_flow_enabled && !spa.direct_access_grants_enabled);
    assert_eq!(
        spa.attributes.get(PKCE_METHOD_ATTRIBUTE).map(String::as_str),
        Some("S256")
    );
    assert!(
        realm.client_secret(&spa.id).await.expect("read").is_none(),
        "public clients have no secret"
    );
    let device = realm
        .ensure_client(&ClientSpec::device_flow("ns-app-device"))
        .await
        .expect("device")
        .value;
    assert!(device.public_client && !device.standard_flow_enabled);
    assert_eq!(
        device.attributes.get(DEVICE_GRANT_ATTRIBUTE).map(String::as_str),
        Some("true")
    );

    let regenerated = realm
        .regenerate_client_secret(&created.value.id)
        .await
        .expect("regenerate");
    assert_ne!(regenerated.expose_secret(), secret.expose_secret());
    assert!(realm.delete_client(&created.value.id).await.expect("delete"));
    assert!(
        !realm.delete_client(&created.value.id).await.expect("delete again"),
        "already gone"
    );
    assert_eq!(realm.find_client("data-jupyter").await.expect("lookup"), None);
}

#[tokio::test]
async fn groups_children_and_members_are_managed_as_the_project_controller_needs() {
    let kc = RealRealm::create(Server::Default, "groups").await;
    let realm = &kc.realm;
    let managed = BTreeMap::from([("managed_by".to_string(), vec!["platform-operator".to_string()])]);
    let parent = realm.ensure_top_level_group("c_local", &managed).await.expect("parent");
    assert!(parent.created);
    let again = realm.ensure_top_level_group("c_local", &managed).await.expect("again");
    assert!(!again.created);
    assert_eq!(again.value.id, parent.value.id);
    assert_eq!(again.value.attributes, managed, "attributes as written");

    for i in 0..3 {
        let child = realm
            .ensure_child_group(&parent.value.id, &format!("project_{i}_member"), &managed)
            .await
            .expect("child");
        assert!(child.created);
    }
    assert_eq!(realm.count_child_groups(&parent.value.id).await.expect("count"), 3);
    let child = realm
        .find_child_group(&parent.value.id, "project_1_member")
        .await
        .expect("find child")
        .expect("the child exists");
    assert_eq!(
        realm.find_top_level_group("project_1_member").await.expect("search"),
        None,
        "a child is not a top-level group"
    );

    let alice = kc.create_user("alice", "alice-password-1").await;
    realm.add_group_member(&child.id, &alice).await.expect("add");
    realm
        .add_group_member(&child.id, &alice)
        .await
        .expect("adding twice is harmless");
    let members = realm.group_members(&child.id).await.expect("members");
    assert_eq!(
        members.iter().map(|u| u.username.as_str()).collect::<Vec<_>>(),
        ["alice"]
    );
    let groups = realm.user_groups(&alice).await.expect("user groups");
    assert_eq!(
        groups.iter().map(|g| g.id.as_str()).collect::<Vec<_>>(),
        [child.id.as_str()]
    );
    realm.remove_group_member(&child.id, &alice).await.expect("remove");
    assert!(realm.group_members(&child.id).await.expect("members").is_empty());

    assert!(realm.delete_group(&parent.value.id).await.expect("delete"));
    assert_eq!(realm.find_top_level_group("c_local").await.expect("search"), None);
    assert!(!realm.delete_group(&parent.value.id).await.expect("delete again"));
}

#[tokio::test]
async fn server_info_tells_which_token_exchange_each_keycloak_has() {
    let default = RealRealm::create(Server::Default, "info").await;
    let info = default.realm.server_info().await.expect("server info");
    assert!(
        info.standard_token_exchange(),
        "Keycloak 26 has standard token exchange by default"
    );
    assert!(!info.legacy_token_exchange(), "the legacy preview is off by default");
    let v1 = RealRealm::create(Server::V1, "info").await;
    let info = v1.realm.server_info().await.expect("server info");
    assert!(
        info.legacy_token_exchange(),
        "token-exchange and admin-fine-grained-authz:v1 are on"
    );
}

#[tokio::test]
async fn standard_token_exchange_granted_by_the_operator_lets_exactly_the_peers_exchange_a_real_token() {
    let kc = RealRealm::create(Server::Default, "stx").await;
    let realm = &kc.realm;
    let confidential = |id: &str, secret: &str| {
        ClientSpec::confidential(id, Some(SecretString::from(secret.to_string())))
            .with_redirect_uris(vec![format!("https://{id}.example/*")])
    };
    let target = realm
        .ensure_client(&confidential("target", "target-secret-0123456789abcdef"))
        .await
        .expect("target")
        .value;
    let alpha = realm
        .ensure_client(&confidential("alpha", "alpha-secret-0123456789abcdefg"))
        .await
        .expect("alpha")
        .value;
    let beta = realm
        .ensure_client(&confidential("beta", "beta-secret-0123456789abcdefgh"))
        .await
        .expect("beta")
        .value;
    // The user logs in to alpha and beta with the password grant (the test's shortcut for a browser login).
    for client in [&alpha, &beta] {
        let (status, body) = kc
            .admin(
                Method::PUT,
                &format!("/clients/{}", client.id),
                Some(json!({"clientId": client.client_id, "directAccessGrantsEnabled": true})),
            )
            .await;
        assert_eq!(status, 204, "enable the password grant on {}: {body}", client.client_id);
    }
    kc.create_user("carol", "carol-password-1").await;

    realm
        .grant_standard_token_exchange(&target, std::slice::from_ref(&alpha))
        .await
        .expect("grant");

    let login = |client: &'static str, secret: &'static str| {
        let kc = &kc;
        async move {
            let (status, body) = kc
                .token(&[
                    ("grant_type", "password"),
                    ("client_id", client),
                    ("client_secret", secret),
                    ("username", "carol"),
                    ("password", "carol-password-1"),
                    ("scope", "openid"),
                ])
                .await;
            assert_eq!(status, 200, "carol logs in to {client}: {body}");
            body["access_token"].as_str().expect("access token").to_string()
        }
    };
    let exchange = |client: &'static str, secret: &'static str, subject: String| {
        let kc = &kc;
        async move {
            kc.token(&[
                ("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"),
                ("client_id", client),
                ("client_secret", secret),
                ("subject_token", subject.as_str()),
                ("subject_token_type", "urn:ietf:params:oauth:token-type:access_token"),
                ("requested_token_type", "urn:ietf:params:oauth:token-type:access_token"),
                ("audience", "target"),
            ])
            .await
        }
    };

    let alpha_token = login("alpha", "alpha-secret-0123456789abcdefg").await;
    assert!(
        claims(&alpha_token)["aud"].to_string().contains("target"),
        "the audience mapper the grant added puts the target in alpha's tokens: {}",
        claims(&alpha_token)
    );
    let (status, body) = exchange("alpha", "alpha-secret-0123456789abcdefg", alpha_token).await;
    assert_eq!(status, 200, "alpha, granted, exchanges: {body}");
    let exchanged = claims(body["access_token"].as_str().expect("exchanged token"));
    assert!(exchanged["aud"].to_string().contains("target"), "{exchanged}");
    assert_eq!(exchanged["preferred_username"], "carol", "{exchanged}");

    let beta_token = login("beta", "beta-secret-0123456789abcdefgh").await;
    let (status, body) = exchange("beta", "beta-secret-0123456789abcdefgh", beta_token).await;
    assert!(
        (400..500).contains(&status),
        "beta, not granted, is refused: {status} {body}"
    );

    // Revoking withdraws alpha's grant: its next token no longer names the target and cannot be exchanged.
    let target = realm.find_client("target").await.expect("read").expect("target");
    realm.revoke_standard_token_exchange(&target).await.expect("revoke");
    let alpha_token = login("alpha", "alpha-secret-0123456789abcdefg").await;
    let (status, body) = exchange("alpha", "alpha-secret-0123456789abcdefg", alpha_token).await;
    assert!(
        (400..500).contains(&status),
        "after the revocation alpha is refused: {status} {body}"
    );
}

#[tokio::test]
async fn legacy_token_exchange_permissions_are_wired_to_exactly_the_requesters_on_the_v1_keycloak() {
    let kc = RealRealm::create(Server::V1, "ltx").await;
    let realm = &kc.realm;
    let ensure = |id: &'static str| async move {
        realm
            .ensure_client(&ClientSpec::confidential(id, None))
            .await
            .expect("client")
            .value
    };
    let target = ensure("target").await;
    let alpha = ensure("alpha").await;
    let beta = ensure("beta").await;
    let requester = |name: &str, id: &str| TokenExchangeRequester {
        policy_name: format!("{name}-token-exchange"),
        client: id.to_string(),
    };
    let grant = realm
        .grant_token_exchange(
            &target.id,
            &[requester("alpha", &alpha.id), requester("beta", &beta.id)],
        )
        .await
        .expect("grant");
    let management = realm.realm_management_client().await.expect("realm-management");
    let applied = realm
        .permission_policies(&management.id, &grant.permission_id)
        .await
        .expect("policies");
    assert_eq!(applied.len(), 2, "{applied:?}");
    assert!(
        realm
            .client_management_permissions(&target.id)
            .await
            .expect("read")
            .enabled
    );

    let again = realm
        .grant_token_exchange(&target.id, &[requester("alpha", &alpha.id)])
        .await
        .expect("regrant");
    assert_eq!(again.permission_id, grant.permission_id, "the permission is reused");
    let applied = realm
        .permission_policies(&management.id, &grant.permission_id)
        .await
        .expect("policies");
    assert_eq!(applied.len(), 1, "only alpha's policy is left: {applied:?}");

    realm.revoke_token_exchange(&target.id).await.expect("revoke");
    assert!(
        !realm
            .client_management_permissions(&target.id)
            .await
            .expect("read")
            .enabled
    );
    realm
        .revoke_token_exchange("no-such-client")
        .await
        .expect("a vanished target counts as revoked");
}

#[tokio::test]
async fn the_default_keycloak_refuses_legacy_token_exchange_with_the_distinct_error() {
    let kc = RealRealm::create(Server::Default, "nofgap").await;
    let target = kc
        .realm
        .ensure_client(&ClientSpec::confidential("target", None))
        .await
        .expect("target")
        .value;
    let error = kc
        .realm
        .grant_token_exchange(&target.id, &[])
        .await
        .expect_err("feature off");
    assert_eq!(
        error.kind(),
        controllers::keycloak::ErrorKind::FeatureDisabled,
        "{error:?}"
    );
}
