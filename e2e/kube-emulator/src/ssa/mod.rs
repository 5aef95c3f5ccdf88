//! Server-side apply and `metadata.managedFields` tracking, as kube-apiserver's field manager does it
//! (structured-merge-diff semantics, as kube-apiserver 1.32 applies them).
//!
//! # How the server calls it
//!
//! Every write names its [`Endpoint`]: the request's group/version, the kind, the subresource, the kind's
//! [`Shape`] and the endpoint's [`ResetFields`].
//!
//! **Apply** (`PATCH` with `application/apply-patch+yaml`):
//! 1. decode the body (YAML/JSON) and read the live object (`None` when it does not exist: create on apply,
//!    main resource only; `/status` of a missing object is a 404 before this point);
//! 2. [`apply`] → [`Applied`] or an [`ApplyError`] that maps to the exact Status (code, reason, message,
//!    conflict causes);
//! 3. re-default the object, run the strategy (reset `status` on the main resource, keep only `status` on
//!    `/status`, bump generation), validate;
//! 4. call [`keep_unchanged_timestamps`] with the stored object, then store only if the content or
//!    `managedFields` differ from the stored object (a no-op apply writes nothing and sends no event).
//!
//! **Other writes** (POST, PUT, merge/JSON/strategic patch): decode and build the new object, default it,
//! then [`track_update`] (which sets `metadata.managedFields` on it), then strategy, validation,
//! [`keep_unchanged_timestamps`] and store-if-changed as above. The manager is
//! [`update_manager`]`(fieldManager, User-Agent)`.
//!
//! # Byte order of the output
//!
//! Entries are built with kube-apiserver's key order (`manager, operation, apiVersion, time, fieldsType,
//! fieldsV1, subresource`) and `fieldsV1` with structured-merge-diff's element order (`"."`, `f:`, `k:` by
//! key value, `v:`). `serde_json` keeps that order only with its `preserve_order` feature; without it,
//! object keys are written sorted, which differs for numeric `k:` keys (`443` before `80`).
//! [`crate::fields::FieldSet::to_fields_v1_string`] always gives the exact bytes.

mod compare;
mod conflict;
mod last_applied;
mod managed;
mod merge;
mod remove;
mod typed;
mod updater;

#[cfg(test)]
mod properties;
#[cfg(test)]
mod tests;

use serde_json::Value;

pub use conflict::{Conflict, Conflicts};

use crate::fields::{FieldSet, Shape, gojson, values_equal, zero_object};
use managed::{Managed, ManagerId, Operation};
use updater::{ConflictSets, Updater};

/// The most Update entries an object keeps; older ones are folded into `ancient-changes`.
const MAX_UPDATE_MANAGERS: usize = 10;

/// The manager credited with the fields of an untracked object at its first apply.
const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// The fields an endpoint's strategy resets: they are never owned through it and never conflict there.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResetFields(FieldSet);

impl ResetFields {
    /// No reset fields (a kind without a status subresource).
    pub fn none() -> Self {
        ResetFields(FieldSet::new())
    }

    /// The main resource of a kind with a status subresource: `status`.
    pub fn main_resource_with_status() -> Self {
        ResetFields(FieldSet::from_field_paths(&[&["status"]]))
    }

    /// The `/status` subresource of a custom resource: `metadata` and `spec`.
    pub fn status_subresource() -> Self {
        ResetFields(FieldSet::from_field_paths(&[&["metadata"], &["spec"]]))
    }

    /// Any other set of top-level or nested fields, e.g. `&[&["spec"], &["metadata", "labels"]]`.
    pub fn from_field_paths(paths: &[&[&str]]) -> Self {
        ResetFields(FieldSet::from_field_paths(paths))
    }
}

/// Where a write goes.
#[derive(Clone, Copy, Debug)]
pub struct Endpoint<'a> {
    /// The request's group/version: `v1` for the core group, otherwise `group/version`.
    pub api_version: &'a str,
    /// The kind served there.
    pub kind: &'a str,
    /// `None` for the main resource, `Some("status")` for `/status`.
    pub subresource: Option<&'a str>,
    /// The kind's shape.
    pub shape: &'a Shape,
    /// The endpoint's reset fields.
    pub reset: &'a ResetFields,
}

impl Endpoint<'_> {
    fn subresource(&self) -> &str {
        self.subresource.unwrap_or("")
    }

    fn updater(&self) -> Updater<'_> {
        Updater {
            shape: self.shape,
            reset: &self.reset.0,
        }
    }
}

