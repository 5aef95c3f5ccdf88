//! An app with TLS of its own, served: cert-manager issues its Certificate from the CA ClusterIssuer, Envoy
//! Gateway accepts the operator's listener and route and programs Envoy, and a client that reaches Envoy on port
//! 443 with the app's hostname gets the backend's page over a certificate for that hostname from the issuer's CA.

use controllers::nebari_app::naming::AppNames;
use e2e::harness::{Deadline, conditions, wait_until};
use serde_json::{Value, json};

use crate::support::{PUBLIC_GATEWAY, World, certificates, gateways, http_routes};

/// The condition `type_` in `conditions` (a JSON list), as `(status, reason)`.
fn condition(conditions: &Value, type_: &str) -> Option<(String, String)> {
    conditions.as_array()?.iter().find(|c| c["type"] == type_).map(|c| {
        (
            c["status"].as_str().unwrap_or_default().to_string(),
            c["reason"].as_str().unwrap_or_default().to_string(),
        )
    })
}

#[tokio::test]
async fn an_app_with_its_own_tls_is_served_through_envoy_with_the_certificate_cert_manager_issued() {
    let mut world = World::start(false).await;
    world.start_manager().await;
    let names = AppNames::new(&world.namespace, "web");
    let hostname = world.hostname("web");

    world.apply_app("web", json!({"routing": {}})).await;
    let app = world.wait_app_ready("web").await;
    let tls = conditions::get(&app, "TLSReady").expect("a TLSReady condition");
    assert_eq!(tls.status, "True", "{tls:?}");

    // Each verdict is the real component's.
    let certificate = world
        .api(&certificates(), &world.gateway_namespace)
        .get(&names.certificate())
        .await
        .expect("the app's Certificate");
    assert_eq!(
        condition(&certificate.data["status"]["conditions"], "Ready"),
        Some(("True".into(), "Ready".into())),
        "cert-manager issued the Certificate: {}",
        certificate.data["status"]
    );
    let gateway = world
        .api(&gateways(), &world.gateway_namespace)
        .get(PUBLIC_GATEWAY)
        .await
        .expect("the Gateway");
    let listener = gateway.data["status"]["listeners"]
        .as_array()
        .and_then(|all| all.iter().find(|l| l["name"] == names.listener().as_str()))
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "Envoy Gateway reports on the app's listener: {}",
                gateway.data["status"]
            )
        });
    assert_eq!(
        condition(&listener["conditions"], "Programmed").map(|c| c.0),
        Some("True".into()),
        "{listener}"
    );
    let route = world
        .api(&http_routes(), &world.namespace)
        .get(&names.route())
        .await
        .expect("the app's HTTPRoute");
    let parents = route.data["status"]["parents"].as_array().cloned().unwrap_or_default();
    assert!(
        !parents.is_empty()
            && parents.iter().all(|p| {
                p["controllerName"] == "gateway.envoyproxy.io/gatewayclass-controller"
                    && condition(&p["conditions"], "Accepted").is_some_and(|c| c.0 == "True")
            }),
        "Envoy Gateway accepted the route on every parent: {}",
        route.data["status"]
    );

    // Served: Envoy answers with the backend's page, over a certificate the client checks against the issuer's
    // CA and the hostname (the client trusts nothing else). Envoy gets its configuration a moment after the
    // statuses are written.
    let client = world.https_client(&hostname);
    let url = format!("https://{hostname}/");
    let page = wait_until(&format!("GET {url} through Envoy"), Deadline::secs(60), || {
        let (client, url) = (client.clone(), url.clone());
        async move {
            let response = client.get(&url).send().await.map_err(|e| format!("{e:?}"))?;
            let status = response.status();
            let body = response.text().await.map_err(|e| e.to_string())?;
            if status.is_success() {
                Ok(Some(body))
            } else {
                Err(format!("{status}: {body}"))
            }
        }
    })
    .await;
    assert_eq!(page, world.backend.page);
    let seen = world.backend.seen();
    assert!(
        seen.iter()
            .any(|s| s.path == "/" && s.headers.get("host").is_some_and(|h| h == hostname.as_str())),
        "the backend received the request for the app's hostname: {seen:?}"
    );

    world.finish().await;
}
