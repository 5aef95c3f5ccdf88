//! The app's own listener on a shared Gateway, owned by server-side apply under a per-app field manager.
//!
//! Applying `{spec: {listeners: [ours]}}` makes the app's manager own exactly its item of the list-map; applying
//! an empty list withdraws it without touching any other listener (another app's, or Argo CD's). A listener
//! made by the replaced operator (written with a whole-Gateway update, so owned by another manager) is taken
//! over by the forced apply and, if withdrawing leaves it behind (or the Gateway refuses what withdrawing would
//! leave behind), removed by a JSON patch that tests its name first.
//!
//! The replaced operator's listener name (`tls-<app>-<ns>`) is ambiguous when either name contains a `-`, so such
//! apps now use a hashed name (`naming.rs`); a listener under the old name is retired only when it serves the
//! app's own hostname, which hostname ownership (`hostname.rs`) makes the app's alone.

use crds::nebari::NebariApp;
use framework::error::{KubeError, kube_error};
use framework::object_cache::ObjectCache;
use framework::runner::Context;
use gateway_api::gateways::Gateway;
use kube::api::{Api, Patch, PatchParams};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use super::acceptance::{self, Verdict};
use super::error::NebariAppError;
use super::naming::AppNames;

/// What ensuring the listener found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenerOutcome {
    /// The listener is in place; what the Gateway's status says about it.
    Ready(Verdict),
    /// The Gateway refused it: same port, protocol and hostname as another listener.
    Conflict(String),
    /// The Gateway does not exist (the operator never creates shared Gateways).
    GatewayMissing,
    /// The Gateway holds as many listeners as Gateway API allows, so the app's cannot be added.
    GatewayFull(String),
    /// The app's namespace holds as many listeners on the Gateway as one namespace may.
    QuotaReached(String),
}

/// Writes and withdraws one app's listener.
pub struct ListenerWriter<'a> {
    ctx: &'a Context,
    names: &'a AppNames,
    gateways: &'a ObjectCache<Gateway>,
}

fn gateway_api(ctx: &Context, namespace: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("gateway.networking.k8s.io", "v1", "Gateway"),
        "gateways",
    );
    Api::namespaced_with(ctx.client.clone(), namespace, &resource)
}

impl<'a> ListenerWriter<'a> {
    /// A writer for the app named by `names`, reading the Gateways from `gateways` where it can.
    pub fn new(ctx: &'a Context, names: &'a AppNames, gateways: &'a ObjectCache<Gateway>) -> Self {
        Self { ctx, names, gateways }
    }

    /// The Gateway as the watch last saw it, or read afresh when no synced watch covers it. A copy that lags our
    /// own last write is revisited: that write's watch event triggers the apps on the Gateway again.
    async fn seen_gateway(&self, gateway: &str, namespace: &str) -> Result<Option<Value>, NebariAppError> {
        let listed = self
            .gateways
            .get_when_listed(Some(namespace), gateway, super::prerequisites::CACHE_WAIT)
            .await;
        match listed.known() {
            Some(cached) => Ok(cached.map(|g| serde_json::to_value(g.as_ref()).unwrap_or(Value::Null))),
            None => self.live_gateway(gateway, namespace).await,
        }
    }

    async fn live_gateway(&self, gateway: &str, namespace: &str) -> Result<Option<Value>, NebariAppError> {
        let live = gateway_api(self.ctx, namespace)
            .get_opt(gateway)
            .await
            .map_err(kube_error(format!("reading Gateway {namespace}/{gateway}")))?;
        Ok(live.map(|g| serde_json::to_value(g).unwrap_or(Value::Null)))
    }

