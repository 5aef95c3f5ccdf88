//! A SecurityPolicy the gateway refuses protects nothing, so the app it was meant to protect must not be served:
//! Envoy Gateway refuses an OIDC token endpoint at an IP address (it makes a DNS cluster of it), and an app whose
//! policy it refused is reported not ready (`AuthReady=False`, `SecurityPolicyNotAccepted`) and stays unreachable
//! (Envoy answers 500), its backend seeing no request.

use e2e::harness::{Deadline, conditions, wait_until};
use serde_json::json;

use crate::support::World;

#[tokio::test]
async fn an_app_whose_security_policy_the_gateway_refuses_is_not_served_to_anyone() {
    let mut world = World::start(true).await;
    let realm = world.keycloak.as_ref().expect("the world has a realm");
    // An issuer at an IP address: the gateway refuses the policy's token endpoint.
    let issuer = format!("{}/realms/{}", realm.direct_url(), realm.realm());
    world.start_manager_with_gateway_issuer(Some(issuer)).await;
    let hostname = world.hostname("vault");
    world
        .apply_app("vault", json!({"routing": {}, "auth": {"enabled": true}}))
        .await;
    let apps = world.apps();
    let auth = wait_until("the gateway's refusal reported", Deadline::secs(120), || {
        let apps = apps.clone();
        async move {
            let app = apps.get("vault").await.map_err(|e| e.to_string())?;
            match conditions::get(&app, "AuthReady") {
                Some(auth) if auth.reason == "SecurityPolicyNotAccepted" => Ok(Some(auth)),
                other => Err(format!("{other:?}")),
            }
        }
    })
    .await;
    assert_eq!(auth.status, "False", "{auth:?}");

    // Once Envoy answers for the hostname at all (its listener programmed with the app's certificate), the
    // answer is never the app, in a client or in a browser.
    let url = format!("https://{hostname}/");
    let client = world.https_client(&hostname);
    let status = wait_until("Envoy answering for the hostname", Deadline::secs(60), || async {
        match client.get(&url).send().await {
            Ok(response) => Ok(Some(response.status().as_u16())),
            Err(e) => Err(format!("{e:?}")),
        }
    })
    .await;
    // Envoy Gateway fails closed itself: a route whose SecurityPolicy it refused answers 500. The operator
    // relies on it (the route stays, so the app comes back the moment the policy is fixed); this says so.
    assert_eq!(status, 500, "an app whose authentication the gateway refused");
    let browser = world.browser("visitor").await;
    let backend_text = format!("served backend {}", world.suffix);
    for attempt in 0..5 {
        let page = browser.open(&url, &format!("attempt-{attempt}")).await;
        assert!(
            !page.text.contains(&backend_text),
            "an app whose authentication the gateway refused was served: {page:?}"
        );
    }
    browser.close().await;
    let seen = world.backend.seen();
    assert!(seen.is_empty(), "the backend received requests: {seen:?}");

    world.finish().await;
}
