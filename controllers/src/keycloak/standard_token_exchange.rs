//! Standard token exchange (Keycloak 26.2+, "v2"): a requesting client exchanges its users' tokens for tokens
//! meant for a target client when it has `standard.token.exchange.enabled` and the target in its audience (an
//! `oidc-audience-mapper`). Unlike v1, nothing is configured on the target, so the target records which clients
//! it granted (attribute [`PEERS_ATTRIBUTE`]) to revoke exactly those later.

use std::collections::BTreeSet;

use super::client::RealmClient;
use super::clients::ClientUpdate;
use super::error::KeycloakError;
use super::types::{Client, ProtocolMapper};

/// The requester's attribute that turns standard token exchange on.
pub const STANDARD_TOKEN_EXCHANGE_ATTRIBUTE: &str = "standard.token.exchange.enabled";
/// The target's attribute listing the clients it granted (space-separated `clientId`s).
pub const PEERS_ATTRIBUTE: &str = "nebari.dev/token-exchange-peers";
/// The prefix of the audience mappers this operator puts on requesters.
const MAPPER_PREFIX: &str = "token-exchange-";

/// The name of the audience mapper granting exchange towards `target` (its `clientId`).
pub fn audience_mapper_name(target: &str) -> String {
    format!("{MAPPER_PREFIX}{target}")
}

fn recorded_peers(target: &Client) -> BTreeSet<String> {
    target
        .attributes
        .get(PEERS_ATTRIBUTE)
        .map(|peers| peers.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

impl RealmClient {
    /// Lets exactly `requesters` exchange tokens for `target`: each gets the attribute and an audience mapper
    /// for the target; clients granted before and no longer listed lose theirs.
    pub async fn grant_standard_token_exchange(
        &self,
        target: &Client,
        requesters: &[Client],
    ) -> Result<(), KeycloakError> {
        let mapper = ProtocolMapper::audience(&audience_mapper_name(&target.client_id), &target.client_id);
        for requester in requesters {
            if requester
                .attributes
                .get(STANDARD_TOKEN_EXCHANGE_ATTRIBUTE)
                .map(String::as_str)
                != Some("true")
            {
                let enable = ClientUpdate {
                    set_attributes: [(STANDARD_TOKEN_EXCHANGE_ATTRIBUTE.to_string(), "true".to_string())].into(),
                    ..ClientUpdate::default()
                };
                self.update_client(&requester.id, &enable).await?;
            }
            self.ensure_protocol_mapper(&requester.id, &mapper).await?;
        }
        let wanted: BTreeSet<String> = requesters.iter().map(|r| r.client_id.clone()).collect();
        self.record_peers(target, &wanted).await
    }

    /// Withdraws every grant `target` recorded (token exchange turned off, or the target being deleted).
    pub async fn revoke_standard_token_exchange(&self, target: &Client) -> Result<(), KeycloakError> {
        self.record_peers(target, &BTreeSet::new()).await
    }

    /// Revokes the recorded peers not in `wanted`, then records `wanted` on the target.
    async fn record_peers(&self, target: &Client, wanted: &BTreeSet<String>) -> Result<(), KeycloakError> {
        let recorded = recorded_peers(target);
        for gone in recorded.difference(wanted) {
            if let Some(peer) = self.find_client(gone).await? {
                self.withdraw_audience(&peer, &target.client_id).await?;
            }
        }
        if recorded == *wanted {
            return Ok(());
        }
        let update = if wanted.is_empty() {
            ClientUpdate {
                remove_attributes: vec![PEERS_ATTRIBUTE.to_string()],
                ..ClientUpdate::default()
            }
        } else {
            let list = wanted.iter().cloned().collect::<Vec<_>>().join(" ");
            ClientUpdate {
                set_attributes: [(PEERS_ATTRIBUTE.to_string(), list)].into(),
                ..ClientUpdate::default()
            }
        };
        self.update_client(&target.id, &update).await
    }

    /// Removes `peer`'s audience mapper for `target`, and turns its standard token exchange off when no grant of
    /// this operator is left on it.
    async fn withdraw_audience(&self, peer: &Client, target: &str) -> Result<(), KeycloakError> {
        let name = audience_mapper_name(target);
        let mappers = self.list_protocol_mappers(&peer.id).await?;
        for mapper in mappers.iter().filter(|m| m.name == name) {
            if let Some(id) = &mapper.id {
                self.delete_protocol_mapper(&peer.id, id).await?;
            }
        }
        let others = mappers
            .iter()
            .any(|m| m.name != name && m.name.starts_with(MAPPER_PREFIX));
        if !others {
            let disable = ClientUpdate {
                set_attributes: [(STANDARD_TOKEN_EXCHANGE_ATTRIBUTE.to_string(), "false".to_string())].into(),
                ..ClientUpdate::default()
            };
            self.update_client(&peer.id, &disable).await?;
        }
        Ok(())
    }
}
