//! The JSON Keystone's identity API v3 speaks, as typed requests and responses.
//!
//! Only what the application credential controller sends and reads is modelled; unknown response fields are
//! ignored so newer Keystone releases keep working.

use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Body of a project-scoped password login (`POST /v3/auth/tokens`).
pub fn password_login(
    user_name: &str,
    user_domain: &str,
    password: &SecretString,
    project_name: &str,
    project_domain: &str,
) -> Value {
    json!({
        "auth": {
            "identity": {
                "methods": ["password"],
                "password": {"user": {
                    "name": user_name,
                    "domain": {"name": user_domain},
                    "password": password.expose_secret(),
                }},
            },
            "scope": {"project": {"name": project_name, "domain": {"name": project_domain}}},
        }
    })
}

/// Body of a login with an application credential (no scope: the credential carries its own).
pub fn application_credential_login(id: &str, secret: &SecretString) -> Value {
    json!({
        "auth": {
            "identity": {
                "methods": ["application_credential"],
                "application_credential": {"id": id, "secret": secret.expose_secret()},
            }
        }
    })
}

/// The token document of a login answer (the same document token validation returns).
#[derive(Debug, Deserialize)]
pub struct TokenResponse {
    /// The token's data.
    pub token: TokenBody,
}

/// What a token says about itself.
#[derive(Debug, Deserialize)]
pub struct TokenBody {
    /// The user the token belongs to.
    pub user: TokenUser,
    /// When the token stops being valid.
    pub expires_at: String,
}

/// The user a token was issued to.
#[derive(Debug, Deserialize)]
pub struct TokenUser {
    /// The user's id.
    pub id: String,
}

/// Body of `POST /v3/users/{user_id}/application_credentials`.
#[derive(Debug, Serialize)]
pub struct CreateRequest<'a> {
    /// Keystone wraps the credential in this key.
    pub application_credential: CreateBody<'a>,
}

/// The credential to create.
#[derive(Debug, Serialize)]
pub struct CreateBody<'a> {
    /// Unique (per user) name.
    pub name: &'a str,
    /// Free text shown to administrators.
    pub description: &'a str,
    /// The client-chosen secret; Keystone generates one when absent.
    pub secret: &'a str,
    /// Expiry, in the one format Keystone accepts (see [`format_expires_at`]).
    pub expires_at: String,
    /// Whether it may manage other credentials and trusts.
    pub unrestricted: bool,
    /// Roles, by name.
    pub roles: Vec<RoleRef<'a>>,
    /// Access rules; omitted when empty (no restriction).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub access_rules: Vec<AccessRuleBody<'a>>,
}

/// A role named in a create request.
#[derive(Debug, Serialize)]
pub struct RoleRef<'a> {
    /// Role name.
    pub name: &'a str,
}

/// An access rule as Keystone expects it.
#[derive(Debug, Serialize)]
pub struct AccessRuleBody<'a> {
    /// Service type.
    pub service: &'a str,
    /// API path.
    pub path: &'a str,
    /// HTTP method.
    pub method: &'a str,
}

/// Answer to a create: the credential (with its secret, which we supplied).
#[derive(Debug, Deserialize)]
pub struct CreateResponse {
    /// The created credential.
    pub application_credential: CredentialBody,
}

/// Answer to a list.
#[derive(Debug, Deserialize)]
pub struct ListResponse {
    /// The credentials (without secrets).
    #[serde(default)]
    pub application_credentials: Vec<CredentialBody>,
}

/// An application credential as Keystone describes it (the secret is never read back).
#[derive(Debug, Deserialize)]
pub struct CredentialBody {
    /// 32-hex id.
    pub id: String,
    /// The name it was created with.
    pub name: String,
    /// Free text the creator chose (who made it, for whom).
    #[serde(default)]
    pub description: Option<String>,
    /// Expiry without a zone, e.g. `2027-11-22T10:44:24.166023` (UTC), or null for never.
    #[serde(default)]
    pub expires_at: Option<String>,
    /// Roles it carries.
    #[serde(default)]
    pub roles: Vec<RoleBody>,
    /// Whether it is unrestricted (null when the create left it out).
    #[serde(default)]
    pub unrestricted: Option<bool>,
    /// Access rules it carries.
    #[serde(default)]
    pub access_rules: Vec<AccessRuleResponse>,
}

/// A role as Keystone describes it.
#[derive(Debug, Deserialize)]
pub struct RoleBody {
    /// Role name.
    pub name: String,
}

