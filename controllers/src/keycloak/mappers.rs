//! Protocol mappers of a client, matched by name.

use super::client::RealmClient;
use super::error::KeycloakError;
use super::types::ProtocolMapper;

/// What [`RealmClient::ensure_protocol_mapper`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapperChange {
    /// The mapper did not exist and was created.
    Created,
    /// A mapper of that name existed with other settings and was overwritten.
    Updated,
    /// A mapper of that name already had these settings.
    Unchanged,
}

impl RealmClient {
    /// The protocol mappers of a client.
    pub async fn list_protocol_mappers(&self, client: &str) -> Result<Vec<ProtocolMapper>, KeycloakError> {
        self.get_json(
            "list protocol mappers",
            &["clients", client, "protocol-mappers", "models"],
            &[],
        )
        .await
    }

    /// Makes the client have a mapper named `mapper.name` with exactly `mapper`'s settings.
    pub async fn ensure_protocol_mapper(
        &self,
        client: &str,
        mapper: &ProtocolMapper,
    ) -> Result<MapperChange, KeycloakError> {
        let existing = self.list_protocol_mappers(client).await?;
        if let Some(current) = existing.iter().find(|m| m.name == mapper.name) {
            return self.overwrite_mapper(client, current, mapper).await;
        }
        let body = serde_json::to_value(ProtocolMapper {
            id: None,
            ..mapper.clone()
        })
        .map_err(|e| KeycloakError::InvalidInput {
            operation: "create protocol mapper",
            reason: e.to_string(),
        })?;
        match self
            .create(
                "create protocol mapper",
                &["clients", client, "protocol-mappers", "models"],
                &body,
            )
            .await
        {
            Ok(_) => Ok(MapperChange::Created),
            Err(error) if error.is_conflict() => {
                let existing = self.list_protocol_mappers(client).await?;
                match existing.iter().find(|m| m.name == mapper.name) {
                    Some(current) => self.overwrite_mapper(client, current, mapper).await,
                    None => Err(error),
                }
            }
            Err(error) => Err(error),
        }
    }

    async fn overwrite_mapper(
        &self,
        client: &str,
        current: &ProtocolMapper,
        wanted: &ProtocolMapper,
    ) -> Result<MapperChange, KeycloakError> {
        if current.same_settings(wanted) {
            return Ok(MapperChange::Unchanged);
        }
        let id = current.id.clone().ok_or_else(|| KeycloakError::UnexpectedResponse {
            operation: "update protocol mapper",
            detail: "a listed mapper has no id".into(),
        })?;
        let body = serde_json::to_value(ProtocolMapper {
            id: Some(id.clone()),
            ..wanted.clone()
        })
        .map_err(|e| KeycloakError::InvalidInput {
            operation: "update protocol mapper",
            reason: e.to_string(),
        })?;
        self.put(
            "update protocol mapper",
            &["clients", client, "protocol-mappers", "models", &id],
            Some(&body),
        )
        .await?;
        Ok(MapperChange::Updated)
    }

    /// Deletes a protocol mapper; `false` when it was already gone.
    pub async fn delete_protocol_mapper(&self, client: &str, mapper: &str) -> Result<bool, KeycloakError> {
        self.delete(
            "delete protocol mapper",
            &["clients", client, "protocol-mappers", "models", mapper],
        )
        .await
    }
}
