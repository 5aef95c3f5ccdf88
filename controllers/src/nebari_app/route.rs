//! Step 4, routes: the HTTPRoutes of a NebariApp, the main route (protected by the SecurityPolicy when auth is
//! on) and the public route for paths that bypass authentication, exposed only when [`exposure`] allows it.
//! Produces `RoutingReady`.

use std::collections::BTreeMap;

use crds::nebari::{GatewayReference, NebariApp, NebariAppSpec, PathType, RouteMatch, RoutingConfig};
use crds::thirdparty::envoy_gateway::SecurityPolicy;
use framework::children::Observed;
use framework::conditions::ConditionUpdate;
use framework::error::kube_error;
use framework::events::Severity;
use gateway_api::httproutes::{
    HttpRoute, HttpRouteParentRefs, HttpRouteRules, HttpRouteRulesBackendRefs, HttpRouteRulesMatches,
    HttpRouteRulesMatchesPath, HttpRouteRulesMatchesPathType, HttpRouteRulesTimeouts, HttpRouteSpec,
};
use kube::api::{Api, ObjectMeta};
use kube::{Resource, ResourceExt};
use serde_json::Value;

use super::acceptance::{self, Verdict};
use super::error::NebariAppError;
use super::reconcile::Pass;
use super::security_policy::{LOGOUT_PATH, callback_path};
use super::status::ROUTING_READY;

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
                timeouts: timeouts(spec.routing.as_deref()),
                ..Default::default()
            }]),
        },
        status: None,
    }
}

/// The route timeouts `routing.timeouts` asks for, in Gateway API's form (`None`: the gateway's defaults).
fn timeouts(routing: Option<&RoutingConfig>) -> Option<HttpRouteRulesTimeouts> {
    let asked = routing?.timeouts.as_ref()?;
    (asked.request.is_some() || asked.backend_request.is_some()).then(|| HttpRouteRulesTimeouts {
        request: asked.request.clone(),
        backend_request: asked.backend_request.clone(),
    })
}

/// The main route `<app>-route`: the app's path rules (PathPrefix by default; all paths without rules), with the
/// user's annotations and the operator's `nebari.dev/tls-enabled` on top.
///
/// With auth at the gateway, the rules also match the OIDC callback and logout paths when the app's own rules do
/// not: Envoy Gateway runs the OIDC filter only on the routes its policy targets, so a callback no rule matches is
/// a 404 and nobody can finish signing in (found on the real Envoy Gateway; the original left this to the user).
pub fn main_route(app: &NebariApp, name: String, attachment: &Attachment) -> HttpRoute {
    let routing = app.spec.routing.as_ref();
    let mut annotations = routing.and_then(|r| r.annotations.clone()).unwrap_or_default();
    annotations.insert(TLS_ENABLED_ANNOTATION.to_string(), attachment.tls.to_string());
    let mut rules: Option<Vec<RouteMatch>> = routing.and_then(|r| r.routes.clone()).filter(|r| !r.is_empty());
    if let (Some(rules), Some(auth)) = (
        rules.as_mut(),
        app.spec.auth.as_ref().filter(|_| auth_enforced(&app.spec)),
    ) {
        for path in [callback_path(auth), LOGOUT_PATH.to_string()] {
            if !rules.iter().any(|rule| covers(rule, &path, PathType::PathPrefix)) {
                rules.push(RouteMatch {
                    path_prefix: path,
                    path_type: Some(PathType::Exact),
                });
            }
        }
    }
    let route_matches = matches(rules.as_deref(), PathType::PathPrefix);
    route(app, name, attachment, route_matches, annotations, BTreeMap::new())
}

