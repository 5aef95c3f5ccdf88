//! Clients and their secrets: exact lookup by `clientId`, create-or-get, merge updates, deletion, and the
//! shapes NebariApp creates (confidential, SPA with PKCE S256, device flow).

use std::collections::BTreeMap;

use framework::http::Idempotency;
use reqwest::Method;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::client::RealmClient;
use super::error::KeycloakError;
use super::types::{Client, Ensured};

/// Attribute that turns on PKCE for a client and names the method.
pub const PKCE_METHOD_ATTRIBUTE: &str = "pkce.code.challenge.method";
/// Attribute that turns on the OAuth 2.0 device authorization grant.
pub const DEVICE_GRANT_ATTRIBUTE: &str = "oauth2.device.authorization.grant.enabled";
/// Attribute listing the allowed post-logout redirect URIs, joined by `##`.
pub const POST_LOGOUT_REDIRECT_URIS_ATTRIBUTE: &str = "post.logout.redirect.uris";

/// A client to create.
#[derive(Clone, Debug)]
pub struct ClientSpec {
    /// The public `clientId`.
    pub client_id: String,
    /// Display name.
    pub name: Option<String>,
    /// Shown in the admin console.
    pub description: Option<String>,
    /// A public client (no secret).
    pub public_client: bool,
    /// The secret of a confidential client; Keycloak generates one when absent.
    pub secret: Option<SecretString>,
    /// Authorization-code flow.
    pub standard_flow: bool,
    /// Password grant.
    pub direct_access_grants: bool,
    /// Client-credentials grant.
    pub service_accounts: bool,
    /// Where a login may redirect back to.
    pub redirect_uris: Vec<String>,
    /// Origins allowed to call Keycloak from a browser (CORS).
    pub web_origins: Vec<String>,
    /// Free-form settings (PKCE method, post-logout redirect URIs, the owner this operator records).
    pub attributes: BTreeMap<String, String>,
    /// Whether tokens carry every role of the user; off for the clients this operator makes, so a realm
    /// administrator's login to a tenant's app never hands the tenant a token the admin API accepts.
    pub full_scope_allowed: bool,
}

impl ClientSpec {
    /// A confidential client using the authorization-code flow (no password grant), with `secret` or a
    /// Keycloak-generated one.
    pub fn confidential(client_id: &str, secret: Option<SecretString>) -> Self {
        Self {
            client_id: client_id.into(),
            name: None,
            description: None,
            public_client: false,
            secret,
            standard_flow: true,
            direct_access_grants: false,
            service_accounts: false,
            redirect_uris: Vec::new(),
            web_origins: Vec::new(),
            attributes: BTreeMap::new(),
            full_scope_allowed: false,
        }
    }

    /// A public single-page-app client: authorization-code flow with PKCE S256, no password grant.
    pub fn spa(client_id: &str) -> Self {
        Self {
            public_client: true,
            secret: None,
            ..Self::confidential(client_id, None)
        }
        .with_attribute(PKCE_METHOD_ATTRIBUTE, "S256")
    }

    /// A public client for the device authorization grant only (no browser flow, no password grant).
    pub fn device_flow(client_id: &str) -> Self {
        Self {
            public_client: true,
            secret: None,
            standard_flow: false,
            ..Self::confidential(client_id, None)
        }
        .with_attribute(DEVICE_GRANT_ATTRIBUTE, "true")
    }

    /// Sets the redirect URIs.
    pub fn with_redirect_uris(mut self, uris: Vec<String>) -> Self {
        self.redirect_uris = uris;
        self
    }

    /// Sets the web origins.
    pub fn with_web_origins(mut self, origins: Vec<String>) -> Self {
        self.web_origins = origins;
        self
    }

    /// Sets the post-logout redirect URIs.
    pub fn with_post_logout_redirect_uris(self, uris: &[String]) -> Self {
        self.with_attribute(POST_LOGOUT_REDIRECT_URIS_ATTRIBUTE, &uris.join("##"))
    }

    /// Sets one attribute.
    pub fn with_attribute(mut self, key: &str, value: &str) -> Self {
        self.attributes.insert(key.into(), value.into());
        self
    }

