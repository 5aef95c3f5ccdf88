//! The OpenID Connect token endpoint (reference A1): password, client-credentials and refresh-token grants,
//! form-encoded, with Keycloak's response key order and its RFC 6749 error answers.

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;
use serde_json::{Value, json};

use super::app::{App, Shared};
use super::ids::{new_id, new_token};
use super::model::{Client, Realm};
use super::signing::SigningKey;
use super::store::{IssuedToken, Store};
use super::wire::{ApiError, JSON, json_with};

/// The 200 body, in Keycloak's key order (`not-before-policy` really has hyphens).
#[derive(Debug, Serialize)]
struct TokenResponse {
    access_token: String,
    expires_in: u64,
    refresh_expires_in: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    refresh_token: Option<String>,
    token_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id_token: Option<String>,
    #[serde(rename = "not-before-policy")]
    not_before_policy: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_state: Option<String>,
    scope: String,
}

fn oauth(status: StatusCode, error: &str, description: &str) -> ApiError {
    ApiError::OAuth(status, error.into(), description.into())
}

/// The mapper type that puts a user's groups into tokens.
const GROUP_MEMBERSHIP_MAPPER: &str = "oidc-group-membership-mapper";

const BAD_CLIENT: &str = "Invalid client or Invalid client credentials";

/// `POST /realms/{realm}/protocol/openid-connect/token`.
pub async fn token(State(app): State<App>, Path(realm): Path<String>, headers: HeaderMap, body: Bytes) -> Response {
    let form: Vec<(String, String)> = url::form_urlencoded::parse(&body).into_owned().collect();
    let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("localhost");
    let issuer = format!("http://{host}{}/realms/{realm}", app.prefix);
    let now = app.clock.now();
    let now_seconds = app.clock.epoch_seconds();
    let mut store = app.lock();
    let result = (|| {
        if !store.realms.contains_key(&realm) {
            return Err(ApiError::not_found("Realm does not exist"));
        }
        let grant = field("grant_type").ok_or_else(|| {
            oauth(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "Missing form parameter: grant_type",
            )
        })?;
        let exchange_on = store.standard_token_exchange;
        let supported = matches!(grant, "password" | "client_credentials" | "refresh_token")
            || (grant == TOKEN_EXCHANGE_GRANT && exchange_on);
        if !supported {
            return Err(oauth(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "Unsupported grant_type",
            ));
        }
        let (client_id, secret) = client_credentials(&headers, field("client_id"), field("client_secret"));
        let realm_data = store
            .realms
            .get(&realm)
            .ok_or_else(|| ApiError::not_found("Realm does not exist"))?;
        let client = authenticate_client(realm_data, client_id.as_deref(), secret.as_deref())?;
        let mut audience = None;
        let (user, with_refresh) = match grant {
            "password" => (
                password_user(realm_data, client, field("username"), field("password"))?,
                true,
            ),
            "client_credentials" => (service_account_user(realm_data, client)?, false),
            TOKEN_EXCHANGE_GRANT => {
                let requested: Vec<&str> = form
                    .iter()
                    .filter(|(k, _)| k == "audience")
                    .map(|(_, v)| v.as_str())
                    .collect();
                let exchange = Exchange {
                    subject_token: field("subject_token"),
                    subject_token_type: field("subject_token_type"),
                    requested,
                };
                let (user, granted) = exchanged(&store, &realm, realm_data, client, &exchange, now)?;
                audience = Some(granted);
                (user, false)
            }
            _ => (
                refreshed_user(&store, &realm, client, field("refresh_token"), now)?,
                true,
            ),
        };
        let scope = token_scope(realm_data, client, field("scope"));
        let access_lifespan = realm_data.access_token_lifespan;
        let refresh_lifespan = realm_data.refresh_token_lifespan;
        let client_internal = client.id.clone();
        let client_public_id = client.settings.client_id.clone();
        let grant = Grant {
            realm: &realm,
            client: &client_internal,
            authorized_party: &client_public_id,
            user: &user,
            issuer: &issuer,
            now,
            now_seconds,
            audience,
        };
        Ok(issue(
            &mut store,
            &app.signing,
            &grant,
            access_lifespan,
            with_refresh.then_some(refresh_lifespan),
            scope,
        ))
    })();
    match result {
        Ok(body) => {
            let mut response = json_with(StatusCode::OK, JSON, &body);
            response
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
                .headers_mut()
                .insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
            response
        }
        Err(error) => error.into_response(),
    }
}

