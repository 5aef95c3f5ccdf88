//! A hostname belongs to the app that serves it: another tenant's app that claims the same hostname never receives
//! a request, over HTTPS or plain HTTP, and is told it is not ready.

use crds::nebari::NebariApp;
use e2e::harness::{Deadline, conditions, wait_until};
use kube::api::Api;
use serde_json::json;

use crate::support::World;

#[tokio::test]
async fn another_tenants_app_claiming_a_served_hostname_never_receives_a_request() {
    let mut world = World::start(false).await;
    world.start_manager().await;
    let hostname = world.hostname("shop");
    world.apply_app("shop", json!({"routing": {}})).await;
    world.wait_app_ready("shop").await;
    let client = world.https_client(&hostname);
    let url = format!("https://{hostname}/");
    wait_until("the owner's app served", Deadline::secs(60), || {
        let (client, url) = (client.clone(), url.clone());
        async move {
            match client.get(&url).send().await {
                Ok(response) if response.status().is_success() => Ok(Some(())),
                Ok(response) => Err(response.status().to_string()),
                Err(error) => Err(format!("{error:?}")),
            }
        }
    })
    .await;

    let (other, intruder) = world.tenant("intruder").await;
    world
        .apply_app_in(&other, "shop", json!({"hostname": hostname, "routing": {}}))
        .await;
    let apps: Api<NebariApp> = Api::namespaced(world.cluster.client(), &other);
    let claimed = wait_until("the intruder's app judged", Deadline::secs(60), || {
        let apps = apps.clone();
        async move {
            let app = apps.get("shop").await.map_err(|e| e.to_string())?;
            let status = app.status.clone().unwrap_or_default();
            let current = status.observed_generation.is_some() && status.observed_generation == app.metadata.generation;
            match conditions::get(&app, "Ready") {
                Some(ready) if current && ready.status == "False" => Ok(Some(ready)),
                other => Err(format!("{other:?}")),
            }
        }
    })
    .await;
    assert_eq!(claimed.reason, "HostnameConflict", "{claimed:?}");

    // Whatever the intruder set up, every request for the hostname reaches the owner's backend.
    let plain = reqwest::Client::builder()
        .resolve(&hostname, std::net::SocketAddr::from(([127, 0, 0, 1], 80)))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a plain HTTP client");
    for _ in 0..20 {
        let response = client.get(&url).send().await.expect("the owner's app answers");
        assert_eq!(response.status(), 200);
        assert_eq!(response.text().await.expect("a page"), world.backend.page);
        let _ = plain.get(format!("http://{hostname}/")).send().await;
    }
    let seen = intruder.seen();
    assert!(seen.is_empty(), "the intruder's backend received requests: {seen:?}");

    world.finish().await;
}
