//! POST, PUT and PATCH: decoding, preconditions, the create/update strategies (metadata the server owns,
//! status subresource, generation), admission, managedFields, no-op detection and storage.

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};

use super::admission::{self, ApplyRequest, FieldValidation, WriteKind};
use super::admission_policy;
use super::auth::escalation::{self, RbacWrite};
use super::auth::owner_references::{self, OwnedWrite};
use super::auth::{Access, Attributes, ResourceAttributes};
use super::builtin;
use super::convert;
use super::crd;
use super::fields::Shape;
use super::http::json_value;
use super::lifecycle;
use super::meta;
use super::patch::{self, BUILTIN_PATCH_TYPES, CUSTOM_PATCH_TYPES, PatchType};
use super::protobuf;
use super::request::{Query, content_type, user_agent};
use super::resources::{BuiltinKind, GroupResource, ResourceDef};
use super::server::{Shared, Target};
use super::status::{ApiError, Cause};
use super::store::Txn;
use super::strict;

/// Options common to every write.
#[derive(Clone, Debug)]
pub struct WriteOptions {
    /// `dryRun=All`.
    pub dry_run: bool,
    /// The field manager of this write.
    pub manager: String,
    /// The unknown-field policy.
    pub field_validation: FieldValidation,
}

fn options_invalid(options_kind: &str, field: &str, reason: &str, message: &str) -> ApiError {
    let cause = Cause {
        reason: reason.into(),
        message: message.into(),
        field: field.into(),
    };
    ApiError::invalid("meta.k8s.io", options_kind, "", vec![cause])
}

/// Parses `dryRun`, `fieldManager` and `fieldValidation`.
pub fn write_options(query: &Query, headers: &HeaderMap, options_kind: &str) -> Result<WriteOptions, ApiError> {
    let dry_run_values = query.all("dryRun");
    for value in &dry_run_values {
        if *value != "All" {
            return Err(options_invalid(
                options_kind,
                "dryRun",
                "FieldValueNotSupported",
                &format!("Unsupported value: \"{value}\": supported values: \"All\""),
            ));
        }
    }
    let field_manager = query.get("fieldManager");
    if let Some(m) = field_manager
        && m.chars().count() > 128
    {
        return Err(options_invalid(
            options_kind,
            "fieldManager",
            "FieldValueTooLong",
            "Too long: may not be more than 128 bytes",
        ));
    }
    let field_validation = FieldValidation::parse(query.get("fieldValidation")).map_err(|_| {
        options_invalid(
            options_kind,
            "fieldValidation",
            "FieldValueNotSupported",
            &format!(
                "Unsupported value: \"{}\": supported values: \"Ignore\", \"Strict\", \"Warn\"",
                query.get("fieldValidation").unwrap_or("")
            ),
        )
    })?;
    Ok(WriteOptions {
        dry_run: !dry_run_values.is_empty(),
        manager: admission::manager_name(field_manager, &user_agent(headers)),
        field_validation,
    })
}

/// Decodes a JSON request body (no Content-Type is treated as JSON, as the Python client sends it), applying
/// strict field validation: unknown fields of built-in kinds and duplicate fields of any kind are refused
/// under `Strict`, reported as warnings under `Warn` and dropped silently under `Ignore`. Unknown fields of
/// custom resources are left to the CRD's pruning in admission. Returns the object and its warnings.
pub fn decode_json(
    def: &ResourceDef,
    version: &str,
    headers: &HeaderMap,
    body: &Bytes,
    validation: FieldValidation,
) -> Result<(Value, Vec<String>), ApiError> {
    if content_type(headers) == protobuf::CONTENT_TYPE {
        if def.is_custom() || !protobuf::supports(&def.group, &def.kind) {
            return Err(ApiError::unsupported_media_type(&[
                "application/json",
                "application/yaml",
            ]));
        }
        return Ok((protobuf::decode(&def.group, &def.kind, body)?, Vec::new()));
    }
    let cannot = |err: String| {
        ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {}",
            def.kind, version, def.kind, err
        ))
    };
    if body.is_empty() {
        return Err(cannot("unexpected end of JSON input".into()));
    }
    let shape = builtin_shape(def, version).unwrap_or(&Shape::Untyped);
    let (value, findings) = strict::decode(shape, body).map_err(|e| cannot(e.to_string()))?;
    if !value.is_object() {
        return Err(cannot(
            "json: cannot unmarshal into Go value of type map[string]interface{}".into(),
        ));
    }
    let warnings = match validation {
        FieldValidation::Strict if !findings.is_empty() => return Err(cannot(findings.error_text())),
        FieldValidation::Warn => findings.messages,
        _ => Vec::new(),
    };
    Ok((value, warnings))
}

