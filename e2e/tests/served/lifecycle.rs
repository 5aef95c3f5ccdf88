//! An app's life as a visitor's browser sees it: turning auth off lets anyone in, turning it back on brings the
//! login back (each within the time docs/nebari-app.md promises), and deleting the app makes its hostname stop
//! answering and leaves nothing of it behind.

use std::time::{Duration, Instant};

use controllers::nebari_app::naming::AppNames;
use e2e::harness::browser::{Browser, Page, wait_for_page};
use e2e::harness::{Deadline, wait_until};
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use serde_json::json;

use crate::support::{PUBLIC_GATEWAY, World, certificates, gateways, http_routes};

/// How soon a change to a NebariApp's auth reaches a visitor (docs/nebari-app.md, "Served for real").
const PROMISED: Duration = Duration::from_secs(30);

/// Waits until `browser` shows a page of `url` that `accept` takes, within [`PROMISED`] of `since`; returns how
/// long it took.
async fn within_promise(
    browser: &Browser,
    url: &str,
    what: &str,
    since: Instant,
    accept: impl Fn(&Page) -> bool,
) -> Duration {
    let deadline = Deadline {
        timeout: PROMISED.saturating_sub(since.elapsed()),
        poll: Duration::from_millis(200),
    };
    wait_for_page(browser, url, what, deadline, accept).await;
    since.elapsed()
}

#[tokio::test]
async fn in_a_browser_auth_off_lets_anyone_in_auth_on_asks_again_and_deleting_the_app_stops_the_hostname() {
    let mut world = World::start(true).await;
    world.start_manager().await;
    let hostname = world.hostname("docs");
    let names = AppNames::new(&world.namespace, "docs");
    let routing = json!({"routes": [{"pathPrefix": "/app"}]});
    let with_auth = json!({"routing": routing, "auth": {"enabled": true}});
    world.apply_app("docs", with_auth.clone()).await;
    world.wait_app_ready("docs").await;
    let realm = world.keycloak.as_ref().expect("the world has a realm");
    let url = format!("https://{hostname}/app/page");
    let backend_text = format!("served backend {}", world.suffix);
    let browser = world.browser("visitor").await;
    let asks_login = |page: &Page| page.url.starts_with(realm.direct_url()) && page.status == Some(200);
    let lets_in = |page: &Page| page.url == url && page.status == Some(200) && page.text.contains(&backend_text);
    wait_for_page(&browser, &url, "login", Deadline::secs(60), asks_login).await;

    // Auth off: an anonymous visitor reaches the app.
    let changed = Instant::now();
    world.apply_app("docs", json!({"routing": routing})).await;
    let opened = within_promise(&browser, &url, "auth-off", changed, lets_in).await;
    let seen = world.backend.seen();
    assert!(seen.iter().any(|s| s.path == "/app/page"), "{seen:?}");

    // Auth on again: the login is back (the browser holds no session for the app).
    let changed = Instant::now();
    world.apply_app("docs", with_auth).await;
    let closed = within_promise(&browser, &url, "auth-on", changed, asks_login).await;
    println!("auth off reached the visitor in {opened:?}, auth on in {closed:?} (promised: {PROMISED:?})");

    // Deleted: the hostname stops answering, and nothing of the app is left.
    world
        .apps()
        .delete("docs", &Default::default())
        .await
        .expect("delete the app");
    wait_for_page(&browser, &url, "deleted", Deadline::secs(60), |page| {
        !page.text.contains(&backend_text) && !page.url.starts_with(realm.direct_url())
    })
    .await;
    browser.close().await;
    // The route goes with the app through the garbage collector, the rest through the operator's finalizer.
    wait_until("nothing of the app left", Deadline::secs(60), || async {
        let mut left = Vec::new();
        let routes = world.api(&http_routes(), &world.namespace);
        if !matches!(routes.get_opt(&names.route()).await, Ok(None)) {
            left.push(format!("HTTPRoute {}", names.route()));
        }
        let gateway = world
            .api(&gateways(), &world.gateway_namespace)
            .get(PUBLIC_GATEWAY)
            .await;
        let listeners = gateway
            .map(|g| g.data["spec"]["listeners"].clone())
            .map_err(|e| e.to_string())?;
        if listeners
            .as_array()
            .is_some_and(|all| all.iter().any(|l| l["name"] == names.listener().as_str()))
        {
            left.push(format!("listener {}", names.listener()));
        }
        let certificates = world.api(&certificates(), &world.gateway_namespace);
        if !matches!(certificates.get_opt(&names.certificate()).await, Ok(None)) {
            left.push(format!("Certificate {}", names.certificate()));
        }
        for (namespace, secret) in [
            (&world.gateway_namespace, names.tls_secret()),
            (&world.namespace, names.oidc_secret()),
        ] {
            let secrets = Api::<Secret>::namespaced(world.cluster.client(), namespace);
            if !matches!(secrets.get_opt(&secret).await, Ok(None)) {
                left.push(format!("Secret {namespace}/{secret}"));
            }
        }
        if realm.client(&names.keycloak_client()).await.is_some() {
            left.push(format!("Keycloak client {}", names.keycloak_client()));
        }
        if left.is_empty() {
            Ok(Some(()))
        } else {
            Err(format!("left: {left:?}"))
        }
    })
    .await;

    world.finish().await;
}
