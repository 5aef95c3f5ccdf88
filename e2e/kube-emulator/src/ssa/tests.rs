//! Engine-level tests of the server-side apply checklist (numbered as in docs/api-emulator.md), the Gateway listener
//! scenario the operator relies on, and the kubectl client-side-apply upgrade.
//!
//! The HTTP-level items (1–3 query parameters, 6 name checks, 10 YAML duplicate keys, 27 status 404,
//! 28 dryRun) belong to the server; here we test the decisions that drive them.

use serde_json::{Value, json};

use super::last_applied::{LAST_APPLIED_ANNOTATION, last_applied_value};
use super::*;
use crate::fields::FieldSet;

const T0: &str = "2024-10-01T21:53:28Z";
const T1: &str = "2024-10-01T21:54:00Z";
const T2: &str = "2024-10-01T21:55:00Z";
const T3: &str = "2024-10-01T21:56:00Z";

fn configmap() -> &'static Shape {
    Shape::builtin("", "v1", "ConfigMap").expect("ConfigMap is served")
}

/// A schema that mirrors what an apply touches on a Deployment (as a custom resource, so it starts empty).
fn deployment() -> Shape {
    let ports = json!({"type": "array", "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
        "items": {"type": "object", "properties": {
            "containerPort": {"type": "integer"},
            "name": {"type": "string"},
            "protocol": {"type": "string", "default": "TCP"}}}});
    let containers = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {
            "name": {"type": "string"},
            "image": {"type": "string"},
            "workingDir": {"type": "string"},
            "args": {"type": "array", "items": {"type": "string"}},
            "ports": ports}}});
    let template = json!({"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {
            "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
        "spec": {"type": "object", "properties": {"containers": containers}}}});
    let spec = json!({"type": "object", "properties": {
        "replicas": {"type": "integer"},
        "minReadySeconds": {"type": "integer"},
        "selector": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {
            "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}}},
        "template": template}});
    let condition = json!({"type": "object", "properties": {
        "type": {"type": "string"}, "status": {"type": "string"}, "reason": {"type": "string"},
        "message": {"type": "string"}, "lastTransitionTime": {"type": "string"}}});
    let status = json!({"type": "object", "properties": {
        "observedGeneration": {"type": "integer"},
        "conditions": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
            "items": condition}}});
    Shape::from_openapi_v3(&json!({"type": "object", "properties": {"spec": spec, "status": status}}))
        .expect("valid schema")
}

/// Gateway API's Gateway, reduced to what the operator writes.
fn gateway() -> Shape {
    Shape::from_openapi_v3(
        &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "gatewayClassName": {"type": "string"},
        "addresses": {"type": "array", "items": {"type": "object", "properties": {"value": {"type": "string"}}}},
        "listeners": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "hostname": {"type": "string"},
                "port": {"type": "integer"}, "protocol": {"type": "string"}}}}}}}}),
    )
    .expect("valid schema")
}

/// The writes of one test against one endpoint, keeping the stored object like the server would.
struct Cluster<'a> {
    api_version: &'a str,
    kind: &'a str,
    shape: &'a Shape,
    reset: ResetFields,
    stored: Option<Value>,
    /// Applied to every result, standing in for the server's defaulting.
    defaulting: fn(&mut Value),
}

fn no_defaults(_: &mut Value) {}

/// The defaults a Deployment-like object gets: one replica, TCP ports.
fn deployment_defaults(object: &mut Value) {
    if let Some(Value::Object(spec)) = object.get_mut("spec") {
        spec.entry("replicas").or_insert(json!(1));
        if spec.get("minReadySeconds") == Some(&Value::Null) {
            spec.remove("minReadySeconds");
        }
    }
    if let Some(Value::Array(containers)) = object.pointer_mut("/spec/template/spec/containers") {
        for container in containers {
            if let Some(Value::Array(ports)) = container.get_mut("ports") {
                for port in ports {
                    if let Value::Object(port) = port {
                        port.entry("protocol").or_insert(json!("TCP"));
                    }
                }
            }
        }
    }
}

impl<'a> Cluster<'a> {
    fn new(api_version: &'a str, kind: &'a str, shape: &'a Shape) -> Self {
        Cluster {
            api_version,
            kind,
            shape,
            reset: ResetFields::none(),
            stored: None,
            defaulting: no_defaults,
        }
    }

