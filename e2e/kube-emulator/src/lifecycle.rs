//! DELETE and deletecollection: preconditions, finalizers and deletionTimestamp, propagation policies
//! (which add the garbage collector's `orphan` / `foregroundDeletion` finalizers), namespaces' special
//! rules, and the Status-or-object reply.

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};

use super::convert;
use super::crd;
use super::http::{json_bytes, json_value};
use super::meta;
use super::reads::{list_body, selected, selectors};
use super::request::Query;
use super::resources::{BuiltinKind, GroupResource, ResourceDef};
use super::server::{Shared, Target};
use super::status::{self, ApiError};
use super::store::Txn;

/// The GC finalizer of orphaning deletes.
pub const ORPHAN_FINALIZER: &str = "orphan";
/// The GC finalizer of foreground deletes.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
/// The namespace controller's `spec.finalizers` entry.
pub const NAMESPACE_FINALIZER: &str = "kubernetes";
/// Namespaces that cannot be deleted.
pub const PROTECTED_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public"];

/// `propagationPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
    /// Dependents are orphaned (their owner references to this object are removed).
    Orphan,
    /// Dependents are deleted first.
    Foreground,
    /// The object goes at once; the garbage collector deletes dependents afterwards.
    Background,
}

/// Parsed `DeleteOptions`.
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    /// The requested propagation (`None`: the resource's default, Background).
    pub propagation: Option<Propagation>,
    /// `preconditions.uid`.
    pub uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub resource_version: Option<String>,
    /// `dryRun=All`.
    pub dry_run: bool,
}

fn parse_propagation(value: &str) -> Result<Propagation, ApiError> {
    match value {
        "Orphan" => Ok(Propagation::Orphan),
        "Foreground" => Ok(Propagation::Foreground),
        "Background" => Ok(Propagation::Background),
        other => Err(ApiError::invalid(
            "meta.k8s.io",
            "DeleteOptions",
            "",
            vec![status::Cause {
                reason: "FieldValueNotSupported".into(),
                message: format!(
                    "Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\""
                ),
                field: "propagationPolicy".into(),
            }],
        )),
    }
}

/// Reads DeleteOptions from the body (may be empty) and the query.
pub fn delete_options(query: &Query, body: &Bytes) -> Result<DeleteOptions, ApiError> {
    let mut opts = DeleteOptions::default();
    if !body.is_empty() {
        let value: Value = serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))?;
        if let Some(p) = value.get("propagationPolicy").and_then(Value::as_str) {
            opts.propagation = Some(parse_propagation(p)?);
        } else if let Some(orphan) = value.get("orphanDependents").and_then(Value::as_bool) {
            opts.propagation = Some(if orphan {
                Propagation::Orphan
            } else {
                Propagation::Background
            });
        }
        opts.uid = value
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_string);
        opts.resource_version = value
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string);
        opts.dry_run = value
            .get("dryRun")
            .and_then(Value::as_array)
            .is_some_and(|d| !d.is_empty());
    }
    if let Some(p) = query.get("propagationPolicy") {
        opts.propagation = Some(parse_propagation(p)?);
    }
    if query.has("dryRun") {
        opts.dry_run = true;
    }
    Ok(opts)
}

/// Whether nothing holds a terminating object any more (finalizers, and a namespace's spec.finalizers).
pub fn deletion_complete(def: &ResourceDef, obj: &Value) -> bool {
    if !meta::finalizers(obj).is_empty() {
        return false;
    }
    if def.builtin() == Some(BuiltinKind::Namespace) {
        return meta::string_list(obj.pointer("/spec/finalizers")).is_empty();
    }
    true
}

/// Removes an object for good (its DELETED event carries `last_state`); a CRD stops being served.
pub fn remove(txn: &mut Txn<'_>, def: &ResourceDef, last_state: Value) {
    let gr = def.group_resource();
    let ns = meta::namespace(&last_state).to_string();
    let name = meta::name(&last_state).to_string();
    txn.remove(&gr, &ns, &name, last_state.clone());
    if def.builtin() == Some(BuiltinKind::CustomResourceDefinition) {
        crd::unregister(txn, &last_state);
    }
}

/// What a delete did.
pub enum Deleted {
    /// The object is gone; this was its last state.
    Removed(Value),
    /// The object is terminating and waits for finalizers; this is its new state.
    Marked(Value),
}

fn kind_gr(def: &ResourceDef) -> GroupResource {
    GroupResource::new(&def.group, &def.kind)
}

