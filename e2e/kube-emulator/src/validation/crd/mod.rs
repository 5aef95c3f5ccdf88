//! Custom resources: decoding (pruning, null dropping, defaulting) and validation against one CRD
//! version, plus validation of CustomResourceDefinition objects themselves ([`definition`]).
//!
//! A [`CrdValidator`] is built once per CRD version when the CRD is created or updated; every write then
//! costs a walk of the object, with CEL evaluated only on rule-carrying subtrees.

mod correlate;
pub mod definition;

mod cel;
mod defaulting;
mod embedded;
mod list_type;
mod openapi;
mod prune;
mod schema;

use serde_json::{Value, json};

use super::{FieldError, FieldErrorType, Findings, NIL_PATH, names, object_meta};
use correlate::Ratchet;
use schema::SchemaNode;

/// What a CR validator needs to know about its CRD besides the schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrdVersionContext {
    /// `spec.group`.
    pub group: String,
    /// The version name (`v1`).
    pub version: String,
    /// `spec.names.kind`.
    pub kind: String,
    /// `spec.scope == Namespaced`.
    pub namespaced: bool,
}

/// Why a validator could not be built.
#[derive(Debug, thiserror::Error)]
pub enum CrdValidatorError {
    /// The CRD does not serve the requested version.
    #[error("the CustomResourceDefinition has no version {0:?}")]
    UnknownVersion(String),
    /// The schema has patterns or CEL rules that do not compile ([`validate_crd`] reports the same).
    #[error("the schema does not compile: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Schema(Vec<FieldError>),
}

/// The compiled schema of one CRD version, with the passes kube-apiserver runs on each write.
#[derive(Debug)]
pub struct CrdValidator {
    context: CrdVersionContext,
    root: SchemaNode,
}

impl CrdValidator {
    /// Compiles `schema` (the version's `openAPIV3Schema`; `None` accepts any content).
    pub fn new(context: CrdVersionContext, schema: Option<&Value>) -> Result<Self, CrdValidatorError> {
        let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        let root = SchemaNode::compile(schema.unwrap_or(&open)).map_err(CrdValidatorError::Schema)?;
        Ok(CrdValidator { context, root })
    }

    /// Builds the validator of `version` from a whole CustomResourceDefinition object.
    pub fn from_crd(crd: &Value, version: &str) -> Result<Self, CrdValidatorError> {
        let spec = &crd["spec"];
        let entry = spec["versions"]
            .as_array()
            .and_then(|versions| versions.iter().find(|v| v["name"].as_str() == Some(version)))
            .ok_or_else(|| CrdValidatorError::UnknownVersion(version.to_string()))?;
        let context = CrdVersionContext {
            group: spec["group"].as_str().unwrap_or("").to_string(),
            version: version.to_string(),
            kind: spec["names"]["kind"].as_str().unwrap_or("").to_string(),
            namespaced: spec["scope"].as_str() == Some("Namespaced"),
        };
        Self::new(context, entry.pointer("/schema/openAPIV3Schema"))
    }

