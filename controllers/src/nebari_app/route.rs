//! The HTTPRoutes of a NebariApp: the main route (protected by the SecurityPolicy when auth is on) and the
//! public route for paths that bypass authentication.

use std::collections::BTreeMap;

use crds::nebari::{NebariApp, PathType, RouteMatch};
use gateway_api::httproutes::{
    HttpRoute, HttpRouteParentRefs, HttpRouteRules, HttpRouteRulesBackendRefs, HttpRouteRulesMatches,
    HttpRouteRulesMatchesPath, HttpRouteRulesMatchesPathType, HttpRouteSpec,
};
use kube::api::ObjectMeta;

/// Annotation telling whether the route's listener terminates TLS.
pub const TLS_ENABLED_ANNOTATION: &str = "nebari.dev/tls-enabled";
/// Label marking the unauthenticated route.
pub const ROUTE_TYPE_LABEL: &str = "nebari.dev/route-type";

/// Where the routes attach on the shared Gateway.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attachment {
    /// Gateway name.
    pub gateway: String,
    /// Gateway namespace.
    pub namespace: String,
    /// Listener (section) name: the app's own TLS listener, the shared `https`, or `http`.
    pub section: String,
    /// Whether that listener terminates TLS.
    pub tls: bool,
}

fn matches(routes: Option<&[RouteMatch]>, default_type: PathType) -> Option<Vec<HttpRouteRulesMatches>> {
    let routes = routes?;
    if routes.is_empty() {
        return None;
    }
    Some(
        routes
            .iter()
            .map(|r| HttpRouteRulesMatches {
                path: Some(HttpRouteRulesMatchesPath {
                    r#type: Some(match r.path_type.unwrap_or(default_type) {
                        PathType::PathPrefix => HttpRouteRulesMatchesPathType::PathPrefix,
                        PathType::Exact => HttpRouteRulesMatchesPathType::Exact,
                    }),
                    value: Some(r.path_prefix.clone()),
                }),
                ..Default::default()
            })
            .collect(),
    )
}

fn route(
    app: &NebariApp,
    name: String,
    attachment: &Attachment,
    route_matches: Option<Vec<HttpRouteRulesMatches>>,
    annotations: BTreeMap<String, String>,
    labels: BTreeMap<String, String>,
) -> HttpRoute {
    let spec = &app.spec;
    let app_namespace = app.metadata.namespace.clone().unwrap_or_default();
    let backend_namespace = spec.service.namespace.clone().filter(|ns| *ns != app_namespace);
    HttpRoute {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(app_namespace),
            labels: (!labels.is_empty()).then_some(labels),
            annotations: Some(annotations),
            ..Default::default()
        },
        spec: HttpRouteSpec {
            parent_refs: Some(vec![HttpRouteParentRefs {
                group: Some("gateway.networking.k8s.io".to_string()),
                kind: Some("Gateway".to_string()),
                name: attachment.gateway.clone(),
                namespace: Some(attachment.namespace.clone()),
                section_name: Some(attachment.section.clone()),
                port: None,
            }]),
            hostnames: Some(vec![spec.hostname.clone()]),
            rules: Some(vec![HttpRouteRules {
                matches: route_matches,
                backend_refs: Some(vec![HttpRouteRulesBackendRefs {
                    name: spec.service.name.clone(),
                    namespace: backend_namespace,
                    port: Some(spec.service.port),
                    ..Default::default()
                }]),
                ..Default::default()
            }]),
        },
        status: None,
    }
}

/// The main route `<app>-route`: the app's path rules (PathPrefix by default; all paths without rules), with the
/// user's annotations and the operator's `nebari.dev/tls-enabled` on top.
pub fn main_route(app: &NebariApp, name: String, attachment: &Attachment) -> HttpRoute {
    let routing = app.spec.routing.as_ref();
    let mut annotations = routing.and_then(|r| r.annotations.clone()).unwrap_or_default();
    annotations.insert(TLS_ENABLED_ANNOTATION.to_string(), attachment.tls.to_string());
    let route_matches = matches(routing.and_then(|r| r.routes.as_deref()), PathType::PathPrefix);
    route(app, name, attachment, route_matches, annotations, BTreeMap::new())
}