/// The schema shape of a built-in kind at a version (events.k8s.io events in their own field names).
fn builtin_shape(def: &ResourceDef, version: &str) -> Option<&'static Shape> {
    def.builtin()?;
    Shape::builtin(&def.group, version, &def.kind)
}

/// Strict validation of a merge, JSON or strategic patch of a built-in kind: duplicate fields in the patch
/// and unknown fields in the patched object (refused with a 422 on `patch` under `Strict`, warned under
/// `Warn`); unknown fields are dropped from the patched object.
fn validate_patched_builtin(
    def: &ResourceDef,
    version: &str,
    body: &Bytes,
    patched: &mut Value,
    validation: FieldValidation,
) -> Result<Vec<String>, ApiError> {
    let Some(shape) = builtin_shape(def, version) else {
        return Ok(Vec::new());
    };
    let mut messages = match strict::decode(&Shape::Untyped, body) {
        Ok((_, findings)) => findings.messages,
        Err(_) => Vec::new(),
    };
    messages.extend(strict::unknown_fields(shape, patched));
    strict::prune_unknown(shape, patched);
    match validation {
        FieldValidation::Strict if !messages.is_empty() => Err(admission::strict_patch_error(patched, &messages)),
        FieldValidation::Warn => Ok(messages),
        _ => Ok(Vec::new()),
    }
}

/// The namespace an object must be created in exists and is not terminating.
pub fn check_namespace_for_create(txn: &Txn<'_>, target: &Target, name: &str) -> Result<(), ApiError> {
    if !target.def.namespaced {
        return Ok(());
    }
    let ns = target.namespace_key();
    let namespaces = GroupResource::new("", "namespaces");
    match txn.get(&namespaces, "", ns) {
        None => Err(ApiError::not_found(&namespaces, ns)),
        Some(obj) if meta::is_terminating(&obj) => {
            let mut err = ApiError::forbidden(
                &target.gr(),
                name,
                &format!("unable to create new content in namespace {ns} because it is being terminated"),
            );
            err.details.causes.push(Cause {
                reason: "NamespaceTerminating".into(),
                message: format!("namespace {ns} is being terminated"),
                field: "metadata.namespace".into(),
            });
            Err(err)
        }
        Some(_) => Ok(()),
    }
}

fn fill_namespace(target: &Target, obj: &mut Value) -> Result<(), ApiError> {
    if !target.def.namespaced {
        meta::metadata_mut(obj).remove("namespace");
        return Ok(());
    }
    let url_ns = target.namespace_key().to_string();
    let body_ns = meta::namespace(obj).to_string();
    if body_ns.is_empty() {
        meta::metadata_mut(obj).insert("namespace".into(), json!(url_ns));
    } else if body_ns != url_ns {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

fn check_name(obj: &Value, url_name: &str) -> Result<(), ApiError> {
    let name = meta::name(obj);
    if name != url_name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({url_name})"
        )));
    }
    Ok(())
}

/// How one change is committed.
pub struct Commit<'a> {
    /// The addressed resource.
    pub target: &'a Target,
    /// Who writes, for the authorization checks of the write itself.
    pub access: &'a Access,
    /// Whether a create through this write (apply or PUT to a missing object) needs `create` permission on
    /// top of the request's own verb, as kube-apiserver checks it.
    pub create_needs_authorization: bool,
    /// Options of the request.
    pub opts: &'a WriteOptions,
    /// Whether managedFields were already computed (server-side apply).
    pub is_apply: bool,
    /// Whether the write is a merge, JSON or strategic patch.
    pub patch: bool,
}

