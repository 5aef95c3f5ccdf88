//! What the gateway reports about the objects an app is made of: whether Envoy Gateway accepted the HTTPRoutes
//! (`status.parents[]`), the SecurityPolicy (`status.ancestors[]`) and programmed the app's listener
//! (`status.listeners[]` of the Gateway). Applied is not enough for Ready: a route with a backend in another
//! namespace and no ReferenceGrant, a policy the gateway refuses, or a listener that conflicts with another are
//! all "applied" and serve nothing. Until the gateway reports on the current generation, the verdict is pending.
//!
//! Pure functions over the objects as JSON, so the three kinds share one reading of Gateway API conditions.

use framework::conditions::{ConditionUpdate, Status};
use serde_json::Value;

/// `RoutingReady` while the gateway has not reported on the routes.
pub const PENDING_ROUTE: &str = "PendingRouteAcceptance";
/// `AuthReady` while the gateway has not reported on the SecurityPolicy.
pub const PENDING_POLICY: &str = "PendingPolicyAcceptance";
/// `TLSReady` while the gateway has not programmed the app's listener.
pub const PENDING_LISTENER: &str = "PendingListenerProgramming";
/// The `AuthReady` reasons that concern only the gateway: Keycloak's side was complete in that pass.
pub const GATEWAY_AUTH_REASONS: [&str; 2] = [PENDING_POLICY, "SecurityPolicyNotAccepted"];

/// The JSON of an object, for reading its status.
pub fn json<T: serde::Serialize>(object: &T) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}

/// What of an HTTPRoute's or SecurityPolicy's status the verdicts read, kept by the watch so a pass need not read
/// the child: every condition without its timestamp, and without its reason and message when it holds (only what
/// a refusal or a wait says is reported); of each parent or ancestor reference only its name and namespace, and
/// no controller names.
pub fn trim_status(mut status: Value) -> Value {
    trim_in_place(&mut status);
    status
}

fn trim_in_place(value: &mut Value) {
    match value {
        Value::Object(fields) => {
            fields.remove("controllerName");
            for reference in ["parentRef", "ancestorRef"] {
                if let Some(Value::Object(reference)) = fields.get_mut(reference) {
                    reference.retain(|key, _| key == "name" || key == "namespace");
                }
            }
            if let Some(Value::Array(conditions)) = fields.get_mut("conditions") {
                for condition in conditions.iter_mut().filter_map(Value::as_object_mut) {
                    condition.remove("lastTransitionTime");
                    if condition.get("status").and_then(Value::as_str) == Some("True") {
                        condition.remove("message");
                        condition.remove("reason");
                    }
                }
            }
            fields.values_mut().for_each(trim_in_place);
        }
        Value::Array(items) => items.iter_mut().for_each(trim_in_place),
        _ => {}
    }
}

/// The ReferenceGrant a route's cross-namespace backends need, named exactly: where it goes, what it allows
/// from and to. The operator never writes it (the backend's namespace is not the app's to change).
fn reference_grant_hint(route: &Value, own_namespace: &str) -> String {
    let mut needed: Vec<String> = route["spec"]["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|rule| rule["backendRefs"].as_array().into_iter().flatten())
        .filter_map(|backend| {
            let namespace = backend["namespace"].as_str().filter(|ns| *ns != own_namespace)?;
            let service = backend["name"].as_str()?;
            Some(format!(
                "a ReferenceGrant in namespace {namespace} with from {{group: gateway.networking.k8s.io, kind: \
                 HTTPRoute, namespace: {own_namespace}}} and to {{group: \"\", kind: Service, name: {service}}}"
            ))
        })
        .collect();
    needed.sort();
    needed.dedup();
    if needed.is_empty() {
        " (a Service in another namespace needs a ReferenceGrant there that allows HTTPRoutes from this namespace)"
            .to_string()
    } else {
        format!(
            " (needed: {}; an admin of that namespace creates it)",
            needed.join("; ")
        )
    }
}

/// What the gateway says about one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Accepted (and programmed, for a listener) for the object's current generation.
    Accepted,
    /// Not reported yet for the current generation; the text says what is awaited.
    Pending(String),
    /// Refused: a condition reason for the app and a message saying what the gateway said.
    Refused {
        /// The app's condition reason.
        reason: &'static str,
        /// What the gateway reported, for users of the namespace.
        message: String,
    },
}

impl Verdict {
    /// The condition `type_` this verdict makes of a step that otherwise succeeded with `done`: `done` when
    /// accepted, Unknown with `pending_reason` while the gateway has not reported, False when it refused.
    pub fn condition(self, done: ConditionUpdate, pending_reason: &str) -> ConditionUpdate {
        if done.status != Status::True {
            return done;
        }
        match self {
            Verdict::Accepted => done,
            Verdict::Pending(message) => ConditionUpdate::unknown(&done.type_, pending_reason, message),
            Verdict::Refused { reason, message } => ConditionUpdate::failed(&done.type_, reason, message),
        }
    }

