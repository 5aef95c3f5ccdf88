//! Step 1: what must hold before anything is created for an app: its namespace opted in, and its backend
//! Service exists with the port the app names. A failed check is the app's Ready condition and stops the pass.
//! Both are read from the watches' caches when a synced watch covers them (no request), else from the API.

use std::sync::Arc;
use std::time::Duration;

use framework::conditions::{ConditionUpdate, READY};
use framework::error::kube_error;
use framework::runner::Outcome;
use k8s_openapi::api::core::v1::{Namespace, Service};
use kube::ResourceExt;
use kube::api::Api;

use super::OPT_IN_LABEL;
use super::error::NebariAppError;
use super::reconcile::Pass;

/// The reason of an app whose namespace lacks the opt-in label.
pub const NAMESPACE_NOT_OPTED_IN: &str = "NamespaceNotOptedIn";
/// How long a pass right after start-up waits for the Namespace and Service watches' first list.
pub const CACHE_WAIT: Duration = Duration::from_secs(30);
/// How often an app in a namespaced install looks again for its namespace's opt-in label.
const OPT_IN_RECHECK: Duration = Duration::from_secs(30);

impl Pass<'_> {
    /// The Ready condition that blocks the app, or `None` when every prerequisite holds.
    pub async fn prerequisites(&self) -> Result<Option<ConditionUpdate>, NebariAppError> {
        let namespace = &self.names.namespace;
        let seen = &self.controller.seen;
        let ns = match seen
            .namespaces
            .get_when_listed(None, namespace, CACHE_WAIT)
            .await
            .known()
        {
            Some(cached) => cached,
            None => Api::<Namespace>::all(self.ctx.client.clone())
                .get_opt(namespace)
                .await
                .map_err(kube_error("reading the namespace"))?
                .map(Arc::new),
        };
        let opted_in = ns
            .as_ref()
            .and_then(|n| n.labels().get(OPT_IN_LABEL))
            .is_some_and(|v| v == "true");
        if !opted_in {
            return Ok(Some(ConditionUpdate::failed(
                READY,
                NAMESPACE_NOT_OPTED_IN,
                format!("namespace {namespace} is not managed: label it {OPT_IN_LABEL}=true"),
            )));
        }
        let backend = &self.app.spec.service;
        let service_namespace = backend.namespace.clone().unwrap_or_else(|| namespace.clone());
        let service = match seen
            .services
            .get_when_listed(Some(&service_namespace), &backend.name, CACHE_WAIT)
            .await
            .known()
        {
            Some(cached) => cached,
            None => Api::<Service>::namespaced(self.ctx.client.clone(), &service_namespace)
                .get_opt(&backend.name)
                .await
                .map_err(kube_error("reading the backend Service"))?
                .map(Arc::new),
        };
        Ok(service_port_problem(
            service.as_deref(),
            &service_namespace,
            &backend.name,
            backend.port,
        ))
    }

    /// When to look again at a blocked app. A namespaced install cannot watch Namespace objects (that needs a
    /// cluster-wide grant), so an app waiting for its namespace's opt-in label looks again after a while instead
    /// of being woken by the label; every other block is lifted by a watched change.
    pub fn recheck_after(&self, blocked: &ConditionUpdate) -> Outcome {
        if blocked.reason == NAMESPACE_NOT_OPTED_IN && !self.ctx.namespaces.is_all() {
            Outcome::RequeueAfter(OPT_IN_RECHECK)
        } else {
            Outcome::Done
        }
    }
}

/// The Ready condition when the backend Service is missing or lacks `port`.
fn service_port_problem(service: Option<&Service>, namespace: &str, name: &str, port: i32) -> Option<ConditionUpdate> {
    let Some(service) = service else {
        return Some(ConditionUpdate::failed(
            READY,
            "ServiceNotFound",
            format!("Service {namespace}/{name} does not exist"),
        ));
    };
    let has_port = service
        .spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .is_some_and(|ports| ports.iter().any(|p| p.port == port));
    (!has_port).then(|| {
        ConditionUpdate::failed(
            READY,
            "ServicePortNotFound",
            format!("Service {namespace}/{name} has no port {port}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ServicePort, ServiceSpec};

    use super::*;

    #[test]
    fn the_backend_must_exist_with_the_named_port() {
        let missing = service_port_problem(None, "team", "web", 80).expect("blocked");
        assert_eq!(missing.reason, "ServiceNotFound");
        let service = Service {
            spec: Some(ServiceSpec {
                ports: Some(vec![ServicePort {
                    port: 8080,
                    ..ServicePort::default()
                }]),
                ..ServiceSpec::default()
            }),
            ..Service::default()
        };
        let wrong_port = service_port_problem(Some(&service), "team", "web", 80).expect("blocked");
        assert_eq!(wrong_port.reason, "ServicePortNotFound");
        assert_eq!(wrong_port.message, "Service team/web has no port 80");
        assert_eq!(service_port_problem(Some(&service), "team", "web", 8080), None);
    }
}
