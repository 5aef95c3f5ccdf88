//! Legacy (v1) token exchange between clients, set up through fine-grained admin permissions: enable the
//! target client's permissions, give each requesting client a client policy, and make the target's
//! `token-exchange` permission apply those policies (any one suffices). Servers without the v1 feature answer
//! 501, reported as [`KeycloakError::FeatureDisabled`].

use reqwest::{Method, StatusCode};
use serde_json::json;

use framework::http::Idempotency;

use super::client::RealmClient;
use super::error::KeycloakError;
use super::types::{AuthzPolicy, AuthzScope, Client, Ensured, ManagementPermissions};

/// The server features the v1 flow needs, as named in error messages.
pub const FGAP_V1_FEATURE: &str = "fine-grained admin permissions v1 (admin-fine-grained-authz:v1, token-exchange)";
/// The client holding a realm's admin permissions.
pub const REALM_MANAGEMENT_CLIENT: &str = "realm-management";
/// The scope permission that governs token exchange.
pub const TOKEN_EXCHANGE_SCOPE: &str = "token-exchange";

/// A client allowed to exchange tokens for the target client, and the name of its client policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenExchangeRequester {
    /// Name of the client policy (e.g. `<peer>-token-exchange`).
    pub policy_name: String,
    /// Internal id of the requesting client.
    pub client: String,
}

/// What [`RealmClient::grant_token_exchange`] set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenExchangeGrant {
    /// Id of the target's `token-exchange` permission.
    pub permission_id: String,
    /// Ids of the requesters' policies the permission now applies, in the order given.
    pub policy_ids: Vec<String>,
}

/// Turns a 501 into the distinct "feature disabled" error.
fn feature_error(operation: &'static str, error: KeycloakError) -> KeycloakError {
    if error.status() == Some(StatusCode::NOT_IMPLEMENTED) {
        KeycloakError::FeatureDisabled {
            operation,
            feature: FGAP_V1_FEATURE,
        }
    } else {
        error
    }
}

fn authz<'a>(resource_server_client: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut segments = vec!["clients", resource_server_client, "authz", "resource-server"];
    segments.extend_from_slice(rest);
    segments
}

impl RealmClient {
    /// A client's fine-grained admin permissions.
    pub async fn client_management_permissions(&self, client: &str) -> Result<ManagementPermissions, KeycloakError> {
        let operation = "read client permissions";
        self.get_json(operation, &["clients", client, "management", "permissions"], &[])
            .await
            .map_err(|e| feature_error(operation, e))
    }

    async fn set_client_management_permissions(
        &self,
        operation: &'static str,
        client: &str,
        enabled: bool,
    ) -> Result<ManagementPermissions, KeycloakError> {
        let body = json!({ "enabled": enabled });
        let response = self
            .put(
                operation,
                &["clients", client, "management", "permissions"],
                Some(&body),
            )
            .await
            .map_err(|e| feature_error(operation, e))?;
        self.decode(operation, response).await
    }

    /// Enables a client's fine-grained admin permissions; returns the permission ids per scope.
    pub async fn enable_client_management_permissions(
        &self,
        client: &str,
    ) -> Result<ManagementPermissions, KeycloakError> {
        self.set_client_management_permissions("enable client permissions", client, true)
            .await
    }

    /// Disables a client's fine-grained admin permissions (Keycloak removes the permissions it created); read
    /// first, so permissions that are already off cost no write.
    pub async fn disable_client_management_permissions(&self, client: &str) -> Result<(), KeycloakError> {
        if !self.client_management_permissions(client).await?.enabled {
            return Ok(());
        }
        self.set_client_management_permissions("disable client permissions", client, false)
            .await?;
        Ok(())
    }

    /// The `realm-management` client, which holds the realm's authorization objects.
    pub async fn realm_management_client(&self) -> Result<Client, KeycloakError> {
        self.find_client(REALM_MANAGEMENT_CLIENT)
            .await?
            .ok_or_else(|| KeycloakError::Missing {
                operation: "find realm-management",
                what: format!("client {REALM_MANAGEMENT_CLIENT}"),
            })
    }

    /// The authorization scope named exactly `name` in a resource server.
    pub async fn find_authz_scope(
        &self,
        resource_server_client: &str,
        name: &str,
    ) -> Result<Option<AuthzScope>, KeycloakError> {
        let scopes: Vec<AuthzScope> = self
            .get_all(
                "find authorization scope",
                &authz(resource_server_client, &["scope"]),
                &[("name", name.into())],
            )
            .await?;
        Ok(scopes.into_iter().find(|s| s.name == name))
    }

    /// The policy or permission named exactly `name` (Keycloak's `name` filter is a substring match).
    pub async fn find_authz_policy(
        &self,
        resource_server_client: &str,
        name: &str,
    ) -> Result<Option<AuthzPolicy>, KeycloakError> {
        let policies: Vec<AuthzPolicy> = self
            .get_all(
                "find authorization policy",
                &authz(resource_server_client, &["policy"]),
                &[("name", name.into())],
            )
            .await?;
        Ok(policies.into_iter().find(|p| p.name == name))
    }