    fn endpoint<'s>(&'s self, subresource: Option<&'s str>, reset: &'s ResetFields) -> Endpoint<'s> {
        Endpoint {
            api_version: self.api_version,
            kind: self.kind,
            subresource,
            shape: self.shape,
            reset,
        }
    }

    fn try_apply_to(
        &mut self,
        subresource: Option<&str>,
        manager: &str,
        body: Value,
        force: bool,
        now: &str,
    ) -> Result<Applied, ApplyError> {
        let reset = match subresource {
            Some(_) => ResetFields::status_subresource(),
            None => self.reset.clone(),
        };
        let request = ApplyRequest {
            endpoint: self.endpoint(subresource, &reset),
            live: self.stored.as_ref(),
            body: &body,
            manager,
            force,
            now,
        };
        let mut applied = apply(&request)?;
        (self.defaulting)(&mut applied.object);
        if subresource.is_some() {
            // The status strategy keeps everything but status (and managedFields) from the stored object.
            let mut kept = self.stored.clone().expect("status of an existing object");
            kept["status"] = applied.object["status"].clone();
            set_managed_fields(&mut kept, applied.object.pointer("/metadata/managedFields").cloned());
            applied.object = kept;
        } else if self.reset != ResetFields::none() {
            // The main strategy ignores status.
            let old_status = self.stored.as_ref().and_then(|s| s.get("status").cloned());
            match (old_status, applied.object.as_object_mut()) {
                (Some(status), Some(map)) => {
                    map.insert("status".into(), status);
                }
                (None, Some(map)) => {
                    map.remove("status");
                }
                _ => {}
            }
        }
        if let Some(old) = &self.stored {
            keep_unchanged_timestamps(old, &mut applied.object);
        }
        self.stored = Some(applied.object.clone());
        Ok(applied)
    }

    fn try_apply(&mut self, manager: &str, body: Value, force: bool, now: &str) -> Result<Applied, ApplyError> {
        self.try_apply_to(None, manager, body, force, now)
    }

    fn apply(&mut self, manager: &str, body: Value, now: &str) -> Applied {
        self.try_apply(manager, body, false, now)
            .unwrap_or_else(|e| panic!("apply by {manager} failed: {e}"))
    }

    fn conflicts(&mut self, manager: &str, body: Value, now: &str) -> Conflicts {
        match self.try_apply(manager, body, false, now) {
            Err(ApplyError::Conflicts(conflicts)) => conflicts,
            other => panic!("expected conflicts, got {other:?}"),
        }
    }

    /// A non-apply write that stores `new` (built from the stored object by `change`).
    fn update(&mut self, manager: &str, now: &str, change: impl FnOnce(&mut Value)) {
        let mut new = self.stored.clone().unwrap_or_else(|| json!({}));
        change(&mut new);
        (self.defaulting)(&mut new);
        let reset = self.reset.clone();
        let request = UpdateRequest {
            endpoint: self.endpoint(None, &reset),
            old: self.stored.as_ref(),
            manager,
            now,
        };
        track_update(&request, &mut new);
        if let Some(old) = &self.stored {
            keep_unchanged_timestamps(old, &mut new);
        }
        self.stored = Some(new);
    }

    fn object(&self) -> &Value {
        self.stored.as_ref().expect("an object is stored")
    }

    fn entries(&self) -> Vec<Value> {
        self.object()
            .pointer("/metadata/managedFields")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }

    fn entry(&self, manager: &str, operation: &str) -> Option<Value> {
        self.entries()
            .into_iter()
            .find(|e| e["manager"] == manager && e["operation"] == operation)
    }

    /// The exact fieldsV1 bytes of an entry.
    fn owned(&self, manager: &str, operation: &str) -> String {
        let entry = self
            .entry(manager, operation)
            .unwrap_or_else(|| panic!("no {operation} entry for {manager}"));
        FieldSet::from_fields_v1(&entry["fieldsV1"])
            .expect("valid fieldsV1")
            .to_fields_v1_string()
    }
}

fn cm(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}, "data": data})
}

fn deploy(spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"}, "spec": spec})
}

#[test]
fn c04_create_by_apply_owns_the_applied_fields() {
    let mut c = Cluster::new("v1", "ConfigMap", configmap());
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "default", "labels": {"app": "x"}}, "data": {"k": "v"}});
    let applied = c.apply("alice", body, T0);
    assert!(applied.content_changed && applied.managed_fields_changed);
    assert_eq!(
        c.entries(),
        vec![
            json!({"manager": "alice", "operation": "Apply", "apiVersion": "v1", "time": T0, "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:k": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}})
        ]
    );
    assert_eq!(
        c.owned("alice", "Apply"),
        r#"{"f:data":{"f:k":{}},"f:metadata":{"f:labels":{"f:app":{}}}}"#
    );
    assert_eq!(c.object()["data"], json!({"k": "v"}));
}

#[test]
fn c05_create_with_only_a_name_stays_untracked() {
    let mut c = Cluster::new("v1", "ConfigMap", configmap());
    let applied = c.apply(
        "alice",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}),
        T0,
    );
    assert!(applied.object.pointer("/metadata/managedFields").is_none());
    c.update("kubectl-patch", T1, |o| o["data"] = json!({"k": "v"}));
    assert!(c.object().pointer("/metadata/managedFields").is_none());
}

#[test]
fn c07_body_kind_must_match_the_endpoint() {
    let shape = deployment();
    let mut c = Cluster::new("apps/v1", "Deployment", &shape);
    let missing = c
        .try_apply("a", json!({"metadata": {"name": "d"}}), false, T0)
        .unwrap_err();
    assert_eq!(missing.to_string(), "invalid object type: /, Kind=");
    assert_eq!((missing.code(), missing.reason()), (400, "BadRequest"));
    let other = c
        .try_apply(
            "a",
            json!({"apiVersion": "apps/v1beta1", "kind": "Deployment", "metadata": {"name": "d"}}),
            false,
            T0,
        )
        .unwrap_err();
    assert_eq!(other.to_string(), "invalid object type: apps/v1beta1, Kind=Deployment");
}

#[test]
fn c08_managed_fields_in_the_body_are_refused() {
    let mut c = Cluster::new("v1", "ConfigMap", configmap());
    let mut body = cm(json!({"k": "v"}));
    body["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Apply"}]);
    let error = c.try_apply("a", body, false, T0).unwrap_err();
    assert_eq!(error, ApplyError::ManagedFieldsMustBeNil);
    assert_eq!(
        (error.to_string().as_str(), error.code()),
        ("metadata.managedFields must be nil", 400)
    );
}

