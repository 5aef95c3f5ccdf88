//! An app with auth at the gateway, `auth.groups`, a public route and TLS of its own, met in a real browser: Envoy
//! sends the visitor to the real Keycloak's login page, a member of the group who signs in sees the backend's page
//! (and the backend gets their access token), someone outside the group is refused by Envoy and the backend sees
//! nothing, the public route opens without a login, an unrouted path is not found, and the certificate the browser
//! was served is the one cert-manager issued, renewed in place.

use base64::Engine;
use controllers::nebari_app::naming::AppNames;
use e2e::harness::browser::{Page, wait_for_page};
use e2e::harness::keycloak::password_of;
use e2e::harness::{Deadline, conditions, wait_until};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::{Value, json};

use crate::support::{PUBLIC_GATEWAY, World, certificates, gateways};

/// The claims of a JWT (its payload), for assertions.
fn claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).expect("a JWT has a payload");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .expect("the payload is base64url");
    serde_json::from_slice(&bytes).expect("the payload is JSON")
}

/// The leaf certificate (DER) of the app's TLS Secret, as cert-manager wrote it.
async fn issued_certificate(world: &World, names: &AppNames) -> Vec<u8> {
    let secret = Api::<Secret>::namespaced(world.cluster.client(), &world.gateway_namespace)
        .get(&names.tls_secret())
        .await
        .expect("the app's TLS Secret");
    let pem = secret
        .data
        .as_ref()
        .and_then(|d| d.get("tls.crt"))
        .map(|b| b.0.clone())
        .expect("the TLS Secret has tls.crt");
    CertificateDer::pem_slice_iter(&pem)
        .next()
        .expect("tls.crt holds a certificate")
        .expect("tls.crt is PEM")
        .to_vec()
}

/// Asks cert-manager to renew the app's Certificate now, as `cmctl renew` does: an `Issuing` condition on its
/// status.
async fn renew(world: &World, names: &AppNames) {
    let api = world.api(&certificates(), &world.gateway_namespace);
    let certificate = api.get(&names.certificate()).await.expect("the app's Certificate");
    let mut conditions: Vec<Value> = certificate.data["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    conditions.retain(|c| c["type"] != "Issuing");
    conditions.push(json!({
        "type": "Issuing",
        "status": "True",
        "reason": "ManuallyTriggered",
        "message": "Renewal requested by the served tests",
        "lastTransitionTime": jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
    }));
    api.patch_status(
        &names.certificate(),
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"conditions": conditions}})),
    )
    .await
    .expect("request the Certificate's renewal");
}

/// The page shows the backend's own page (its text, not a gateway's or a browser's error).
fn shows_backend(page: &Page, world: &World) -> bool {
    page.status == Some(200) && page.text.contains(&format!("served backend {}", world.suffix))
}

