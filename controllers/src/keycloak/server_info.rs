//! What the Keycloak server is and which features it runs with (`GET /admin/serverinfo`), for choosing between
//! two ways of doing the same thing: token exchange through fine-grained admin permissions (v1) or the standard
//! token exchange of Keycloak 26.2 and later (v2).

use reqwest::Method;
use serde::Deserialize;

use framework::http::Idempotency;

use super::client::RealmClient;
use super::error::KeycloakError;

/// The feature of legacy (v1) token exchange.
pub const TOKEN_EXCHANGE_V1_FEATURE: &str = "TOKEN_EXCHANGE";
/// Fine-grained admin permissions v1, which v1 token exchange is configured through.
pub const FGAP_V1_FEATURE_NAME: &str = "ADMIN_FINE_GRAINED_AUTHZ";
/// The feature of standard token exchange (on by default from Keycloak 26.2).
pub const STANDARD_TOKEN_EXCHANGE_FEATURE: &str = "TOKEN_EXCHANGE_STANDARD_V2";

/// The parts of `/admin/serverinfo` the operator reads.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerInfo {
    /// Version and host details.
    #[serde(default)]
    pub system_info: SystemInfo,
    /// Every feature the server knows, with whether it is on.
    #[serde(default)]
    pub features: Vec<Feature>,
}

/// `systemInfo`.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct SystemInfo {
    /// The server version, e.g. `26.2.5`.
    #[serde(default)]
    pub version: Option<String>,
}

/// One entry of `features`.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Feature {
    /// The feature's enum name, e.g. `TOKEN_EXCHANGE_STANDARD_V2`.
    pub name: String,
    /// Whether the server runs with it.
    #[serde(default)]
    pub enabled: bool,
}

impl ServerInfo {
    /// Whether feature `name` is listed and on.
    pub fn feature_enabled(&self, name: &str) -> bool {
        self.features.iter().any(|f| f.name == name && f.enabled)
    }

    /// Whether legacy token exchange can be configured: its feature and fine-grained admin permissions v1 on.
    pub fn legacy_token_exchange(&self) -> bool {
        self.feature_enabled(TOKEN_EXCHANGE_V1_FEATURE) && self.feature_enabled(FGAP_V1_FEATURE_NAME)
    }

    /// Whether standard token exchange is available: the feature is on, or (a server that lists no features)
    /// the version is 26.2 or later, where it is on by default.
    pub fn standard_token_exchange(&self) -> bool {
        if self.features.iter().any(|f| f.name == STANDARD_TOKEN_EXCHANGE_FEATURE) {
            return self.feature_enabled(STANDARD_TOKEN_EXCHANGE_FEATURE);
        }
        self.version_at_least(26, 2)
    }

    fn version_at_least(&self, major: u32, minor: u32) -> bool {
        let Some(version) = &self.system_info.version else {
            return false;
        };
        let mut parts = version.split(['.', '-']).map(|p| p.parse::<u32>().ok());
        match (parts.next().flatten(), parts.next().flatten()) {
            (Some(a), Some(b)) => (a, b) >= (major, minor),
            (Some(a), None) => a > major,
            _ => false,
        }
    }
}

impl RealmClient {
    /// The server's version and features (needs an admin of the master realm, or `view-system`).
    pub async fn server_info(&self) -> Result<ServerInfo, KeycloakError> {
        let operation = "read server info";
        let url = self.server_url(&["serverinfo"])?;
        let response = self
            .execute_at(operation, Method::GET, url, &[], None, Idempotency::Idempotent)
            .await?;
        self.decode_json(operation, response).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn info(value: serde_json::Value) -> ServerInfo {
        serde_json::from_value(value).expect("server info")
    }

    #[test]
    fn the_feature_list_decides_and_the_version_is_the_fallback() {
        let v2 = info(json!({"systemInfo": {"version": "26.2.5"}, "features": [
            {"name": "TOKEN_EXCHANGE_STANDARD_V2", "enabled": true, "type": "DEFAULT"},
            {"name": "TOKEN_EXCHANGE", "enabled": false, "type": "PREVIEW"},
        ]}));
        assert!(v2.standard_token_exchange() && !v2.legacy_token_exchange());
        let off = info(json!({"systemInfo": {"version": "26.3.0"}, "features": [
            {"name": "TOKEN_EXCHANGE_STANDARD_V2", "enabled": false},
        ]}));
        assert!(!off.standard_token_exchange());
        let legacy = info(json!({"systemInfo": {"version": "25.0.6"}, "features": [
            {"name": "TOKEN_EXCHANGE", "enabled": true}, {"name": "ADMIN_FINE_GRAINED_AUTHZ", "enabled": true},
        ]}));
        assert!(legacy.legacy_token_exchange() && !legacy.standard_token_exchange());
        assert!(info(json!({"systemInfo": {"version": "26.2.0"}})).standard_token_exchange());
        assert!(info(json!({"systemInfo": {"version": "27.0.0"}})).standard_token_exchange());
        assert!(!info(json!({"systemInfo": {"version": "26.1.4"}})).standard_token_exchange());
        assert!(!info(json!({})).standard_token_exchange());
    }
}
