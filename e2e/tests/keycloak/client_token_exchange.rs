//! Token exchange through the client: legacy (v1) token exchange, a distinct error when the server has the
//! feature off and the permission wired to exactly the requesting clients on the v1 Keycloak; standard token
//! exchange granted and revoked on the default Keycloak, and a real token exchanged through what was granted.

use controllers::keycloak::{ClientSpec, ErrorKind, KeycloakError, TokenExchangeRequester};
use e2e::harness::keycloak::Flavour;
use secrecy::SecretString;

use crate::support::{claims, realm, start, start_on, token_request};

#[tokio::test]
async fn a_server_without_the_feature_gives_a_distinct_error() {
    let kc = start("tx-nofgap").await;
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
    assert!(missing.is_not_found(), "{missing:?}");
}

#[tokio::test]
async fn granting_wires_the_permission_to_exactly_the_requesters() {
    let kc = start_on(Flavour::V1, "tx-legacy").await;
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
        kc.permission_policies(&permission).await,
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
    assert!(
        realm
            .client_management_permissions(&target.id)
            .await
            .expect("read")
            .enabled
    );

    // Granting again with one requester fewer leaves only that one; the policies are reused.
    let again = realm
        .grant_token_exchange(&target.id, &[requester("alpha", &alpha.id)])
        .await
        .expect("regrant");
    assert_eq!(again.permission_id, grant.permission_id);
    assert_eq!(again.policy_ids[0], grant.policy_ids[0]);
    assert_eq!(
        kc.permission_policies(&permission).await,
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
    assert_eq!(kc.permission_policies(&permission).await, None);
    assert!(
        !realm
            .client_management_permissions(&target.id)
            .await
            .expect("read")
            .enabled
    );
    assert!(
        kc.policy_names().await.contains(&"beta-token-exchange".to_string()),
        "the requesters' policies stay"
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
async fn server_info_tells_which_token_exchange_each_keycloak_has() {
    let default = start("tx-info").await;
    let info = realm(&default, 100).server_info().await.expect("server info");
    let version = info.system_info.version.clone().expect("a version");
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    assert!(
        (major, minor) >= (26, 2),
        "a Keycloak with standard token exchange: {version}"
    );
    assert!(
        info.standard_token_exchange(),
        "Keycloak 26 has standard token exchange by default"
    );
    assert!(!info.legacy_token_exchange(), "the legacy preview is off by default");
    let v1 = start_on(Flavour::V1, "tx-info").await;
    let info = realm(&v1, 100).server_info().await.expect("server info");
    assert!(
        info.legacy_token_exchange(),
        "token-exchange and admin-fine-grained-authz:v1 are on"
    );
}

#[tokio::test]
async fn standard_token_exchange_is_granted_to_exactly_the_requesters_and_revoked_from_the_rest() {
    use controllers::keycloak::{PEERS_ATTRIBUTE, STANDARD_TOKEN_EXCHANGE_ATTRIBUTE, audience_mapper_name};

    let kc = start("tx-standard").await;
    let realm = realm(&kc, 100);
    let (target, alpha, beta) = (
        confidential(&realm, "target").await,
        confidential(&realm, "alpha").await,
        confidential(&realm, "beta").await,
    );
    let granted = |client: &'static str| {
        let kc = &kc;
        async move {
            let rep = kc.client(client).await.expect("client");
            let mapper = rep["protocolMappers"].as_array().is_some_and(|mappers| {
                mappers
                    .iter()
                    .any(|m| m["name"] == audience_mapper_name("target").as_str())
            });
            (rep["attributes"][STANDARD_TOKEN_EXCHANGE_ATTRIBUTE].clone(), mapper)
        }
    };
    realm
        .grant_standard_token_exchange(&target, &[alpha, beta])
        .await
        .expect("grant both");
    assert_eq!(granted("alpha").await, (serde_json::json!("true"), true));
    assert_eq!(granted("beta").await, (serde_json::json!("true"), true));
    let target = realm.find_client("target").await.expect("read").expect("target");
    assert_eq!(
        target.attributes.get(PEERS_ATTRIBUTE).map(String::as_str),
        Some("alpha beta")
    );

    // Dropping beta withdraws its grant only.
    let alpha = realm.find_client("alpha").await.expect("read").expect("alpha");
    realm
        .grant_standard_token_exchange(&target, std::slice::from_ref(&alpha))
        .await
        .expect("grant alpha only");
    assert_eq!(granted("alpha").await, (serde_json::json!("true"), true));
    assert_eq!(granted("beta").await, (serde_json::json!("false"), false));

    let target = realm.find_client("target").await.expect("read").expect("target");
    realm.revoke_standard_token_exchange(&target).await.expect("revoke");
    assert_eq!(granted("alpha").await, (serde_json::json!("false"), false));
    let target = realm.find_client("target").await.expect("read").expect("target");
    assert!(!target.attributes.contains_key(PEERS_ATTRIBUTE));
}

// The audience mapper the grant adds is stored by Keycloak with `userinfo.token.claim` filled in, so the client
// sees it as different from what it wants and rewrites it on every grant.
#[tokio::test]
async fn granting_standard_token_exchange_again_writes_nothing() {
    let kc = start("tx-standard-again").await;
    let realm = realm(&kc, 100);
    let (target, alpha, beta) = (
        confidential(&realm, "target").await,
        confidential(&realm, "alpha").await,
        confidential(&realm, "beta").await,
    );
    realm
        .grant_standard_token_exchange(&target, &[alpha, beta])
        .await
        .expect("grant both");
    // Granting again, to the clients as they are now.
    let read = |id: &'static str| {
        let realm = realm.clone();
        async move { realm.find_client(id).await.expect("read").expect("exists") }
    };
    let (target, alpha, beta) = (read("target").await, read("alpha").await, read("beta").await);
    let writes = |counters: std::collections::BTreeMap<String, u64>| -> Vec<String> {
        counters
            .into_iter()
            .filter(|(key, _)| !key.starts_with("GET ") && key.contains(" /admin/"))
            .map(|(key, count)| format!("{key} ×{count}"))
            .collect()
    };
    kc.proxy().reset_counters();
    realm
        .grant_standard_token_exchange(&target, &[alpha, beta])
        .await
        .expect("grant again");
    assert_eq!(
        writes(kc.proxy().counters()),
        Vec::<String>::new(),
        "no writes when the grant is in place"
    );
}

#[tokio::test]
async fn standard_token_exchange_granted_by_the_operator_lets_exactly_the_peers_exchange_a_real_token() {
    let kc = start("tx-real").await;
    let realm = realm(&kc, 100);
    let confidential = |id: &str, secret: &str| {
        ClientSpec::confidential(id, Some(SecretString::from(secret.to_string())))
            .with_redirect_uris(vec![format!("https://{id}.example/*")])
    };
    const ALPHA_SECRET: &str = "alpha-secret-0123456789abcdefg";
    const BETA_SECRET: &str = "beta-secret-0123456789abcdefgh";
    let target = realm
        .ensure_client(&confidential("target", "target-secret-0123456789abcdef"))
        .await
        .expect("target")
        .value;
    let alpha = realm
        .ensure_client(&confidential("alpha", ALPHA_SECRET))
        .await
        .expect("alpha")
        .value;
    realm
        .ensure_client(&confidential("beta", BETA_SECRET))
        .await
        .expect("beta");
    kc.create_user("carol", &[]).await;

    realm
        .grant_standard_token_exchange(&target, std::slice::from_ref(&alpha))
        .await
        .expect("grant");

    // Carol logs in to a client the way a browser does; the client then exchanges her token for the target.
    let login = |client: &'static str, secret: &'static str| {
        let kc = &kc;
        async move {
            kc.browser_login(client, secret, "carol")
                .await
                .unwrap_or_else(|e| panic!("carol logs in to {client}: {e}"))
        }
    };
    let exchange = |client: &'static str, secret: &'static str, subject: String| {
        let kc = &kc;
        async move {
            token_request(
                kc,
                kc.realm(),
                &[
                    ("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"),
                    ("client_id", client),
                    ("client_secret", secret),
                    ("subject_token", subject.as_str()),
                    ("subject_token_type", "urn:ietf:params:oauth:token-type:access_token"),
                    ("requested_token_type", "urn:ietf:params:oauth:token-type:access_token"),
                    ("audience", "target"),
                ],
            )
            .await
        }
    };

    let alpha_token = login("alpha", ALPHA_SECRET).await;
    assert!(
        claims(&alpha_token)["aud"].to_string().contains("target"),
        "the audience mapper the grant added puts the target in alpha's tokens: {}",
        claims(&alpha_token)
    );
    let (status, body) = exchange("alpha", ALPHA_SECRET, alpha_token).await;
    assert_eq!(status, 200, "alpha, granted, exchanges: {body}");
    let exchanged = claims(body["access_token"].as_str().expect("exchanged token"));
    assert!(exchanged["aud"].to_string().contains("target"), "{exchanged}");
    assert_eq!(exchanged["preferred_username"], "carol", "{exchanged}");

    let beta_token = login("beta", BETA_SECRET).await;
    let (status, body) = exchange("beta", BETA_SECRET, beta_token).await;
    assert!(
        (400..500).contains(&status),
        "beta, not granted, is refused: {status} {body}"
    );

    // Revoking withdraws alpha's grant: its next token no longer names the target and cannot be exchanged.
    let target = realm.find_client("target").await.expect("read").expect("target");
    realm.revoke_standard_token_exchange(&target).await.expect("revoke");
    let alpha_token = login("alpha", ALPHA_SECRET).await;
    assert!(
        !claims(&alpha_token)["aud"].to_string().contains("target"),
        "{}",
        claims(&alpha_token)
    );
    let (status, body) = exchange("alpha", ALPHA_SECRET, alpha_token).await;
    assert!(
        (400..500).contains(&status),
        "after the revocation alpha is refused: {status} {body}"
    );
}

/// A confidential client `id` (created, or the one there).
async fn confidential(realm: &controllers::keycloak::RealmClient, id: &str) -> controllers::keycloak::Client {
    realm
        .ensure_client(&ClientSpec::confidential(id, None))
        .await
        .expect("client")
        .value
}
