//! Which token exchange an app's Keycloak gets, and granting or revoking it: legacy (v1, fine-grained admin
//! permissions on the target) or standard (v2, Keycloak 26.2+: the requesters' attribute and audience mappers).
//!
//! `--keycloak-token-exchange=auto` asks the server (`/admin/serverinfo`, re-asked every ten minutes): v1 when its
//! preview features are on — the administrator turned them on, and apps that used them keep working unchanged
//! — else v2 when the server has it, else v1, whose calls then report `TokenExchangeUnavailable`.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::keycloak::{Client, ErrorKind, RealmClient, TokenExchangeRequester};

use super::error::NebariAppError;

/// How long a detected flavour is trusted before the server is asked again (features change with a restart).
const DETECTION_TTL: Duration = Duration::from_secs(600);

/// `--keycloak-token-exchange`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TokenExchangeSetting {
    /// Ask the server.
    #[default]
    Auto,
    /// Legacy token exchange through fine-grained admin permissions v1.
    V1,
    /// Standard token exchange (Keycloak 26.2+).
    V2,
}

/// The token exchange in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    /// Fine-grained admin permissions on the target.
    Legacy,
    /// Attribute and audience mapper on each requester.
    Standard,
}

/// Remembers what `auto` found out.
#[derive(Debug, Default)]
pub struct Detector {
    found: Mutex<Option<(Instant, Flavour)>>,
}

impl Detector {
    /// The flavour for `setting`, asking `realm`'s server when it is `auto` and nothing recent is known.
    pub async fn flavour(&self, setting: TokenExchangeSetting, realm: &RealmClient) -> Result<Flavour, NebariAppError> {
        match setting {
            TokenExchangeSetting::V1 => return Ok(Flavour::Legacy),
            TokenExchangeSetting::V2 => return Ok(Flavour::Standard),
            TokenExchangeSetting::Auto => {}
        }
        if let Some((at, flavour)) = *self.found.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
            && at.elapsed() < DETECTION_TTL
        {
            return Ok(flavour);
        }
        let flavour = match realm.server_info().await {
            Ok(info) if info.standard_token_exchange() && !info.legacy_token_exchange() => Flavour::Standard,
            Ok(_) => Flavour::Legacy,
            // An admin limited to one realm may not read server info: keep the original operator's v1.
            Err(error) if error.kind() == ErrorKind::Forbidden => {
                tracing::warn!(
                    "the Keycloak admin may not read /admin/serverinfo; using v1 token exchange (set \
                     --keycloak-token-exchange to choose)"
                );
                Flavour::Legacy
            }
            Err(error) => return Err(error.into()),
        };
        tracing::info!(?flavour, "detected Keycloak's token exchange");
        *self.found.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some((Instant::now(), flavour));
        Ok(flavour)
    }
}

/// Lets `peers` (client ids) exchange tokens for `target`; peers without a client yet are left for a later pass.
pub async fn grant(
    realm: &RealmClient,
    flavour: Flavour,
    target: &Client,
    peers: &[String],
) -> Result<(), NebariAppError> {
    let mut clients = Vec::new();
    for peer in peers {
        if let Some(client) = realm.find_client(peer).await? {
            clients.push(client);
        }
    }
    match flavour {
        Flavour::Legacy => {
            let requesters: Vec<TokenExchangeRequester> = clients
                .into_iter()
                .map(|c| TokenExchangeRequester {
                    policy_name: format!("{}-token-exchange", c.client_id),
                    client: c.id,
                })
                .collect();
            realm.grant_token_exchange(&target.id, &requesters).await?;
        }
        Flavour::Standard => realm.grant_standard_token_exchange(target, &clients).await?,
    }
    Ok(())
}

/// Withdraws every token-exchange grant towards `target`, of either flavour (a server without v1 has nothing
/// to withdraw there).
pub async fn revoke(realm: &RealmClient, target: &Client) -> Result<(), NebariAppError> {
    match realm.disable_client_management_permissions(&target.id).await {
        Ok(()) => {}
        Err(error) if matches!(error.kind(), ErrorKind::FeatureDisabled | ErrorKind::NotFound) => {}
        Err(error) => return Err(error.into()),
    }
    realm.revoke_standard_token_exchange(target).await?;
    Ok(())
}