/// An access rule as Keystone describes it.
#[derive(Debug, Deserialize)]
pub struct AccessRuleResponse {
    /// Service type.
    pub service: String,
    /// API path.
    pub path: String,
    /// HTTP method.
    pub method: String,
}

/// Keystone's error envelope: `{"error": {"code": 409, "message": "...", "title": "Conflict"}}`.
#[derive(Debug, Deserialize)]
struct ErrorEnvelope {
    error: ErrorBody,
}

#[derive(Debug, Deserialize)]
struct ErrorBody {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    title: Option<String>,
}

/// Extracts the human-readable message of a Keystone error body (never the raw body).
pub fn error_message(body: &[u8]) -> Option<String> {
    let envelope: ErrorEnvelope = serde_json::from_slice(body).ok()?;
    envelope
        .error
        .message
        .or(envelope.error.title)
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
}

/// Formats an expiry the way Keystone accepts it: UTC, microseconds, no offset (`+00:00` is refused with 400).
pub fn format_expires_at(at: Timestamp) -> String {
    at.to_zoned(TimeZone::UTC).strftime("%Y-%m-%dT%H:%M:%S%.6f").to_string()
}

/// Parses a Keystone timestamp: zone-less values are UTC; values with `Z` or an offset are accepted too.
pub fn parse_timestamp(value: &str) -> Option<Timestamp> {
    if let Ok(at) = value.parse::<Timestamp>() {
        return Some(at);
    }
    let civil: DateTime = value.parse().ok()?;
    civil.to_zoned(TimeZone::UTC).ok().map(|zoned| zoned.timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_login_is_project_scoped_in_the_given_domains() {
        let body = password_login("barbican", "Default", &SecretString::from("pw"), "service", "Default");
        assert_eq!(body["auth"]["identity"]["methods"], json!(["password"]));
        assert_eq!(body["auth"]["identity"]["password"]["user"]["name"], "barbican");
        assert_eq!(
            body["auth"]["identity"]["password"]["user"]["domain"]["name"],
            "Default"
        );
        assert_eq!(
            body["auth"]["scope"]["project"],
            json!({"name": "service", "domain": {"name": "Default"}})
        );
    }

    #[test]
    fn expires_at_has_no_offset_and_microseconds() {
        let at: Timestamp = "2026-05-29T09:02:28.705012345Z".parse().expect("timestamp");
        assert_eq!(format_expires_at(at), "2026-05-29T09:02:28.705012");
        let whole: Timestamp = "2026-05-29T09:02:28Z".parse().expect("timestamp");
        assert_eq!(format_expires_at(whole), "2026-05-29T09:02:28.000000");
    }

    #[test]
    fn keystone_timestamps_without_zone_are_utc() {
        let expected: Timestamp = "2027-11-22T10:44:24.166023Z".parse().expect("timestamp");
        assert_eq!(parse_timestamp("2027-11-22T10:44:24.166023"), Some(expected));
        assert_eq!(parse_timestamp("2027-11-22T10:44:24.166023Z"), Some(expected));
        assert_eq!(parse_timestamp("2027-11-22T11:44:24.166023+01:00"), Some(expected));
        assert_eq!(parse_timestamp("not a time"), None);
    }

    #[test]
    fn error_message_reads_the_envelope_only() {
        let body = br#"{"error":{"code":409,"message":"Conflict occurred attempting to store application_credential - Duplicate entry found with name x.","title":"Conflict"}}"#;
        assert_eq!(
            error_message(body).as_deref(),
            Some("Conflict occurred attempting to store application_credential - Duplicate entry found with name x.")
        );
        assert_eq!(
            error_message(br#"{"error":{"code":500,"title":"Internal Server Error"}}"#).as_deref(),
            Some("Internal Server Error")
        );
        assert_eq!(error_message(b"<html>bad gateway</html>"), None);
    }

    #[test]
    fn create_body_omits_empty_access_rules() {
        let body = CreateRequest {
            application_credential: CreateBody {
                name: "ac-barbican-x7k2p",
                description: "d",
                secret: "s",
                expires_at: "2026-05-29T09:02:28.000000".into(),
                unrestricted: false,
                roles: vec![RoleRef { name: "service" }],
                access_rules: Vec::new(),
            },
        };
        let value = serde_json::to_value(&body).expect("serializes");
        assert!(value["application_credential"].get("access_rules").is_none());
        assert_eq!(value["application_credential"]["roles"], json!([{"name": "service"}]));
    }
}
