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
