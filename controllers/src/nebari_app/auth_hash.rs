//! `status.authConfigHash`: a fingerprint of everything that shapes the app's Keycloak state.
//!
//! While the hash matches and AuthReady is True, a reconcile makes no Keycloak call at all. Unlike the original
//! (which left them out) it covers the device-flow client, token exchange, the realm and the Keycloak URL, and
//! the URL scheme the redirect URIs use, so changing any of them re-provisions; and the operator's own
//! provisioning revision, so an upgrade that provisions more re-provisions once.

use crds::nebari::{AuthConfig, NebariApp};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::settings::NebariAppSettings;

/// The revision of what the operator provisions in Keycloak for a given spec. Raised whenever a release
/// provisions something new for the same spec (2: `fullScopeAllowed` off and the gateway's groups mapper), so
/// that after an upgrade every app is provisioned once more instead of keeping its clients as they were.
const PROVISIONING_REVISION: u32 = 2;

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
        "revision": PROVISIONING_REVISION,
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
        // The platform's limits: narrowing them re-checks every app against them (a refusal shows on the app)
        // instead of leaving what an app provisioned under the old limits unexamined.
        "policy": format!("{:?}", settings.keycloak_policy),
    });
    hex::encode(Sha256::digest(document.to_string().as_bytes()))
}

/// The Keycloak gate: whether the clients provisioned before can be used as they are, without calling Keycloak.
/// Only when their Secret is complete, no re-provisioning is forced, the last pass ended with AuthReady True, and
/// the configuration's hash is the one recorded when they were provisioned.
pub fn may_reuse_clients(
    secret_complete: bool,
    forced: bool,
    auth_was_ready: bool,
    recorded_hash: Option<&str>,
    hash: &str,
) -> bool {
    secret_complete && !forced && auth_was_ready && recorded_hash == Some(hash)
}

#[cfg(test)]
mod tests {

    use super::*;

    fn app() -> NebariApp {
        crate::nebari_app::example_app(None)
    }

    fn auth(value: serde_json::Value) -> AuthConfig {
        serde_json::from_value(value).expect("auth config")
    }

    #[test]
    fn the_hash_ignores_order_but_sees_every_keycloak_shaping_input() {
        let settings = NebariAppSettings::example();
        let base = auth(json!({"enabled": true, "scopes": ["openid", "email"], "groups": ["a", "b"]}));
        let hash = auth_config_hash(&app(), &base, &settings, true, &[]);
        assert_eq!(hash.len(), 64, "hex SHA-256");
        let reordered = auth(json!({"enabled": true, "scopes": ["email", "openid", "email"], "groups": ["b", "a"]}));
        assert_eq!(auth_config_hash(&app(), &reordered, &settings, true, &[]), hash);

        assert_ne!(
            auth_config_hash(&app(), &base, &settings, false, &[]),
            hash,
            "the redirect scheme"
        );
        assert_ne!(
            auth_config_hash(&app(), &base, &settings, true, &["peer".into()]),
            hash,
            "a token-exchange peer"
        );
        let device = auth(
            json!({"enabled": true, "scopes": ["openid", "email"], "groups": ["a", "b"],
            "deviceFlowClient": {"enabled": true}}),
        );
        assert_ne!(
            auth_config_hash(&app(), &device, &settings, true, &[]),
            hash,
            "the device client"
        );
        let mut other_realm = settings.clone();
        other_realm.keycloak.realm = "other".into();
        assert_ne!(
            auth_config_hash(&app(), &base, &other_realm, true, &[]),
            hash,
            "the realm"
        );
        let mut narrowed = settings.clone();
        narrowed.keycloak_policy.client_scopes.retain(|scope| scope != "groups");
        assert_ne!(
            auth_config_hash(&app(), &base, &narrowed, true, &[]),
            hash,
            "the platform's limits"
        );
        let mut moved = app();
        moved.spec.hostname = "new.example.com".into();
        assert_ne!(
            auth_config_hash(&moved, &base, &settings, true, &[]),
            hash,
            "the hostname"
        );
    }

    #[test]
    fn keycloak_is_skipped_only_when_everything_still_matches() {
        assert!(may_reuse_clients(true, false, true, Some("h"), "h"));
        assert!(
            !may_reuse_clients(false, false, true, Some("h"), "h"),
            "the client Secret is gone or incomplete"
        );
        assert!(
            !may_reuse_clients(true, true, true, Some("h"), "h"),
            "re-provisioning is forced"
        );
        assert!(
            !may_reuse_clients(true, false, false, Some("h"), "h"),
            "the last pass did not finish"
        );
        assert!(
            !may_reuse_clients(true, false, true, Some("old"), "h"),
            "the configuration changed"
        );
        assert!(!may_reuse_clients(true, false, true, None, "h"), "never provisioned");
    }
}