#[test]
fn c09_unknown_fields_fail_typed_conversion() {
    // ConfigMap has no spec at all, so the first undeclared key is `spec` itself.
    let mut c = Cluster::new("v1", "ConfigMap", configmap());
    let mut body = cm(json!({"k": "v"}));
    body["spec"] = json!({"foo": 1});
    let error = c.try_apply("a", body, false, T0).unwrap_err();
    assert_eq!(
        error.to_string(),
        "failed to create typed patch object (default/cm; /v1, Kind=ConfigMap): .spec: field not declared in schema"
    );
    assert_eq!((error.code(), error.reason()), (500, ""));
    // A kind with a spec reports the unknown field inside it; cluster-scoped objects have an empty namespace.
    let shape = deployment();
    let mut d = Cluster::new("apps/v1", "Deployment", &shape);
    let body = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"foo": 1}});
    assert_eq!(
        d.try_apply("a", body, false, T0).unwrap_err().to_string(),
        "failed to create typed patch object (/d; apps/v1, Kind=Deployment): .spec.foo: field not declared in schema"
    );
}

#[test]
fn c10_list_map_duplicates_and_missing_keys_fail_typed_conversion() {
    let shape = gateway();
    let mut c = Cluster::new("gateway.networking.k8s.io/v1", "Gateway", &shape);
    let gw = |listeners: Value| {
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": {"name": "g"},
            "spec": {"listeners": listeners}})
    };
    let duplicate = c
        .try_apply("a", gw(json!([{"name": "x"}, {"name": "x"}])), false, T0)
        .unwrap_err();
    assert_eq!(
        duplicate.to_string(),
        "failed to create typed patch object (/g; gateway.networking.k8s.io/v1, Kind=Gateway): .spec.listeners: duplicate entries for key [name=\"x\"]"
    );
    let missing = c.try_apply("a", gw(json!([{"port": 80}])), false, T0).unwrap_err();
    assert!(missing.to_string().ends_with(
        ".spec.listeners: element 0: associative list with keys has an element that omits key field \"name\" (and doesn't have default value)"
    ));
    assert_eq!(missing.code(), 500);
}

#[test]
fn c11_idempotent_reapply_changes_nothing() {
    let mut c = Cluster::new("v1", "ConfigMap", configmap());
    c.apply("alice", cm(json!({"k": "v"})), T0);
    let before = c.object().clone();
    let again = c.apply("alice", cm(json!({"k": "v"})), T1);
    assert!(!again.content_changed && !again.managed_fields_changed);
    assert_eq!(c.object(), &before);
    assert_eq!(c.entry("alice", "Apply").unwrap()["time"], json!(T0));
}