/// Who a grant is for, and when it is made.
struct Grant<'a> {
    realm: &'a str,
    client: &'a str,
    authorized_party: &'a str,
    user: &'a str,
    issuer: &'a str,
    now: std::time::Instant,
    now_seconds: u64,
    /// The `aud` of an exchanged token (`account` otherwise).
    audience: Option<Vec<String>>,
}

fn issue(
    store: &mut Store,
    signing: &SigningKey,
    grant: &Grant<'_>,
    access_lifespan: Duration,
    refresh_lifespan: Option<Duration>,
    scope: String,
) -> TokenResponse {
    let (issuer, now, now_seconds) = (grant.issuer, grant.now, grant.now_seconds);
    let expires_in = access_lifespan.as_secs();
    let mut claims = json!({
        "exp": now_seconds + expires_in, "iat": now_seconds, "jti": new_id(), "iss": issuer,
        "aud": grant.audience.as_ref().map_or_else(|| json!("account"), |aud| json!(aud)),
        "sub": grant.user, "typ": "Bearer", "azp": grant.authorized_party, "scope": scope,
    });
    if let Some(realm) = store.realms.get(grant.realm) {
        add_user_claims(&mut claims, realm, grant.client, grant.user);
    }
    let access_token = signing.sign(&claims);
    let record = |lifespan: Duration| IssuedToken {
        realm: grant.realm.to_string(),
        client: grant.client.to_string(),
        user: grant.user.to_string(),
        expires_at: now + lifespan,
    };
    // Forget expired tokens as new ones are issued, so long-running emulators do not grow without bound.
    store.tokens.retain(|_, t| t.expires_at > now);
    store.refresh_tokens.retain(|_, t| t.expires_at > now);
    store.tokens.insert(access_token.clone(), record(access_lifespan));
    let refresh_token = refresh_lifespan.map(|lifespan| {
        let token = new_token(
            issuer,
            grant.authorized_party,
            now_seconds,
            now_seconds + lifespan.as_secs(),
            "Refresh",
        );
        store.refresh_tokens.insert(token.clone(), record(lifespan));
        token
    });
    let openid = scope.split(' ').any(|s| s == "openid");
    TokenResponse {
        access_token,
        expires_in,
        refresh_expires_in: refresh_lifespan.map_or(0, |l| l.as_secs()),
        session_state: refresh_token.as_ref().map(|_| new_id()),
        refresh_token,
        token_type: "Bearer",
        id_token: openid.then(|| {
            new_token(
                issuer,
                grant.authorized_party,
                now_seconds,
                now_seconds + expires_in,
                "ID",
            )
        }),
        not_before_policy: 0,
        scope,
    }
}

/// The user's `preferred_username`, and the claims of the client's group-membership mappers that go into access
/// tokens (`claim.name`; group paths, or names with `full.path: "false"`), as Keycloak puts them there.
fn add_user_claims(claims: &mut Value, realm: &Realm, client: &str, user: &str) {
    let Some(object) = claims.as_object_mut() else {
        return;
    };
    if let Some(account) = realm.users.get(user) {
        object.insert("preferred_username".into(), json!(account.username));
    }
    let Some(client) = realm.clients.get(client) else {
        return;
    };
    let groups: Vec<&String> = realm
        .memberships
        .iter()
        .filter(|(member, _)| member == user)
        .map(|(_, group)| group)
        .collect();
    for mapper in client
        .protocol_mappers
        .iter()
        .filter(|m| m.protocol_mapper == GROUP_MEMBERSHIP_MAPPER)
    {
        let setting = |key: &str| mapper.config.get(key).map(String::as_str);
        let (Some(claim), true) = (setting("claim.name"), setting("access.token.claim") != Some("false")) else {
            continue;
        };
        let full_path = setting("full.path") != Some("false");
        let values: Vec<String> = groups
            .iter()
            .map(|id| {
                if full_path {
                    realm.group_path(id)
                } else {
                    realm.groups.get(*id).map(|g| g.name.clone()).unwrap_or_default()
                }
            })
            .collect();
        object.insert(claim.to_string(), json!(values));
    }
}

