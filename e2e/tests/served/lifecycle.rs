//! An app's life as visitors see it: public paths open without a login while the rest asks for one, a path the
//! app does not route is not found, turning auth off lets anyone in, and deleting the app makes its hostname stop
//! answering and leaves nothing of it behind.

use controllers::nebari_app::naming::AppNames;
use e2e::harness::{Deadline, wait_until};
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use serde_json::json;

use crate::support::{Visit, World, certificates, http_routes};

/// What an anonymous GET of `url` answers: the status, or the connection error.
async fn anonymous(client: &reqwest::Client, url: &str) -> Result<u16, String> {
    client
        .get(url)
        .send()
        .await
        .map(|r| r.status().as_u16())
        .map_err(|e| format!("{e:?}"))
}

/// Waits until an anonymous GET of `url` answers 200 (Envoy applies a change a moment after it is accepted).
async fn wait_anonymous_ok(client: &reqwest::Client, url: &str, what: &str) {
    wait_until(what, Deadline::secs(60), || async move {
        match anonymous(client, url).await {
            Ok(200) => Ok(Some(())),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
}

#[tokio::test]
async fn public_paths_open_auth_off_lets_anyone_in_and_deleting_the_app_stops_the_hostname() {
    let mut world = World::start(true).await;
    world.start_manager().await;
    let hostname = world.hostname("docs");
    let names = AppNames::new(&world.namespace, "docs");
    let routing = json!({
        "routes": [{"pathPrefix": "/app"}],
        "publicRoutes": [{"pathPrefix": "/health", "pathType": "Exact"}],
    });
    world
        .apply_app("docs", json!({"routing": routing, "auth": {"enabled": true}}))
        .await;
    world.wait_app_ready("docs").await;
    let realm = world.keycloak.as_ref().expect("the world has a realm");
    let client = world.visiting_client(&hostname);
    let base = format!("https://{hostname}");

    // The public path answers without a login; the app's own paths send the visitor to Keycloak; a path the app
    // does not route is not found.
    wait_anonymous_ok(&client, &format!("{base}/health"), "the public path served").await;
    let mut visitor = Visit::new(client.clone());
    let login = visitor.open(&format!("{base}/app/page")).await;
    assert!(
        login.url.starts_with(realm.direct_url()),
        "the app's paths ask for a login: {login:?} via {:?}",
        visitor.hops
    );
    assert_eq!(anonymous(&client, &format!("{base}/elsewhere")).await, Ok(404));

    // Auth off: an anonymous visitor reaches the app.
    world.apply_app("docs", json!({"routing": routing})).await;
    wait_anonymous_ok(
        &client,
        &format!("{base}/app/page"),
        "an anonymous visitor let in after auth is turned off",
    )
    .await;
    let seen = world.backend.seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert!(seen.iter().any(|s| s.path == "/app/page"), "{seen:?}");

    // Deleted: the hostname stops answering, and nothing of the app is left.
    world
        .apps()
        .delete("docs", &Default::default())
        .await
        .expect("delete the app");
    wait_until("the hostname to stop answering", Deadline::secs(60), || {
        let (client, url) = (client.clone(), format!("{base}/app/page"));
        async move {
            match anonymous(&client, &url).await {
                Ok(200) => Err("still served".to_string()),
                _ => Ok(Some(())),
            }
        }
    })
    .await;
    // The route goes with the app through the garbage collector, the rest through the operator's finalizer.
    wait_until("nothing of the app left", Deadline::secs(60), || async {
        let mut left = Vec::new();
        let routes = world.api(&http_routes(), &world.namespace);
        if !matches!(routes.get_opt(&names.route()).await, Ok(None)) {
            left.push(format!("HTTPRoute {}", names.route()));
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
