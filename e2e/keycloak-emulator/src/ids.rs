//! Random identifiers, secrets and tokens in the shapes Keycloak uses.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::Rng;
use rand::distr::Alphanumeric;

/// A random version-4 UUID in its usual 8-4-4-4-12 text form (Keycloak ids are UUIDs).
pub fn new_id() -> String {
    let mut bytes: [u8; 16] = rand::rng().random();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// A random 32-character client secret (what Keycloak generates).
pub fn new_secret() -> String {
    rand::rng()
        .sample_iter(&Alphanumeric)
        .take(32)
        .map(char::from)
        .collect()
}

/// An opaque token shaped like a JWT (three base64url parts) carrying only the lightweight claims Keycloak 26
/// puts into admin-cli tokens (no `sub`, `aud` or roles), so callers cannot come to depend on claims.
pub fn new_token(issuer: &str, authorized_party: &str, issued_at: u64, expires_at: u64, kind: &str) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256","typ":"JWT"}"#);
    let claims = serde_json::json!({
        "exp": expires_at,
        "iat": issued_at,
        "jti": new_id(),
        "iss": issuer,
        "typ": kind,
        "azp": authorized_party,
    });
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    let signature: [u8; 32] = rand::rng().random();
    format!("{header}.{payload}.{}", URL_SAFE_NO_PAD.encode(signature))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_version_four_uuids() {
        let id = new_id();
        assert_eq!(id.len(), 36);
        assert_eq!(id.as_bytes()[14], b'4');
        assert!(matches!(id.as_bytes()[19], b'8' | b'9' | b'a' | b'b'));
        assert_ne!(id, new_id());
    }

    #[test]
    fn secrets_are_32_alphanumerics() {
        let secret = new_secret();
        assert_eq!(secret.len(), 32);
        assert!(secret.chars().all(|c| c.is_ascii_alphanumeric()));
    }

    #[test]
    fn tokens_have_three_parts_and_no_subject() {
        let token = new_token("http://kc/realms/master", "admin-cli", 1, 61, "Bearer");
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        let claims = URL_SAFE_NO_PAD.decode(parts[1]).expect("base64url claims");
        let claims: serde_json::Value = serde_json::from_slice(&claims).expect("json claims");
        assert_eq!(claims["exp"], 61);
        assert!(claims.get("sub").is_none() && claims.get("aud").is_none());
    }
}