/// Whether `rule` (of type `default_type` unless it says) matches request path `path`, as Gateway API matches
/// paths: a prefix matches whole path elements only.
fn covers(rule: &RouteMatch, path: &str, default_type: PathType) -> bool {
    let value = rule.path_prefix.as_str();
    match rule.path_type.unwrap_or(default_type) {
        PathType::Exact => value == path,
        PathType::PathPrefix => {
            let prefix = value.trim_end_matches('/');
            prefix.is_empty() || path == prefix || path.starts_with(&format!("{prefix}/"))
        }
    }
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

/// Whether an app's routes may be exposed. The gate fails closed: while authentication is required at the
/// gateway, the routes exist only when a SecurityPolicy protects them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exposure {
    /// No authentication is required at the gateway.
    Open,
    /// The SecurityPolicy applied in this pass protects the routes.
    Protected,
    /// The policy could not be rebuilt in this pass (client Secret missing, Keycloak down), but the one an
    /// earlier pass applied still protects the routes; it is kept, not pruned.
    ProtectedByEarlierPolicy,
    /// Nothing would protect the routes: they are withheld.
    Withheld,
}

/// Decides [`Exposure`] from whether the spec enforces auth at the gateway, whether this pass applied the
/// policy, and whether an earlier pass's policy is still in place.
pub fn exposure(enforced: bool, applied_now: bool, earlier_policy: bool) -> Exposure {
    match (enforced, applied_now, earlier_policy) {
        (false, _, _) => Exposure::Open,
        (true, true, _) => Exposure::Protected,
        (true, false, true) => Exposure::ProtectedByEarlierPolicy,
        (true, false, false) => Exposure::Withheld,
    }
}

/// Whether the spec asks for authentication at the gateway.
pub fn auth_enforced(spec: &NebariAppSpec) -> bool {
    spec.auth.as_ref().is_some_and(|a| a.enabled && a.enforce_at_gateway)
}

/// `RoutingReady`'s reason when the Gateway the routes attach to does not exist.
pub const GATEWAY_NOT_FOUND: &str = "GatewayNotFound";

