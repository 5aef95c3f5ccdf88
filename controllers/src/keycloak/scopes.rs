//! Realm client scopes and the default scopes of a client.

use serde_json::json;

use super::client::RealmClient;
use super::error::KeycloakError;
use super::types::{ClientScope, Ensured, ScopeRef};

/// A client scope to create.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientScopeSpec {
    /// The scope name a token request asks for.
    pub name: String,
    /// Shown in the admin console; marks the scope as made by this operator.
    pub description: Option<String>,
    /// Whether the scope name appears in the token's `scope` claim.
    pub include_in_token_scope: bool,
}

impl ClientScopeSpec {
    /// An OIDC scope that is listed in tokens.
    pub fn new(name: &str, description: Option<&str>) -> Self {
        Self {
            name: name.into(),
            description: description.map(str::to_string),
            include_in_token_scope: true,
        }
    }
}

/// What [`RealmClient::ensure_default_client_scopes`] changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DefaultScopeSync {
    /// Scopes created in the realm.
    pub created: Vec<String>,
    /// Scopes newly attached to the client as defaults.
    pub attached: Vec<String>,
}

impl RealmClient {
    /// Every client scope of the realm (Keycloak does not page this listing).
    pub async fn list_client_scopes(&self) -> Result<Vec<ClientScope>, KeycloakError> {
        self.get_json("list client scopes", &["client-scopes"], &[]).await
    }

    /// The client scope named exactly `name`, if any.
    pub async fn find_client_scope(&self, name: &str) -> Result<Option<ClientScope>, KeycloakError> {
        Ok(self.list_client_scopes().await?.into_iter().find(|s| s.name == name))
    }

    /// The client scope `spec.name`, created when missing.
    pub async fn ensure_client_scope(&self, spec: &ClientScopeSpec) -> Result<Ensured<ClientScope>, KeycloakError> {
        if let Some(scope) = self.find_client_scope(&spec.name).await? {
            return Ok(Ensured {
                value: scope,
                created: false,
            });
        }
        let include = if spec.include_in_token_scope { "true" } else { "false" };
        let mut body = json!({
            "name": spec.name,
            "protocol": "openid-connect",
            "attributes": { "include.in.token.scope": include, "display.on.consent.screen": "true" },
        });
        if let Some(description) = &spec.description {
            body["description"] = json!(description);
        }
        match self.create("create client scope", &["client-scopes"], &body).await {
            Ok((id, _)) => Ok(Ensured {
                value: ClientScope {
                    id,
                    name: spec.name.clone(),
                    description: spec.description.clone(),
                    protocol: Some("openid-connect".into()),
                    attributes: [("include.in.token.scope".to_string(), include.to_string())].into(),
                },
                created: true,
            }),
            Err(error) if error.is_conflict() => match self.find_client_scope(&spec.name).await? {
                Some(scope) => Ok(Ensured {
                    value: scope,
                    created: false,
                }),
                None => Err(error),
            },
            Err(error) => Err(error),
        }
    }

    /// The scopes `client` gets without asking (its `default-client-scopes`).
    pub async fn default_client_scopes(&self, client: &str) -> Result<Vec<ScopeRef>, KeycloakError> {
        self.get_json(
            "list default client scopes",
            &["clients", client, "default-client-scopes"],
            &[],
        )
        .await
    }

    /// Attaches a scope to a client as a default scope (idempotent).
    pub async fn add_default_client_scope(&self, client: &str, scope: &str) -> Result<(), KeycloakError> {
        self.put(
            "add default client scope",
            &["clients", client, "default-client-scopes", scope],
            None,
        )
        .await?;
        Ok(())
    }

    /// Detaches a default scope from a client (idempotent).
    pub async fn remove_default_client_scope(&self, client: &str, scope: &str) -> Result<(), KeycloakError> {
        self.delete(
            "remove default client scope",
            &["clients", client, "default-client-scopes", scope],
        )
        .await?;
        Ok(())
    }

    /// The scopes `client` gets when it asks (its `optional-client-scopes`).
    pub async fn optional_client_scopes(&self, client: &str) -> Result<Vec<ScopeRef>, KeycloakError> {
        self.get_json(
            "list optional client scopes",
            &["clients", client, "optional-client-scopes"],
            &[],
        )
        .await
    }

    /// Detaches an optional scope from a client (idempotent).
    pub async fn remove_optional_client_scope(&self, client: &str, scope: &str) -> Result<(), KeycloakError> {
        self.delete(
            "remove optional client scope",
            &["clients", client, "optional-client-scopes", scope],
        )
        .await?;
        Ok(())
    }

    /// Makes every scope in `names` a default scope of `client`, creating missing scopes with `description`.
    /// `openid` is skipped (it is implicit in OIDC); scopes already attached are left alone, none are removed.
    pub async fn ensure_default_client_scopes(
        &self,
        client: &str,
        names: &[String],
        description: Option<&str>,
    ) -> Result<DefaultScopeSync, KeycloakError> {
        let mut sync = DefaultScopeSync::default();
        let attached = self.default_client_scopes(client).await?;
        // Read only when something is to be attached: a scope that is optional for the client must be detached
        // from the optional ones first, or Keycloak answers 204 to the attach and leaves it optional.
        let mut optional: Option<Vec<ScopeRef>> = None;
        for name in names.iter().filter(|n| n.as_str() != "openid") {
            if attached.iter().any(|s| &s.name == name) {
                continue;
            }
            let scope = self
                .ensure_client_scope(&ClientScopeSpec::new(name, description))
                .await?;
            if scope.created {
                sync.created.push(name.clone());
            } else {
                let optional = match &optional {
                    Some(optional) => optional,
                    None => optional.insert(self.optional_client_scopes(client).await?),
                };
                if optional.iter().any(|s| s.id == scope.value.id) {
                    self.remove_optional_client_scope(client, &scope.value.id).await?;
                }
            }
            self.add_default_client_scope(client, &scope.value.id).await?;
            sync.attached.push(name.clone());
        }
        Ok(sync)
    }
}