    /// Sets the display name.
    pub fn with_name(mut self, name: &str) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The client this spec creates, under the internal id Keycloak gave it.
    fn as_created(&self, id: String) -> Client {
        Client {
            id,
            client_id: self.client_id.clone(),
            name: self.name.clone(),
            enabled: true,
            public_client: self.public_client,
            bearer_only: false,
            standard_flow_enabled: self.standard_flow,
            direct_access_grants_enabled: self.direct_access_grants,
            service_accounts_enabled: self.service_accounts,
            redirect_uris: self.redirect_uris.clone(),
            web_origins: self.web_origins.clone(),
            attributes: self.attributes.clone(),
            full_scope_allowed: self.full_scope_allowed,
            ..Client::default()
        }
    }

    /// The create body (the secret is exposed here only, into the request).
    fn to_body(&self) -> Value {
        let mut body = json!({
            "clientId": self.client_id,
            "enabled": true,
            "protocol": "openid-connect",
            "publicClient": self.public_client,
            "standardFlowEnabled": self.standard_flow,
            "implicitFlowEnabled": false,
            "directAccessGrantsEnabled": self.direct_access_grants,
            "serviceAccountsEnabled": self.service_accounts,
            "redirectUris": self.redirect_uris,
            "webOrigins": self.web_origins,
            "attributes": self.attributes,
            "fullScopeAllowed": self.full_scope_allowed,
        });
        if let Some(name) = &self.name {
            body["name"] = json!(name);
        }
        if let Some(description) = &self.description {
            body["description"] = json!(description);
        }
        if let Some(secret) = &self.secret {
            body["secret"] = json!(secret.expose_secret());
        }
        body
    }
}

/// Changes to a client; fields left `None` are not sent, so Keycloak keeps them (its PUT merges).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientUpdate {
    /// New redirect URIs.
    pub redirect_uris: Option<Vec<String>>,
    /// New web origins.
    pub web_origins: Option<Vec<String>>,
    /// Attributes to set (others are kept).
    pub set_attributes: BTreeMap<String, String>,
    /// Attributes to remove (sent as empty values, which Keycloak removes).
    pub remove_attributes: Vec<String>,
    /// Enable or disable the client.
    pub enabled: Option<bool>,
    /// Authorization-code flow.
    pub standard_flow: Option<bool>,
    /// Password grant.
    pub direct_access_grants: Option<bool>,
    /// Display name.
    pub name: Option<String>,
    /// Whether tokens carry every role of the user (see [`ClientSpec::full_scope_allowed`]).
    pub full_scope_allowed: Option<bool>,
}

impl ClientUpdate {
    /// The merge body: only the fields to change.
    fn to_body(&self) -> Value {
        let mut body = Map::new();
        if let Some(uris) = &self.redirect_uris {
            body.insert("redirectUris".into(), json!(uris));
        }
        if let Some(origins) = &self.web_origins {
            body.insert("webOrigins".into(), json!(origins));
        }
        if let Some(enabled) = self.enabled {
            body.insert("enabled".into(), json!(enabled));
        }
        if let Some(flag) = self.standard_flow {
            body.insert("standardFlowEnabled".into(), json!(flag));
        }
        if let Some(flag) = self.direct_access_grants {
            body.insert("directAccessGrantsEnabled".into(), json!(flag));
        }
        if let Some(name) = &self.name {
            body.insert("name".into(), json!(name));
        }
        if let Some(flag) = self.full_scope_allowed {
            body.insert("fullScopeAllowed".into(), json!(flag));
        }
        if !self.set_attributes.is_empty() || !self.remove_attributes.is_empty() {
            let mut attributes: Map<String, Value> =
                self.set_attributes.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
            for key in &self.remove_attributes {
                attributes.insert(key.clone(), json!(""));
            }
            body.insert("attributes".into(), Value::Object(attributes));
        }
        Value::Object(body)
    }

    /// Whether there is nothing to change.
    pub fn is_empty(&self) -> bool {
        self.to_body().as_object().is_none_or(Map::is_empty)
    }

    /// Whether applying this update would change `client` as read (so a converged client costs no write).
    pub fn changes(&self, client: &Client) -> bool {
        let differs = |wanted: &Option<Vec<String>>, current: &[String]| wanted.as_ref().is_some_and(|w| w != current);
        let flag = |wanted: Option<bool>, current: bool| wanted.is_some_and(|w| w != current);
        differs(&self.redirect_uris, &client.redirect_uris)
            || differs(&self.web_origins, &client.web_origins)
            || flag(self.enabled, client.enabled)
            || flag(self.standard_flow, client.standard_flow_enabled)
            || flag(self.direct_access_grants, client.direct_access_grants_enabled)
            || flag(self.full_scope_allowed, client.full_scope_allowed)
            || self.name.as_ref().is_some_and(|n| client.name.as_ref() != Some(n))
            || self
                .set_attributes
                .iter()
                .any(|(k, v)| client.attributes.get(k) != Some(v))
            || self
                .remove_attributes
                .iter()
                .any(|k| client.attributes.get(k).is_some_and(|v| !v.is_empty()))
    }
}