    /// The first verdict that is not `Accepted` (refusals before pending ones), else `Accepted`.
    pub fn worst(verdicts: impl IntoIterator<Item = Verdict>) -> Verdict {
        let mut worst = Verdict::Accepted;
        for verdict in verdicts {
            match (&worst, &verdict) {
                (Verdict::Refused { .. }, _) => {}
                (_, Verdict::Refused { .. }) => worst = verdict,
                (Verdict::Accepted, Verdict::Pending(_)) => worst = verdict,
                _ => {}
            }
        }
        worst
    }
}

/// A Gateway API condition of `conditions` by type.
fn condition<'a>(conditions: &'a Value, type_: &str) -> Option<&'a Value> {
    conditions.as_array()?.iter().find(|c| c["type"] == type_)
}

/// Whether any condition describes an older generation than `generation` (the gateway has not caught up).
fn stale(conditions: &Value, generation: Option<i64>) -> bool {
    let Some(generation) = generation else {
        return false;
    };
    conditions.as_array().into_iter().flatten().any(|c| {
        c["observedGeneration"]
            .as_i64()
            .is_some_and(|observed| observed < generation)
    })
}

fn said(condition: &Value) -> String {
    let reason = condition["reason"].as_str().unwrap_or_default();
    let message = condition["message"].as_str().unwrap_or_default();
    let text = match (reason.is_empty(), message.is_empty()) {
        (false, false) => format!("{reason}: {message}"),
        (false, true) => reason.to_string(),
        (true, _) => message.to_string(),
    };
    framework::sanitize::sanitize(&text)
}

fn is(condition: Option<&Value>, status: &str) -> bool {
    condition.is_some_and(|c| c["status"] == status)
}

/// The verdict on an HTTPRoute from the entry of `status.parents` for Gateway `namespace/gateway`.
pub fn route(route: &Value, namespace: &str, gateway: &str) -> Verdict {
    let name = route["metadata"]["name"].as_str().unwrap_or_default();
    let own_namespace = route["metadata"]["namespace"].as_str().unwrap_or_default();
    let generation = route["metadata"]["generation"].as_i64();
    let waiting = || {
        Verdict::Pending(format!(
            "waiting for Gateway {namespace}/{gateway} to accept HTTPRoute {name}"
        ))
    };
    let entry = route["status"]["parents"].as_array().into_iter().flatten().find(|p| {
        let reference = &p["parentRef"];
        reference["name"] == gateway && reference["namespace"].as_str().unwrap_or(own_namespace) == namespace
    });
    let Some(conditions) = entry.map(|e| &e["conditions"]) else {
        return waiting();
    };
    if stale(conditions, generation) {
        return waiting();
    }
    let accepted = condition(conditions, "Accepted");
    if is(accepted, "False") {
        return Verdict::Refused {
            reason: "HTTPRouteNotAccepted",
            message: format!(
                "Gateway {namespace}/{gateway} did not accept HTTPRoute {name}: {}",
                said(accepted.unwrap_or(&Value::Null))
            ),
        };
    }
    let resolved = condition(conditions, "ResolvedRefs");
    if is(resolved, "False") {
        let resolved = resolved.unwrap_or(&Value::Null);
        let hint = if resolved["reason"] == "RefNotPermitted" {
            reference_grant_hint(route, own_namespace)
        } else {
            String::new()
        };
        return Verdict::Refused {
            reason: "HTTPRouteRefsNotResolved",
            message: format!(
                "HTTPRoute {name} has references the gateway cannot resolve: {}{hint}",
                said(resolved)
            ),
        };
    }
    if is(accepted, "True") {
        Verdict::Accepted
    } else {
        waiting()
    }
}

/// The verdict on a SecurityPolicy from `status.ancestors` (the Gateways of the routes it protects).
pub fn policy(policy: &Value) -> Verdict {
    let name = policy["metadata"]["name"].as_str().unwrap_or_default();
    let generation = policy["metadata"]["generation"].as_i64();
    let waiting = || Verdict::Pending(format!("waiting for the gateway to accept SecurityPolicy {name}"));
    let ancestors: Vec<&Value> = policy["status"]["ancestors"].as_array().into_iter().flatten().collect();
    if ancestors.is_empty() {
        return waiting();
    }
    let mut verdicts = Vec::new();
    for ancestor in ancestors {
        let conditions = &ancestor["conditions"];
        let accepted = condition(conditions, "Accepted");
        verdicts.push(if stale(conditions, generation) {
            waiting()
        } else if is(accepted, "False") {
            let gateway = ancestor["ancestorRef"]["name"].as_str().unwrap_or_default();
            Verdict::Refused {
                reason: "SecurityPolicyNotAccepted",
                message: format!(
                    "the gateway {gateway} did not accept SecurityPolicy {name}, so authentication is not enforced: {}",
                    said(accepted.unwrap_or(&Value::Null))
                ),
            }
        } else if is(accepted, "True") {
            Verdict::Accepted
        } else {
            waiting()
        });
    }
    Verdict::worst(verdicts)
}

