//! The Kubernetes client, instrumented with client-go's `rest_client_*` metrics.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

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

/// Builds a client from the environment (in-cluster, or `KUBECONFIG`/`~/.kube/config`) that records every
/// request in `metrics`.
pub async fn instrumented_client(metrics: &Metrics) -> Result<Client, ClientError> {
    let config = Config::infer().await?;
    let host = config.cluster_url.host().unwrap_or("unknown").to_string();
    let layer = RequestMetricsLayer {
        metrics: metrics.clone(),
        host,
    };
    let builder = ClientBuilder::try_from(config)?;
    Ok(builder.with_layer(&layer).build())
}

/// A tower layer counting requests by method and status code.
#[derive(Clone)]
pub struct RequestMetricsLayer {
    metrics: Metrics,
    host: String,
}

impl<S> Layer<S> for RequestMetricsLayer {
    type Service = RequestMetrics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestMetrics {
            inner,
            metrics: self.metrics.clone(),
            host: self.host.clone(),
        }
    }
}

/// The service produced by [`RequestMetricsLayer`].
#[derive(Clone)]
pub struct RequestMetrics<S> {
    inner: S,
    metrics: Metrics,
    host: String,
}

impl<S, ReqBody, ResBody> Service<http::Request<ReqBody>> for RequestMetrics<S>
where
    S: Service<http::Request<ReqBody>, Response = http::Response<ResBody>>,
    S::Future: Send + 'static,
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
        let future = self.inner.call(request);
        Box::pin(async move {
            let result = future.await;
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