/// The access token a browser login of `username` through the client `client_id` ends with (the
/// authorization-code flow, which the emulator does not serve): the same claims and signature as every token.
pub fn login(shared: &Shared, realm: &str, client_id: &str, username: &str) -> Result<String, String> {
    let issuer = format!("http://keycloak{}/realms/{realm}", shared.prefix);
    let (now, now_seconds) = (shared.clock.now(), shared.clock.epoch_seconds());
    let mut store = shared.lock();
    let realm_data = store.realms.get(realm).ok_or("no such realm")?;
    let client = realm_data.client_by_client_id(client_id).ok_or("no such client")?;
    let user = realm_data
        .users
        .values()
        .find(|u| u.username == username.to_lowercase() && u.enabled)
        .ok_or("no such enabled user")?;
    let (client_internal, user_id) = (client.id.clone(), user.id.clone());
    let lifespan = realm_data.access_token_lifespan;
    let grant = Grant {
        realm,
        client: &client_internal,
        authorized_party: client_id,
        user: &user_id,
        issuer: &issuer,
        now,
        now_seconds,
        audience: None,
    };
    Ok(issue(&mut store, &shared.signing, &grant, lifespan, None, "openid".into()).access_token)
}

/// `GET /realms/{realm}/protocol/openid-connect/certs`: the public key tokens are signed with.
pub async fn certs(State(app): State<App>, Path(realm): Path<String>) -> Response {
    if !app.lock().realms.contains_key(&realm) {
        return ApiError::not_found("Realm does not exist").into_response();
    }
    json_with(StatusCode::OK, JSON, &app.signing.jwks())
}

/// The grant type of token exchange (RFC 8693).
const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The only subject token type standard token exchange accepts.
const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
/// The requester attribute that turns standard token exchange on.
const STANDARD_EXCHANGE_ATTRIBUTE: &str = "standard.token.exchange.enabled";
/// The mapper type that adds an audience to a client's tokens.
const AUDIENCE_MAPPER: &str = "oidc-audience-mapper";

/// The parameters of a token-exchange request.
struct Exchange<'a> {
    subject_token: Option<&'a str>,
    subject_token_type: Option<&'a str>,
    requested: Vec<&'a str>,
}

/// The audiences a client's access tokens carry through its audience mappers.
fn mapped_audiences(client: &Client) -> Vec<String> {
    client
        .protocol_mappers
        .iter()
        .filter(|m| m.protocol_mapper == AUDIENCE_MAPPER)
        .filter(|m| m.config.get("access.token.claim").map(String::as_str) != Some("false"))
        .filter_map(|m| m.config.get("included.client.audience").cloned())
        .collect()
}

/// Standard token exchange (Keycloak 26.2+): a confidential requester with `standard.token.exchange.enabled`
/// exchanges a user's access token that was issued to it (or names it in its audience) for one whose audience
/// is what the requester's audience mappers allow, narrowed by `audience`. Returns the user and the audience.
fn exchanged(
    store: &Store,
    realm_name: &str,
    realm: &Realm,
    requester: &Client,
    exchange: &Exchange<'_>,
    now: std::time::Instant,
) -> Result<(String, Vec<String>), ApiError> {
    if requester.settings.public_client {
        return Err(oauth(
            StatusCode::BAD_REQUEST,
            "invalid_client",
            "Public client is not allowed to exchange token",
        ));
    }
    if requester
        .settings
        .attributes
        .get(STANDARD_EXCHANGE_ATTRIBUTE)
        .map(String::as_str)
        != Some("true")
    {
        return Err(oauth(
            StatusCode::BAD_REQUEST,
            "invalid_client",
            "Standard token exchange is not enabled for the requested client",
        ));
    }
    if exchange.subject_token_type.is_some_and(|t| t != ACCESS_TOKEN_TYPE) {
        return Err(oauth(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "Parameter 'subject_token' supports access tokens only",
        ));
    }
    let subject = exchange
        .subject_token
        .and_then(|t| store.tokens.get(t))
        .filter(|t| t.realm == realm_name && t.expires_at > now)
        .ok_or_else(|| oauth(StatusCode::BAD_REQUEST, "invalid_token", "Invalid token"))?;
    let issued_to_requester = subject.client == requester.id;
    let names_requester = realm
        .clients
        .get(&subject.client)
        .is_some_and(|issuer| mapped_audiences(issuer).contains(&requester.settings.client_id));
    if !issued_to_requester && !names_requester {
        return Err(oauth(
            StatusCode::FORBIDDEN,
            "access_denied",
            "Client is not within the token audience",
        ));
    }
    let available = mapped_audiences(requester);
    if let Some(missing) = exchange.requested.iter().find(|a| !available.iter().any(|x| x == *a)) {
        return Err(oauth(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            &format!("Requested audience not available: {missing}"),
        ));
    }
    let audience = if exchange.requested.is_empty() {
        available
    } else {
        exchange.requested.iter().map(|a| a.to_string()).collect()
    };
    Ok((subject.user.clone(), audience))
}

