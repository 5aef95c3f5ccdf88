//! The seam between the request pipeline and the pure engines beside it: validation/defaulting/pruning
//! (`validation/`) and managedFields tracking / server-side apply (`ssa`, `fields/`).
//!
//! Every write calls, in order: decode → [`apply`] (apply patches only) → strategy (lifecycle, status and
//! generation rules, in `writes`) → [`admit`] (prune, default, validate) → [`track_update`] (non-apply
//! writes) → store-if-changed. Keeping every call into the engines here lets each side change on its own.

use std::sync::Arc;

use serde_json::Value;

use super::fields::Shape;
use super::resources::ResourceDef;
use super::ssa::{self, ResetFields};
use super::status::{ApiError, Cause};
use super::validation::{self, go_format};

/// How unknown and duplicate fields are handled (`fieldValidation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValidation {
    /// Drop silently.
    Ignore,
    /// Drop with a `Warning` header.
    Warn,
    /// Reject.
    Strict,
}

impl FieldValidation {
    /// Parses the query parameter (empty means Warn).
    pub fn parse(value: Option<&str>) -> Result<Self, ApiError> {
        match value.unwrap_or("") {
            "" | "Warn" => Ok(FieldValidation::Warn),
            "Ignore" => Ok(FieldValidation::Ignore),
            "Strict" => Ok(FieldValidation::Strict),
            other => Err(ApiError::bad_request(format!(
                "fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got \"{other}\""
            ))),
        }
    }
}

/// What one write is, for validation.
#[derive(Clone, Copy, Debug)]
pub struct WriteKind<'a> {
    /// The object before the write; `None` on create.
    pub old: Option<&'a Value>,
    /// `Some("status")` for status writes.
    pub subresource: Option<&'a str>,
    /// The unknown-field policy.
    pub field_validation: FieldValidation,
    /// Whether the write is a merge, JSON or strategic patch (unknown fields are then a 422 on the patch).
    pub patch: bool,
}

/// Prunes, defaults and validates `obj` (stored form) in place; returns the warnings to send.
pub fn admit(def: &ResourceDef, version: &str, obj: &mut Value, write: WriteKind<'_>) -> Result<Vec<String>, ApiError> {
    let name = super::meta::name(obj).to_string();
    let mut warnings = Vec::new();
    let findings = match def.builtin() {
        None => {
            let Some(validator) = def.validator.clone() else {
                return Ok(warnings);
            };
            let pruned = validator.decode(obj);
            if !pruned.is_empty() {
                let unknown: Vec<String> = pruned.iter().map(|p| format!("unknown field \"{p}\"")).collect();
                match write.field_validation {
                    FieldValidation::Ignore => {}
                    FieldValidation::Warn => warnings.extend(unknown),
                    FieldValidation::Strict if write.patch => return Err(strict_patch_error(obj, &unknown)),
                    FieldValidation::Strict => {
                        return Err(ApiError::bad_request(format!(
                            "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
                            unknown.join(", "),
                            kind = def.kind
                        )));
                    }
                }
            }
            match (write.old, write.subresource) {
                (None, _) => validator.validate_create(obj),
                (Some(old), Some("status")) => validator.validate_status_update(obj, old),
                (Some(old), _) => validator.validate_update(obj, old),
            }
        }
        Some(_) => {
            // Events served by events.k8s.io are validated in that API's field names.
            let renamed = def.group == "events.k8s.io";
            let served_form = |o: &Value| {
                if renamed {
                    super::convert::to_output(def, version, o)
                } else {
                    o.clone()
                }
            };
            let mut served = served_form(obj);
            validation::default_builtin(&def.group, &def.kind, &mut served);
            let old_served = write.old.map(served_form);
            let findings = validation::validate_builtin(&def.group, &def.kind, &served, old_served.as_ref());
            *obj = if renamed {
                super::convert::to_storage(def, served)
            } else {
                served
            };
            findings
        }
    };
    warnings.extend(findings.warnings);
    if findings.errors.is_empty() {
        return Ok(warnings);
    }
    let status = validation::invalid_status(&def.group, &def.kind, &name, &findings.errors);
    let mut err = ApiError::invalid(&def.group, &def.kind, &name, Vec::new());
    err.message = status.message;
    err.details.causes = status
        .causes
        .into_iter()
        .map(|c| Cause {
            reason: c.reason,
            message: c.message,
            field: c.field,
        })
        .collect();
    Err(err.with_warnings(warnings))
}