impl Committed {
    /// Puts warnings found before the commit (strict decoding) ahead of the commit's own.
    fn with_warnings_first(mut self, mut first: Vec<String>) -> Self {
        first.append(&mut self.warnings);
        self.warnings = first;
        self
    }
}

/// The result of a committed write.
pub struct Committed {
    /// 200 or 201.
    pub code: u16,
    /// The object as stored (or as it would be, for dry runs).
    pub object: Value,
    /// Warnings to return.
    pub warnings: Vec<String>,
}

fn strip_for_compare(obj: &Value, drop_status: bool) -> Value {
    let mut copy = obj.clone();
    if let Value::Object(map) = &mut copy {
        map.remove("metadata");
        if drop_status {
            map.remove("status");
        }
    }
    copy
}

fn prepare_create(def: &ResourceDef, obj: &mut Value) {
    let tracks_generation = def.tracks_generation();
    let m = meta::metadata_mut(obj);
    m.insert("uid".into(), json!(meta::new_uid()));
    m.insert("creationTimestamp".into(), json!(meta::now_rfc3339()));
    m.remove("deletionTimestamp");
    m.remove("deletionGracePeriodSeconds");
    m.remove("resourceVersion");
    m.remove("selfLink");
    if tracks_generation {
        m.insert("generation".into(), json!(1));
    } else {
        m.remove("generation");
    }
    if def.is_custom()
        && def.status_subresource
        && let Value::Object(map) = obj
    {
        map.remove("status");
    }
    if let Some(kind) = def.builtin() {
        builtin::prepare_create(kind, obj);
    }
}

fn invalid_immutable(def: &ResourceDef, name: &str, field: &str, value: &str) -> ApiError {
    ApiError::invalid(
        &def.group,
        &def.kind,
        name,
        vec![Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: {}: field is immutable", json!(value)),
            field: field.into(),
        }],
    )
}

/// Builds the object to store from the old one and the client's version, per endpoint.
fn prepare_update(def: &ResourceDef, old: &Value, new: Value, subresource: Option<&str>) -> Result<Value, ApiError> {
    match subresource {
        Some("status") => {
            let mut out = old.clone();
            match new.get("status") {
                Some(status) => out["status"] = status.clone(),
                None => {
                    if let Value::Object(map) = &mut out {
                        map.remove("status");
                    }
                }
            }
            let m = meta::metadata_mut(&mut out);
            for key in ["resourceVersion", "managedFields"] {
                match new.pointer(&format!("/metadata/{key}")) {
                    Some(v) => {
                        m.insert(key.into(), v.clone());
                    }
                    None => {
                        m.remove(key);
                    }
                }
            }
            return Ok(out);
        }
        Some("finalize") => {
            let mut out = old.clone();
            match new.pointer("/spec/finalizers") {
                Some(f) => out["spec"]["finalizers"] = f.clone(),
                None => {
                    if let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut) {
                        spec.remove("finalizers");
                    }
                }
            }
            return Ok(out);
        }
        _ => {}
    }
    let mut new = new;
    let old_meta = old.get("metadata").cloned().unwrap_or(json!({}));
    let new_uid = meta::uid(&new).to_string();
    if !new_uid.is_empty() && new_uid != meta::uid(old) {
        return Err(invalid_immutable(def, meta::name(old), "metadata.uid", &new_uid));
    }
    {
        let m = meta::metadata_mut(&mut new);
        for key in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "name",
            "namespace",
        ] {
            match old_meta.get(key) {
                Some(v) => {
                    m.insert(key.into(), v.clone());
                }
                None => {
                    m.remove(key);
                }
            }
        }
        m.remove("selfLink");
    }
    if def.status_subresource {
        match old.get("status") {
            Some(status) => new["status"] = status.clone(),
            None => {
                if let Value::Object(map) = &mut new {
                    map.remove("status");
                }
            }
        }
    }
    if let Some(kind) = def.builtin() {
        builtin::prepare_update(kind, old, &mut new);
    }
    if def.tracks_generation() {
        let drop_status = def.status_subresource;
        if strip_for_compare(old, drop_status) != strip_for_compare(&new, drop_status) {
            let generation = meta::generation(old) + 1;
            meta::metadata_mut(&mut new).insert("generation".into(), json!(generation));
        }
    }
    Ok(new)
}