#[test]
fn c12_to_c14_shared_ownership_conflict_and_force() {
    let mut c = Cluster::new("v1", "ConfigMap", configmap());
    c.apply("alice", cm(json!({"k": "v"})), T0);
    let shared = c.apply("bob", cm(json!({"k": "v"})), T1);
    assert!(
        !shared.content_changed && shared.managed_fields_changed,
        "only managedFields change"
    );
    assert_eq!(c.owned("alice", "Apply"), r#"{"f:data":{"f:k":{}}}"#);
    assert_eq!(c.owned("bob", "Apply"), r#"{"f:data":{"f:k":{}}}"#);
    assert!(
        c.entry("bob", "Apply").unwrap().get("time").is_none(),
        "a brand-new entry from a no-op has no time"
    );
    assert_eq!(c.entry("alice", "Apply").unwrap()["time"], json!(T0));

    // 13: changing a co-owned value conflicts with the other owner.
    let conflicts = c.conflicts("bob", cm(json!({"k": "w"})), T2);
    assert_eq!(
        conflicts.message,
        "Apply failed with 1 conflict: conflict with \"alice\": .data.k"
    );
    assert_eq!(
        conflicts.conflicts,
        vec![Conflict {
            manager: "\"alice\"".into(),
            path: ".data.k".into()
        }]
    );
    assert_eq!(conflicts.conflicts[0].cause_message(), "conflict with \"alice\"");
    assert_eq!(c.object()["data"]["k"], json!("v"), "nothing changes on conflict");

    // 14: force makes bob the sole owner; alice's now empty entry disappears.
    let forced = c.try_apply("bob", cm(json!({"k": "w"})), true, T2).unwrap();
    assert!(forced.content_changed);
    assert_eq!(c.object()["data"]["k"], json!("w"));
    assert!(c.entry("alice", "Apply").is_none());
    assert_eq!(c.entry("bob", "Apply").unwrap()["time"], json!(T2));
}

#[test]
fn c15_conflict_with_an_update_manager_names_its_version() {
    let shape = deployment();
    let mut c = Cluster::new("apps/v1", "Deployment", &shape);
    c.apply("a", deploy(json!({"replicas": 3})), T0);
    let manager = update_manager(None, Some("Go-http-client/1.1"));
    c.update(&manager, T1, |o| o["spec"]["replicas"] = json!(5));
    assert_eq!(c.owned("Go-http-client", "Update"), r#"{"f:spec":{"f:replicas":{}}}"#);
    assert!(c.entry("a", "Apply").is_none(), "the update took a's only field");
    let conflicts = c.conflicts("a", deploy(json!({"replicas": 3})), T2);
    assert_eq!(
        conflicts.message,
        "Apply failed with 1 conflict: conflict with \"Go-http-client\" using apps/v1: .spec.replicas"
    );
}

#[test]
fn c16_an_applier_conflicts_with_its_own_update_entry() {
    let mut c = Cluster::new("v1", "ConfigMap", configmap());
    c.update("op", T0, |o| *o = cm(json!({"k": "v"})));
    assert_eq!(c.owned("op", "Update"), r#"{"f:data":{".":{},"f:k":{}}}"#);
    let conflicts = c.conflicts("op", cm(json!({"k": "w"})), T1);
    assert_eq!(
        conflicts.message,
        "Apply failed with 1 conflict: conflict with \"op\" using v1: .data.k"
    );
}

#[test]
fn c17_several_conflicts_are_grouped_by_manager() {
    let shape = deployment();
    let mut c = Cluster::new("v1", "Widget", &shape);
    let widget = |labels: Value, spec: Value| json!({"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "w", "labels": labels}, "spec": spec});
    c.apply("bar", widget(json!({"app": "a"}), json!({})), T0);
    c.update("foo", T1, |o| o["spec"]["replicas"] = json!(2));
    let conflicts = c.conflicts("x", widget(json!({"app": "b"}), json!({"replicas": 3})), T2);
    assert_eq!(
        conflicts.message,
        "Apply failed with 2 conflicts: conflicts with \"bar\":\n- .metadata.labels.app\nconflicts with \"foo\" using v1:\n- .spec.replicas"
    );
    let causes: Vec<(String, String)> = conflicts
        .conflicts
        .iter()
        .map(|c| (c.cause_message(), c.path.clone()))
        .collect();
    assert_eq!(
        causes,
        vec![
            ("conflict with \"bar\"".to_string(), ".metadata.labels.app".to_string()),
            (
                "conflict with \"foo\" using v1".to_string(),
                ".spec.replicas".to_string()
            ),
        ]
    );
}

fn labelled(labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "labels": labels}})
}

#[test]
fn c18_exclusive_removal_prunes_the_dropped_field() {
    let mut c = Cluster::new("v1", "ConfigMap", configmap());
    c.apply("a", labelled(json!({"x": "1", "y": "2"})), T0);
    c.apply("a", labelled(json!({"x": "1"})), T1);
    assert_eq!(c.object()["metadata"]["labels"], json!({"x": "1"}));
    assert_eq!(c.owned("a", "Apply"), r#"{"f:metadata":{"f:labels":{"f:x":{}}}}"#);
}

#[test]
fn c19_shared_removal_keeps_the_field_for_the_other_owner() {
    let mut c = Cluster::new("v1", "ConfigMap", configmap());
    c.apply("a", labelled(json!({"y": "1"})), T0);
    c.apply("b", labelled(json!({"y": "1"})), T1);
    c.apply(
        "a",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}),
        T2,
    );
    assert_eq!(c.object()["metadata"]["labels"], json!({"y": "1"}));
    assert!(c.entry("a", "Apply").is_none());
    assert_eq!(c.owned("b", "Apply"), r#"{"f:metadata":{"f:labels":{"f:y":{}}}}"#);
}

#[test]
fn c20_a_dropped_defaulted_field_comes_back_as_default_unowned() {
    let shape = deployment();
    let mut c = Cluster::new("apps/v1", "Deployment", &shape);
    c.defaulting = deployment_defaults;
    c.apply("a", deploy(json!({"replicas": 3, "minReadySeconds": 1})), T0);
    c.apply("a", deploy(json!({"minReadySeconds": 1})), T1);
    assert_eq!(c.object()["spec"]["replicas"], json!(1));
    assert_eq!(c.owned("a", "Apply"), r#"{"f:spec":{"f:minReadySeconds":{}}}"#);
}

#[test]
fn c21_a_controller_that_took_a_field_keeps_it() {
    let shape = deployment();
    let mut c = Cluster::new("apps/v1", "Deployment", &shape);
    c.apply("a", deploy(json!({"replicas": 3, "minReadySeconds": 1})), T0);
    c.update("ctl", T1, |o| o["spec"]["replicas"] = json!(4));
    c.apply("a", deploy(json!({"minReadySeconds": 1})), T2);
    assert_eq!(c.object()["spec"]["replicas"], json!(4));
    assert_eq!(c.owned("ctl", "Update"), r#"{"f:spec":{"f:replicas":{}}}"#);
}

fn with_containers(containers: Value) -> Value {
    deploy(json!({"template": {"spec": {"containers": containers}}}))
}

#[test]
fn c22_an_applier_removes_a_list_item_a_controller_contributed_to() {
    let shape = deployment();
    let mut c = Cluster::new("apps/v1", "Deployment", &shape);
    c.apply("a", with_containers(json!([{"name": "nginx", "image": "nginx:1"}])), T0);
    c.update("ctl", T1, |o| {
        o["spec"]["template"]["spec"]["containers"][0]["workingDir"] = json!("/w")
    });
    assert_eq!(
        c.owned("ctl", "Update"),
        r#"{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{"f:workingDir":{}}}}}}}"#
    );
    c.apply("a", with_containers(json!([{"name": "other", "image": "busybox"}])), T2);
    assert_eq!(
        c.object()["spec"]["template"]["spec"]["containers"],
        json!([{"name": "other", "image": "busybox"}])
    );
    assert!(
        c.entry("ctl", "Update").is_none(),
        "the removed item leaves the controller's set"
    );
}

#[test]
fn c23_missing_key_fields_take_their_default() {
    let shape = deployment();
    let mut c = Cluster::new("apps/v1", "Deployment", &shape);
    c.defaulting = deployment_defaults;
    c.apply(
        "a",
        with_containers(json!([{"name": "web", "ports": [{"containerPort": 80}]}])),
        T0,
    );
    assert_eq!(
        c.owned("a", "Apply"),
        r#"{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}}}}}}"#
    );
    assert_eq!(
        c.object()["spec"]["template"]["spec"]["containers"][0]["ports"],
        json!([{"containerPort": 80, "protocol": "TCP"}])
    );
    // Re-applying the same body matches the defaulted item and changes nothing.
    let again = c.apply(
        "a",
        with_containers(json!([{"name": "web", "ports": [{"containerPort": 80}]}])),
        T1,
    );
    assert!(!again.content_changed && !again.managed_fields_changed);
}

#[test]
fn c24_set_items_are_merged_and_owned_by_value() {
    let mut c = Cluster::new("v1", "ConfigMap", configmap());
    let finalizers =
        |f: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "finalizers": f}});
    c.apply("b", finalizers(json!(["y"])), T0);
    c.apply("a", finalizers(json!(["x"])), T1);
    assert_eq!(c.object()["metadata"]["finalizers"], json!(["y", "x"]));
    assert_eq!(
        c.owned("a", "Apply"),
        r#"{"f:metadata":{"f:finalizers":{"v:\"x\"":{}}}}"#
    );
}

#[test]
fn c25_atomic_lists_conflict_as_a_whole() {
    let shape = Shape::builtin("rbac.authorization.k8s.io", "v1", "Role").expect("Role is served");
    let mut c = Cluster::new("rbac.authorization.k8s.io/v1", "Role", shape);
    let role = |rules: Value| json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"}, "rules": rules});
    let r0 = json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]);
    let r1 = json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]);
    c.apply("b", role(r0), T0);
    assert_eq!(c.owned("b", "Apply"), r#"{"f:rules":{}}"#);
    let conflicts = c.conflicts("a", role(r1.clone()), T1);
    assert_eq!(
        conflicts.message,
        "Apply failed with 1 conflict: conflict with \"b\": .rules"
    );
    c.try_apply("a", role(r1.clone()), true, T1).unwrap();
    assert_eq!(c.object()["rules"], r1);
}