    /// Puts the app's listener on `gateway`, serving `secret`, unless the app's namespace holds `quota` listeners
    /// there already. Writes nothing when it is already as desired.
    pub async fn ensure(
        &self,
        app: &NebariApp,
        gateway: &str,
        namespace: &str,
        secret: &str,
        quota: usize,
    ) -> Result<ListenerOutcome, NebariAppError> {
        let Some(live) = self.seen_gateway(gateway, namespace).await? else {
            return Ok(ListenerOutcome::GatewayMissing);
        };
        self.retire_legacy(&live, &app.spec.hostname, gateway, namespace)
            .await?;
        let desired = listener(app, self.names, secret, namespace);
        if let Some((_, current)) = find_listener(&live, &self.names.listener())
            && framework::children::is_subset(&desired, current)
        {
            return Ok(ListenerOutcome::Ready(acceptance::listener(
                &live,
                &self.names.listener(),
            )));
        }
        // Adding a listener counts the namespace's on the live Gateway and writes only if nothing changed since
        // (the apply carries its resourceVersion): apps added at the same moment cannot all pass the quota.
        let adding = find_listener(&live, &self.names.listener()).is_none();
        let live = if adding {
            match self.live_gateway(gateway, namespace).await? {
                Some(fresh) => fresh,
                None => return Ok(ListenerOutcome::GatewayMissing),
            }
        } else {
            live
        };
        let held = listeners_of_namespace(&live, &self.names.namespace, &self.names.listener());
        if adding && held >= quota {
            return Ok(ListenerOutcome::QuotaReached(format!(
                "the apps of namespace {} hold {held} listeners of their own on Gateway {namespace}/{gateway}, as many \
                 as one namespace may (--nebari-listeners-per-namespace={quota}); the app's listener {} is not added",
                self.names.namespace,
                self.names.listener()
            )));
        }
        let mut body = gateway_apply_body(gateway, namespace, vec![desired]);
        if adding {
            body["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"].clone();
        }
        let params = PatchParams::apply(&self.names.listener_field_manager(&self.ctx.field_manager)).force();
        match gateway_api(self.ctx, namespace)
            .patch(gateway, &params, &Patch::Apply(&body))
            .await
        {
            Ok(applied) => {
                framework::changes::record(format!(
                    "applied listener {} on Gateway {namespace}/{gateway}",
                    self.names.listener()
                ));
                let applied = acceptance::json(&applied);
                Ok(ListenerOutcome::Ready(acceptance::listener(
                    &applied,
                    &self.names.listener(),
                )))
            }
            Err(error) if is_listener_conflict(&error) => Ok(ListenerOutcome::Conflict(format!(
                "listener {} on Gateway {namespace}/{gateway} conflicts with another listener for {} (same port, \
                 protocol and hostname)",
                self.names.listener(),
                app.spec.hostname
            ))),
            Err(error) if is_gateway_full(&error) => Ok(ListenerOutcome::GatewayFull(format!(
                "Gateway {namespace}/{gateway} already has the {MAX_LISTENERS} listeners Gateway API allows, so the \
                 app's listener {} cannot be added; remove an app with TLS of its own from it, or move this app to \
                 another Gateway (spec.gateway)",
                self.names.listener()
            ))),
            Err(error) => {
                Err(KubeError::new(format!("adding the listener to Gateway {namespace}/{gateway}"), error).into())
            }
        }
    }

    /// Removes the app's listener (and a legacy-named one serving `held`, the hostname the app holds) from
    /// `gateway` if it is there. Writes nothing when neither is.
    pub async fn withdraw(&self, held: Option<&str>, gateway: &str, namespace: &str) -> Result<(), NebariAppError> {
        let listener = self.names.listener();
        let Some(live) = self.seen_gateway(gateway, namespace).await? else {
            return Ok(());
        };
        if let Some(held) = held {
            self.retire_legacy(&live, held, gateway, namespace).await?;
        }
        if find_listener(&live, &listener).is_none() {
            return Ok(());
        }
        let body = gateway_apply_body(gateway, namespace, Vec::new());
        let params = PatchParams::apply(&self.names.listener_field_manager(&self.ctx.field_manager)).force();
        match gateway_api(self.ctx, namespace)
            .patch(gateway, &params, &Patch::Apply(&body))
            .await
        {
            Ok(_) => framework::changes::record(format!(
                "withdrew listener {listener} from Gateway {namespace}/{gateway}"
            )),
            // Withdrawing our fields from a listener another manager co-owns leaves that manager's part of it,
            // which Gateway API's own validation refuses (a Terminate listener without certificateRefs, seen on
            // a real kube-apiserver with the upstream CRD): remove the whole item instead, below.
            Err(kube::Error::Api(status)) if status.code == 422 => {}
            Err(error) => {
                return Err(KubeError::new(
                    format!("withdrawing the listener from Gateway {namespace}/{gateway}"),
                    error,
                )
                .into());
            }
        }
        // A listener another manager also owns (the replaced operator's whole-Gateway update) survives the
        // withdrawal: remove that item explicitly, guarded by a test of its name.
        let Some(after) = self.live_gateway(gateway, namespace).await? else {
            return Ok(());
        };
        if let Some((index, item)) = find_listener(&after, &listener) {
            self.remove_item(gateway, namespace, index, item).await?;
        }
        Ok(())
    }