/// The `client-secret` answer.
#[derive(Deserialize)]
struct SecretAnswer {
    #[serde(default)]
    value: Option<String>,
}

impl RealmClient {
    /// Puts the realm role `role` into the scope of the client with internal id `client`, unless it is there: with
    /// `fullScopeAllowed` off only the roles in a client's scope reach its tokens (`offline_access` for an offline
    /// token, say).
    pub async fn ensure_realm_role_in_scope(&self, client: &str, role: &str) -> Result<(), KeycloakError> {
        let segments = ["clients", client, "scope-mappings", "realm"];
        let mapped: Vec<Value> = self.get_json("read client scope roles", &segments, &[]).await?;
        if mapped.iter().any(|mapped| mapped["name"] == role) {
            return Ok(());
        }
        let Some(found) = self.get_optional::<Value>("read realm role", &["roles", role]).await? else {
            return Err(KeycloakError::Missing {
                operation: "add a realm role to a client's scope",
                what: format!("realm role {role}"),
            });
        };
        self.execute(
            "add a realm role to a client's scope",
            Method::POST,
            &segments,
            &[],
            Some(&json!([found])),
            Idempotency::Idempotent,
        )
        .await?;
        Ok(())
    }

    /// The client with exactly this `clientId`, if any.
    pub async fn find_client(&self, client_id: &str) -> Result<Option<Client>, KeycloakError> {
        let clients: Vec<Client> = self
            .get_all("find client", &["clients"], &[("clientId", client_id.to_string())])
            .await?;
        Ok(clients.into_iter().find(|c| c.client_id == client_id))
    }

    /// A client by internal id; `None` when it does not exist.
    pub async fn get_client(&self, id: &str) -> Result<Option<Client>, KeycloakError> {
        self.get_optional("get client", &["clients", id]).await
    }

    /// Creates a client and returns it as sent, with the internal id Keycloak answered (`Location`), so the new
    /// client is not read back; a duplicate `clientId` is an error of kind `Conflict`. What Keycloak adds from
    /// the realm's defaults (default client scopes, protocol mappers) is not in the returned value: read it with
    /// its own call.
    pub async fn create_client(&self, spec: &ClientSpec) -> Result<Client, KeycloakError> {
        let (id, _) = self.create("create client", &["clients"], &spec.to_body()).await?;
        Ok(spec.as_created(id))
    }

    /// The client `spec.client_id`, created from `spec` when missing (an existing client is not changed).
    pub async fn ensure_client(&self, spec: &ClientSpec) -> Result<Ensured<Client>, KeycloakError> {
        if let Some(client) = self.find_client(&spec.client_id).await? {
            return Ok(Ensured {
                value: client,
                created: false,
            });
        }
        match self.create_client(spec).await {
            Ok(client) => Ok(Ensured {
                value: client,
                created: true,
            }),
            Err(error) if error.is_conflict() => match self.find_client(&spec.client_id).await? {
                Some(client) => Ok(Ensured {
                    value: client,
                    created: false,
                }),
                None => Err(error),
            },
            Err(error) => Err(error),
        }
    }

    /// Applies `update` to a client (a merge: what is not in `update` stays as it is).
    pub async fn update_client(&self, id: &str, update: &ClientUpdate) -> Result<(), KeycloakError> {
        self.put("update client", &["clients", id], Some(&update.to_body()))
            .await?;
        Ok(())
    }

    /// Deletes a client; `false` when it was already gone.
    pub async fn delete_client(&self, id: &str) -> Result<bool, KeycloakError> {
        self.delete("delete client", &["clients", id]).await
    }

    /// Every client of the realm, paged.
    pub async fn list_clients(&self) -> Result<Vec<Client>, KeycloakError> {
        self.get_all("list clients", &["clients"], &[]).await
    }

    /// Deletes the client with this `clientId`; `false` when there was none.
    pub async fn delete_client_by_client_id(&self, client_id: &str) -> Result<bool, KeycloakError> {
        match self.find_client(client_id).await? {
            Some(client) => self.delete_client(&client.id).await,
            None => Ok(false),
        }
    }

