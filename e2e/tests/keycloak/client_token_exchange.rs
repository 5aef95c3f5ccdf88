//! Legacy token exchange through the client: a distinct error when the server has the feature off, and the
//! permission wired to exactly the requesting clients when it is on.

use controllers::keycloak::{ClientSpec, ErrorKind, KeycloakError, TokenExchangeRequester};
use keycloak_emulator::EmulatorConfig;

use crate::support::{REALM, realm, start, start_with};

#[tokio::test]
async fn a_server_without_the_feature_gives_a_distinct_error() {
    let kc = start().await;
    let realm = realm(&kc, 100);
    let target = realm
        .ensure_client(&ClientSpec::confidential("target", None))
        .await
        .expect("target")
        .value;
    let error = realm
        .grant_token_exchange(&target.id, &[])
        .await
        .expect_err("feature off");
    assert!(matches!(error, KeycloakError::FeatureDisabled { .. }), "{error:?}");
    assert_eq!(error.kind(), ErrorKind::FeatureDisabled);
    assert!(error.to_string().contains("admin-fine-grained-authz:v1"), "{error}");
    let missing = realm
        .enable_client_management_permissions("no-such-client")
        .await
        .expect_err("404 first");
    assert!(missing.is_not_found());
}

#[tokio::test]
async fn granting_wires_the_permission_to_exactly_the_requesters() {
    let kc = start_with(EmulatorConfig {
        fine_grained_authz_v1: true,
        ..EmulatorConfig::with_realm(REALM)
    })
    .await;
    let realm = realm(&kc, 100);
    let ensure = |id: &'static str| {
        let realm = realm.clone();
        async move {
            realm
                .ensure_client(&ClientSpec::confidential(id, None))
                .await
                .expect("client")
                .value
        }
    };
    let target = ensure("target").await;
    let alpha = ensure("alpha").await;
    let beta = ensure("beta").await;
    let requester = |name: &str, id: &str| TokenExchangeRequester {
        policy_name: format!("{name}-token-exchange"),
        client: id.to_string(),
    };
    let grant = realm
        .grant_token_exchange(
            &target.id,
            &[requester("alpha", &alpha.id), requester("beta", &beta.id)],
        )
        .await
        .expect("grant");
    let permission = format!("token-exchange.permission.client.{}", target.id);
    assert_eq!(
        kc.hooks().permission_policies(REALM, &permission),
        Some((
            "AFFIRMATIVE".to_string(),
            vec!["alpha-token-exchange".to_string(), "beta-token-exchange".to_string()]
        ))
    );
    let management = realm.realm_management_client().await.expect("realm-management");
    let applied = realm
        .permission_policies(&management.id, &grant.permission_id)
        .await
        .expect("policies");
    assert_eq!(applied.len(), 2);

    // Granting again with one requester fewer leaves only that one; the policies are reused.
    let again = realm
        .grant_token_exchange(&target.id, &[requester("alpha", &alpha.id)])
        .await
        .expect("regrant");
    assert_eq!(again.permission_id, grant.permission_id);
    assert_eq!(again.policy_ids[0], grant.policy_ids[0]);
    assert_eq!(
        kc.hooks().permission_policies(REALM, &permission),
        Some(("AFFIRMATIVE".to_string(), vec!["alpha-token-exchange".to_string()]))
    );

    // A policy whose client was recreated is corrected to the new id.
    realm.delete_client(&alpha.id).await.expect("delete alpha");
    let alpha2 = ensure("alpha").await;
    let corrected = realm
        .ensure_client_policy(&management.id, "alpha-token-exchange", std::slice::from_ref(&alpha2.id))
        .await
        .expect("policy");
    assert!(!corrected.created);
    assert_eq!(corrected.value.clients, vec![alpha2.id.clone()]);

    realm.revoke_token_exchange(&target.id).await.expect("revoke");
    assert_eq!(kc.hooks().permission_policies(REALM, &permission), None);
    assert!(
        !realm
            .client_management_permissions(&target.id)
            .await
            .expect("read")
            .enabled
    );
    realm
        .revoke_token_exchange("no-such-client")
        .await
        .expect("a vanished target counts as revoked");
    assert!(
        realm
            .delete_authz_policy(&management.id, &grant.policy_ids[1])
            .await
            .expect("delete policy")
    );
    assert!(
        !realm
            .delete_authz_policy(&management.id, &grant.policy_ids[1])
            .await
            .expect("already gone")
    );
}