#[tokio::test]
async fn in_a_browser_a_member_signs_in_a_non_member_is_refused_and_the_certificate_is_cert_managers() {
    let mut world = World::start(true).await;
    world.start_manager().await;
    let names = AppNames::new(&world.namespace, "shop");
    let hostname = world.hostname("shop");
    let group = format!("shop-staff-{}", world.suffix);
    world
        .apply_app(
            "shop",
            json!({
                "routing": {
                    "routes": [{"pathPrefix": "/", "pathType": "Exact"}],
                    "publicRoutes": [{"pathPrefix": "/health", "pathType": "Exact"}],
                },
                "auth": {"enabled": true, "groups": [group], "forwardAccessToken": true},
            }),
        )
        .await;
    let app = world.wait_app_ready("shop").await;
    for ready in ["AuthReady", "TLSReady"] {
        let condition = conditions::get(&app, ready).unwrap_or_else(|| panic!("a {ready} condition"));
        assert_eq!(condition.status, "True", "{condition:?}");
    }
    let realm = world.keycloak.as_ref().expect("the world has a realm");
    realm.create_user("alice", &[]).await;
    realm.add_membership("alice", &format!("/{group}")).await;
    realm.create_user("mallory", &[]).await;
    let origin = format!("https://{hostname}");
    let url = format!("{origin}/");

    // The public route opens without a login (once Envoy has its configuration); a path the app does not route is
    // not found.
    let anonymous = world.browser("anonymous").await;
    let public = wait_for_page(
        &anonymous,
        &format!("{origin}/health"),
        "public-route",
        Deadline::secs(60),
        |page| shows_backend(page, &world),
    )
    .await;
    assert_eq!(public.url, format!("{origin}/health"));
    // The certificate the browser accepted (it trusts only the test CA) is the one cert-manager issued for the
    // hostname.
    let issued = issued_certificate(&world, &names).await;
    let served = anonymous.certificate_chain(&origin).await;
    assert_eq!(
        served.first(),
        Some(&issued),
        "the browser was served the certificate of the app's TLS Secret"
    );
    let security = public.security.clone().expect("the page came over TLS");
    assert!(
        security["sanList"]
            .as_array()
            .is_some_and(|sans| sans.iter().any(|san| san == hostname.as_str())),
        "the hostname is in the certificate's SANs: {security}"
    );
    let unrouted = anonymous.open(&format!("{origin}/elsewhere"), "unrouted").await;
    assert_eq!(unrouted.status, Some(404), "an unrouted path: {unrouted:?}");

    anonymous.close().await;

    // A member: sent to Keycloak's login page, then back to the app with the backend's page and a token.
    let alice = world.browser("alice").await;
    let login = alice.open(&url, "login").await;
    assert!(
        login.url.starts_with(realm.direct_url()) && login.status == Some(200),
        "Envoy sent the visitor to Keycloak's login page: {login:?}"
    );
    let landed = alice.log_in("alice", &password_of("alice"), "app").await;
    assert!(
        landed.url == url && shows_backend(&landed, &world),
        "after signing in the member is back at the app, served by the backend: {landed:?}"
    );
    let seen = world.backend.seen();
    let token = seen
        .iter()
        .filter(|s| s.path == "/")
        .find_map(|s| {
            s.headers
                .get("authorization")
                .and_then(|h| h.to_str().ok())
                .and_then(|h| h.strip_prefix("Bearer "))
                .map(str::to_string)
        })
        .unwrap_or_else(|| panic!("the backend received the access token: {seen:?}"));
    let claims = claims(&token);
    assert_eq!(claims["preferred_username"], "alice", "{claims}");
    assert!(
        claims["nebari_gateway_groups"]
            .as_array()
            .is_some_and(|groups| groups.iter().any(|g| g == format!("/{group}").as_str())),
        "the token carries the group the gateway checks: {claims}"
    );
    alice.close().await;

    // Someone outside the group signs in as well, and Envoy refuses them before the backend.
    let served_before = world.backend.seen().len();
    let mallory = world.browser("mallory").await;
    let login = mallory.open(&url, "login").await;
    let refused = mallory.log_in("mallory", &password_of("mallory"), "refused").await;
    assert!(
        login.url.starts_with(realm.direct_url()) && refused.status == Some(403) && !shows_backend(&refused, &world),
        "a non-member is refused by the gateway: {refused:?}"
    );
    assert_eq!(
        world.backend.seen().len(),
        served_before,
        "the backend never saw the non-member's request"
    );
    mallory.close().await;

    // Renewed: cert-manager issues a new certificate into the same Secret, and the same listener serves it to a
    // browser that connects afresh.
    renew(&world, &names).await;
    let renewed = wait_until("cert-manager to renew the certificate", Deadline::secs(60), || async {
        let current = issued_certificate(&world, &names).await;
        if current == issued {
            Err("the Secret still holds the first certificate".to_string())
        } else {
            Ok(Some(current))
        }
    })
    .await;
    // Each look is a new connection (a browser keeps its connections, and Envoy serves an open one as it began).
    wait_until("Envoy to serve the renewed certificate", Deadline::secs(60), || async {
        let client = world.https_client_with_tls_info(&hostname);
        let response = client
            .get(format!("{origin}/health"))
            .send()
            .await
            .map_err(|e| format!("{e:?}"))?;
        let served = response
            .extensions()
            .get::<reqwest::tls::TlsInfo>()
            .and_then(|info| info.peer_certificate().map(<[u8]>::to_vec));
        if served.as_ref() == Some(&renewed) {
            Ok(Some(()))
        } else {
            Err("the first certificate is still served".to_string())
        }
    })
    .await;
    let again = world.browser("renewed").await;
    let page = again.open(&format!("{origin}/health"), "renewed").await;
    assert!(shows_backend(&page, &world), "{page:?}");
    assert_eq!(
        again.certificate_chain(&origin).await.first(),
        Some(&renewed),
        "a browser is served the renewed certificate"
    );
    let gateway = world
        .api(&gateways(), &world.gateway_namespace)
        .get(PUBLIC_GATEWAY)
        .await
        .expect("the Gateway");
    let listeners: Vec<&str> = gateway.data["spec"]["listeners"]
        .as_array()
        .map(|all| all.iter().filter_map(|l| l["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        listeners.iter().filter(|l| **l == names.listener()).count(),
        1,
        "the renewed certificate is served by the app's one listener: {listeners:?}"
    );
    again.close().await;

    world.finish().await;
}