    /// Removes the listener under the replaced operator's name when this app's name differs from it and it
    /// serves `hostname` (then it is this app's: nobody else may serve the hostname).
    async fn retire_legacy(
        &self,
        live: &Value,
        hostname: &str,
        gateway: &str,
        namespace: &str,
    ) -> Result<(), NebariAppError> {
        let legacy = self.names.legacy_listener();
        if legacy == self.names.listener() {
            return Ok(());
        }
        match find_listener(live, &legacy) {
            Some((index, item)) if item["hostname"].as_str() == Some(hostname) => {
                self.remove_item(gateway, namespace, index, item).await
            }
            _ => Ok(()),
        }
    }

    /// Removes the listener `item` at `index` by a JSON patch that first tests its name and hostname, so a list
    /// changed meanwhile is left alone.
    async fn remove_item(
        &self,
        gateway: &str,
        namespace: &str,
        index: usize,
        item: &Value,
    ) -> Result<(), NebariAppError> {
        let mut ops =
            vec![json!({"op": "test", "path": format!("/spec/listeners/{index}/name"), "value": item["name"]})];
        if !item["hostname"].is_null() {
            ops.push(
                json!({"op": "test", "path": format!("/spec/listeners/{index}/hostname"), "value": item["hostname"]}),
            );
        }
        ops.push(json!({"op": "remove", "path": format!("/spec/listeners/{index}")}));
        let patch: json_patch::Patch = serde_json::from_value(Value::Array(ops))
            .map_err(|e| NebariAppError::Invalid(format!("building the listener removal patch: {e}")))?;
        gateway_api(self.ctx, namespace)
            .patch(gateway, &PatchParams::default(), &Patch::<()>::Json(patch))
            .await
            .map_err(kube_error(format!(
                "removing the listener from Gateway {namespace}/{gateway}"
            )))?;
        framework::changes::record(format!(
            "removed listener {} from Gateway {namespace}/{gateway}",
            item["name"]
        ));
        Ok(())
    }
}

/// The listener the app owns on the shared Gateway: HTTPS on 443 for its hostname, terminating with `secret`,
/// accepting routes only from the app's namespace.
pub fn listener(app: &NebariApp, names: &AppNames, secret: &str, gateway_namespace: &str) -> Value {
    json!({
        "name": names.listener(),
        "hostname": app.spec.hostname,
        "port": 443,
        "protocol": "HTTPS",
        "tls": {
            "mode": "Terminate",
            "certificateRefs": [{"group": "", "kind": "Secret", "name": secret, "namespace": gateway_namespace}],
        },
        "allowedRoutes": {
            "namespaces": {
                "from": "Selector",
                "selector": {"matchLabels": {"kubernetes.io/metadata.name": names.namespace}},
            },
        },
    })
}

/// The server-side apply body that gives the app's field manager exactly `listeners` on the Gateway (an empty
/// list withdraws the app's listener).
pub fn gateway_apply_body(gateway: &str, gateway_namespace: &str, listeners: Vec<Value>) -> Value {
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": gateway, "namespace": gateway_namespace},
        "spec": {"listeners": listeners},
    })
}

/// Finds a listener by name in a Gateway object.
pub fn find_listener<'a>(gateway: &'a Value, name: &str) -> Option<(usize, &'a Value)> {
    gateway["spec"]["listeners"]
        .as_array()?
        .iter()
        .enumerate()
        .find(|(_, l)| l["name"].as_str() == Some(name))
}

/// How many listeners of the apps of `app_namespace` the Gateway holds besides `except`: the apps' own listeners
/// (`tls-…`) that admit routes only from that namespace.
pub fn listeners_of_namespace(gateway: &Value, app_namespace: &str, except: &str) -> usize {
    gateway["spec"]["listeners"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|l| {
            let name = l["name"].as_str().unwrap_or_default();
            name != except
                && name.starts_with("tls-")
                && l["allowedRoutes"]["namespaces"]["selector"]["matchLabels"]["kubernetes.io/metadata.name"]
                    == app_namespace
        })
        .count()
}