#[tokio::test]
async fn server_info_tells_which_token_exchange_the_server_has() {
    let kc = start().await;
    let realm = realm(&kc, 100);
    let info = realm.server_info().await.expect("server info");
    assert_eq!(info.system_info.version.as_deref(), Some("26.2.5"));
    assert!(info.standard_token_exchange() && !info.legacy_token_exchange());
    kc.hooks().set_fine_grained_authz_v1(true);
    kc.hooks().set_standard_token_exchange(false);
    let info = realm.server_info().await.expect("server info");
    assert!(!info.standard_token_exchange() && info.legacy_token_exchange());
}

#[tokio::test]
async fn standard_token_exchange_is_granted_to_exactly_the_requesters_and_revoked_from_the_rest() {
    use controllers::keycloak::{PEERS_ATTRIBUTE, STANDARD_TOKEN_EXCHANGE_ATTRIBUTE, audience_mapper_name};

    let kc = start().await;
    let realm = realm(&kc, 100);
    let ensure = |id: &'static str| {
        let realm = realm.clone();
        async move {
            realm
                .ensure_client(&ClientSpec::confidential(id, None))
                .await
                .expect("client")
                .value
        }
    };
    let (target, alpha, beta) = (ensure("target").await, ensure("alpha").await, ensure("beta").await);
    let granted = |client: &str| {
        let rep = kc.hooks().client(REALM, client).expect("client");
        let mapper = rep["protocolMappers"].as_array().is_some_and(|mappers| {
            mappers
                .iter()
                .any(|m| m["name"] == audience_mapper_name("target").as_str())
        });
        (rep["attributes"][STANDARD_TOKEN_EXCHANGE_ATTRIBUTE].clone(), mapper)
    };
    realm
        .grant_standard_token_exchange(&target, &[alpha.clone(), beta.clone()])
        .await
        .expect("grant both");
    assert_eq!(granted("alpha"), (serde_json::json!("true"), true));
    assert_eq!(granted("beta"), (serde_json::json!("true"), true));
    let target = realm.find_client("target").await.expect("read").expect("target");
    assert_eq!(
        target.attributes.get(PEERS_ATTRIBUTE).map(String::as_str),
        Some("alpha beta")
    );

    // Granting again (to the clients as they are now) is free of writes; dropping beta withdraws its grant only.
    let alpha = realm.find_client("alpha").await.expect("read").expect("alpha");
    let beta = realm.find_client("beta").await.expect("read").expect("beta");
    let before = kc.hooks().counters();
    realm
        .grant_standard_token_exchange(&target, &[alpha.clone(), beta.clone()])
        .await
        .expect("grant again");
    let writes = |rows: &[keycloak_emulator::CounterRow]| -> u64 {
        rows.iter()
            .filter(|r| r.method != "GET" && r.route.starts_with("/admin/"))
            .map(|r| r.count)
            .sum()
    };
    assert_eq!(
        writes(&kc.hooks().counters()),
        writes(&before),
        "no writes when in place"
    );
    realm
        .grant_standard_token_exchange(&target, std::slice::from_ref(&alpha))
        .await
        .expect("grant alpha only");
    assert_eq!(granted("alpha"), (serde_json::json!("true"), true));
    assert_eq!(granted("beta"), (serde_json::json!("false"), false));

    let target = realm.find_client("target").await.expect("read").expect("target");
    realm.revoke_standard_token_exchange(&target).await.expect("revoke");
    assert_eq!(granted("alpha"), (serde_json::json!("false"), false));
    let target = realm.find_client("target").await.expect("read").expect("target");
    assert!(!target.attributes.contains_key(PEERS_ATTRIBUTE));
}