fn check_new_finalizers(def: &ResourceDef, old: &Value, new: &Value) -> Result<(), ApiError> {
    if !meta::is_terminating(old) {
        return Ok(());
    }
    let before = meta::finalizers(old);
    let added: Vec<String> = meta::finalizers(new)
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    if added.is_empty() {
        return Ok(());
    }
    let list = added
        .iter()
        .map(|f| json!(f).to_string())
        .collect::<Vec<_>>()
        .join(", ");
    Err(ApiError::invalid(
        &def.group,
        &def.kind,
        meta::name(old),
        vec![Cause {
            reason: "FieldValueForbidden".into(),
            message: format!(
                "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{list}}}"
            ),
            field: "metadata.finalizers".into(),
        }],
    ))
}

/// Runs the strategy, admission and managedFields for one change and stores it unless it is a no-op.
pub fn commit(txn: &mut Txn<'_>, c: &Commit<'_>, old: Option<Arc<Value>>, new: Value) -> Result<Committed, ApiError> {
    let def = &c.target.def;
    let gr = c.target.gr();
    let subresource = c.target.subresource.as_deref();
    let Some(old) = old else {
        let mut new = new;
        prepare_create(def, &mut new);
        if def.builtin() == Some(BuiltinKind::CustomResourceDefinition) {
            crd::prepare(txn, &mut new, None);
        }
        let kind = WriteKind {
            old: None,
            subresource,
            field_validation: c.opts.field_validation,
            patch: c.patch,
        };
        let mut warnings = admission::admit(def, &c.target.version, &mut new, kind)?;
        warnings.extend(pod_security_warning(txn, c, &new));
        if c.create_needs_authorization {
            authorize_create_by_write(c, meta::name(&new))?;
        }
        authorize_write(txn, c, None, &new)?;
        warnings.extend(admission_policies(txn, c, None, &new)?);
        if !c.is_apply {
            admission::track_update(def, &c.target.version, None, &mut new, &c.opts.manager, subresource)?;
        }
        if txn.get(&gr, meta::namespace(&new), meta::name(&new)).is_some() {
            return Err(ApiError::already_exists(&gr, meta::name(&new)));
        }
        if c.opts.dry_run {
            return Ok(Committed {
                code: 201,
                object: new,
                warnings,
            });
        }
        let stored = txn.put(&gr, new);
        if def.builtin() == Some(BuiltinKind::CustomResourceDefinition) {
            crd::register(txn, &stored);
        }
        return Ok(Committed {
            code: 201,
            object: (*stored).clone(),
            warnings,
        });
    };
    let mut new = prepare_update(def, &old, new, subresource)?;
    check_new_finalizers(def, &old, &new)?;
    if def.builtin() == Some(BuiltinKind::CustomResourceDefinition) {
        crd::prepare(txn, &mut new, Some(&old));
    }
    let kind = WriteKind {
        old: Some(&old),
        subresource,
        field_validation: c.opts.field_validation,
        patch: c.patch,
    };
    let mut warnings = admission::admit(def, &c.target.version, &mut new, kind)?;
    warnings.extend(pod_security_warning(txn, c, &new));
    authorize_write(txn, c, Some(&old), &new)?;
    warnings.extend(admission_policies(txn, c, Some(&old), &new)?);
    if !c.is_apply {
        admission::track_update(
            def,
            &c.target.version,
            Some(&old),
            &mut new,
            &c.opts.manager,
            subresource,
        )?;
    }
    meta::metadata_mut(&mut new).insert("resourceVersion".into(), json!(meta::resource_version(&old)));
    admission::keep_unchanged_timestamps(&old, &mut new);
    if lifecycle::deletion_complete(def, &new) && meta::is_terminating(&old) {
        if !c.opts.dry_run {
            lifecycle::remove(txn, def, new.clone());
        }
        return Ok(Committed {
            code: 200,
            object: new,
            warnings,
        });
    }
    if new == *old {
        return Ok(Committed {
            code: 200,
            object: (*old).clone(),
            warnings,
        });
    }
    if c.opts.dry_run {
        return Ok(Committed {
            code: 200,
            object: new,
            warnings,
        });
    }
    let stored = txn.put(&gr, new);
    if def.builtin() == Some(BuiltinKind::CustomResourceDefinition) {
        crd::register(txn, &stored);
    }
    Ok(Committed {
        code: 200,
        object: (*stored).clone(),
        warnings,
    })
}

