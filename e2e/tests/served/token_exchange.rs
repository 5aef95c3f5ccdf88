//! Token exchange between served apps: a person signs in to one app in a browser, that app's backend exchanges
//! their access token at the real Keycloak (standard token exchange) for one addressed to a peer app with
//! `tokenExchange.enabled`, and calls the peer through the gateway with it, no login in between. An app of another
//! namespace that the peer does not name can neither exchange nor get in with its own token.

use std::collections::BTreeMap;

use controllers::nebari_app::naming::AppNames;
use e2e::harness::browser::wait_for_page;
use e2e::harness::keycloak::password_of;
use e2e::harness::{Deadline, conditions, wait_until};
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use serde_json::{Value, json};

use crate::support::{Backend, Seen, World};

/// The bearer token of the latest request `seen` for `host`.
fn bearer_for(seen: &[Seen], host: &str) -> Option<String> {
    seen.iter()
        .rev()
        .filter(|s| s.headers.get("host").is_some_and(|h| h == host))
        .find_map(|s| {
            s.headers
                .get("authorization")
                .and_then(|h| h.to_str().ok())
                .and_then(|h| h.strip_prefix("Bearer "))
                .map(str::to_string)
        })
}

/// The OIDC Secret the operator wrote for app `name` of `namespace`: `client-id` and `client-secret`.
async fn credentials(world: &World, namespace: &str, name: &str) -> (String, String) {
    let secret = Api::<Secret>::namespaced(world.cluster.client(), namespace)
        .get(&AppNames::new(namespace, name).oidc_secret())
        .await
        .expect("the app's OIDC Secret");
    let data: BTreeMap<String, String> = secret
        .data
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned()))
        .collect();
    (data["client-id"].clone(), data["client-secret"].clone())
}

/// Exchanges `subject` as client `(id, secret)` for a token addressed to `audience`, at the token endpoint Envoy
/// uses (the subject token's issuer): the status and body.
async fn exchange(world: &World, (id, secret): &(String, String), subject: &str, audience: &str) -> (u16, Value) {
    let realm = world.keycloak.as_ref().expect("the world has a realm");
    let endpoint = format!(
        "{}/realms/{}/protocol/openid-connect/token",
        realm.direct_url().replace("127.0.0.1", "localhost"),
        realm.realm()
    );
    let response = reqwest::Client::new()
        .post(endpoint)
        .form(&[
            ("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"),
            ("client_id", id.as_str()),
            ("client_secret", secret.as_str()),
            ("subject_token", subject),
            ("subject_token_type", "urn:ietf:params:oauth:token-type:access_token"),
            ("requested_token_type", "urn:ietf:params:oauth:token-type:access_token"),
            ("audience", audience),
        ])
        .send()
        .await
        .expect("Keycloak's token endpoint answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Signs `person` in to the app at `hostname` in a browser of their own, and returns the access token its backend
/// received.
async fn sign_in(world: &World, hostname: &str, person: &str, backend: &Backend) -> String {
    let browser = world
        .browser(&format!("{person}-{}", hostname.split('.').next().unwrap_or("app")))
        .await;
    let url = format!("https://{hostname}/");
    let login = wait_for_page(&browser, &url, "login", Deadline::secs(60), |page| {
        page.status == Some(200) && page.url != url
    })
    .await;
    let landed = browser.log_in(person, &password_of(person), "app").await;
    assert!(
        landed.url == url && landed.status == Some(200),
        "{person} signed in to {hostname} (from {}): {landed:?}",
        login.url
    );
    browser.close().await;
    let seen = backend.seen();
    bearer_for(&seen, hostname).unwrap_or_else(|| panic!("the backend of {hostname} got {person}'s token: {seen:?}"))
}

#[tokio::test]
async fn a_peers_backend_exchanges_the_users_token_and_calls_the_app_through_the_gateway_and_a_non_peer_cannot() {
    let mut world = World::start(true).await;
    world.start_manager().await;
    let signed_in = json!({"enabled": true, "forwardAccessToken": true});
    world
        .apply_app(
            "reports",
            json!({"routing": {}, "auth": {"enabled": true, "tokenExchange": {"enabled": true}}}),
        )
        .await;
    world
        .apply_app("portal", json!({"routing": {}, "auth": signed_in}))
        .await;
    let (outside, outside_backend) = world.tenant("outside").await;
    world
        .apply_app_in(
            &outside,
            "portal",
            json!({"hostname": world.hostname("outside"), "routing": {}, "auth": signed_in}),
        )
        .await;
    for app in ["reports", "portal"] {
        let ready = world.wait_app_ready(app).await;
        let auth = conditions::get(&ready, "AuthReady").expect("an AuthReady condition");
        assert_eq!(auth.status, "True", "{app}: {auth:?}");
    }
    world.wait_app_ready_in(&outside, "portal").await;
    let realm = world.keycloak.as_ref().expect("the world has a realm");
    realm.create_user("alice", &[]).await;
    let reports = AppNames::new(&world.namespace, "reports").keycloak_client();
    let reports_host = world.hostname("reports");
    let portal_host = world.hostname("portal");
    let outside_host = world.hostname("outside");

    // Alice signs in to the portal; its backend exchanges her token for one addressed to reports (granted once
    // the operator has seen both clients) and calls reports through the gateway.
    let token = sign_in(&world, &portal_host, "alice", &world.backend).await;
    let portal = credentials(&world, &world.namespace, "portal").await;
    let exchanged = wait_until(
        "the portal allowed to exchange for reports",
        Deadline::secs(60),
        || async {
            match exchange(&world, &portal, &token, &reports).await {
                (200, body) => Ok(body["access_token"].as_str().map(str::to_string)),
                (status, body) => Err(format!("{status}: {body}")),
            }
        },
    )
    .await;
    let client = world.https_client(&reports_host);
    let call = |bearer: String| {
        let (client, url) = (client.clone(), format!("https://{reports_host}/api"));
        async move {
            client
                .get(url)
                .bearer_auth(bearer)
                .send()
                .await
                .map(|r| r.status().as_u16())
                .map_err(|e| format!("{e:?}"))
        }
    };
    wait_until("the portal's call reaching reports", Deadline::secs(60), || async {
        match call(exchanged.clone()).await {
            Ok(200) => Ok(Some(())),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let seen = world.backend.seen();
    assert_eq!(
        bearer_for(&seen, &reports_host).as_deref(),
        Some(exchanged.as_str()),
        "reports' backend received the exchanged token"
    );

    // The app of another namespace: not a peer of reports, so Keycloak refuses its exchange, and the gateway
    // refuses its own token for the same person (not addressed to reports) before reports' backend.
    let token = sign_in(&world, &outside_host, "alice", &outside_backend).await;
    let outsider = credentials(&world, &outside, "portal").await;
    let (status, body) = exchange(&world, &outsider, &token, &reports).await;
    assert!(
        (400..500).contains(&status),
        "a non-peer's exchange is refused: {status} {body}"
    );
    let reached_before = world.backend.seen().len();
    let refused = call(token).await;
    // Envoy's JWT filter answers 403 for a verified token whose audience is not allowed.
    assert_eq!(
        refused,
        Ok(403),
        "a token not addressed to reports is refused at the gateway"
    );
    assert_eq!(
        world.backend.seen().len(),
        reached_before,
        "reports' backend saw nothing of it"
    );

    world.finish().await;
}