/// Deletes one object inside a transaction.
pub fn delete_in_txn(
    txn: &mut Txn<'_>,
    def: &Arc<ResourceDef>,
    namespace: &str,
    name: &str,
    opts: &DeleteOptions,
) -> Result<Deleted, ApiError> {
    let gr = def.group_resource();
    let current = txn
        .get(&gr, namespace, name)
        .ok_or_else(|| ApiError::not_found(&gr, name))?;
    if let Some(uid) = &opts.uid
        && uid != meta::uid(&current)
    {
        return Err(ApiError::conflict(
            &kind_gr(def),
            name,
            &format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                meta::uid(&current)
            ),
        ));
    }
    if let Some(rv) = &opts.resource_version
        && rv != meta::resource_version(&current)
    {
        return Err(ApiError::conflict(
            &kind_gr(def),
            name,
            &format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
                meta::resource_version(&current)
            ),
        ));
    }
    let is_namespace = def.builtin() == Some(BuiltinKind::Namespace);
    if is_namespace {
        if PROTECTED_NAMESPACES.contains(&name) {
            return Err(ApiError::forbidden(&gr, name, "this namespace may not be deleted"));
        }
        if meta::is_terminating(&current) {
            return Err(ApiError::conflict(
                &gr,
                name,
                "The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will automatically be purged by the system.",
            ));
        }
    }
    let mut finalizers = meta::finalizers(&current);
    match opts.propagation {
        Some(Propagation::Orphan) => {
            finalizers.retain(|f| f != FOREGROUND_FINALIZER);
            if !finalizers.iter().any(|f| f == ORPHAN_FINALIZER) {
                finalizers.push(ORPHAN_FINALIZER.into());
            }
        }
        Some(Propagation::Foreground) => {
            finalizers.retain(|f| f != ORPHAN_FINALIZER);
            if !finalizers.iter().any(|f| f == FOREGROUND_FINALIZER) {
                finalizers.push(FOREGROUND_FINALIZER.into());
            }
        }
        Some(Propagation::Background) => finalizers.retain(|f| f != ORPHAN_FINALIZER && f != FOREGROUND_FINALIZER),
        None => {}
    }
    let mut next = (*current).clone();
    meta::set_finalizers(&mut next, &finalizers);
    if deletion_complete(def, &next) {
        if !opts.dry_run {
            remove(txn, def, next.clone());
        }
        return Ok(Deleted::Removed(next));
    }
    if !meta::is_terminating(&current) {
        let m = meta::metadata_mut(&mut next);
        m.insert("deletionTimestamp".into(), json!(meta::now_rfc3339()));
        m.insert("deletionGracePeriodSeconds".into(), json!(0));
        if def.tracks_generation() && meta::generation(&current) > 0 {
            m.insert("generation".into(), json!(meta::generation(&current) + 1));
        }
        if is_namespace {
            next["status"]["phase"] = json!("Terminating");
        }
        if def.builtin() == Some(BuiltinKind::CustomResourceDefinition) {
            crd::prepare(txn, &mut next, Some(&current));
        }
    }
    if next == *current || opts.dry_run {
        return Ok(Deleted::Marked(next));
    }
    let stored = txn.put(&gr, next);
    if def.builtin() == Some(BuiltinKind::CustomResourceDefinition) {
        mark_crd_terminating(txn, &stored);
    }
    Ok(Deleted::Marked((*stored).clone()))
}

fn mark_crd_terminating(txn: &mut Txn<'_>, crd_obj: &Value) {
    let group = crd_obj.pointer("/spec/group").and_then(Value::as_str).unwrap_or("");
    let plural = crd_obj
        .pointer("/spec/names/plural")
        .and_then(Value::as_str)
        .unwrap_or("");
    let gr = GroupResource::new(group, plural);
    if let Some(def) = txn.registry().get(&gr).cloned() {
        let mut def = (*def).clone();
        def.terminating = true;
        txn.registry_mut().insert(def);
    }
}

/// `DELETE` of one object.
pub fn delete(shared: &Shared, target: &Target, query: &Query, body: &Bytes) -> Result<Response, ApiError> {
    let opts = delete_options(query, body)?;
    let name = target.name.clone().unwrap_or_default();
    let outcome = shared
        .store
        .write(|txn| delete_in_txn(txn, &target.def, target.namespace_key(), &name, &opts))?;
    Ok(match outcome {
        Deleted::Marked(obj) => json_value(200, &convert::to_output(&target.def, &target.version, &obj), &[]),
        Deleted::Removed(obj) if target.def.returns_deleted_object() => {
            json_value(200, &convert::to_output(&target.def, &target.version, &obj), &[])
        }
        Deleted::Removed(obj) => json_bytes(200, status::delete_success(&target.gr(), &name, meta::uid(&obj)), &[]),
    })
}

/// `DELETE` of a collection (with selectors); answers with the list of affected objects.
pub fn delete_collection(
    shared: &Shared,
    target: &Target,
    query: &Query,
    _headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let opts = delete_options(query, body)?;
    let params = selectors(target, query)?;
    let (items, rv) = shared.store.write(|txn| {
        let mut items = Vec::new();
        for ((ns, name), obj) in txn.range(&target.gr(), target.namespace.as_deref()) {
            let served = convert::to_output(&target.def, &target.version, &obj);
            if !selected(&params, &served) {
                continue;
            }
            match delete_in_txn(txn, &target.def, &ns, &name, &opts) {
                Ok(Deleted::Removed(o) | Deleted::Marked(o)) => {
                    items.push(Arc::new(convert::to_output(&target.def, &target.version, &o)));
                }
                Err(err) => tracing::debug!(error = %err, "deletecollection skipped an object"),
            }
        }
        (items, txn.rv())
    });
    let mut meta_map = serde_json::Map::new();
    meta_map.insert("resourceVersion".into(), json!(rv.to_string()));
    Ok(json_bytes(
        200,
        list_body(&target.def, &target.version, &items, &meta_map, ""),
        &[],
    ))
}
