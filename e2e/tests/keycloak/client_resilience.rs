//! The client under failure: retries of idempotent calls, dropped connections, outages, slow answers, lost
//! answers, and errors categorized for the controllers. The faults are made by the proxy in front of the real
//! Keycloak; what Keycloak answers otherwise is its own.

use std::time::Duration;

use controllers::keycloak::{ErrorKind, KeycloakConfig};
use e2e::harness::fault_proxy::{DownMode, Fault};
use framework::ReconcileError;

use crate::support::{client_config, client_with, fast_http, realm, route, start};

#[tokio::test]
async fn transient_failures_of_reads_are_retried() {
    let kc = start("res-retry").await;
    let realm = realm(&kc, 100);
    kc.proxy()
        .add_fault(Fault::on("GET", &route("/groups")).status(503).times(2));
    assert_eq!(
        realm.find_top_level_group("x").await.expect("third attempt succeeds"),
        None
    );
    assert_eq!(kc.proxy().count("GET", &route("/groups")), 3);
}

#[tokio::test]
async fn a_dropped_connection_is_retried() {
    let kc = start("res-drop").await;
    let realm = realm(&kc, 100);
    kc.proxy().add_fault(
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
    assert_eq!(kc.proxy().count("GET", &route("/groups/{id}/members")), 2);
}

#[tokio::test]
async fn an_outage_is_unavailable_and_transient() {
    let kc = start("res-outage").await;
    let realm = realm(&kc, 100);
    realm.find_top_level_group("x").await.expect("up");
    kc.proxy().go_down(DownMode::Unavailable);
    let error = realm.find_top_level_group("x").await.expect_err("down");
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert_eq!(error.category(), framework::ErrorCategory::Transient);
    assert!(
        !error.to_string().contains("<html>"),
        "bodies never reach messages: {error}"
    );
    kc.proxy().go_down(DownMode::Refuse);
    let refused = realm.find_top_level_group("x").await.expect_err("refused");
    assert_eq!(refused.kind(), ErrorKind::Unavailable);
    kc.proxy().come_up();
    realm
        .find_top_level_group("x")
        .await
        .expect("back once Keycloak is reachable again");
}

#[tokio::test]
async fn a_slow_server_times_out_as_unavailable() {
    let kc = start("res-slow").await;
    let config = KeycloakConfig {
        http: fast_http(0),
        ..client_config(&kc, 100)
    };
    let realm = client_with(&kc, config).realm(kc.realm());
    realm.find_top_level_group("x").await.expect("warm up the token");
    kc.proxy().add_fault(
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
    let kc = start("res-500").await;
    let realm = realm(&kc, 100);
    kc.proxy().add_fault(Fault::on("POST", &route("/groups")).status(500));
    let error = realm
        .ensure_top_level_group("x", &Default::default())
        .await
        .expect_err("500");
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert!(error.to_string().contains("HTTP 500"), "{error}");
    assert!(!error.to_string().contains(kc.url()), "no URLs in messages: {error}");
    assert_eq!(kc.proxy().count("POST", &route("/groups")), 1, "a 500 is not retried");
    kc.proxy().clear_faults();
    assert!(
        realm
            .ensure_top_level_group("x", &Default::default())
            .await
            .expect("recovers")
            .created
    );
}

// The create reached Keycloak and took effect, but its answer was lost (a 503 from a proxy on the way back): the
// retry meets Keycloak's 409 and the group the first attempt made is found, not made twice.
#[tokio::test]
async fn a_create_whose_answer_was_lost_finds_what_it_made() {
    let kc = start("res-lost").await;
    let realm = realm(&kc, 100);
    kc.proxy()
        .add_fault(Fault::on("POST", &route("/groups")).status_after_effect(503).times(1));
    let ensured = realm
        .ensure_top_level_group("lost", &Default::default())
        .await
        .expect("converges");
    assert!(!ensured.created, "the retry found the group instead of creating it");
    assert_eq!(
        kc.proxy().count("POST", &route("/groups")),
        2,
        "the create and its retry"
    );
    assert_eq!(kc.group_id("/lost").await, Some(ensured.value.id));
    assert_eq!(kc.group_tree().await.len(), 1, "one group");
}
