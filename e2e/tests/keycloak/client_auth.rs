//! The client's admin token: caching, refresh, rotation, both grants, and how refusals are reported.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use controllers::keycloak::{
    Credentials, CredentialsProvider, ErrorKind, KeycloakClient, KeycloakConfig, KeycloakError, StaticCredentials,
};
use framework::ReconcileError;
use futures::future::BoxFuture;
use keycloak_emulator::{ClientSeed, EmulatorConfig, UserSeed};
use secrecy::SecretString;

use crate::support::{REALM, TOKEN_ROUTE, client, client_config, route, start, start_with};

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
    let kc = start().await;
    let realm = client(&kc).realm(REALM);
    for _ in 0..5 {
        realm.find_top_level_group("nothing").await.expect("search");
    }
    assert_eq!(kc.hooks().count("POST", TOKEN_ROUTE), 1, "one login for five calls");
    assert_eq!(kc.hooks().count("GET", &route("/groups")), 5);
}

#[tokio::test]
async fn tokens_expiring_within_the_refresh_margin_are_not_reused() {
    let config = EmulatorConfig {
        master_access_token_lifespan: Duration::from_secs(5),
        ..EmulatorConfig::with_realm(REALM)
    };
    let kc = start_with(config).await;
    let realm = crate::support::client_with(&kc, client_config(&kc, 100)).realm(REALM);
    realm.find_top_level_group("x").await.expect("first");
    realm.find_top_level_group("x").await.expect("second");
    assert_eq!(
        kc.hooks().count("POST", TOKEN_ROUTE),
        2,
        "a 5 s token is inside the 10 s refresh margin"
    );
}

#[tokio::test]
async fn an_expired_token_is_replaced_after_one_401() {
    let kc = start().await;
    let realm = client(&kc).realm(REALM);
    realm.find_top_level_group("x").await.expect("first call");
    kc.hooks().advance_clock(Duration::from_secs(120));
    realm
        .find_top_level_group("x")
        .await
        .expect("the 401 triggers a fresh login and one retry");
    assert_eq!(kc.hooks().count("POST", TOKEN_ROUTE), 2);
    assert_eq!(
        kc.hooks().count("GET", &route("/groups")),
        3,
        "first call, the rejected call, its retry"
    );
}

#[tokio::test]
async fn rotated_credentials_take_effect_without_a_restart() {
    let mut config = EmulatorConfig::with_realm(REALM);
    config
        .users
        .push(UserSeed::new("master", "ops").password("first").role("admin"));
    config
        .users
        .push(UserSeed::new("master", "ops2").password("second").role("admin"));
    let kc = start_with(config).await;
    let provider = Arc::new(Rotating(Mutex::new(Credentials::admin_password(
        "ops",
        SecretString::from("first"),
    ))));
    let keycloak = KeycloakClient::new(client_config(&kc, 100), provider.clone(), None).expect("client");
    let realm = keycloak.realm(REALM);
    realm.find_top_level_group("x").await.expect("as ops");
    *provider.0.lock().expect("lock") = Credentials::admin_password("ops2", SecretString::from("second"));
    realm.find_top_level_group("x").await.expect("as ops2");
    assert_eq!(kc.hooks().count("POST", TOKEN_ROUTE), 2, "new credentials, new login");
}

#[tokio::test]
async fn refused_credentials_are_unauthorized_without_leaking_the_password() {
    let kc = start().await;
    let credentials = Credentials::admin_password("admin", SecretString::from("wrong-password-123"));
    let keycloak =
        KeycloakClient::new(client_config(&kc, 100), Arc::new(StaticCredentials(credentials)), None).expect("client");
    let error = keycloak
        .realm(REALM)
        .find_top_level_group("x")
        .await
        .expect_err("refused");
    assert_eq!(error.kind(), ErrorKind::Unauthorized);
    assert!(matches!(error, KeycloakError::LoginRejected { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("Invalid user credentials"), "{message}");
    assert!(!message.contains("wrong-password-123"), "{message}");
    assert_eq!(error.reason(), "KeycloakUnauthorized");
}

#[tokio::test]
async fn missing_credentials_are_reported_as_such() {
    let kc = start().await;
    let keycloak = KeycloakClient::new(client_config(&kc, 100), Arc::new(Missing), None).expect("client");
    let error = keycloak.realm(REALM).get_group("x").await.expect_err("no credentials");
    assert_eq!(error.kind(), ErrorKind::Unauthorized);
    assert_eq!(error.category(), framework::ErrorCategory::Dependency);
    assert_eq!(kc.hooks().total_requests(), 0, "nothing is sent without credentials");
}

#[tokio::test]
async fn client_credentials_in_the_target_realm_work() {
    let mut config = EmulatorConfig::with_realm(REALM);
    config.clients.push(ClientSeed::service_account(
        REALM,
        "operator",
        "op-secret",
        &["realm-admin"],
    ));
    let kc = start_with(config).await;
    let settings = KeycloakConfig {
        token_realm: REALM.into(),
        ..client_config(&kc, 100)
    };
    let credentials = Credentials::client_credentials("operator", SecretString::from("op-secret"));
    let keycloak = KeycloakClient::new(settings, Arc::new(StaticCredentials(credentials)), None).expect("client");
    let group = keycloak
        .realm(REALM)
        .ensure_top_level_group("svc-made", &Default::default())
        .await
        .expect("ensure");
    assert!(group.created);
    assert_eq!(kc.hooks().group_id(REALM, "/svc-made"), Some(group.value.id));
}

#[tokio::test]
async fn a_caller_without_the_role_is_forbidden() {
    let mut config = EmulatorConfig::with_realm(REALM);
    config
        .users
        .push(UserSeed::new(REALM, "viewer").password("pw").role("view-users"));
    let kc = start_with(config).await;
    let settings = KeycloakConfig {
        token_realm: REALM.into(),
        ..client_config(&kc, 100)
    };
    let keycloak = KeycloakClient::new(
        settings,
        Arc::new(StaticCredentials(Credentials::admin_password(
            "viewer",
            SecretString::from("pw"),
        ))),
        None,
    )
    .expect("client");
    let realm = keycloak.realm(REALM);
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
    let mut config = EmulatorConfig::with_realm(REALM);
    config
        .users
        .push(UserSeed::new("master", "ops").password("pw").role("admin"));
    let kc = start_with(config).await;
    let keycloak = KeycloakClient::new(client_config(&kc, 100), Arc::new(Missing), None).expect("client");
    let realm = keycloak.realm_with(REALM, Credentials::admin_password("ops", SecretString::from("pw")));
    realm
        .find_top_level_group("x")
        .await
        .expect("the explicit credentials are used");
}
