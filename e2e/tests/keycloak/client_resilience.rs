//! The client under failure: retries of idempotent calls, dropped connections, outages, slow answers, and
//! errors categorized for the controllers.

use std::time::Duration;

use controllers::keycloak::{ErrorKind, KeycloakConfig};
use framework::ReconcileError;
use keycloak_emulator::{DownMode, Fault};

use crate::support::{REALM, client_config, client_with, fast_http, realm, route, start};

#[tokio::test]
async fn transient_failures_of_reads_are_retried() {
    let kc = start().await;
    let realm = realm(&kc, 100);
    kc.hooks()
        .add_fault(Fault::on("GET", &route("/groups")).status(503).times(2));
    assert_eq!(
        realm.find_top_level_group("x").await.expect("third attempt succeeds"),
        None
    );
    assert_eq!(kc.hooks().count("GET", &route("/groups")), 3);
}

#[tokio::test]
async fn a_dropped_connection_is_retried() {
    let kc = start().await;
    let realm = realm(&kc, 100);
    kc.hooks().add_fault(
        Fault::on("GET", &route("/groups/{id}/members"))
            .drop_connection()
            .times(1),
    );
    let parent = realm
        .ensure_top_level_group("team", &Default::default())
        .await
        .expect("group")
        .value;
    assert!(
        realm
            .group_members(&parent.id)
            .await
            .expect("retried after the drop")
            .is_empty()
    );
    assert_eq!(kc.hooks().count("GET", &route("/groups/{id}/members")), 2);
}

#[tokio::test]
async fn an_outage_is_unavailable_and_transient() {
    let kc = start().await;
    let realm = realm(&kc, 100);
    realm.find_top_level_group("x").await.expect("up");
    kc.hooks().go_down(DownMode::Unavailable);
    let error = realm.find_top_level_group("x").await.expect_err("down");
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert_eq!(error.category(), framework::ErrorCategory::Transient);
    assert!(
        !error.to_string().contains("<html>"),
        "bodies never reach messages: {error}"
    );
    kc.hooks().go_down(DownMode::Refuse);
    let refused = realm.find_top_level_group("x").await.expect_err("refused");
    assert_eq!(refused.kind(), ErrorKind::Unavailable);
    kc.hooks().come_up();
}

#[tokio::test]
async fn a_slow_server_times_out_as_unavailable() {
    let kc = start().await;
    let config = KeycloakConfig {
        http: fast_http(0),
        ..client_config(&kc, 100)
    };
    let realm = client_with(&kc, config).realm(REALM);
    realm.find_top_level_group("x").await.expect("warm up the token");
    kc.hooks().add_fault(
        Fault::on("GET", &route("/groups"))
            .latency(Duration::from_secs(4))
            .times(1),
    );
    let error = realm.find_top_level_group("x").await.expect_err("timeout");
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert!(error.to_string().contains("timed out"), "{error}");
}

#[tokio::test]
async fn server_errors_on_creates_are_reported_not_hidden() {
    let kc = start().await;
    let realm = realm(&kc, 100);
    kc.hooks().add_fault(Fault::on("POST", &route("/groups")).status(500));
    let error = realm
        .ensure_top_level_group("x", &Default::default())
        .await
        .expect_err("500");
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert!(error.to_string().contains("HTTP 500"), "{error}");
    assert!(!error.to_string().contains(kc.url()), "no URLs in messages: {error}");
    kc.hooks().clear_faults();
    assert!(
        realm
            .ensure_top_level_group("x", &Default::default())
            .await
            .expect("recovers")
            .created
    );
}
