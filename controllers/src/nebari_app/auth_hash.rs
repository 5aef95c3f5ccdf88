//! `status.authConfigHash`: a fingerprint of everything that shapes the app's Keycloak state.
//!
//! While the hash matches and AuthReady is True, a reconcile makes no Keycloak call at all. Unlike the original
//! (which left them out) it covers the device-flow client, token exchange, the realm and the Keycloak URL, and
//! the URL scheme the redirect URIs use, so changing any of them re-provisions.

use crds::nebari::{AuthConfig, NebariApp};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::settings::NebariAppSettings;

fn sorted(values: Option<&Vec<String>>) -> Vec<String> {
    let mut v = values.cloned().unwrap_or_default();
    v.sort();
    v.dedup();
    v
}

/// The SHA-256 (hex) of the Keycloak-shaping configuration of `app`.
/// `peers` are the clients allowed to exchange tokens for this one (empty unless token exchange is on), so a
/// new peer app re-provisions the permission.
pub fn auth_config_hash(
    app: &NebariApp,
    auth: &AuthConfig,
    settings: &NebariAppSettings,
    tls: bool,
    peers: &[String],
) -> String {
    let document = json!({
        "namespace": app.metadata.namespace,
        "name": app.metadata.name,
        "hostname": app.spec.hostname,
        "tls": tls,
        "provider": auth.provider,
        "redirectURI": auth.redirect_uri,
        "issuerURL": auth.issuer_url,
        "scopes": sorted(auth.scopes.as_ref()),
        "groups": sorted(auth.groups.as_ref()),
        "spaClient": auth.spa_client,
        "deviceFlowClient": auth.device_flow_client,
        "keycloakConfig": auth.keycloak_config,
        "tokenExchange": auth.token_exchange,
        "realm": settings.keycloak.realm,
        "keycloakURL": settings.keycloak.url,
        "externalURL": settings.keycloak_external_url,
        "tokenExchangePeers": peers,
    });
    hex::encode(Sha256::digest(document.to_string().as_bytes()))
}