/// The client id and secret from HTTP Basic (preferred) or the form.
fn client_credentials(
    headers: &HeaderMap,
    form_id: Option<&str>,
    form_secret: Option<&str>,
) -> (Option<String>, Option<String>) {
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("basic"))
        .and_then(|(_, encoded)| STANDARD.decode(encoded.trim()).ok())
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|pair| {
            pair.split_once(':')
                .map(|(id, secret)| (id.to_string(), secret.to_string()))
        });
    let decode = |s: &str| {
        url::form_urlencoded::parse(format!("v={s}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
    };
    match basic {
        Some((id, secret)) => (decode(&id), decode(&secret)),
        None => (form_id.map(str::to_string), form_secret.map(str::to_string)),
    }
}

fn authenticate_client<'a>(
    realm: &'a Realm,
    client_id: Option<&str>,
    secret: Option<&str>,
) -> Result<&'a Client, ApiError> {
    let client = client_id
        .and_then(|id| realm.client_by_client_id(id))
        .filter(|c| c.settings.enabled)
        .ok_or_else(|| oauth(StatusCode::UNAUTHORIZED, "invalid_client", BAD_CLIENT))?;
    if client.settings.public_client {
        return Ok(client);
    }
    match (&client.settings.secret, secret) {
        (Some(expected), Some(given)) if expected == given => Ok(client),
        _ => Err(oauth(StatusCode::UNAUTHORIZED, "unauthorized_client", BAD_CLIENT)),
    }
}

fn password_user(
    realm: &Realm,
    client: &Client,
    username: Option<&str>,
    password: Option<&str>,
) -> Result<String, ApiError> {
    if !client.settings.direct_access_grants_enabled {
        return Err(oauth(
            StatusCode::BAD_REQUEST,
            "unauthorized_client",
            "Client not allowed for direct access grants",
        ));
    }
    let invalid = || oauth(StatusCode::BAD_REQUEST, "invalid_grant", "Invalid user credentials");
    let username = username.ok_or_else(invalid)?;
    let user = realm
        .user_by_username(username)
        .or_else(|| realm.user_by_email(username))
        .ok_or_else(invalid)?;
    if user.password.is_none() || user.password.as_deref() != password {
        return Err(invalid());
    }
    if !user.enabled {
        return Err(oauth(StatusCode::BAD_REQUEST, "invalid_grant", "Account disabled"));
    }
    Ok(user.id.clone())
}

fn service_account_user(realm: &Realm, client: &Client) -> Result<String, ApiError> {
    if client.settings.public_client {
        return Err(oauth(
            StatusCode::UNAUTHORIZED,
            "unauthorized_client",
            "Public client not allowed to retrieve service account",
        ));
    }
    if !client.settings.service_accounts_enabled {
        return Err(oauth(
            StatusCode::UNAUTHORIZED,
            "unauthorized_client",
            "Client not enabled to retrieve service account",
        ));
    }
    realm
        .users
        .values()
        .find(|u| u.service_account_client.as_deref() == Some(client.id.as_str()))
        .map(|u| u.id.clone())
        .ok_or_else(|| {
            oauth(
                StatusCode::UNAUTHORIZED,
                "unauthorized_client",
                "Client not enabled to retrieve service account",
            )
        })
}

fn refreshed_user(
    store: &Store,
    realm: &str,
    client: &Client,
    refresh_token: Option<&str>,
    now: std::time::Instant,
) -> Result<String, ApiError> {
    refresh_token
        .and_then(|t| store.refresh_tokens.get(t))
        .filter(|t| t.realm == realm && t.client == client.id && t.expires_at > now)
        .map(|t| t.user.clone())
        .ok_or_else(|| oauth(StatusCode::BAD_REQUEST, "invalid_grant", "Invalid refresh token"))
}

/// The `scope` of a response: `openid` when asked for, then the client's default scopes that go into tokens.
fn token_scope(realm: &Realm, client: &Client, requested: Option<&str>) -> String {
    let mut scopes: Vec<String> = Vec::new();
    if requested.is_some_and(|r| r.split(' ').any(|s| s == "openid")) {
        scopes.push("openid".into());
    }
    scopes.extend(
        client
            .default_scopes
            .iter()
            .filter_map(|id| realm.client_scopes.get(id))
            .filter(|s| s.attributes.get("include.in.token.scope").map(String::as_str) == Some("true"))
            .map(|s| s.name.clone()),
    );
    scopes.join(" ")
}