/// A server-side apply.
#[derive(Clone, Copy, Debug)]
pub struct ApplyRequest<'a> {
    /// Where it goes.
    pub endpoint: Endpoint<'a>,
    /// The stored object (already defaulted, with its `metadata.managedFields`), or `None` to create.
    pub live: Option<&'a Value>,
    /// The applied configuration, as decoded from the request body.
    pub body: &'a Value,
    /// The `fieldManager` query parameter (required and non-empty; the server checks that first).
    pub manager: &'a str,
    /// The `force` query parameter.
    pub force: bool,
    /// The current time, RFC3339 UTC with whole seconds (`2024-10-01T21:53:28Z`).
    pub now: &'a str,
}

/// The result of a successful apply.
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    /// The new object, with `metadata.managedFields` set (or removed when no entry is left). It still has
    /// to be defaulted, run through the strategy and validated.
    pub object: Value,
    /// Whether anything besides `metadata.managedFields` differs from the live object.
    pub content_changed: bool,
    /// Whether `metadata.managedFields` differs from the live object's.
    pub managed_fields_changed: bool,
}

/// Why an apply was refused. [`ApplyError::code`], [`ApplyError::reason`] and the `Display` text give the
/// Status to answer with; conflicts also carry their causes.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ApplyError {
    /// The body's apiVersion/kind do not match the endpoint (400); `gvk` is the body's, e.g. `/, Kind=`.
    #[error("invalid object type: {gvk}")]
    InvalidObjectType {
        /// The body's group/version/kind as Go prints it: `apps/v1beta1, Kind=Deployment`.
        gvk: String,
    },
    /// The body carries `metadata.managedFields` (400).
    #[error("metadata.managedFields must be nil")]
    ManagedFieldsMustBeNil,
    /// The body does not fit the schema: unknown field, duplicate or unkeyable list item, wrong container
    /// type (500, no reason).
    #[error("failed to create typed patch object ({object}): {detail}")]
    TypedPatch {
        /// `<namespace>/<name>; <group>/<version>, Kind=<kind>`, from the body.
        object: String,
        /// e.g. `.spec.foo: field not declared in schema`.
        detail: String,
    },
    /// Fields owned by other managers would change and `force` was not set (409).
    #[error("{}", .0.message)]
    Conflicts(Conflicts),
    /// The stored managedFields could not be read (500); should not happen for objects this engine wrote.
    #[error("failed to decode managed fields: {0}")]
    Internal(String),
}

impl ApplyError {
    /// The HTTP status and Status `code`.
    pub fn code(&self) -> u16 {
        match self {
            ApplyError::InvalidObjectType { .. } | ApplyError::ManagedFieldsMustBeNil => 400,
            ApplyError::Conflicts(_) => 409,
            ApplyError::TypedPatch { .. } | ApplyError::Internal(_) => 500,
        }
    }

    /// The Status `reason` (empty for the plain 500s).
    pub fn reason(&self) -> &'static str {
        match self {
            ApplyError::InvalidObjectType { .. } | ApplyError::ManagedFieldsMustBeNil => "BadRequest",
            ApplyError::Conflicts(_) => "Conflict",
            ApplyError::TypedPatch { .. } | ApplyError::Internal(_) => "",
        }
    }
}

/// Splits an apiVersion into group and version as Go does (`v1` → core group; anything unparsable → empty).
fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split('/').collect::<Vec<_>>().as_slice() {
        [version] => ("", version),
        [group, version] => (group, version),
        _ => ("", ""),
    }
}

fn str_at<'v>(value: &'v Value, pointer: &str) -> &'v str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The body's group/version/kind as Go's `GroupVersionKind.String()` prints it.
fn body_gvk(body: &Value) -> String {
    let api_version = str_at(body, "/apiVersion");
    let (group, version) = split_api_version(api_version);
    let kind = if version.is_empty() && !api_version.is_empty() {
        ""
    } else {
        str_at(body, "/kind")
    };
    format!("{group}/{version}, Kind={kind}")
}

/// `value` without `metadata.managedFields`.
fn without_managed_fields(value: &Value) -> Value {
    let mut copy = value.clone();
    if let Some(Value::Object(metadata)) = copy.get_mut("metadata") {
        metadata.remove("managedFields");
    }
    copy
}

/// Sets (or removes, for `None`) `metadata.managedFields`.
fn set_managed_fields(object: &mut Value, encoded: Option<Value>) {
    let Value::Object(map) = object else { return };
    match encoded {
        Some(list) => {
            let metadata = map
                .entry("metadata")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Value::Object(metadata) = metadata {
                metadata.insert("managedFields".to_string(), list);
            }
        }
        None => {
            if let Some(Value::Object(metadata)) = map.get_mut("metadata") {
                metadata.remove("managedFields");
            }
        }
    }
}