impl Pass<'_> {
    /// The Gateway the routes attach to, for the status (`None` without operator routing).
    pub fn gateway_reference(&self) -> Option<GatewayReference> {
        let settings = &self.controller.settings;
        self.app.spec.routing.as_ref().map(|_| GatewayReference {
            name: settings.gateway_name(self.app.spec.gateway).to_string(),
            namespace: settings.gateway_namespace.clone(),
        })
    }

    /// Applies the routes on listener `section` when [`exposure`] allows, given whether the auth step applied
    /// the SecurityPolicy and whether it refused what the spec asks for (then no earlier policy is kept).
    pub async fn routes(&mut self, section: String, policy_applied: bool, refused: bool) -> Result<(), NebariAppError> {
        let enforced = auth_enforced(&self.app.spec);
        let earlier_policy = enforced && !policy_applied && !refused && self.keep_earlier_policy().await?;
        if exposure(enforced, policy_applied, earlier_policy) == Exposure::Withheld {
            if self.app.spec.routing.is_some() {
                let message = if refused {
                    "the HTTPRoute is withheld: the gateway cannot enforce the authentication the spec asks for \
                     (see AuthReady), and an earlier, looser policy would expose the app without it"
                } else {
                    "the HTTPRoute is withheld until the OIDC client is ready, so the app is never exposed without \
                     the authentication it asks for"
                };
                self.status
                    .set(ConditionUpdate::failed(ROUTING_READY, "WaitingForAuth", message));
            }
            return Ok(());
        }
        let routed = self.apply_routes(section).await;
        if let Err(error) = &routed
            && self.app.spec.routing.is_some()
        {
            self.status.set(ConditionUpdate::failed(
                ROUTING_READY,
                error.condition_reason(),
                framework::sanitize::sanitize(&error.to_string()),
            ));
        }
        routed
    }

    /// The main route, and the public route only while there are public paths behind enforced auth.
    async fn apply_routes(&mut self, section: String) -> Result<(), NebariAppError> {
        let Some(routing) = self.app.spec.routing.as_ref() else {
            self.status.set_quietly(ConditionUpdate::failed(
                ROUTING_READY,
                "RoutingNotConfigured",
                "spec.routing is not set; routing is managed outside the operator",
            ));
            return Ok(());
        };
        let settings = &self.controller.settings;
        let attachment = Attachment {
            gateway: settings.gateway_name(self.app.spec.gateway).to_string(),
            namespace: settings.gateway_namespace.clone(),
            section,
            tls: self.plan.is_tls(),
        };
        // The verdict reads the observed status with the spec applied (its backends name a missing grant).
        let verdict_of = |route: &Observed, spec: Value| {
            let mut observed = route.to_json();
            observed["spec"] = spec;
            acceptance::route(&observed, &attachment.namespace, &attachment.gateway)
        };
        let main_desired = main_route(self.app, self.names.route(), &attachment);
        let main_spec = acceptance::json(&main_desired)["spec"].clone();
        let main = self.children.apply_observed(main_desired).await?;
        let mut verdicts = vec![verdict_of(&main, main_spec)];
        let has_public = routing.public_routes.as_ref().is_some_and(|r| !r.is_empty());
        if has_public && auth_enforced(&self.app.spec) {
            if let Some(route) = public_route(self.app, self.names.public_route(), &attachment) {
                let spec = acceptance::json(&route)["spec"].clone();
                let public = self.children.apply_observed(route).await?;
                verdicts.push(verdict_of(&public, spec));
            }
        } else if has_public {
            self.ctx
                .events
                .publish(
                    &self.app.object_ref(&()),
                    Severity::Warning,
                    "PublicRoutesIgnored",
                    "Reconcile",
                    "routing.publicRoutes only applies when auth is enabled and enforced at the gateway; every path \
                     is already public",
                )
                .await;
        }
        let routed = ConditionUpdate::ok(
            ROUTING_READY,
            "HTTPRouteReady",
            format!(
                "HTTPRoute {} routes {}, accepted by Gateway {}/{}",
                self.names.route(),
                self.app.spec.hostname,
                attachment.namespace,
                attachment.gateway
            ),
        );
        // A route keeps the acceptance its Gateway gave it after the Gateway is deleted; nothing serves it then.
        let gateway_gone = self
            .controller
            .seen
            .gateways
            .get_when_listed(
                Some(&attachment.namespace),
                &attachment.gateway,
                super::prerequisites::CACHE_WAIT,
            )
            .await
            .known()
            .is_some_and(|gateway| gateway.is_none());
        if gateway_gone {
            self.status.set(ConditionUpdate::failed(
                ROUTING_READY,
                GATEWAY_NOT_FOUND,
                format!(
                    "Gateway {}/{} does not exist: HTTPRoute {} is applied but nothing serves it",
                    attachment.namespace,
                    attachment.gateway,
                    self.names.route()
                ),
            ));
            return Ok(());
        }
        self.status
            .set(Verdict::worst(verdicts).condition(routed, acceptance::PENDING_ROUTE));
        Ok(())
    }

    /// Keeps the SecurityPolicy an earlier pass applied (so pruning cannot strip protection from live routes)
    /// and tells whether there is one.
    async fn keep_earlier_policy(&mut self) -> Result<bool, NebariAppError> {
        let names = &self.names;
        let api: Api<SecurityPolicy> = Api::namespaced(self.ctx.client.clone(), &names.namespace);
        let existing = api
            .get_opt(&names.security_policy())
            .await
            .map_err(kube_error("reading the SecurityPolicy"))?;
        let ours = existing.as_ref().is_some_and(|policy| {
            policy
                .owner_references()
                .iter()
                .any(|owner| Some(&owner.uid) == self.app.metadata.uid.as_ref())
        });
        if ours {
            self.children
                .keep::<SecurityPolicy>(&names.namespace, &names.security_policy());
        }
        Ok(ours)
    }
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
                routing: routing.map(Box::new),
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
    fn with_auth_at_the_gateway_the_callback_and_logout_paths_are_routed_when_the_rules_miss_them() {
        let routes = |paths: &[&str]| RoutingConfig {
            routes: Some(
                paths
                    .iter()
                    .map(|p| RouteMatch {
                        path_prefix: p.to_string(),
                        path_type: None,
                    })
                    .collect(),
            ),
            ..Default::default()
        };
        let paths_of = |app: &NebariApp| -> Vec<(String, String)> {
            let value = serde_json::to_value(main_route(app, "web-route".into(), &attachment())).expect("json");
            value["spec"]["rules"][0]["matches"]
                .as_array()
                .map(|all| {
                    all.iter()
                        .map(|m| {
                            (
                                m["path"]["type"].as_str().unwrap_or_default().to_string(),
                                m["path"]["value"].as_str().unwrap_or_default().to_string(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let with_auth = |routing: RoutingConfig, auth: serde_json::Value| {
            let mut app = app(Some(routing));
            app.spec.auth = Some(serde_json::from_value(auth).expect("auth"));
            app
        };
        let pair = |t: &str, v: &str| (t.to_string(), v.to_string());

        assert_eq!(
            paths_of(&with_auth(routes(&["/app"]), serde_json::json!({"enabled": true}))),
            vec![
                pair("PathPrefix", "/app"),
                pair("Exact", "/oauth2/callback"),
                pair("Exact", "/logout")
            ],
            "a callback no rule matches would be a 404 after signing in"
        );
        assert_eq!(
            paths_of(&with_auth(
                routes(&["/app", "/oauth2", "/logout"]),
                serde_json::json!({"enabled": true})
            )),
            vec![
                pair("PathPrefix", "/app"),
                pair("PathPrefix", "/oauth2"),
                pair("PathPrefix", "/logout")
            ],
            "paths the rules already match are not added again"
        );
        assert_eq!(
            paths_of(&with_auth(
                routes(&["/app"]),
                serde_json::json!({"enabled": true, "redirectURI": "/app/callback"})
            )),
            vec![pair("PathPrefix", "/app"), pair("Exact", "/logout")],
            "a callback under the app's own prefix is matched already"
        );
        assert_eq!(
            paths_of(&with_auth(routes(&["/apple"]), serde_json::json!({"enabled": true})))[1..],
            [pair("Exact", "/oauth2/callback"), pair("Exact", "/logout")],
        );
        assert_eq!(
            paths_of(&with_auth(
                routes(&["/app"]),
                serde_json::json!({"enabled": true, "enforceAtGateway": false})
            )),
            vec![pair("PathPrefix", "/app")],
            "an app that runs OAuth itself gets only its own rules"
        );
        assert_eq!(
            paths_of(&with_auth(routes(&["/app"]), serde_json::json!({"enabled": false}))),
            vec![pair("PathPrefix", "/app")]
        );
        assert!(
            paths_of(&with_auth(
                RoutingConfig::default(),
                serde_json::json!({"enabled": true})
            ))
            .is_empty(),
            "without rules every path is routed already"
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

    #[test]
    fn routes_fail_closed_while_auth_is_enforced_without_a_policy() {
        assert_eq!(
            exposure(false, false, false),
            Exposure::Open,
            "no auth at the gateway: nothing to wait for"
        );
        assert_eq!(exposure(true, true, false), Exposure::Protected);
        assert_eq!(exposure(true, false, true), Exposure::ProtectedByEarlierPolicy);
        assert_eq!(exposure(true, false, false), Exposure::Withheld);
    }

    #[test]
    fn auth_is_enforced_only_when_enabled_and_at_the_gateway() {
        let mut spec = app(None).spec;
        assert!(!auth_enforced(&spec));
        spec.auth = Some(serde_json::from_value(serde_json::json!({"enabled": true})).expect("auth"));
        assert!(auth_enforced(&spec), "enforceAtGateway defaults to true");
        spec.auth = Some(
            serde_json::from_value(serde_json::json!({"enabled": true, "enforceAtGateway": false})).expect("auth"),
        );
        assert!(!auth_enforced(&spec));
        spec.auth = Some(serde_json::from_value(serde_json::json!({"enabled": false})).expect("auth"));
        assert!(!auth_enforced(&spec));
    }
}