/// The public route `<app>-public-route` for `routing.publicRoutes` (Exact by default), or `None` when there
/// are no public paths — the caller deletes any previous one so no stale unauthenticated path survives.
pub fn public_route(app: &NebariApp, name: String, attachment: &Attachment) -> Option<HttpRoute> {
    let public = app.spec.routing.as_ref()?.public_routes.as_deref()?;
    let route_matches = matches(Some(public), PathType::Exact)?;
    let annotations = BTreeMap::from([(TLS_ENABLED_ANNOTATION.to_string(), attachment.tls.to_string())]);
    let labels = BTreeMap::from([(ROUTE_TYPE_LABEL.to_string(), "public".to_string())]);
    Some(route(app, name, attachment, Some(route_matches), annotations, labels))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crds::nebari::{NebariAppSpec, RoutingConfig, ServiceReference};

    fn app(routing: Option<RoutingConfig>) -> NebariApp {
        let mut app = NebariApp::new(
            "web",
            NebariAppSpec {
                hostname: "web.example.com".into(),
                service: ServiceReference {
                    name: "web-svc".into(),
                    port: 8080,
                    namespace: None,
                },
                routing,
                auth: None,
                gateway: Default::default(),
                service_account_name: None,
                landing_page: None,
            },
        );
        app.metadata.namespace = Some("team".into());
        app
    }

    fn attachment() -> Attachment {
        Attachment {
            gateway: "nebari-gateway".into(),
            namespace: "envoy-gateway-system".into(),
            section: "tls-web-team".into(),
            tls: true,
        }
    }

    #[test]
    fn main_route_attaches_to_the_listener_and_targets_the_service() {
        let routing = RoutingConfig {
            routes: Some(vec![
                RouteMatch {
                    path_prefix: "/api".into(),
                    path_type: None,
                },
                RouteMatch {
                    path_prefix: "/exact".into(),
                    path_type: Some(PathType::Exact),
                },
            ]),
            annotations: Some(BTreeMap::from([
                ("argocd.argoproj.io/tracking-id".to_string(), "x".to_string()),
                (TLS_ENABLED_ANNOTATION.to_string(), "user-value".to_string()),
            ])),
            ..Default::default()
        };
        let r = main_route(&app(Some(routing)), "web-route".into(), &attachment());
        let value = serde_json::to_value(&r).expect("serializes");
        assert_eq!(value["metadata"]["name"], "web-route");
        assert_eq!(value["metadata"]["namespace"], "team");
        assert_eq!(value["metadata"]["annotations"]["argocd.argoproj.io/tracking-id"], "x");
        assert_eq!(
            value["metadata"]["annotations"][TLS_ENABLED_ANNOTATION], "true",
            "operator annotation wins"
        );
        let parent = &value["spec"]["parentRefs"][0];
        assert_eq!(parent["name"], "nebari-gateway");
        assert_eq!(parent["namespace"], "envoy-gateway-system");
        assert_eq!(parent["sectionName"], "tls-web-team");
        assert_eq!(value["spec"]["hostnames"], serde_json::json!(["web.example.com"]));
        let rule = &value["spec"]["rules"][0];
        assert_eq!(
            rule["matches"][0]["path"],
            serde_json::json!({"type": "PathPrefix", "value": "/api"})
        );
        assert_eq!(
            rule["matches"][1]["path"],
            serde_json::json!({"type": "Exact", "value": "/exact"})
        );
        assert_eq!(
            rule["backendRefs"][0],
            serde_json::json!({"name": "web-svc", "port": 8080})
        );
    }

    #[test]
    fn no_routes_means_all_paths() {
        let r = main_route(&app(Some(RoutingConfig::default())), "web-route".into(), &attachment());
        let value = serde_json::to_value(&r).expect("serializes");
        assert!(value["spec"]["rules"][0].get("matches").is_none());
    }

    #[test]
    fn cross_namespace_service_sets_the_backend_namespace() {
        let mut a = app(Some(RoutingConfig::default()));
        a.spec.service.namespace = Some("shared".into());
        let value = serde_json::to_value(main_route(&a, "web-route".into(), &attachment())).expect("json");
        assert_eq!(value["spec"]["rules"][0]["backendRefs"][0]["namespace"], "shared");
    }

    #[test]
    fn public_route_defaults_to_exact_and_is_labelled() {
        let routing = RoutingConfig {
            public_routes: Some(vec![RouteMatch {
                path_prefix: "/healthz".into(),
                path_type: None,
            }]),
            ..Default::default()
        };
        let r = public_route(&app(Some(routing)), "web-public-route".into(), &attachment()).expect("public route");
        let value = serde_json::to_value(&r).expect("json");
        assert_eq!(value["metadata"]["labels"][ROUTE_TYPE_LABEL], "public");
        assert_eq!(value["spec"]["rules"][0]["matches"][0]["path"]["type"], "Exact");
    }

    #[test]
    fn no_public_paths_means_no_public_route() {
        assert!(public_route(&app(Some(RoutingConfig::default())), "x".into(), &attachment()).is_none());
        let empty = RoutingConfig {
            public_routes: Some(vec![]),
            ..Default::default()
        };
        assert!(public_route(&app(Some(empty)), "x".into(), &attachment()).is_none());
    }
}