/// Runs a server-side apply: kind check, the kubectl client-side-apply upgrade, crediting an untracked
/// object's fields to `before-first-apply`, then merge, prune, conflict detection and ownership transfer.
pub fn apply(request: &ApplyRequest<'_>) -> Result<Applied, ApplyError> {
    let endpoint = &request.endpoint;
    let gvk = body_gvk(request.body);
    let (group, version) = split_api_version(endpoint.api_version);
    if gvk != format!("{group}/{version}, Kind={}", endpoint.kind) {
        return Err(ApplyError::InvalidObjectType { gvk });
    }
    let stored = match request.live {
        Some(live) => live.clone(),
        None => zero_object(endpoint.api_version, endpoint.kind),
    };
    let stored_fields = stored.pointer("/metadata/managedFields");
    let managed = Managed::decode(stored_fields).map_err(|e| ApplyError::Internal(e.to_string()))?;
    let live = without_managed_fields(&stored);

    let mut outcome = apply_once(request, &live, managed.clone(), request.force);
    if let Err(Failure::Conflicts(sets)) = &outcome
        && request.manager == last_applied::KUBECTL_MANAGER
        && let Some(allowed) = last_applied::allowed_conflicts(&live, endpoint.api_version, endpoint.shape)
    {
        let mut all = FieldSet::new();
        for (_, set) in sets.values() {
            all.union_with(set);
        }
        outcome = if all.difference(&allowed).is_empty() {
            apply_once(request, &live, managed.clone(), true)
        } else {
            let remaining: ConflictSets = sets
                .iter()
                .map(|(key, (id, set))| (key.clone(), (id.clone(), set.difference(&allowed))))
                .filter(|(_, (_, set))| !set.is_empty())
                .collect();
            Err(Failure::Conflicts(remaining))
        };
    }
    let (object, managed) = outcome.map_err(|failure| match failure {
        Failure::Error(error) => error,
        Failure::Conflicts(sets) => ApplyError::Conflicts(Conflicts::from_sets(&sets)),
    })?;

    let mut object = object.unwrap_or_else(|| live.clone());
    if request.manager == last_applied::KUBECTL_MANAGER {
        last_applied::sync_annotation(&mut object, request.body);
    }
    let content_changed = request.live.is_none() || !values_equal(&object, &live);
    let encoded = managed.encode();
    let managed_fields_changed = encoded.as_ref() != stored_fields.filter(|v| !v.is_null());
    set_managed_fields(&mut object, encoded);
    Ok(Applied {
        object,
        content_changed,
        managed_fields_changed,
    })
}

/// An apply attempt's failure: conflicts stay as sets until the kubectl upgrade has looked at them.
enum Failure {
    Error(ApplyError),
    Conflicts(ConflictSets),
}

/// One apply attempt over `live` (without managedFields) and its decoded `managed` fields. Returns the new
/// object (`None` when the content is unchanged) and the new managed fields.
fn apply_once(
    request: &ApplyRequest<'_>,
    live: &Value,
    mut managed: Managed,
    force: bool,
) -> Result<(Option<Value>, Managed), Failure> {
    let endpoint = &request.endpoint;
    let updater = endpoint.updater();
    if managed.is_empty() {
        let zero = zero_object(endpoint.api_version, endpoint.kind);
        let id = ManagerId::new(
            BEFORE_FIRST_APPLY,
            Operation::Update,
            endpoint.api_version,
            endpoint.subresource(),
        );
        updater.update(&zero, live, &mut managed, &id, request.now);
        managed.cap_updates(MAX_UPDATE_MANAGERS);
    }
    if let Some(Value::Array(items)) = request.body.pointer("/metadata/managedFields")
        && items.iter().all(Value::is_object)
    {
        return Err(Failure::Error(ApplyError::ManagedFieldsMustBeNil));
    }
    if let Err(detail) = typed::check_body(request.body, endpoint.shape) {
        let object = format!(
            "{}/{}; {}",
            str_at(request.body, "/metadata/namespace"),
            str_at(request.body, "/metadata/name"),
            body_gvk(request.body)
        );
        return Err(Failure::Error(ApplyError::TypedPatch { object, detail }));
    }
    let id = ManagerId::new(
        request.manager,
        Operation::Apply,
        endpoint.api_version,
        endpoint.subresource(),
    );
    let object = updater
        .apply(live, request.body, &mut managed, &id, force, request.now)
        .map_err(Failure::Conflicts)?;
    Ok((object, managed))
}

/// A non-apply write (POST, PUT, merge, JSON or strategic-merge patch).
#[derive(Clone, Copy, Debug)]
pub struct UpdateRequest<'a> {
    /// Where it goes.
    pub endpoint: Endpoint<'a>,
    /// The stored object, or `None` for a create.
    pub old: Option<&'a Value>,
    /// The manager, from [`update_manager`].
    pub manager: &'a str,
    /// The current time, RFC3339 UTC with whole seconds.
    pub now: &'a str,
}

