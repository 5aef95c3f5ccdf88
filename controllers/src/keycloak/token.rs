//! Logging in: the form-encoded token endpoint with the password or client-credentials grant.

use std::time::Duration;

use framework::http::{ExternalApi, HttpError, Idempotency};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use url::Url;

use super::client::explain;
use super::credentials::Credentials;
use super::error::KeycloakError;

/// The fields of a token response the client uses (admin tokens are opaque to it: Keycloak 26 issues
/// lightweight admin tokens without the usual claims).
#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    expires_in: u64,
}

/// `{base}/realms/{realm}/protocol/openid-connect/token`.
pub(crate) fn token_url(base: &Url, realm: &str) -> Result<Url, KeycloakError> {
    let mut url = base.clone();
    url.path_segments_mut()
        .map_err(|_| KeycloakError::InvalidInput {
            operation: "login",
            reason: "base URL cannot have a path".into(),
        })?
        .pop_if_empty()
        .extend(["realms", realm, "protocol", "openid-connect", "token"]);
    Ok(url)
}

/// The form fields of a login (secrets exposed here only, to build the request body).
fn form(credentials: &Credentials) -> Vec<(&'static str, &str)> {
    match credentials {
        Credentials::Password {
            username,
            password,
            client_id,
            client_secret,
        } => {
            let mut fields = vec![
                ("grant_type", "password"),
                ("client_id", client_id.as_str()),
                ("username", username.as_str()),
                ("password", password.expose_secret()),
            ];
            if let Some(secret) = client_secret {
                fields.push(("client_secret", secret.expose_secret()));
            }
            fields
        }
        Credentials::ClientCredentials {
            client_id,
            client_secret,
        } => vec![
            ("grant_type", "client_credentials"),
            ("client_id", client_id.as_str()),
            ("client_secret", client_secret.expose_secret()),
        ],
    }
}

/// Logs in at `realm`'s token endpoint; returns the access token and its lifetime.
pub(crate) async fn login(
    api: &ExternalApi,
    base: &Url,
    realm: &str,
    credentials: &Credentials,
) -> Result<(SecretString, Duration), KeycloakError> {
    let url = token_url(base, realm)?;
    let request = api.client().post(url).form(&form(credentials));
    let response = api
        .send("login", Idempotency::Idempotent, request, explain)
        .await
        .map_err(|error| match error {
            // 400 and 401 are the token endpoint's "credentials refused" answers (RFC 6749 errors).
            HttpError::Status { status, summary, .. } if status.as_u16() == 400 || status.as_u16() == 401 => {
                KeycloakError::LoginRejected {
                    realm: realm.into(),
                    reason: summary.unwrap_or_else(|| format!("HTTP {}", status.as_u16())),
                }
            }
            other => KeycloakError::Http(other),
        })?;
    let body: TokenResponse = api.json("login", response).await?;
    tracing::debug!(
        realm,
        client_id = credentials.client_id(),
        expires_in = body.expires_in,
        "logged in to keycloak"
    );
    Ok((
        SecretString::from(body.access_token),
        Duration::from_secs(body.expires_in),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_urls_follow_the_prefix() {
        let base = Url::parse("http://kc:8080/auth").expect("url");
        assert_eq!(
            token_url(&base, "master").expect("url").as_str(),
            "http://kc:8080/auth/realms/master/protocol/openid-connect/token"
        );
    }

    #[test]
    fn forms_carry_the_grant_and_only_the_needed_fields() {
        let password = Credentials::admin_password("admin", SecretString::from("pw"));
        assert_eq!(
            form(&password),
            vec![
                ("grant_type", "password"),
                ("client_id", "admin-cli"),
                ("username", "admin"),
                ("password", "pw")
            ]
        );
        let service = Credentials::client_credentials("svc", SecretString::from("s"));
        assert_eq!(
            form(&service),
            vec![
                ("grant_type", "client_credentials"),
                ("client_id", "svc"),
                ("client_secret", "s")
            ]
        );
    }
}