/// The 422 kube-apiserver answers when a merge, JSON or strategic patch fails strict decoding: the patched
/// object is the invalid value of the field `patch`.
pub fn strict_patch_error(patched: &Value, messages: &[String]) -> ApiError {
    let patched = serde_json::to_string(patched).unwrap_or_default();
    let detail = format!(
        "Invalid value: {}: strict decoding error: {}",
        go_format::quote(&patched),
        messages.join(", ")
    );
    let mut err = ApiError::invalid_plain(&format!(" \"\" is invalid: patch: {detail}"));
    err.details.causes = vec![Cause {
        reason: "FieldValueInvalid".into(),
        message: detail,
        field: "patch".into(),
    }];
    err
}

/// The field manager of a non-apply write: the `fieldManager` parameter, else derived from the User-Agent.
pub fn manager_name(field_manager: Option<&str>, user_agent: &str) -> String {
    ssa::update_manager(field_manager, Some(user_agent))
}

/// The apply shape of a resource at a version: the CRD version's, the built-in kind's, or untyped.
fn shape_of(def: &ResourceDef, version: &str) -> Arc<Shape> {
    if let Some(shape) = def.version(version).and_then(|v| v.shape.clone()) {
        return shape;
    }
    let (group, kind) = if def.group == "events.k8s.io" {
        ("events.k8s.io", "Event")
    } else {
        (def.group.as_str(), def.kind.as_str())
    };
    match Shape::builtin(group, version, kind) {
        Some(shape) => Arc::new(shape.clone()),
        None => Arc::new(Shape::Untyped),
    }
}

/// The fields the endpoint's strategy resets.
fn reset_fields(def: &ResourceDef, subresource: Option<&str>) -> ResetFields {
    match subresource {
        Some("status") if def.is_custom() => ResetFields::status_subresource(),
        Some("status") => ResetFields::from_field_paths(&[&["spec"], &["metadata", "labels"]]),
        Some(_) => ResetFields::none(),
        None if def.status_subresource => ResetFields::main_resource_with_status(),
        None => ResetFields::none(),
    }
}

/// Records a non-apply write in `metadata.managedFields` of `new` (objects in the request's version form).
pub fn track_update(
    def: &ResourceDef,
    version: &str,
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    subresource: Option<&str>,
) -> Result<(), ApiError> {
    let shape = shape_of(def, version);
    let reset = reset_fields(def, subresource);
    let api_version = def.api_version(version);
    let now = super::meta::now_rfc3339();
    let endpoint = ssa::Endpoint {
        api_version: &api_version,
        kind: &def.kind,
        subresource,
        shape: &shape,
        reset: &reset,
    };
    ssa::track_update(
        &ssa::UpdateRequest {
            endpoint,
            old,
            manager,
            now: &now,
        },
        new,
    );
    Ok(())
}

/// Puts back managedFields timestamps when nothing but them changed, so such a write is a no-op.
pub fn keep_unchanged_timestamps(old: &Value, new: &mut Value) {
    ssa::keep_unchanged_timestamps(old, new);
}

/// The inputs of a server-side apply.
pub struct ApplyRequest<'a> {
    /// The live object in the request's version form, `None` when the apply creates.
    pub live: Option<&'a Value>,
    /// The applied configuration.
    pub body: &'a Value,
    /// The field manager.
    pub manager: &'a str,
    /// Whether conflicts are overridden.
    pub force: bool,
    /// `Some("status")` for status applies.
    pub subresource: Option<&'a str>,
    /// The request's version.
    pub version: &'a str,
}

/// Merges an applied configuration into the live object with field ownership (the ssa engine); the
/// result carries the new `metadata.managedFields`.
pub fn apply(def: &ResourceDef, request: ApplyRequest<'_>) -> Result<Value, ApiError> {
    let shape = shape_of(def, request.version);
    let reset = reset_fields(def, request.subresource);
    let api_version = def.api_version(request.version);
    let now = super::meta::now_rfc3339();
    let endpoint = ssa::Endpoint {
        api_version: &api_version,
        kind: &def.kind,
        subresource: request.subresource,
        shape: &shape,
        reset: &reset,
    };
    let applied = ssa::apply(&ssa::ApplyRequest {
        endpoint,
        live: request.live,
        body: request.body,
        manager: request.manager,
        force: request.force,
        now: &now,
    })
    .map_err(apply_error)?;
    Ok(applied.object)
}

fn apply_error(err: ssa::ApplyError) -> ApiError {
    match &err {
        ssa::ApplyError::Conflicts(conflicts) => {
            let mut api = ApiError::with_reason(409, "Conflict", conflicts.message.clone());
            api.details.causes = conflicts
                .conflicts
                .iter()
                .map(|c| Cause {
                    reason: ssa::Conflict::CAUSE_REASON.into(),
                    message: c.cause_message(),
                    field: c.path.clone(),
                })
                .collect();
            api
        }
        other => ApiError::with_reason(other.code(), other.reason(), other.to_string()),
    }
}