/// The verdict on listener `listener` from the Gateway's `status.listeners`.
pub fn listener(gateway: &Value, listener: &str) -> Verdict {
    let name = gateway["metadata"]["name"].as_str().unwrap_or_default();
    let namespace = gateway["metadata"]["namespace"].as_str().unwrap_or_default();
    let generation = gateway["metadata"]["generation"].as_i64();
    let waiting = || {
        Verdict::Pending(format!(
            "waiting for Gateway {namespace}/{name} to program listener {listener}"
        ))
    };
    let entry = gateway["status"]["listeners"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|l| l["name"] == listener);
    let Some(conditions) = entry.map(|e| &e["conditions"]) else {
        return waiting();
    };
    if stale(conditions, generation) {
        return waiting();
    }
    let refused = |reason: &'static str, what: &str, condition: Option<&Value>| Verdict::Refused {
        reason,
        message: format!(
            "listener {listener} on Gateway {namespace}/{name} {what}: {}",
            said(condition.unwrap_or(&Value::Null))
        ),
    };
    let conflicted = condition(conditions, "Conflicted");
    if is(conflicted, "True") {
        return refused("ListenerConflicted", "conflicts with another listener", conflicted);
    }
    let resolved = condition(conditions, "ResolvedRefs");
    if is(resolved, "False") {
        return refused("ListenerRefsNotResolved", "cannot use its certificate", resolved);
    }
    let accepted = condition(conditions, "Accepted");
    if is(accepted, "False") {
        return refused("ListenerNotAccepted", "was not accepted", accepted);
    }
    let programmed = condition(conditions, "Programmed");
    if is(programmed, "False") && programmed.is_some_and(|c| c["reason"] != "Pending") {
        return refused("ListenerNotProgrammed", "is not programmed", programmed);
    }
    if is(programmed, "True") {
        Verdict::Accepted
    } else {
        waiting()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cond(type_: &str, status: &str, reason: &str, generation: i64) -> Value {
        json!({"type": type_, "status": status, "reason": reason, "message": format!("{type_} says {reason}"),
               "observedGeneration": generation})
    }

    fn http_route(generation: i64, parents: Value) -> Value {
        json!({"metadata": {"name": "web-route", "namespace": "team", "generation": generation},
               "status": {"parents": parents}})
    }

    fn parent(conditions: Vec<Value>) -> Value {
        json!({"parentRef": {"name": "nebari-gateway", "namespace": "envoy-gateway-system"},
               "controllerName": "gateway.envoyproxy.io/gatewayclass-controller", "conditions": conditions})
    }

    #[test]
    fn a_route_is_accepted_pending_or_refused_for_its_own_gateway_and_generation() {
        let ok = vec![
            cond("Accepted", "True", "Accepted", 2),
            cond("ResolvedRefs", "True", "ResolvedRefs", 2),
        ];
        let verdict = |route: Value| super::route(&route, "envoy-gateway-system", "nebari-gateway");
        assert_eq!(verdict(http_route(2, json!([parent(ok.clone())]))), Verdict::Accepted);
        assert!(
            matches!(verdict(http_route(3, json!([parent(ok)]))), Verdict::Pending(_)),
            "stale"
        );
        assert!(
            matches!(verdict(http_route(1, json!(null))), Verdict::Pending(_)),
            "no report"
        );
        let other = json!([{"parentRef": {"name": "other", "namespace": "envoy-gateway-system"},
                            "conditions": [cond("Accepted", "True", "Accepted", 1)]}]);
        assert!(
            matches!(verdict(http_route(1, other)), Verdict::Pending(_)),
            "another gateway's entry"
        );
        let refused = verdict(http_route(
            1,
            json!([parent(vec![
                cond("Accepted", "True", "Accepted", 1),
                cond("ResolvedRefs", "False", "RefNotPermitted", 1)
            ])]),
        ));
        let Verdict::Refused { reason, message } = refused else {
            panic!("refused expected")
        };
        assert_eq!(reason, "HTTPRouteRefsNotResolved");
        assert!(
            message.contains("RefNotPermitted") && message.contains("ReferenceGrant"),
            "{message}"
        );
        // With the route's spec at hand, the grant is named exactly.
        let mut cross = http_route(
            1,
            json!([parent(vec![
                cond("Accepted", "True", "Accepted", 1),
                cond("ResolvedRefs", "False", "RefNotPermitted", 1)
            ])]),
        );
        cross["spec"] = json!({"rules": [{"backendRefs": [{"name": "shop", "namespace": "backends", "port": 80}]},
                                        {"backendRefs": [{"name": "local", "port": 80}]}]});
        let Verdict::Refused { message, .. } = verdict(cross) else {
            panic!("refused expected")
        };
        assert!(
            message.ends_with(
                "(needed: a ReferenceGrant in namespace backends with from {group: gateway.networking.k8s.io, \
                 kind: HTTPRoute, namespace: team} and to {group: \"\", kind: Service, name: shop}; an admin of \
                 that namespace creates it)"
            ),
            "{message}"
        );
        let not_accepted = verdict(http_route(
            1,
            json!([parent(vec![cond("Accepted", "False", "NotAllowedByListeners", 1)])]),
        ));
        assert!(matches!(
            not_accepted,
            Verdict::Refused {
                reason: "HTTPRouteNotAccepted",
                ..
            }
        ));
    }

    #[test]
    fn trimming_a_status_keeps_every_verdict() {
        let routes = [
            json!([parent(vec![
                cond("Accepted", "True", "Accepted", 2),
                cond("ResolvedRefs", "True", "ResolvedRefs", 2)
            ])]),
            json!([parent(vec![cond("Accepted", "True", "Accepted", 1)])]),
            json!([parent(vec![
                cond("Accepted", "True", "Accepted", 2),
                cond("ResolvedRefs", "False", "RefNotPermitted", 2)
            ])]),
            json!([parent(vec![cond("Accepted", "False", "NotAllowedByListeners", 2)])]),
            json!(null),
        ];
        for parents in routes {
            let mut full = http_route(2, parents);
            for condition in full["status"]["parents"].as_array_mut().into_iter().flatten() {
                for c in condition["conditions"].as_array_mut().into_iter().flatten() {
                    c["lastTransitionTime"] = json!("2026-11-25T10:00:00Z");
                }
            }
            let mut trimmed = full.clone();
            trimmed["status"] = trim_status(full["status"].clone());
            let verdict = |r: &Value| super::route(r, "envoy-gateway-system", "nebari-gateway");
            assert_eq!(verdict(&trimmed), verdict(&full), "{full}");
            let text = trimmed.to_string();
            assert!(
                !text.contains("lastTransitionTime") && !text.contains("controllerName"),
                "{text}"
            );
            assert!(
                !text.contains("Accepted says Accepted"),
                "a holding condition's message is dropped: {text}"
            );
        }
    }

    #[test]
    fn a_policy_needs_every_ancestor_to_accept_it() {
        let policy = |ancestors: Value| {
            super::policy(&json!({"metadata": {"name": "web-security", "generation": 1},
                                  "status": {"ancestors": ancestors}}))
        };
        let ancestor = |status: &str| {
            json!({"ancestorRef": {"name": "nebari-gateway", "kind": "Gateway"},
                   "conditions": [cond("Accepted", status, "Invalid", 1)]})
        };
        assert_eq!(policy(json!([ancestor("True")])), Verdict::Accepted);
        assert!(matches!(policy(json!([])), Verdict::Pending(_)));
        assert!(matches!(
            policy(json!([ancestor("True"), ancestor("False")])),
            Verdict::Refused {
                reason: "SecurityPolicyNotAccepted",
                ..
            }
        ));
    }

    #[test]
    fn a_listener_is_programmed_conflicted_or_waiting() {
        let gateway = |generation: i64, conditions: Vec<Value>| {
            json!({"metadata": {"name": "nebari-gateway", "namespace": "envoy-gateway-system", "generation": generation},
                   "status": {"listeners": [{"name": "tls-web-team", "conditions": conditions}]}})
        };
        let programmed = vec![
            cond("Accepted", "True", "Accepted", 4),
            cond("Programmed", "True", "Programmed", 4),
            cond("Conflicted", "False", "NoConflicts", 4),
        ];
        assert_eq!(
            listener(&gateway(4, programmed.clone()), "tls-web-team"),
            Verdict::Accepted
        );
        assert!(matches!(
            listener(&gateway(5, programmed), "tls-web-team"),
            Verdict::Pending(_)
        ));
        assert!(matches!(listener(&gateway(4, vec![]), "other"), Verdict::Pending(_)));
        let conflicted = vec![cond("Conflicted", "True", "HostnameConflict", 4)];
        assert!(matches!(
            listener(&gateway(4, conflicted), "tls-web-team"),
            Verdict::Refused {
                reason: "ListenerConflicted",
                ..
            }
        ));
        let bad_cert = vec![cond("ResolvedRefs", "False", "InvalidCertificateRef", 4)];
        assert!(matches!(
            listener(&gateway(4, bad_cert), "tls-web-team"),
            Verdict::Refused {
                reason: "ListenerRefsNotResolved",
                ..
            }
        ));
    }
}
