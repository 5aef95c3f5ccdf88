//! The client's admin token: caching, refresh, rotation, both grants, and how refusals are reported.

use std::sync::{Arc, Mutex};

use controllers::keycloak::{
    Credentials, CredentialsProvider, ErrorKind, KeycloakClient, KeycloakError, StaticCredentials,
};
use framework::ReconcileError;
use futures::future::BoxFuture;
use reqwest::Method;
use secrecy::SecretString;
use serde_json::json;

use crate::support::{
    TOKEN_ROUTE, client, client_config, create_realm_admin, realm_login_config, route, start, user_credentials,
};

/// Credentials that a test can rotate, like a Secret edited in the cluster.
struct Rotating(Mutex<Credentials>);

impl CredentialsProvider for Rotating {
    fn credentials(&self) -> BoxFuture<'_, Result<Credentials, KeycloakError>> {
        let current = self.0.lock().expect("lock").clone();
        Box::pin(async move { Ok(current) })
    }
}

/// A provider whose Secret is missing.
struct Missing;

impl CredentialsProvider for Missing {
    fn credentials(&self) -> BoxFuture<'_, Result<Credentials, KeycloakError>> {
        Box::pin(async {
            Err(KeycloakError::CredentialsUnavailable {
                reason: "secret keycloak/nebari-realm-admin-credentials not found".into(),
            })
        })
    }
}

#[tokio::test]
async fn the_admin_token_is_cached_across_calls() {
    let kc = start("auth-cache").await;
    let realm = client(&kc).realm(kc.realm());
    for _ in 0..5 {
        realm.find_top_level_group("nothing").await.expect("search");
    }
    assert_eq!(kc.proxy().count("POST", TOKEN_ROUTE), 1, "one login for five calls");
    assert_eq!(kc.proxy().count("GET", &route("/groups")), 5);
}

// The client logs in to `master` by default; a short-lived token is made real by logging in to the test's own
// realm (as an operator configured with `admin_realm` does) after shortening that realm's token lifespan.
#[tokio::test]
async fn tokens_expiring_within_the_refresh_margin_are_not_reused() {
    let kc = start("auth-margin").await;
    let (status, body) = kc
        .admin(Method::PUT, "", Some(json!({ "accessTokenLifespan": 5 })))
        .await;
    assert_eq!(status, 204, "shorten the realm's token lifespan: {body}");
    create_realm_admin(&kc, "ops").await;
    let keycloak = KeycloakClient::new(
        realm_login_config(&kc),
        Arc::new(StaticCredentials(user_credentials("ops"))),
        None,
    )
    .expect("client");
    let realm = keycloak.realm(kc.realm());
    realm.find_top_level_group("x").await.expect("first");
    realm.find_top_level_group("x").await.expect("second");
    assert_eq!(
        kc.proxy().count("POST", TOKEN_ROUTE),
        2,
        "a 5 s token is inside the 10 s refresh margin"
    );
}

// Keycloak refuses a token whose session ended (an administrator signed the user out): the client's cached token
// is rejected with 401 before it expires, which is what its one re-login and retry are for.
#[tokio::test]
async fn a_rejected_token_is_replaced_after_one_401() {
    let kc = start("auth-401").await;
    let realm = client(&kc).realm(kc.realm());
    realm.find_top_level_group("x").await.expect("first call");
    kc.log_out_test_admin().await;
    realm
        .find_top_level_group("x")
        .await
        .expect("the 401 triggers a fresh login and one retry");
    assert_eq!(kc.proxy().count("POST", TOKEN_ROUTE), 2);
    assert_eq!(
        kc.proxy().count("GET", &route("/groups")),
        3,
        "first call, the rejected call, its retry"
    );
}

#[tokio::test]
async fn rotated_credentials_take_effect_without_a_restart() {
    let kc = start("auth-rotate").await;
    create_realm_admin(&kc, "ops").await;
    create_realm_admin(&kc, "ops2").await;
    let provider = Arc::new(Rotating(Mutex::new(user_credentials("ops"))));
    let keycloak = KeycloakClient::new(realm_login_config(&kc), provider.clone(), None).expect("client");
    let realm = keycloak.realm(kc.realm());
    realm.find_top_level_group("x").await.expect("as ops");
    *provider.0.lock().expect("lock") = user_credentials("ops2");
    realm.find_top_level_group("x").await.expect("as ops2");
    assert_eq!(kc.proxy().count("POST", TOKEN_ROUTE), 2, "new credentials, new login");
}

