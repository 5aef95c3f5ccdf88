//! The realm signing key (one per emulator, ES256 on P-256) and the JWKS that publishes it, so that what
//! verifies Keycloak's tokens in production (Envoy's `jwt_authn` filter reading `remoteJWKS`) can verify the
//! emulator's: a signed access token is what a gateway's authorization rules are evaluated against.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

/// The emulator's signing key with its public half as a JWK.
pub struct SigningKey {
    kid: String,
    encoding: EncodingKey,
    jwk: Value,
}

/// Why the signing key could not be made (the platform's random source or ring failed).
#[derive(Debug, thiserror::Error)]
#[error("cannot make the realm signing key: {0}")]
pub struct KeyError(String);

impl SigningKey {
    /// A fresh key.
    pub fn generate() -> Result<Self, KeyError> {
        let random = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &random)
            .map_err(|e| KeyError(e.to_string()))?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &random)
            .map_err(|e| KeyError(e.to_string()))?;
        // An uncompressed P-256 point: 0x04, then x and y (32 bytes each).
        let point = pair.public_key().as_ref();
        let (x, y) = point
            .get(1..33)
            .zip(point.get(33..65))
            .ok_or_else(|| KeyError("unexpected public key encoding".into()))?;
        let kid = super::ids::new_id();
        let jwk = json!({
            "kid": kid, "kty": "EC", "alg": "ES256", "use": "sig", "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(x), "y": URL_SAFE_NO_PAD.encode(y),
        });
        Ok(Self {
            kid,
            encoding: EncodingKey::from_ec_der(pkcs8.as_ref()),
            jwk,
        })
    }

    /// `claims` as a signed compact JWT.
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        // Signing a JSON value with a key made above cannot fail; an empty token (refused by every verifier)
        // is the answer if it ever did.
        jsonwebtoken::encode(&header, claims, &self.encoding).unwrap_or_default()
    }

    /// The JWKS document of `GET /realms/{realm}/protocol/openid-connect/certs`.
    pub fn jwks(&self) -> Value {
        json!({"keys": [self.jwk]})
    }
}

#[cfg(test)]
mod tests {
    use jsonwebtoken::{DecodingKey, Validation, jwk::Jwk};

    use super::*;

    #[test]
    fn tokens_verify_against_the_published_key_only() {
        let key = SigningKey::generate().expect("key");
        let token = key.sign(&json!({"sub": "u", "groups": ["a"], "exp": 4_000_000_000u64}));
        let jwk: Jwk = serde_json::from_value(key.jwks()["keys"][0].clone()).expect("jwk");
        let decoding = DecodingKey::from_jwk(&jwk).expect("decoding key");
        let mut validation = Validation::new(Algorithm::ES256);
        validation.validate_aud = false;
        let claims = jsonwebtoken::decode::<Value>(&token, &decoding, &validation).expect("verifies");
        assert_eq!(claims.claims["groups"], json!(["a"]));
        let other = SigningKey::generate().expect("key");
        let forged = other.sign(&json!({"sub": "u", "groups": ["admin"], "exp": 4_000_000_000u64}));
        assert!(jsonwebtoken::decode::<Value>(&forged, &decoding, &validation).is_err());
    }
}