#[test]
fn c26_status_apply_is_a_separate_entry_and_main_apply_ignores_status() {
    let shape = deployment();
    let mut c = Cluster::new("apps/v1", "Deployment", &shape);
    c.reset = ResetFields::main_resource_with_status();
    c.apply("ctl", deploy(json!({"replicas": 2})), T0);
    let status = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {"dropped": "x"}},
        "status": {"observedGeneration": 1, "conditions": [{"type": "Ready", "status": "True", "reason": "R",
            "message": "m", "lastTransitionTime": T1}]}});
    c.try_apply_to(Some("status"), "ctl", status, false, T1).unwrap();
    let status_entry = c
        .entries()
        .into_iter()
        .find(|e| e["subresource"] == "status")
        .expect("a status entry");
    assert_eq!(status_entry["manager"], json!("ctl"));
    assert_eq!(
        FieldSet::from_fields_v1(&status_entry["fieldsV1"])
            .unwrap()
            .to_fields_v1_string(),
        r#"{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:observedGeneration":{}}}"#
    );
    assert_eq!(c.object()["spec"]["replicas"], json!(2));
    assert!(
        c.object().pointer("/metadata/labels").is_none(),
        "labels sent to /status are dropped"
    );
    assert_eq!(c.owned("ctl", "Apply"), r#"{"f:spec":{"f:replicas":{}}}"#);

    // The main resource ignores status: no ownership, no conflict with the status owner.
    let mut with_status = deploy(json!({"replicas": 2}));
    with_status["status"] = json!({"observedGeneration": 9});
    c.apply("other", with_status, T2);
    assert_eq!(c.owned("other", "Apply"), r#"{"f:spec":{"f:replicas":{}}}"#);
    assert_eq!(c.object()["status"]["observedGeneration"], json!(1));
}

#[test]
fn c29_null_claims_ownership_and_conflicts() {
    let shape = deployment();
    let mut c = Cluster::new("apps/v1", "Deployment", &shape);
    c.defaulting = deployment_defaults;
    c.apply("b", deploy(json!({"minReadySeconds": 5})), T0);
    let conflicts = c.conflicts("a", deploy(json!({"minReadySeconds": null})), T1);
    assert_eq!(
        conflicts.message,
        "Apply failed with 1 conflict: conflict with \"b\": .spec.minReadySeconds"
    );
    c.try_apply("a", deploy(json!({"minReadySeconds": null})), true, T1)
        .unwrap();
    assert!(c.object()["spec"].get("minReadySeconds").is_none());
    assert_eq!(c.owned("a", "Apply"), r#"{"f:spec":{"f:minReadySeconds":{}}}"#);
}

#[test]
fn c30_the_first_apply_to_an_untracked_object_credits_before_first_apply() {
    let mut c = Cluster::new("v1", "ConfigMap", configmap());
    c.update("kubectl-create", T0, |o| *o = cm(json!({"k": "v"})));
    assert!(c.entry("kubectl-create", "Update").is_some());
    c.update("clear", T1, |o| o["metadata"]["managedFields"] = json!([{}]));
    assert!(
        c.object().pointer("/metadata/managedFields").is_none(),
        "[{{}}] clears managedFields"
    );
    c.update("someone", T1, |o| o["data"]["other"] = json!("x"));
    assert!(
        c.object().pointer("/metadata/managedFields").is_none(),
        "an untracked object stays untracked"
    );
    let conflicts = c.conflicts("a", cm(json!({"k": "w"})), T2);
    assert_eq!(
        conflicts.message,
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using v1: .data.k"
    );
    // Applying the same values instead shares them with before-first-apply.
    c.apply("a", cm(json!({"k": "v"})), T2);
    assert_eq!(
        c.owned("before-first-apply", "Update"),
        r#"{"f:data":{".":{},"f:k":{},"f:other":{}}}"#
    );
    assert_eq!(c.owned("a", "Apply"), r#"{"f:data":{"f:k":{}}}"#);
}

#[test]
fn c31_update_entries_are_capped_at_ten() {
    let mut c = Cluster::new("v1", "ConfigMap", configmap());
    c.apply("applier", cm(json!({"k": "v"})), T0);
    for i in 0..20 {
        let now = format!("2024-10-02T00:00:{i:02}Z");
        c.update(&format!("patcher-{i:02}"), &now, |o| {
            o["data"][format!("key{i}")] = json!("v")
        });
    }
    let entries = c.entries();
    let updates: Vec<&Value> = entries.iter().filter(|e| e["operation"] == "Update").collect();
    assert_eq!(updates.len(), 10);
    assert_eq!(entries.iter().filter(|e| e["operation"] == "Apply").count(), 1);
    let ancient = updates
        .iter()
        .find(|e| e["manager"] == "ancient-changes")
        .expect("an ancient-changes entry");
    let folded = FieldSet::from_fields_v1(&ancient["fieldsV1"]).unwrap();
    assert_eq!(
        folded.paths().len(),
        11,
        "the 11 oldest updaters are folded: {}",
        folded.to_fields_v1_string()
    );
}

#[test]
fn c32_kube_runtime_finalizer_patch_is_owned_by_unknown() {
    let mut c = Cluster::new("v1", "ConfigMap", configmap());
    c.apply("op", cm(json!({"k": "v"})), T0);
    let manager = update_manager(None, None);
    assert_eq!(manager, "unknown");
    c.update(&manager, T1, |o| o["metadata"]["finalizers"] = json!(["f"]));
    assert_eq!(
        c.owned("unknown", "Update"),
        r#"{"f:metadata":{"f:finalizers":{".":{},"v:\"f\"":{}}}}"#
    );
    c.update(&manager, T2, |o| o["metadata"]["finalizers"] = json!(["f", "g"]));
    assert_eq!(
        c.owned("unknown", "Update"),
        r#"{"f:metadata":{"f:finalizers":{".":{},"v:\"f\"":{},"v:\"g\"":{}}}}"#
    );
}

#[test]
fn c33_entries_are_sorted_apply_first_then_time_then_manager() {
    let mut c = Cluster::new("v1", "ConfigMap", configmap());
    c.update("zeta", T0, |o| *o = cm(json!({"a": "1"})));
    c.apply("bravo", cm(json!({"b": "1"})), T2);
    c.apply("alpha", cm(json!({"c": "1"})), T3);
    c.update("able", T1, |o| o["data"]["d"] = json!("1"));
    let order: Vec<(String, String)> = c
        .entries()
        .iter()
        .map(|e| {
            (
                e["manager"].as_str().unwrap().to_string(),
                e["operation"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected = [
        ("bravo", "Apply"),
        ("alpha", "Apply"),
        ("zeta", "Update"),
        ("able", "Update"),
    ];
    assert_eq!(order, expected.map(|(m, o)| (m.to_string(), o.to_string())));
}

#[test]
fn create_by_post_marks_created_nodes() {
    let mut c = Cluster::new("v1", "ConfigMap", configmap());
    c.update("kubectl-create", T0, |o| {
        *o = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "labels": {"test-label": "test"}}, "data": {"key": "value"}})
    });
    assert_eq!(
        c.owned("kubectl-create", "Update"),
        r#"{"f:data":{".":{},"f:key":{}},"f:metadata":{"f:labels":{".":{},"f:test-label":{}}}}"#
    );
    // A custom resource starts from an empty object, so spec gets "." too.
    let shape = deployment();
    let mut d = Cluster::new("example.com/v1", "Gizmo", &shape);
    d.update("op", T0, |o| {
        *o = json!({"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": "d"}, "spec": {"replicas": 1}})
    });
    assert_eq!(d.owned("op", "Update"), r#"{"f:spec":{".":{},"f:replicas":{}}}"#);
}

#[test]
fn updates_move_changed_fields_and_keep_time_when_nothing_changes() {
    let mut c = Cluster::new("v1", "ConfigMap", configmap());
    c.apply("a", cm(json!({"k": "v", "j": "1"})), T0);
    c.update("b", T1, |o| o["data"]["k"] = json!("w"));
    assert_eq!(c.owned("a", "Apply"), r#"{"f:data":{"f:j":{}}}"#);
    assert_eq!(c.owned("b", "Update"), r#"{"f:data":{"f:k":{}}}"#);
    let before = c.object().clone();
    c.update("b", T2, |o| o["data"]["k"] = json!("w"));
    assert_eq!(
        c.object(),
        &before,
        "a write that changes nothing leaves managedFields as they were"
    );
    c.update("c", T2, |o| {
        if let Some(Value::Object(data)) = o.get_mut("data") {
            data.remove("k");
        }
    });
    assert!(c.entry("b", "Update").is_none(), "removed fields leave every manager");
    assert!(c.entry("c", "Update").is_none(), "a pure removal creates no entry");
}

#[test]
fn hand_written_managed_fields_replace_the_stored_ones() {
    let mut c = Cluster::new("v1", "ConfigMap", configmap());
    c.apply("a", cm(json!({"k": "v"})), T0);
    let written = json!([{"manager": "hand", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:k": {}}}}]);
    c.update("writer", T1, |o| o["metadata"]["managedFields"] = written.clone());
    assert!(c.entry("a", "Apply").is_none());
    assert_eq!(c.owned("hand", "Apply"), r#"{"f:data":{"f:k":{}}}"#);
    // An invalid list is ignored and the stored entries stay.
    c.update("writer", T2, |o| {
        o["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Bogus"}])
    });
    assert_eq!(c.owned("hand", "Apply"), r#"{"f:data":{"f:k":{}}}"#);
    // Writes to a subresource ignore managedFields in the body.
    let reset = ResetFields::status_subresource();
    let mut new = c.object().clone();
    new["metadata"]["managedFields"] = json!([]);
    let request = UpdateRequest {
        endpoint: c.endpoint(Some("status"), &reset),
        old: c.stored.as_ref(),
        manager: "s",
        now: T3,
    };
    track_update(&request, &mut new);
    assert_eq!(
        new["metadata"]["managedFields"],
        c.object()["metadata"]["managedFields"]
    );
}

fn gateway_body(listeners: Value) -> Value {
    json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": "shared", "namespace": "infra"}, "spec": {"gatewayClassName": "envoy", "listeners": listeners}})
}

#[test]
fn gateway_listeners_are_owned_per_listener_by_each_manager() {
    let shape = gateway();
    let mut c = Cluster::new("gateway.networking.k8s.io/v1", "Gateway", &shape);
    let http = json!({"name": "http", "port": 80, "protocol": "HTTP"});
    let app_a = json!({"name": "app-a", "port": 443, "protocol": "HTTPS", "hostname": "a.example.com"});
    let app_b = json!({"name": "app-b", "port": 443, "protocol": "HTTPS", "hostname": "b.example.com"});
    c.apply("platform", gateway_body(json!([http.clone()])), T0);
    c.apply("operator-a", gateway_body(json!([app_a.clone()])), T1);
    c.apply("operator-b", gateway_body(json!([app_b.clone()])), T1);
    assert_eq!(
        c.object()["spec"]["listeners"],
        json!([http.clone(), app_a.clone(), app_b.clone()])
    );
    assert_eq!(
        c.owned("operator-a", "Apply"),
        r#"{"f:spec":{"f:gatewayClassName":{},"f:listeners":{"k:{\"name\":\"app-a\"}":{".":{},"f:hostname":{},"f:name":{},"f:port":{},"f:protocol":{}}}}}"#
    );

    // operator-a changes its own listener without touching the others, and without conflicts.
    let app_a2 = json!({"name": "app-a", "port": 8443, "protocol": "HTTPS", "hostname": "a.example.com"});
    c.apply("operator-a", gateway_body(json!([app_a2.clone()])), T2);
    assert_eq!(
        c.object()["spec"]["listeners"],
        json!([http.clone(), app_a2.clone(), app_b.clone()])
    );

    // operator-a removes its listener; operator-b's stays.
    c.apply("operator-a", gateway_body(json!([])), T3);
    assert_eq!(c.object()["spec"]["listeners"], json!([http.clone(), app_b.clone()]));
    assert_eq!(
        c.owned("operator-a", "Apply"),
        r#"{"f:spec":{"f:gatewayClassName":{}}}"#
    );

    // operator-b cannot change a listener it does not own.
    let conflicts = c.conflicts(
        "operator-b",
        gateway_body(json!([{"name": "http", "port": 81, "protocol": "HTTP"}])),
        T3,
    );
    assert_eq!(
        conflicts.message,
        "Apply failed with 1 conflict: conflict with \"platform\": .spec.listeners[name=\"http\"].port"
    );
    // operator-b adds a second listener and removes its first.
    let app_b2 = json!({"name": "app-b2", "port": 443, "protocol": "HTTPS"});
    c.apply("operator-b", gateway_body(json!([app_b2.clone()])), T3);
    assert_eq!(c.object()["spec"]["listeners"], json!([http, app_b2]));
}

#[test]
fn kubectl_upgrade_forces_conflicts_the_last_applied_configuration_covers() {
    let mut c = Cluster::new("v1", "ConfigMap", configmap());
    let body = |k: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}, "data": {"k": k, "j": "1"}});
    // kubectl client-side apply: a create carrying the last-applied annotation.
    let mut created = body("v");
    created["metadata"]["annotations"] = json!({LAST_APPLIED_ANNOTATION: last_applied_value(&body("v"))});
    c.update("kubectl-client-side-apply", T0, |o| *o = created.clone());
    // Another updater owns j with a value the annotation does not describe.
    c.update("other", T1, |o| o["data"]["j"] = json!("2"));

    // A server-side apply by kubectl that changes k (covered) and j (not covered: the live value differs).
    let conflicts = c.conflicts("kubectl", body("w"), T2);
    assert_eq!(
        conflicts.message,
        "Apply failed with 1 conflict: conflict with \"other\" using v1: .data.j"
    );

    // Changing only k is forced through, and the annotation is rewritten to the new body.
    let mut only_k = body("w");
    only_k["data"]["j"] = json!("2");
    c.apply("kubectl", only_k.clone(), T2);
    assert_eq!(c.object()["data"]["k"], json!("w"));
    assert_eq!(
        c.object()["metadata"]["annotations"][LAST_APPLIED_ANNOTATION],
        json!(last_applied_value(&only_k))
    );
    let csa = c.owned("kubectl-client-side-apply", "Update");
    assert!(!csa.contains("\"f:k\""), "the client-side entry lost k: {csa}");
    // Any other manager name gets the plain conflict.
    let plain = c.conflicts("someone", body("z"), T3);
    assert_eq!(
        plain.message,
        "Apply failed with 3 conflicts: conflicts with \"kubectl\":\n- .data.j\n- .data.k\nconflicts with \"other\" using v1:\n- .data.j"
    );
}

#[test]
fn only_timestamps_changed_restores_the_old_times() {
    let old = json!({"metadata": {"name": "x", "managedFields": [{"manager": "a", "time": T0}]}, "data": {"k": "v"}});
    let mut new =
        json!({"metadata": {"name": "x", "managedFields": [{"manager": "a", "time": T1}]}, "data": {"k": "v"}});
    keep_unchanged_timestamps(&old, &mut new);
    assert_eq!(new, old);
    let mut changed =
        json!({"metadata": {"name": "x", "managedFields": [{"manager": "a", "time": T1}]}, "data": {"k": "w"}});
    keep_unchanged_timestamps(&old, &mut changed);
    assert_eq!(changed["metadata"]["managedFields"][0]["time"], json!(T1));
}

#[test]
fn manager_names_from_user_agents() {
    assert_eq!(update_manager(Some("mgr"), Some("kubectl/v1.32")), "mgr");
    assert_eq!(
        update_manager(None, Some("kubectl/v1.32.0 (linux/amd64) kubernetes/abc")),
        "kubectl"
    );
    assert_eq!(
        update_manager(None, Some("OpenAPI-Generator/31.0.0/python")),
        "OpenAPI-Generator"
    );
    assert_eq!(update_manager(Some(""), Some("")), "unknown");
    assert_eq!(manager_from_user_agent("a\u{7}b\tc/1"), "abc");
    assert_eq!(manager_from_user_agent(&"x".repeat(300)).len(), 128);
}

#[test]
fn large_list_maps_apply_quickly() {
    let shape = gateway();
    let mut c = Cluster::new("gateway.networking.k8s.io/v1", "Gateway", &shape);
    let listeners: Vec<Value> = (0..3000)
        .map(|i| json!({"name": format!("l{i}"), "port": 1000 + i, "protocol": "HTTP"}))
        .collect();
    let started = std::time::Instant::now();
    c.apply("a", gateway_body(Value::Array(listeners.clone())), T0);
    let mut fewer = listeners.clone();
    fewer.truncate(2000);
    c.apply("a", gateway_body(Value::Array(fewer)), T1);
    c.apply(
        "b",
        gateway_body(json!([{"name": "l1", "port": 1001, "protocol": "HTTP"}])),
        T2,
    );
    assert_eq!(c.object()["spec"]["listeners"].as_array().map(Vec::len), Some(2000));
    // Generous bound for unoptimized builds on a shared 2-core machine; quadratic work would take minutes.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn builtin_shapes_produce_the_reference_field_sets() {
    let service = Shape::builtin("", "v1", "Service").expect("Service is served");
    let mut c = Cluster::new("v1", "Service", service);
    c.apply(
        "op",
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"ports": [{"port": 443, "targetPort": 8443}, {"port": 80, "targetPort": 8080}]}}),
        T0,
    );
    assert_eq!(
        c.owned("op", "Apply"),
        r#"{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{},"f:targetPort":{}},"k:{\"port\":443,\"protocol\":\"TCP\"}":{".":{},"f:port":{},"f:targetPort":{}}}}}"#
    );

    let mut m = Cluster::new("v1", "ConfigMap", configmap());
    m.apply(
        "op",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "annotations": {},
            "finalizers": ["example.com/x"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "6a1"}]}}),
        T0,
    );
    assert_eq!(
        m.owned("op", "Apply"),
        r#"{"f:metadata":{"f:annotations":{},"f:finalizers":{"v:\"example.com/x\"":{}},"f:ownerReferences":{"k:{\"uid\":\"6a1\"}":{}}}}"#
    );

    let crd_shape = Shape::builtin("apiextensions.k8s.io", "v1", "CustomResourceDefinition").expect("CRDs are served");
    let mut d = Cluster::new("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd_shape);
    let crd = |served: bool| {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gizmos.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "gizmos", "kind": "Gizmo"},
                "versions": [{"name": "v1", "served": served, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true}}}}}]}})
    };
    d.apply("a", crd(true), T0);
    let conflicts = d.conflicts("b", crd(false), T1);
    assert_eq!(
        conflicts.message,
        "Apply failed with 1 conflict: conflict with \"a\": .spec.versions"
    );
}