/// The ValidatingAdmissionPolicies that match the write (`admission_policy`): their warnings, or a denial.
fn admission_policies(
    txn: &Txn<'_>,
    c: &Commit<'_>,
    old: Option<&Value>,
    new: &Value,
) -> Result<Vec<String>, ApiError> {
    let resource = c.target.gr();
    let request = admission_policy::Admitted {
        operation: if old.is_some() { "UPDATE" } else { "CREATE" },
        resource: &resource,
        version: &c.target.version,
        kind: &c.target.def.kind,
        subresource: c.target.subresource.as_deref(),
        user: &c.access.user,
        object: new,
        old,
        dry_run: c.opts.dry_run,
    };
    admission_policy::admit(txn, &request)
}

/// Pod Security admission's warning for a workload whose pod template breaks its namespace's level.
fn pod_security_warning(txn: &Txn<'_>, c: &Commit<'_>, obj: &Value) -> Option<String> {
    if c.target.def.builtin() != Some(BuiltinKind::Deployment) || c.target.subresource.is_some() {
        return None;
    }
    let namespace = txn.get(&GroupResource::new("", "namespaces"), "", c.target.namespace_key())?;
    let pod_spec = obj.pointer("/spec/template/spec")?;
    let pod_metadata = obj.pointer("/spec/template/metadata").cloned().unwrap_or(Value::Null);
    super::pod_security::warning(&meta::labels(&namespace), pod_spec, &pod_metadata)
}

/// The `create` check of an apply or PUT that creates (`withAuthorization` in the patch and update handlers):
/// its Forbidden carries the empty RBAC reason after "forbidden: ".
fn authorize_create_by_write(c: &Commit<'_>, name: &str) -> Result<(), ApiError> {
    let create = Attributes::Resource(ResourceAttributes {
        verb: "create".into(),
        group: c.target.def.group.clone(),
        resource: c.target.def.plural.clone(),
        subresource: c.target.subresource.clone().unwrap_or_default(),
        namespace: c.target.namespace_key().to_string(),
        name: name.to_string(),
    });
    let decision = c.access.authorize(&create);
    if decision.allowed {
        Ok(())
    } else {
        Err(ApiError::forbidden(&c.target.gr(), name, &decision.reason))
    }
}

/// The authorization checks kube-apiserver makes on the written object itself: RBAC privilege escalation
/// for Roles and bindings, and owner-reference permissions for every kind.
fn authorize_write(txn: &Txn<'_>, c: &Commit<'_>, old: Option<&Value>, new: &Value) -> Result<(), ApiError> {
    if c.access.user.is_master() {
        return Ok(());
    }
    let def = &c.target.def;
    if def.group == "rbac.authorization.k8s.io" && c.target.subresource.is_none() {
        escalation::check(
            c.access,
            &RbacWrite {
                kind: &def.kind,
                request_name: c.target.name.as_deref().unwrap_or_default(),
                namespace: c.target.namespace_key(),
                old,
                new,
            },
        )?;
    }
    owner_references::check(
        c.access,
        txn.registry(),
        &OwnedWrite {
            resource: &def.group_resource(),
            subresource: c.target.subresource.as_deref().unwrap_or_default(),
            namespace: c.target.namespace_key(),
            old,
            new,
        },
    )
}

fn respond(target: &Target, committed: Committed) -> Response {
    let out = convert::to_output(&target.def, &target.version, &committed.object);
    json_value(committed.code, &out, &committed.warnings)
}