    /// The secret of a confidential client (`None` for clients without one).
    pub async fn client_secret(&self, id: &str) -> Result<Option<SecretString>, KeycloakError> {
        let answer: SecretAnswer = self
            .get_json("get client secret", &["clients", id, "client-secret"], &[])
            .await?;
        Ok(answer.value.map(SecretString::from))
    }

    /// Replaces a client's secret with a new one Keycloak generates, and returns it. Sent once, never retried:
    /// a repeated call would rotate the secret twice.
    pub async fn regenerate_client_secret(&self, id: &str) -> Result<SecretString, KeycloakError> {
        let operation = "regenerate client secret";
        let response = self
            .execute(
                operation,
                Method::POST,
                &["clients", id, "client-secret"],
                &[],
                None,
                Idempotency::Once,
            )
            .await?;
        let answer: SecretAnswer = self.decode(operation, response).await?;
        answer
            .value
            .map(SecretString::from)
            .ok_or_else(|| KeycloakError::UnexpectedResponse {
                operation,
                detail: "no secret in the answer".into(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confidential_clients_send_their_secret_and_flags() {
        let spec = ClientSpec::confidential("ns-app", Some(SecretString::from("s3cr3t")))
            .with_redirect_uris(vec!["https://app.example/*".into()])
            .with_post_logout_redirect_uris(&["https://app.example/*".into(), "http://app.example/*".into()]);
        let body = spec.to_body();
        assert_eq!(body["clientId"], "ns-app");
        assert_eq!(body["publicClient"], false);
        assert_eq!(body["standardFlowEnabled"], true);
        assert_eq!(body["directAccessGrantsEnabled"], false);
        assert_eq!(body["secret"], "s3cr3t");
        assert_eq!(
            body["attributes"][POST_LOGOUT_REDIRECT_URIS_ATTRIBUTE],
            "https://app.example/*##http://app.example/*"
        );
        assert!(
            !format!("{spec:?}").contains("s3cr3t"),
            "Debug must not show the secret"
        );
    }

    #[test]
    fn a_created_client_is_what_was_sent_under_the_answered_id() {
        let spec = ClientSpec::spa("ns-app-spa")
            .with_redirect_uris(vec!["https://app.example/*".into()])
            .with_web_origins(vec!["https://app.example".into()])
            .with_attribute("owner", "ns/app");
        let client = spec.as_created("0f3c".into());
        assert_eq!((client.id.as_str(), client.client_id.as_str()), ("0f3c", "ns-app-spa"));
        assert!(client.enabled && client.public_client && client.standard_flow_enabled);
        assert!(!client.direct_access_grants_enabled && !client.service_accounts_enabled);
        assert_eq!(client.redirect_uris, spec.redirect_uris);
        assert_eq!(client.web_origins, spec.web_origins);
        assert_eq!(
            client.attributes.get(PKCE_METHOD_ATTRIBUTE).map(String::as_str),
            Some("S256")
        );
        assert_eq!(client.attributes.get("owner").map(String::as_str), Some("ns/app"));
    }

    #[test]
    fn spa_and_device_clients_are_public_with_their_attributes() {
        let spa = ClientSpec::spa("ns-app-spa").to_body();
        assert_eq!(spa["publicClient"], true);
        assert_eq!(spa["standardFlowEnabled"], true);
        assert_eq!(spa["attributes"][PKCE_METHOD_ATTRIBUTE], "S256");
        assert!(spa.get("secret").is_none());
        let device = ClientSpec::device_flow("ns-app-device").to_body();
        assert_eq!(device["publicClient"], true);
        assert_eq!(device["standardFlowEnabled"], false);
        assert_eq!(device["directAccessGrantsEnabled"], false);
        assert_eq!(device["attributes"][DEVICE_GRANT_ATTRIBUTE], "true");
    }

    #[test]
    fn updates_send_only_what_changes() {
        assert!(ClientUpdate::default().is_empty());
        let update = ClientUpdate {
            web_origins: Some(vec!["https://app.example".into()]),
            set_attributes: BTreeMap::from([("a".to_string(), "1".to_string())]),
            remove_attributes: vec!["b".into()],
            ..ClientUpdate::default()
        };
        assert_eq!(
            update.to_body(),
            json!({"webOrigins": ["https://app.example"], "attributes": {"a": "1", "b": ""}})
        );
    }
}