#[tokio::test]
async fn refused_credentials_are_unauthorized_without_leaking_the_password() {
    let kc = start("auth-refused").await;
    let (username, _) = kc.admin_credentials();
    let credentials = Credentials::admin_password(username, SecretString::from("wrong-password-123"));
    let keycloak =
        KeycloakClient::new(client_config(&kc, 100), Arc::new(StaticCredentials(credentials)), None).expect("client");
    let error = keycloak
        .realm(kc.realm())
        .find_top_level_group("x")
        .await
        .expect_err("refused");
    assert_eq!(error.kind(), ErrorKind::Unauthorized);
    assert!(matches!(error, KeycloakError::LoginRejected { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("Invalid user credentials"), "{message}");
    assert!(!message.contains("wrong-password-123"), "{message}");
    assert_eq!(error.reason(), "KeycloakUnauthorized");

    // Further calls with the same credentials are held: no login reaches Keycloak (its brute-force detection
    // counts them), and the error says when the next attempt is.
    for _ in 0..5 {
        let held = keycloak
            .realm(kc.realm())
            .find_top_level_group("x")
            .await
            .expect_err("held");
        assert!(matches!(held, KeycloakError::LoginHeld { .. }), "{held:?}");
        assert_eq!(held.reason(), "KeycloakUnauthorized");
        let message = held.to_string();
        assert!(
            message.contains("Invalid user credentials") && message.contains("not tried again"),
            "{message}"
        );
    }
    assert_eq!(
        kc.proxy().count("POST", TOKEN_ROUTE),
        1,
        "one refused login, the rest held"
    );
}

#[tokio::test]
async fn new_credentials_log_in_at_once_after_a_refusal() {
    let kc = start("auth-fixed").await;
    let (username, password) = kc.admin_credentials();
    let provider = Arc::new(Rotating(Mutex::new(Credentials::admin_password(
        username,
        SecretString::from("wrong-password-456"),
    ))));
    let keycloak = KeycloakClient::new(client_config(&kc, 100), provider.clone(), None).expect("client");
    let realm = keycloak.realm(kc.realm());
    let refused = realm.find_top_level_group("x").await.expect_err("refused");
    assert!(matches!(refused, KeycloakError::LoginRejected { .. }), "{refused:?}");
    *provider.0.lock().expect("lock") = Credentials::admin_password(username, SecretString::from(password.to_string()));
    realm
        .find_top_level_group("x")
        .await
        .expect("the fixed credentials log in at once");
    assert_eq!(kc.proxy().count("POST", TOKEN_ROUTE), 2);
}

#[tokio::test]
async fn missing_credentials_are_reported_as_such() {
    let kc = start("auth-missing").await;
    let keycloak = KeycloakClient::new(client_config(&kc, 100), Arc::new(Missing), None).expect("client");
    let error = keycloak
        .realm(kc.realm())
        .get_group("x")
        .await
        .expect_err("no credentials");
    assert_eq!(error.kind(), ErrorKind::Unauthorized);
    assert_eq!(error.category(), framework::ErrorCategory::Dependency);
    assert_eq!(kc.proxy().total(), 0, "nothing is sent without credentials");
}

#[tokio::test]
async fn client_credentials_in_the_target_realm_work() {
    let kc = start("auth-svc").await;
    kc.create_client(json!({
        "clientId": "operator", "secret": "op-secret", "publicClient": false,
        "standardFlowEnabled": false, "serviceAccountsEnabled": true,
    }))
    .await;
    kc.grant_client_roles("service-account-operator", "realm-management", &["realm-admin"])
        .await;
    let credentials = Credentials::client_credentials("operator", SecretString::from("op-secret"));
    let keycloak =
        KeycloakClient::new(realm_login_config(&kc), Arc::new(StaticCredentials(credentials)), None).expect("client");
    let group = keycloak
        .realm(kc.realm())
        .ensure_top_level_group("svc-made", &Default::default())
        .await
        .expect("ensure");
    assert!(group.created);
    assert_eq!(kc.group_id("/svc-made").await, Some(group.value.id));
}

#[tokio::test]
async fn a_caller_without_the_role_is_forbidden() {
    let kc = start("auth-forbidden").await;
    kc.create_user("viewer", &[]).await;
    kc.grant_client_roles("viewer", "realm-management", &["view-users"])
        .await;
    let keycloak = KeycloakClient::new(
        realm_login_config(&kc),
        Arc::new(StaticCredentials(user_credentials("viewer"))),
        None,
    )
    .expect("client");
    let realm = keycloak.realm(kc.realm());
    realm.find_top_level_group("x").await.expect("viewing is allowed");
    let error = realm
        .create_top_level_group("x", &Default::default())
        .await
        .expect_err("creating is not");
    assert_eq!(error.kind(), ErrorKind::Forbidden);
    assert_eq!(error.category(), framework::ErrorCategory::Invalid);
}

#[tokio::test]
async fn explicit_credentials_per_call_override_the_provider() {
    let kc = start("auth-explicit").await;
    let (username, password) = kc.admin_credentials();
    let keycloak = KeycloakClient::new(client_config(&kc, 100), Arc::new(Missing), None).expect("client");
    let realm = keycloak.realm_with(
        kc.realm(),
        Credentials::admin_password(username, SecretString::from(password.to_string())),
    );
    realm
        .find_top_level_group("x")
        .await
        .expect("the explicit credentials are used");
    assert_eq!(kc.proxy().count("POST", TOKEN_ROUTE), 1);
}