/// `POST` to a collection.
pub fn create(
    shared: &Shared,
    access: &Access,
    target: &Target,
    query: &Query,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let opts = write_options(query, headers, "CreateOptions")?;
    let (decoded, decode_warnings) = decode_json(&target.def, &target.version, headers, body, opts.field_validation)?;
    let mut obj = convert::to_storage(&target.def, decoded);
    fill_namespace(target, &mut obj)?;
    if !meta::resource_version(&obj).is_empty() {
        return Err(ApiError::plain(
            500,
            "resourceVersion should not be set on objects to be created",
        ));
    }
    if meta::name(&obj).is_empty()
        && let Some(base) = obj
            .pointer("/metadata/generateName")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    {
        let generated = meta::generate_name(base);
        meta::metadata_mut(&mut obj).insert("name".into(), json!(generated));
    }
    let commit_spec = Commit {
        target,
        access,
        create_needs_authorization: false,
        opts: &opts,
        is_apply: false,
        patch: false,
    };
    let committed = shared.store.write(|txn| {
        if target.def.terminating {
            return Err(ApiError::method_not_allowed(&target.gr(), "create")).map_err(|mut e| {
                e.message = "create not allowed while custom resource definition is terminating".into();
                e
            });
        }
        check_namespace_for_create(txn, target, meta::name(&obj))?;
        commit(txn, &commit_spec, None, obj)
    })?;
    Ok(respond(target, committed.with_warnings_first(decode_warnings)))
}

fn missing_resource_version(target: &Target, name: &str) -> ApiError {
    let mut err = ApiError::invalid(
        &target.def.group,
        &target.def.kind,
        name,
        vec![Cause {
            reason: "FieldValueInvalid".into(),
            message: "Invalid value: 0: must be specified for an update".into(),
            field: "metadata.resourceVersion".into(),
        }],
    );
    err.message = format!(
        "{} \"{name}\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update",
        target.gr()
    );
    err
}

/// `PUT` of an object or subresource.
pub fn update(
    shared: &Shared,
    access: &Access,
    target: &Target,
    query: &Query,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let opts = write_options(query, headers, "UpdateOptions")?;
    let name = target.name.clone().unwrap_or_default();
    let (decoded, decode_warnings) = decode_json(&target.def, &target.version, headers, body, opts.field_validation)?;
    let mut obj = convert::to_storage(&target.def, decoded);
    check_name(&obj, &name)?;
    fill_namespace(target, &mut obj)?;
    let commit_spec = Commit {
        target,
        access,
        create_needs_authorization: true,
        opts: &opts,
        is_apply: false,
        patch: false,
    };
    let committed = shared.store.write(|txn| {
        let old = txn.get(&target.gr(), target.namespace_key(), &name);
        let Some(old) = old else {
            if target.def.allows_create_on_update() && target.subresource.is_none() {
                check_namespace_for_create(txn, target, &name)?;
                meta::metadata_mut(&mut obj).remove("resourceVersion");
                return commit(txn, &commit_spec, None, obj);
            }
            return Err(ApiError::not_found(&target.gr(), &name));
        };
        let rv = meta::resource_version(&obj);
        if rv.is_empty() {
            if !target.def.allows_unconditional_update() {
                return Err(missing_resource_version(target, &name));
            }
        } else if rv != meta::resource_version(&old) {
            return Err(ApiError::stale(&target.gr(), &name));
        }
        commit(txn, &commit_spec, Some(old), obj)
    })?;
    Ok(respond(target, committed.with_warnings_first(decode_warnings)))
}

fn decode_patch_body(patch_type: PatchType, body: &Bytes) -> Result<Value, ApiError> {
    if patch_type == PatchType::Apply {
        let text =
            std::str::from_utf8(body).map_err(|e| ApiError::bad_request(format!("error encoding patch: {e}")))?;
        return serde_saphyr::from_str::<Value>(text)
            .map_err(|e| ApiError::bad_request(format!("error encoding patch: {e}")));
    }
    serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))
}

