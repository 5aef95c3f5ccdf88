//! The service user's password, read from the Secret the spec names at the moment it is needed (so a changed
//! password is used without a restart).

use framework::error::kube_error;
use k8s_openapi::api::core::v1::Secret;
use kube::{Api, Client};
use secrecy::SecretString;

use super::error::AcError;

/// Reads `key` of Secret `name` in `namespace`.
pub async fn read(client: &Client, namespace: &str, name: &str, key: &str) -> Result<SecretString, AcError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let secret = api
        .get_opt(name)
        .await
        .map_err(kube_error(format!("reading Secret {name}")))?
        .ok_or_else(|| AcError::PasswordSecretNotFound {
            secret: name.to_string(),
        })?;
    extract(&secret, name, key)
}

/// The password under `key`: from `data`, or from `stringData` (as written by a client that bypassed the server).
pub fn extract(secret: &Secret, name: &str, key: &str) -> Result<SecretString, AcError> {
    let missing = || AcError::PasswordKeyMissing {
        secret: name.to_string(),
        key: key.to_string(),
    };
    framework::secrets::value(secret, key)
        .map(SecretString::from)
        .map_err(|_| missing())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;
    use secrecy::ExposeSecret;
    use std::collections::BTreeMap;

    #[test]
    fn the_selected_key_is_read_and_a_missing_key_says_which() {
        let secret = Secret {
            data: Some(BTreeMap::from([(
                "BarbicanPassword".to_string(),
                ByteString(b"pw".to_vec()),
            )])),
            ..Secret::default()
        };
        assert_eq!(
            extract(&secret, "osp-secret", "BarbicanPassword")
                .expect("found")
                .expose_secret(),
            "pw"
        );
        let error = extract(&secret, "osp-secret", "NovaPassword").expect_err("missing");
        assert_eq!(
            error.to_string(),
            "Secret osp-secret has no key NovaPassword (spec.passwordSelector)"
        );
    }
}
