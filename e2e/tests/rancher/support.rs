//! Shared plumbing: an in-process Rancher emulator per test, raw HTTP helpers that authenticate like a Rancher
//! client, and a Rancher client (the operator's) pointed at the emulator.

use std::sync::Arc;
use std::time::Duration;

use controllers::rancher::{RancherClient, StaticToken, TokenProvider};
use framework::backoff::BackoffPolicy;
use framework::http::HttpSettings;
use rancher_emulator::{RancherConfig, RancherEmulator, RancherHandle};
use secrecy::SecretString;
use serde_json::Value;

/// One emulator for a test.
pub struct Env {
    pub rancher: RancherHandle,
    pub http: reqwest::Client,
}

/// A raw answer: status and parsed JSON body (`Null` when the body is not JSON).
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub content_type: String,
}

impl Env {
    /// An emulator with the default configuration (cluster `local`, one admin token).
    pub async fn start() -> Env {
        Self::start_with(RancherConfig::default()).await
    }

    /// An emulator with `config`.
    pub async fn start_with(config: RancherConfig) -> Env {
        let rancher = RancherEmulator::start(config).await.expect("emulator starts");
        Env {
            rancher,
            http: reqwest::Client::new(),
        }
    }

    /// `<emulator>/<path>`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.rancher.url())
    }

    /// Sends a request with the admin bearer token.
    pub async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Answer {
        let request = self
            .http
            .request(method, self.url(path))
            .header("authorization", format!("Bearer {}", self.rancher.admin_token()));
        send(match body {
            Some(body) => request.json(&body),
            None => request,
        })
        .await
    }

    pub async fn get(&self, path: &str) -> Answer {
        self.call(reqwest::Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Answer {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    pub async fn put(&self, path: &str, body: Value) -> Answer {
        self.call(reqwest::Method::PUT, path, Some(body)).await
    }

    pub async fn delete(&self, path: &str) -> Answer {
        self.call(reqwest::Method::DELETE, path, None).await
    }

    /// Creates a project through the API and returns its id.
    pub async fn create_project(&self, cluster: &str, name: &str) -> String {
        let answer = self
            .post(
                "/v3/projects",
                serde_json::json!({"type": "project", "clusterId": cluster, "name": name}),
            )
            .await;
        assert_eq!(answer.status, 201, "{:?}", answer.body);
        answer.body["id"].as_str().expect("project id").to_string()
    }

    /// The operator's Rancher client against this emulator, with quick retries.
    pub fn client(&self) -> RancherClient {
        let tokens: Arc<dyn TokenProvider> = Arc::new(StaticToken(SecretString::from(self.rancher.admin_token())));
        self.client_with(tokens)
    }

    /// The operator's Rancher client with a given token source.
    pub fn client_with(&self, tokens: Arc<dyn TokenProvider>) -> RancherClient {
        RancherClient::new(self.rancher.url(), quick_settings(), None, tokens).expect("client builds")
    }
}

/// Short timeouts and backoff so resilience tests stay fast.
pub fn quick_settings() -> HttpSettings {
    HttpSettings {
        connect_timeout: Duration::from_secs(2),
        request_timeout: Duration::from_secs(2),
        retries: 2,
        backoff: BackoffPolicy {
            base: Duration::from_millis(5),
            max: Duration::from_millis(20),
        },
    }
}

/// Sends a prepared request and reads the answer.
pub async fn send(request: reqwest::RequestBuilder) -> Answer {
    let response = request.send().await.expect("request reaches the emulator");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let bytes = response.bytes().await.expect("body");
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Answer {
        status,
        body,
        content_type,
    }
}

/// The ids of a collection's `data`.
pub fn ids(collection: &Value) -> Vec<String> {
    collection["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["id"].as_str().map(str::to_string))
        .collect()
}