/// `PATCH` of an object or subresource, including server-side apply.
pub fn patch(
    shared: &Shared,
    access: &Access,
    target: &Target,
    query: &Query,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let accepted = if target.def.accepts_strategic_merge() {
        BUILTIN_PATCH_TYPES
    } else {
        CUSTOM_PATCH_TYPES
    };
    let media = content_type(headers);
    let patch_type = PatchType::from_content_type(&media)
        .filter(|_| accepted.contains(&media.as_str()))
        .ok_or_else(|| ApiError::unsupported_media_type(accepted))?;
    let opts = write_options(query, headers, "PatchOptions")?;
    if query.has("force") && patch_type != PatchType::Apply {
        return Err(options_invalid(
            "PatchOptions",
            "force",
            "FieldValueForbidden",
            "Forbidden: may not be specified for non-apply patch",
        ));
    }
    let force = query.has("force")
        && !matches!(
            query.get("force").map(str::to_ascii_lowercase).as_deref(),
            Some("false" | "0")
        );
    if patch_type == PatchType::Apply && query.get("fieldManager").is_none_or(str::is_empty) {
        let mut err = options_invalid(
            "PatchOptions",
            "fieldManager",
            "FieldValueRequired",
            "Required value: is required for apply patch",
        );
        err.details.name = String::new();
        return Err(err);
    }
    let name = target.name.clone().unwrap_or_default();
    let patch_body = decode_patch_body(patch_type, body)?;
    let commit_spec = Commit {
        target,
        access,
        create_needs_authorization: true,
        opts: &opts,
        is_apply: patch_type == PatchType::Apply,
        patch: patch_type != PatchType::Apply,
    };
    let mut patch_warnings = Vec::new();
    let committed = shared.store.write(|txn| {
        let old = txn.get(&target.gr(), target.namespace_key(), &name);
        if patch_type == PatchType::Apply {
            return apply_patch(txn, &commit_spec, old, &patch_body, force, &name);
        }
        let old = old.ok_or_else(|| ApiError::not_found(&target.gr(), &name))?;
        let served = convert::to_output(&target.def, &target.version, &old);
        let patched = match patch_type {
            PatchType::Merge => patch::merge(&served, &patch_body),
            PatchType::Json => patch::json(&served, &patch_body)?,
            PatchType::Strategic => patch::strategic(&served, &patch_body)?,
            PatchType::Apply => unreachable!("apply returned above"),
        };
        if !patched.is_object() {
            return Err(ApiError::bad_request("the patched object is not a JSON object"));
        }
        let mut patched = patched;
        patch_warnings =
            validate_patched_builtin(&target.def, &target.version, body, &mut patched, opts.field_validation)?;
        check_name(&patched, &name)?;
        let rv = meta::resource_version(&patched);
        if !rv.is_empty() && rv != meta::resource_version(&old) {
            return Err(ApiError::stale(&target.gr(), &name));
        }
        let mut new = convert::to_storage(&target.def, patched);
        fill_namespace(target, &mut new)?;
        commit(txn, &commit_spec, Some(old), new)
    })?;
    Ok(respond(target, committed.with_warnings_first(patch_warnings)))
}

fn apply_patch(
    txn: &mut Txn<'_>,
    c: &Commit<'_>,
    old: Option<Arc<Value>>,
    body: &Value,
    force: bool,
    name: &str,
) -> Result<Committed, ApiError> {
    let target = c.target;
    let body_name = meta::name(body);
    if !body_name.is_empty() && body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    let body_ns = meta::namespace(body);
    if target.def.namespaced && !body_ns.is_empty() && body_ns != target.namespace_key() {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    let live_served = old
        .as_ref()
        .map(|o| convert::to_output(&target.def, &target.version, o));
    if live_served.is_none() && target.subresource.is_some() {
        return Err(ApiError::not_found(&target.gr(), name));
    }
    let request = ApplyRequest {
        live: live_served.as_ref(),
        body,
        manager: &c.opts.manager,
        force,
        subresource: target.subresource.as_deref(),
        version: &target.version,
    };
    let applied = admission::apply(&target.def, request)?;
    let mut new = convert::to_storage(&target.def, applied);
    match old {
        None => {
            if body_name.is_empty() {
                return Err(ApiError::bad_request(format!(
                    "the name of the object () does not match the name on the URL ({name})"
                )));
            }
            check_namespace_for_create(txn, target, name)?;
            fill_namespace(target, &mut new)?;
            meta::metadata_mut(&mut new).remove("resourceVersion");
            commit(txn, c, None, new)
        }
        Some(old) => {
            let rv = meta::resource_version(&new);
            if !rv.is_empty() && rv != meta::resource_version(&old) {
                return Err(ApiError::stale(&target.gr(), name));
            }
            commit(txn, c, Some(old), new)
        }
    }
}
