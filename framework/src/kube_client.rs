//! The Kubernetes client, instrumented with client-go's `rest_client_*` metrics and given an answer deadline.
//!
//! kube-client sets no read timeout (so that watches can stay open), which leaves an ordinary request whose
//! answer never comes waiting forever — and with it the reconcile, and any lock it holds. Every request here must
//! see its response head within [`ClientSettings::request_timeout`]; a watch's head comes at once and its stream
//! is not limited (the watcher has its own idle timeout).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use kube::client::ClientBuilder;
use kube::{Client, Config};
use tower::{Layer, Service};

use crate::metrics::Metrics;

/// Failure to build the client.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No kubeconfig or in-cluster configuration was found or it is invalid.
    #[error("cannot load Kubernetes configuration: {0}")]
    Config(#[from] kube::config::InferConfigError),
    /// The HTTP stack could not be built.
    #[error("cannot build Kubernetes client: {0}")]
    Build(#[from] kube::Error),
}

/// How the manager talks to the Kubernetes API.
#[derive(Clone, Copy, Debug)]
pub struct ClientSettings {
    /// How long a request may wait for its response head, kube-client's own retries of 429/503/504 included.
    pub request_timeout: Duration,
}

impl Default for ClientSettings {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(60),
        }
    }
}

/// A Kubernetes request got no answer in time.
#[derive(Debug, thiserror::Error)]
#[error("the Kubernetes API did not answer {method} {path} within {}s", timeout.as_secs())]
pub struct RequestTimedOut {
    method: String,
    path: String,
    timeout: Duration,
}

/// Builds a client from the environment (in-cluster, or `KUBECONFIG`/`~/.kube/config`) that records every
/// request in `metrics` and gives up on a request unanswered after `settings.request_timeout`.
pub async fn instrumented_client(metrics: &Metrics, settings: ClientSettings) -> Result<Client, ClientError> {
    let config = Config::infer().await?;
    let host = config.cluster_url.host().unwrap_or("unknown").to_string();
    let layer = RequestMetricsLayer {
        metrics: metrics.clone(),
        host,
        timeout: settings.request_timeout,
    };
    let builder = ClientBuilder::try_from(config)?;
    Ok(builder.with_layer(&layer).build())
}

/// A tower layer counting requests by method and status code, and failing those unanswered after `timeout`.
#[derive(Clone)]
pub struct RequestMetricsLayer {
    metrics: Metrics,
    host: String,
    timeout: Duration,
}

impl<S> Layer<S> for RequestMetricsLayer {
    type Service = RequestMetrics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestMetrics {
            inner,
            metrics: self.metrics.clone(),
            host: self.host.clone(),
            timeout: self.timeout,
        }
    }
}

/// The service produced by [`RequestMetricsLayer`].
#[derive(Clone)]
pub struct RequestMetrics<S> {
    inner: S,
    metrics: Metrics,
    host: String,
    timeout: Duration,
}

impl<S, ReqBody, ResBody> Service<http::Request<ReqBody>> for RequestMetrics<S>
where
    S: Service<http::Request<ReqBody>, Response = http::Response<ResBody>>,
    S::Future: Send + 'static,
    S::Error: From<RequestTimedOut>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<ReqBody>) -> Self::Future {
        let method = request.method().as_str().to_string();
        let metrics = self.metrics.clone();
        let host = self.host.clone();
        let started = Instant::now();
        let timeout = self.timeout;
        // The path names the resource and object, never a secret value; the query (selectors) is left out.
        let path = request.uri().path().to_string();
        let future = self.inner.call(request);
        Box::pin(async move {
            let result = match tokio::time::timeout(timeout, future).await {
                Ok(result) => result,
                Err(_elapsed) => {
                    tracing::warn!(
                        method,
                        path,
                        timeout_s = timeout.as_secs(),
                        "Kubernetes request unanswered; gave up"
                    );
                    Err(RequestTimedOut {
                        method: method.clone(),
                        path,
                        timeout,
                    }
                    .into())
                }
            };
            let code = match &result {
                Ok(response) => response.status().as_u16().to_string(),
                Err(_) => "<error>".to_string(),
            };
            let elapsed = started.elapsed();
            let latency_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
            tracing::debug!(method, code, latency_ms, "kubernetes request");
            metrics.observe_kube_request(&method, &code, &host, elapsed);
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(timeout: Duration) -> RequestMetricsLayer {
        RequestMetricsLayer {
            metrics: Metrics::new().expect("metrics"),
            host: "test".into(),
            timeout,
        }
    }

    type BoxError = Box<dyn std::error::Error + Send + Sync>;

    #[tokio::test(start_paused = true)]
    async fn a_request_never_answered_fails_after_the_timeout() {
        let silent = tower::service_fn(|_request: http::Request<()>| async {
            std::future::pending::<Result<http::Response<()>, BoxError>>().await
        });
        let mut service = layer(Duration::from_secs(60)).layer(silent);
        let request = http::Request::get("/api/v1/namespaces/ns/secrets/s")
            .body(())
            .expect("request");
        let error = service.call(request).await.expect_err("no answer must time out");
        assert_eq!(
            error.to_string(),
            "the Kubernetes API did not answer GET /api/v1/namespaces/ns/secrets/s within 60s"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_in_time_passes_through() {
        let slow = tower::service_fn(|_request: http::Request<()>| async {
            // The stand-in API's answer time (paused clock): what is tested, not a wait for a state.
            tokio::time::sleep(Duration::from_secs(59)).await;
            Ok::<_, BoxError>(http::Response::builder().status(201).body(()).expect("response"))
        });
        let mut service = layer(Duration::from_secs(60)).layer(slow);
        let request = http::Request::post("/api/v1/namespaces").body(()).expect("request");
        let response = service.call(request).await.expect("answered in time");
        assert_eq!(response.status(), 201);
    }
}