    /// A client policy named `name` that matches exactly `clients` (internal ids), created or corrected.
    pub async fn ensure_client_policy(
        &self,
        resource_server_client: &str,
        name: &str,
        clients: &[String],
    ) -> Result<Ensured<AuthzPolicy>, KeycloakError> {
        if let Some(existing) = self.find_authz_policy(resource_server_client, name).await? {
            return self
                .correct_client_policy(resource_server_client, existing, clients)
                .await;
        }
        let operation = "create client policy";
        let body = json!({
            "name": name,
            "type": "client",
            "logic": "POSITIVE",
            "decisionStrategy": "UNANIMOUS",
            "clients": clients,
        });
        let segments = authz(resource_server_client, &["policy", "client"]);
        match self
            .execute(
                operation,
                Method::POST,
                &segments,
                &[],
                Some(&body),
                Idempotency::Idempotent,
            )
            .await
        {
            Ok(response) => Ok(Ensured {
                value: self.decode(operation, response).await?,
                created: true,
            }),
            Err(error) if error.is_conflict() => match self.find_authz_policy(resource_server_client, name).await? {
                Some(existing) => {
                    self.correct_client_policy(resource_server_client, existing, clients)
                        .await
                }
                None => Err(error),
            },
            Err(error) => Err(error),
        }
    }

    async fn correct_client_policy(
        &self,
        resource_server_client: &str,
        existing: AuthzPolicy,
        clients: &[String],
    ) -> Result<Ensured<AuthzPolicy>, KeycloakError> {
        let segments = authz(resource_server_client, &["policy", "client", &existing.id]);
        let current: AuthzPolicy = self.get_json("read client policy", &segments, &[]).await?;
        let mut have = current.clients.clone();
        let mut want = clients.to_vec();
        have.sort();
        want.sort();
        if have != want {
            let body = json!({
                "id": current.id,
                "name": current.name,
                "type": "client",
                "logic": current.logic.as_deref().unwrap_or("POSITIVE"),
                "decisionStrategy": current.decision_strategy.as_deref().unwrap_or("UNANIMOUS"),
                "clients": clients,
            });
            self.put("update client policy", &segments, Some(&body)).await?;
        }
        Ok(Ensured {
            value: AuthzPolicy {
                clients: clients.to_vec(),
                ..current
            },
            created: false,
        })
    }

    /// Deletes a policy or permission; `false` when it was already gone.
    pub async fn delete_authz_policy(&self, resource_server_client: &str, id: &str) -> Result<bool, KeycloakError> {
        self.delete(
            "delete authorization policy",
            &authz(resource_server_client, &["policy", id]),
        )
        .await
    }

    /// The policies a permission applies.
    pub async fn permission_policies(
        &self,
        resource_server_client: &str,
        permission: &str,
    ) -> Result<Vec<AuthzPolicy>, KeycloakError> {
        let segments = authz(resource_server_client, &["policy", permission, "associatedPolicies"]);
        self.get_json("read permission policies", &segments, &[]).await
    }

    /// Lets exactly `requesters` exchange tokens for `target` (internal client ids): the target's
    /// `token-exchange` permission applies one client policy per requester with an affirmative decision.
    pub async fn grant_token_exchange(
        &self,
        target: &str,
        requesters: &[TokenExchangeRequester],
    ) -> Result<TokenExchangeGrant, KeycloakError> {
        let operation = "grant token exchange";
        let permissions = self.enable_client_management_permissions(target).await?;
        let unexpected = |detail: &str| KeycloakError::UnexpectedResponse {
            operation,
            detail: detail.into(),
        };
        let permission_id = permissions
            .scope_permissions
            .get(TOKEN_EXCHANGE_SCOPE)
            .cloned()
            .ok_or_else(|| unexpected("no token-exchange permission after enabling client permissions"))?;
        let resource = permissions
            .resource
            .clone()
            .ok_or_else(|| unexpected("no authorization resource"))?;
        let management = self.realm_management_client().await?;
        let scope = self
            .find_authz_scope(&management.id, TOKEN_EXCHANGE_SCOPE)
            .await?
            .ok_or_else(|| KeycloakError::Missing {
                operation,
                what: "authorization scope token-exchange".into(),
            })?;
        let mut policy_ids = Vec::with_capacity(requesters.len());
        for requester in requesters {
            let policy = self
                .ensure_client_policy(
                    &management.id,
                    &requester.policy_name,
                    std::slice::from_ref(&requester.client),
                )
                .await?;
            policy_ids.push(policy.value.id);
        }
        let segments = authz(&management.id, &["permission", "scope", &permission_id]);
        let current: AuthzPolicy = self.get_json("read token-exchange permission", &segments, &[]).await?;
        let body = json!({
            "id": permission_id,
            "name": current.name,
            "type": "scope",
            "logic": "POSITIVE",
            "decisionStrategy": "AFFIRMATIVE",
            "resources": [resource],
            "scopes": [scope.id],
            "policies": policy_ids,
        });
        self.put("update token-exchange permission", &segments, Some(&body))
            .await?;
        Ok(TokenExchangeGrant {
            permission_id,
            policy_ids,
        })
    }

    /// Stops token exchange for `target` by disabling its admin permissions (the requesters' policies stay,
    /// as they may serve other targets); a target that no longer exists counts as done.
    pub async fn revoke_token_exchange(&self, target: &str) -> Result<(), KeycloakError> {
        match self.disable_client_management_permissions(target).await {
            Err(error) if error.is_not_found() => Ok(()),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use framework::http::HttpError;

    #[test]
    fn a_501_becomes_feature_disabled_and_other_errors_pass_through() {
        let status = |code: u16| {
            KeycloakError::Http(HttpError::Status {
                api: "keycloak",
                operation: "x",
                status: StatusCode::from_u16(code).expect("status"),
                summary: None,
            })
        };
        let disabled = feature_error("enable client permissions", status(501));
        assert!(matches!(disabled, KeycloakError::FeatureDisabled { .. }));
        assert_eq!(disabled.kind(), crate::keycloak::ErrorKind::FeatureDisabled);
        assert!(feature_error("x", status(404)).is_not_found());
    }

    #[test]
    fn authz_paths_hang_off_the_resource_server() {
        assert_eq!(
            authz("rm", &["policy", "client"]),
            vec!["clients", "rm", "authz", "resource-server", "policy", "client"]
        );
    }
}