/// How many listeners Gateway API lets one Gateway have (its CRD's `maxItems`).
pub const MAX_LISTENERS: usize = 64;

/// Whether an API error says the Gateway cannot take another listener (the API server's `maxItems` refusal:
/// `spec.listeners: Too many: 65: must have at most 64 items`).
pub fn is_gateway_full(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => {
            status.code == 422 && status.message.contains("spec.listeners") && status.message.contains("Too many")
        }
        _ => false,
    }
}

/// Whether an API error says our listener clashes with another one (same port, protocol and hostname).
pub fn is_listener_conflict(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => {
            status.code == 422 && status.message.to_lowercase().contains("must be unique")
                || status.code == 409 && status.message.contains("listeners")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use crds::nebari::RoutingConfig;

    use super::*;

    fn app() -> NebariApp {
        crate::nebari_app::example_app(Some(RoutingConfig::default()))
    }

    /// The API server refusing a write with `code` and `message`.
    fn refusal(code: u16, message: &str) -> kube::Error {
        kube::Error::Api(Box::new(kube::core::Status::failure(message, "").with_code(code)))
    }

    #[test]
    fn listener_terminates_tls_for_the_app_namespace_only() {
        let a = app();
        let names = AppNames::new("team", "web");
        let l = listener(&a, &names, "web-team-tls", "envoy-gateway-system");
        assert_eq!(l["name"], "tls-web-team");
        assert_eq!(l["port"], 443);
        assert_eq!(l["protocol"], "HTTPS");
        assert_eq!(l["tls"]["certificateRefs"][0]["name"], "web-team-tls");
        assert_eq!(
            l["allowedRoutes"]["namespaces"]["selector"]["matchLabels"]["kubernetes.io/metadata.name"],
            "team"
        );
        let body = gateway_apply_body("nebari-gateway", "envoy-gateway-system", vec![l]);
        assert_eq!(body["kind"], "Gateway");
        assert!(
            body["spec"].get("gatewayClassName").is_none(),
            "the apply body must claim only the listener"
        );
        assert!(find_listener(&body, "tls-web-team").is_some());
    }

    #[test]
    fn only_duplicate_listener_refusals_count_as_conflicts() {
        assert!(is_listener_conflict(&refusal(
            422,
            "spec.listeners[2]: Listener names Must Be Unique"
        )));
        assert!(is_listener_conflict(&refusal(409, "listeners conflict on port 443")));
        assert!(!is_listener_conflict(&refusal(409, "the object has been modified")));
        assert!(!is_listener_conflict(&refusal(403, "forbidden: listeners")));
    }

    #[test]
    fn a_namespace_holds_the_app_listeners_that_admit_only_its_routes() {
        let own = |name: &str, namespace: &str| {
            json!({"name": name, "allowedRoutes": {"namespaces": {"from": "Selector",
                "selector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}}})
        };
        let gateway = json!({"spec": {"listeners": [
            {"name": "https", "allowedRoutes": {"namespaces": {"from": "All"}}},
            own("tls-a-team", "team"),
            own("tls-b-team", "team"),
            own("tls-c-other", "other"),
            own("argocd", "team"),
        ]}});
        assert_eq!(listeners_of_namespace(&gateway, "team", "tls-x-team"), 2);
        assert_eq!(
            listeners_of_namespace(&gateway, "team", "tls-a-team"),
            1,
            "the app's own is not counted"
        );
        assert_eq!(listeners_of_namespace(&gateway, "other", "tls-x-other"), 1);
        assert_eq!(listeners_of_namespace(&gateway, "nobody", "tls-x-nobody"), 0);
    }

    #[test]
    fn only_the_listener_count_refusal_means_the_gateway_is_full() {
        assert!(is_gateway_full(&refusal(
            422,
            "Gateway.gateway.networking.k8s.io \"nebari-gateway\" is invalid: spec.listeners: Too many: 65: must \
             have at most 64 items"
        )));
        assert!(!is_gateway_full(&refusal(
            422,
            "spec.listeners[3].hostname: Invalid value"
        )));
        assert!(!is_gateway_full(&refusal(409, "spec.listeners: Too many")));
    }
}
