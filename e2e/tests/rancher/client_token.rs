//! The Rancher token read from a Kubernetes Secret at use time (against the Kubernetes API emulator): rotation
//! takes effect without a restart, and a missing Secret or key is reported without the token.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use controllers::rancher::{ErrorKind, SecretToken, TokenProvider};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use kube_emulator::{ApiServer, ServerConfig};
use rancher_emulator::ApiToken;

use crate::support::Env;

async fn kube_client(server: &kube_emulator::ServerHandle) -> kube::Client {
    server
        .kube_client(kube_emulator::ADMIN_TOKEN)
        .await
        .expect("kube client")
}

fn token_secret(token: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some("rancher-token".into()),
            ..ObjectMeta::default()
        },
        string_data: Some(BTreeMap::from([("token".to_string(), token.to_string())])),
        ..Secret::default()
    }
}

#[tokio::test]
async fn a_token_rotated_in_its_secret_is_used_without_a_restart() {
    let env = Env::start().await;
    let kube = ApiServer::start(ServerConfig::default()).await.expect("kube emulator");
    let client = kube_client(&kube).await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    secrets
        .create(&PostParams::default(), &token_secret(&env.rancher.admin_token()))
        .await
        .expect("secret created");
    let tokens: Arc<dyn TokenProvider> = Arc::new(SecretToken::new(
        client,
        "default",
        "rancher-token",
        "token",
        Duration::from_secs(3600),
    ));
    let rancher = env.client_with(tokens);
    assert_eq!(
        rancher.list_projects("local").await.expect("first token works").len(),
        2
    );

    let rotated = ApiToken::random("user-admin");
    env.rancher.add_token(rotated.clone());
    env.rancher.revoke_token(&env.rancher.admin().access_key);
    secrets
        .replace("rancher-token", &PostParams::default(), &{
            let mut secret = secrets.get("rancher-token").await.expect("secret");
            secret.data = None;
            secret.string_data = Some(BTreeMap::from([("token".to_string(), rotated.bearer())]));
            secret
        })
        .await
        .expect("secret rotated");
    assert_eq!(
        rancher
            .list_projects("local")
            .await
            .expect("the cached token is refused once, then the new one is read")
            .len(),
        2
    );
    kube.shutdown().await;
}

#[tokio::test]
async fn a_missing_secret_or_key_is_reported_without_the_token() {
    let env = Env::start().await;
    let kube = ApiServer::start(ServerConfig::default()).await.expect("kube emulator");
    let client = kube_client(&kube).await;
    let missing = SecretToken::new(
        client.clone(),
        "default",
        "rancher-token",
        "token",
        Duration::from_secs(60),
    );
    let error = env
        .client_with(Arc::new(missing))
        .list_projects("local")
        .await
        .expect_err("no secret");
    assert_eq!(error.kind(), ErrorKind::Unauthorized);
    assert_eq!(
        error.to_string(),
        "rancher token unavailable: secret default/rancher-token not found"
    );
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    secrets
        .create(&PostParams::default(), &token_secret(&env.rancher.admin_token()))
        .await
        .expect("secret created");
    let wrong_key = SecretToken::new(client, "default", "rancher-token", "apiToken", Duration::from_secs(60));
    let error = env
        .client_with(Arc::new(wrong_key))
        .list_projects("local")
        .await
        .expect_err("no such key");
    assert_eq!(
        error.to_string(),
        "rancher token unavailable: secret default/rancher-token has no key apiToken"
    );
    assert!(!error.to_string().contains(&env.rancher.admin().secret));
    assert_eq!(
        env.rancher.count("list", "projects"),
        0,
        "nothing was sent without a token"
    );
    kube.shutdown().await;
}