    /// Removes fields the schema does not declare; returns their paths, sorted, for the
    /// `unknown field "spec.foo"` strict-decoding error or warning.
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        prune::prune(obj, &self.root)
    }

    /// Drops non-nullable nulls, then applies defaults top-down (also run on objects read from storage).
    pub fn default(&self, obj: &mut Value) {
        defaulting::drop_non_nullable_nulls(obj, &self.root);
        defaulting::apply_defaults(obj, &self.root);
    }

    /// The decoding pipeline of a write: [`prune`](Self::prune) then [`default`](Self::default). Returns the
    /// pruned paths.
    pub fn decode(&self, obj: &mut Value) -> Vec<String> {
        let pruned = self.prune(obj);
        self.default(obj);
        pruned
    }

    /// Validates a create, in strategy order: TypeMeta (stopping there on failure), ObjectMeta, schema,
    /// embedded resources, list types, then CEL unless a blocking error exists. Warnings include the
    /// finalizer-name hints.
    pub fn validate_create(&self, obj: &Value) -> Findings {
        let mut findings = Findings {
            errors: Vec::new(),
            warnings: object_meta::finalizer_warnings(obj, None),
        };
        let type_meta = self.validate_type_meta(obj);
        if !type_meta.is_empty() {
            findings.errors = type_meta;
            return findings;
        }
        let mut errs = object_meta::validate_object_meta(obj, self.context.namespaced, &names::name_is_dns_subdomain);
        openapi::validate(obj, &self.root, "", None, &mut errs);
        embedded::validate(obj, &self.root, "", true, &mut errs);
        list_type::validate(obj, &self.root, "", &mut errs);
        findings.errors = errs;
        self.run_cel(obj, None, &mut findings);
        findings
    }

    /// Validates an update of the main resource: the checks every kind gets before its own (ObjectMeta with
    /// URL-path-segment names, immutable identity fields), then TypeMeta, ObjectMeta update, schema with
    /// ratcheting, embedded resources, list types (only if the old object had no list-type errors) and CEL.
    pub fn validate_update(&self, new: &Value, old: &Value) -> Findings {
        let mut findings = Findings {
            errors: Vec::new(),
            warnings: object_meta::finalizer_warnings(new, Some(old)),
        };
        let common = object_meta::validate_common_update(new, old, self.context.namespaced);
        let type_meta = self.validate_type_meta(new);
        if !type_meta.is_empty() {
            findings.errors = common;
            findings.errors.extend(type_meta);
            return findings;
        }
        let mut errs = object_meta::validate_object_meta_update(new, old);
        openapi::validate(new, &self.root, "", Some(old), &mut errs);
        embedded::validate(new, &self.root, "", true, &mut errs);
        let mut old_list_errs = Vec::new();
        list_type::validate(old, &self.root, "", &mut old_list_errs);
        if old_list_errs.is_empty() {
            list_type::validate(new, &self.root, "", &mut errs);
        }
        let mut strategy = Findings {
            errors: errs,
            warnings: Vec::new(),
        };
        self.run_cel(new, Some(old), &mut strategy);
        findings.errors = common;
        findings.extend(strategy);
        findings
    }

    /// Validates a write to the `/status` subresource: TypeMeta, ObjectMeta update, the `status` subtree
    /// (errors under `status.`, texts relative to it as kube-apiserver's status validator prints them),
    /// list types and CEL over the whole object.
    pub fn validate_status_update(&self, new: &Value, old: &Value) -> Findings {
        let mut findings = Findings::default();
        let common = object_meta::validate_common_update(new, old, self.context.namespaced);
        let type_meta = self.validate_type_meta(new);
        if !type_meta.is_empty() {
            findings.errors = common;
            findings.errors.extend(type_meta);
            return findings;
        }
        let mut errs = object_meta::validate_object_meta_update(new, old);
        if let (Some(status), Some(status_schema)) = (new.get("status"), self.root.properties.get("status")) {
            let mut status_errs = Vec::new();
            openapi::validate(status, status_schema, "", old.get("status"), &mut status_errs);
            errs.extend(status_errs.into_iter().map(|e| {
                if e.field == NIL_PATH {
                    FieldError {
                        field: "status".into(),
                        ..e
                    }
                } else {
                    e.prefixed("status")
                }
            }));
        }
        let mut new_list_errs = Vec::new();
        list_type::validate(new, &self.root, "", &mut new_list_errs);
        if !new_list_errs.is_empty() {
            let mut old_list_errs = Vec::new();
            list_type::validate(old, &self.root, "", &mut old_list_errs);
            if old_list_errs.is_empty() {
                errs.extend(new_list_errs);
            }
        }
        let mut strategy = Findings {
            errors: errs,
            warnings: Vec::new(),
        };
        self.run_cel(new, Some(old), &mut strategy);
        findings.errors = common;
        findings.extend(strategy);
        findings
    }

    /// `kind: Invalid value: "X": must be Gizmo` and the apiVersion counterpart.
    fn validate_type_meta(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
        if kind != self.context.kind {
            errs.push(FieldError::invalid(
                "kind",
                kind,
                &format!("must be {}", self.context.kind),
            ));
        }
        let expected = format!("{}/{}", self.context.group, self.context.version);
        let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        if api_version != expected {
            errs.push(FieldError::invalid(
                "apiVersion",
                api_version,
                &format!("must be {expected}"),
            ));
        }
        errs
    }

    /// Runs CEL unless `findings` already holds a blocking error, in which case the `<nil>` note is added.
    fn run_cel(&self, obj: &Value, old: Option<&Value>, findings: &mut Findings) {
        if !self.root.has_rules_below {
            return;
        }
        let blocking = findings.errors.iter().any(|e| {
            matches!(
                e.kind,
                FieldErrorType::NotSupported
                    | FieldErrorType::Required
                    | FieldErrorType::TooLong
                    | FieldErrorType::TooMany
                    | FieldErrorType::TypeInvalid
            )
        });
        if blocking {
            findings.errors.push(blocked_rules_note());
            return;
        }
        cel::validate(obj, &self.root, "", old, Ratchet::root(obj, old), findings);
    }
}

/// The text of a strict-decoding failure for pruned paths, as the 400 (create/update) and the 422 patch
/// error embed it: `strict decoding error: unknown field "spec.foo", unknown field "spec.bar"`.
#[cfg(test)]
pub fn strict_decoding_error(pruned: &[String]) -> String {
    let fields: Vec<String> = pruned.iter().map(|p| unknown_field_warning(p)).collect();
    format!("strict decoding error: {}", fields.join(", "))
}

/// The `Warning` text for one pruned path under `fieldValidation=Warn`: `unknown field "spec.foo"`.
#[cfg(test)]
pub fn unknown_field_warning(path: &str) -> String {
    format!("unknown field {}", super::go_format::quote(path))
}

/// The cause added when CEL rules were skipped because of blocking errors.
pub fn blocked_rules_note() -> FieldError {
    FieldError::invalid(
        NIL_PATH,
        super::BadValue::null(),
        "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
    )
}

#[cfg(test)]
mod tests;