/// Sets `metadata.managedFields` of `new` (the object about to be stored, after defaulting) for a
/// non-apply write. Fields the write added or changed move to the writer's Update entry and leave every
/// other entry; removed fields leave every entry; the writer's time moves only if it changed something.
/// A create always starts tracking; an update of an untracked object keeps it untracked. managedFields
/// written in the body replace the stored ones (`[]` or `[{}]` clear them) unless the write goes to a
/// subresource or the list is invalid.
pub fn track_update(request: &UpdateRequest<'_>, new: &mut Value) {
    let endpoint = &request.endpoint;
    let stored_fields = request.old.and_then(|old| old.pointer("/metadata/managedFields"));
    let from_stored = || Managed::decode(stored_fields).unwrap_or_default();
    let written = new.pointer("/metadata/managedFields");
    let mut managed = if endpoint.subresource.is_some() {
        from_stored()
    } else if is_reset(written) {
        Managed::default()
    } else {
        match Managed::decode(written) {
            Ok(managed) if !managed.is_empty() => managed,
            _ => from_stored(),
        }
    };
    set_managed_fields(new, None);
    if managed.is_empty() && request.old.is_some() {
        return;
    }
    let live = match request.old {
        Some(old) => without_managed_fields(old),
        None => zero_object(endpoint.api_version, endpoint.kind),
    };
    let id = ManagerId::new(
        request.manager,
        Operation::Update,
        endpoint.api_version,
        endpoint.subresource(),
    );
    endpoint.updater().update(&live, new, &mut managed, &id, request.now);
    managed.cap_updates(MAX_UPDATE_MANAGERS);
    set_managed_fields(new, managed.encode());
}

/// Whether written managedFields ask for a reset: `[]`, or a single empty entry.
fn is_reset(written: Option<&Value>) -> bool {
    match written {
        Some(Value::Array(items)) if items.is_empty() => true,
        Some(Value::Array(items)) if items.len() == 1 => match &items[0] {
            Value::Object(entry) => entry.values().all(|v| match v {
                Value::Null => true,
                Value::String(s) => s.is_empty(),
                Value::Object(m) => m.is_empty(),
                _ => false,
            }),
            _ => false,
        },
        _ => false,
    }
}

/// The manager of a non-apply write: the `fieldManager` parameter if given, else the User-Agent up to its
/// first `/` without unprintable characters and cut to 128 bytes, else `unknown`.
pub fn update_manager(field_manager: Option<&str>, user_agent: Option<&str>) -> String {
    if let Some(manager) = field_manager.filter(|m| !m.is_empty()) {
        return manager.to_string();
    }
    let derived = manager_from_user_agent(user_agent.unwrap_or(""));
    if derived.is_empty() {
        "unknown".to_string()
    } else {
        derived
    }
}

/// The manager name kube-apiserver derives from a User-Agent (`kubectl/v1.32.0 (linux/amd64)` →
/// `kubectl`); empty if nothing printable is left.
pub fn manager_from_user_agent(user_agent: &str) -> String {
    let prefix = user_agent.split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in prefix.chars().filter(|c| gojson::is_go_printable(*c)) {
        if out.len() + c.len_utf8() > 128 {
            break;
        }
        out.push(c);
    }
    out
}

/// kube-apiserver's guard against spurious writes: when `new` differs from `old` only in the `time` of
/// managedFields entries (same entries otherwise, same content), put the old times back so that nothing
/// is stored. Call it on the final object, after the strategy and defaulting.
pub fn keep_unchanged_timestamps(old: &Value, new: &mut Value) {
    let entries = |v: &Value| {
        v.pointer("/metadata/managedFields")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let old_entries = entries(old);
    let mut new_entries = entries(new);
    if old_entries.len() != new_entries.len() || new_entries.is_empty() {
        return;
    }
    let time = |e: &Value| e.get("time").cloned();
    if old_entries.iter().zip(&new_entries).all(|(o, n)| time(o) == time(n)) {
        return;
    }
    let without_time = |e: &Value| {
        let mut copy = e.clone();
        if let Value::Object(map) = &mut copy {
            map.remove("time");
        }
        copy
    };
    if !old_entries
        .iter()
        .zip(&new_entries)
        .all(|(o, n)| without_time(o) == without_time(n))
    {
        return;
    }
    if without_managed_fields(old) != without_managed_fields(new) {
        return;
    }
    for (o, n) in old_entries.iter().zip(new_entries.iter_mut()) {
        if let Value::Object(map) = n {
            match time(o) {
                Some(t) => map.insert("time".to_string(), t),
                None => map.remove("time"),
            };
        }
    }
    set_managed_fields(new, Some(Value::Array(new_entries)));
}
