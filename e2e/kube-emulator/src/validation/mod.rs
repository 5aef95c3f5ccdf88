//! Validation, defaulting and pruning of objects, with kube-apiserver's exact error texts.
//!
//! Custom resources are checked against their CRD version's structural schema (types, required, enum,
//! pattern, bounds, list types) and its `x-kubernetes-validations` CEL rules; built-in kinds against the rules
//! kube-apiserver applies to them. Errors are [`FieldError`]s, which the server aggregates into a 422 `Invalid`
//! Status exactly as kube-apiserver renders it ([`invalid_status`]).
//!
//! Everything here is pure: no I/O, no clock, no randomness.

pub mod builtin;
pub mod crd;
pub mod go_format;
pub mod invalid;
pub mod names;
pub mod object_meta;
pub mod path;

use std::fmt;

pub use builtin::{default_builtin, validate_builtin};
pub use crd::CrdValidator;
pub use go_format::BadValue;
pub use invalid::invalid_status;

/// The cause types of a field error (`metav1.CauseType`), which decide how its message reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldErrorType {
    /// `Required value`
    Required,
    /// `Forbidden: <detail>`
    Forbidden,
    /// `Too long: may not be more than N bytes`
    TooLong,
    /// `Invalid value: <v>: <detail>`
    Invalid,
    /// `Invalid value: "<json type>": <detail>` for a value of the wrong type
    TypeInvalid,
    /// `Unsupported value: <v>: supported values: ...`
    NotSupported,
    /// `Duplicate value: <v>`
    Duplicate,
    /// `Too many: N: must have at most M items`
    TooMany,
}

impl FieldErrorType {
    /// The `reason` of a Status cause for this error type (`FieldValueRequired`, ...).
    pub fn reason(self) -> &'static str {
        match self {
            FieldErrorType::Required => "FieldValueRequired",
            FieldErrorType::Forbidden => "FieldValueForbidden",
            FieldErrorType::TooLong => "FieldValueTooLong",
            FieldErrorType::Invalid => "FieldValueInvalid",
            FieldErrorType::TypeInvalid => "FieldValueTypeInvalid",
            FieldErrorType::NotSupported => "FieldValueNotSupported",
            FieldErrorType::Duplicate => "FieldValueDuplicate",
            FieldErrorType::TooMany => "FieldValueTooMany",
        }
    }

    /// The words that open the message body (`field.ErrorType.String()` in Go).
    fn label(self) -> &'static str {
        match self {
            FieldErrorType::Required => "Required value",
            FieldErrorType::Forbidden => "Forbidden",
            FieldErrorType::TooLong => "Too long",
            FieldErrorType::Invalid | FieldErrorType::TypeInvalid => "Invalid value",
            FieldErrorType::NotSupported => "Unsupported value",
            FieldErrorType::Duplicate => "Duplicate value",
            FieldErrorType::TooMany => "Too many",
        }
    }
}

/// One validation failure at one field path (`spec.items[0].name`), already rendered the way
/// kube-apiserver renders it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// What kind of failure this is; becomes the cause's `reason` (`FieldValueInvalid`, ...).
    pub kind: FieldErrorType,
    /// The dotted path without a leading dot, or `<nil>` for whole-object notes.
    pub field: String,
    /// The body after the path, e.g. `Invalid value: 11: spec.size in body should be less than or equal to 10`.
    pub message: String,
}

/// The path Go prints for a nil `*field.Path`, used by whole-object notes such as the CEL blocking note.
pub const NIL_PATH: &str = "<nil>";

impl FieldError {
    /// Builds an error from its parts the way Go's `field.Error.ErrorBody` does: the type label, then the
    /// value (unless omitted), then `: detail` when the detail is not empty.
    fn build(kind: FieldErrorType, field: impl Into<String>, value: Option<&BadValue>, detail: &str) -> Self {
        let mut message = kind.label().to_string();
        if let Some(value) = value {
            message.push_str(": ");
            message.push_str(value.as_str());
        }
        if !detail.is_empty() {
            message.push_str(": ");
            message.push_str(detail);
        }
        FieldError {
            kind,
            field: field.into(),
            message,
        }
    }

    /// `Required value[: detail]`: a mandatory field is missing or empty.
    pub fn required(field: impl Into<String>, detail: &str) -> Self {
        Self::build(FieldErrorType::Required, field, None, detail)
    }

    /// `Forbidden: detail`: the field may not be set (or changed) here.
    pub fn forbidden(field: impl Into<String>, detail: &str) -> Self {
        Self::build(FieldErrorType::Forbidden, field, None, detail)
    }

    /// `Too long: may not be more than N bytes`: the value is longer than allowed (the value is not shown).
    pub fn too_long(field: impl Into<String>, max_bytes: i64) -> Self {
        let detail = if max_bytes >= 0 {
            let unit = if max_bytes == 1 { "byte" } else { "bytes" };
            format!("may not be more than {max_bytes} {unit}")
        } else {
            "value is too long".to_string()
        };
        Self::build(FieldErrorType::TooLong, field, None, &detail)
    }

    /// `Invalid value: <v>: detail`: the value is malformed.
    pub fn invalid(field: impl Into<String>, value: impl Into<BadValue>, detail: &str) -> Self {
        Self::build(FieldErrorType::Invalid, field, Some(&value.into()), detail)
    }

    /// `Invalid value: <v>: detail` with the `FieldValueTypeInvalid` reason: the value has the wrong type.
    pub fn type_invalid(field: impl Into<String>, value: impl Into<BadValue>, detail: &str) -> Self {
        Self::build(FieldErrorType::TypeInvalid, field, Some(&value.into()), detail)
    }

    /// `Unsupported value: <v>: supported values: "a", "b"`: the value is not one of an enumerated set.
    pub fn not_supported<S: AsRef<str>>(field: impl Into<String>, value: impl Into<BadValue>, supported: &[S]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_format::quote(s.as_ref())).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::build(FieldErrorType::NotSupported, field, Some(&value.into()), &detail)
    }

    /// `Duplicate value: <v>`: the value repeats one that must be unique.
    pub fn duplicate(field: impl Into<String>, value: impl Into<BadValue>) -> Self {
        Self::build(FieldErrorType::Duplicate, field, Some(&value.into()), "")
    }

    /// `Too many: N: must have at most M items`: a list or map is larger than allowed. `actual` is omitted
    /// from the message when unknown.
    pub fn too_many(field: impl Into<String>, actual: Option<i64>, max: i64) -> Self {
        let detail = if max >= 0 {
            let unit = if max == 1 { "item" } else { "items" };
            format!("must have at most {max} {unit}")
        } else {
            "has too many items".to_string()
        };
        let value = actual.map(BadValue::from);
        Self::build(FieldErrorType::TooMany, field, value.as_ref(), &detail)
    }

    /// The cause `reason` for this error (`FieldValueInvalid`, ...).
    pub fn reason(&self) -> &'static str {
        self.kind.reason()
    }

    /// This error under a path prefix (`status` + `phase` → `status.phase`).
    pub fn prefixed(mut self, prefix: &str) -> Self {
        if !prefix.is_empty() && self.field != NIL_PATH {
            self.field = path::join(prefix, &self.field);
        }
        self
    }
}

/// `path: body`, as Go's `field.Error.Error()` prints it (the form used in aggregate messages and warnings).
impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// What a validation pass found: errors reject the write, warnings go back in `Warning` headers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Findings {
    /// The field errors, in kube-apiserver's order.
    pub errors: Vec<FieldError>,
    /// Warning texts (without the `299 -` framing).
    pub warnings: Vec<String>,
}

impl Findings {
    /// Whether the write may proceed.
    #[cfg(test)]
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }

    /// Appends another pass's findings.
    pub fn extend(&mut self, other: Findings) {
        self.errors.extend(other.errors);
        self.warnings.extend(other.warnings);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn bodies_follow_each_cause_type() {
        assert_eq!(FieldError::required("spec.owner", "").message, "Required value");
        assert_eq!(
            FieldError::required("metadata.name", "name or generateName is required").message,
            "Required value: name or generateName is required"
        );
        assert_eq!(FieldError::forbidden("spec", "nope").message, "Forbidden: nope");
        assert_eq!(
            FieldError::too_long("data", 1_048_576).message,
            "Too long: may not be more than 1048576 bytes"
        );
        assert_eq!(
            FieldError::too_long("x", 1).message,
            "Too long: may not be more than 1 byte"
        );
        assert_eq!(
            FieldError::invalid("spec.size", &json!(11), "too big").message,
            "Invalid value: 11: too big"
        );
        assert_eq!(
            FieldError::type_invalid(
                "spec.size",
                "string",
                "spec.size in body must be of type integer: \"string\""
            )
            .message,
            "Invalid value: \"string\": spec.size in body must be of type integer: \"string\""
        );
        assert_eq!(
            FieldError::not_supported("spec.mode", "medium", &["fast", "slow"]).message,
            "Unsupported value: \"medium\": supported values: \"fast\", \"slow\""
        );
        assert_eq!(
            FieldError::duplicate("spec.items[1]", "a").message,
            "Duplicate value: \"a\""
        );
        assert_eq!(
            FieldError::too_many("spec.items", Some(4), 3).message,
            "Too many: 4: must have at most 3 items"
        );
        assert_eq!(
            FieldError::too_many("spec.items", Some(2), 1).message,
            "Too many: 2: must have at most 1 item"
        );
    }

    #[test]
    fn reasons_are_the_cause_types() {
        let reasons: Vec<&str> = [
            FieldErrorType::Required,
            FieldErrorType::Forbidden,
            FieldErrorType::TooLong,
            FieldErrorType::Invalid,
            FieldErrorType::TypeInvalid,
            FieldErrorType::NotSupported,
            FieldErrorType::Duplicate,
            FieldErrorType::TooMany,
        ]
        .iter()
        .map(|t| t.reason())
        .collect();
        assert_eq!(
            reasons,
            [
                "FieldValueRequired",
                "FieldValueForbidden",
                "FieldValueTooLong",
                "FieldValueInvalid",
                "FieldValueTypeInvalid",
                "FieldValueNotSupported",
                "FieldValueDuplicate",
                "FieldValueTooMany",
            ]
        );
    }

    #[test]
    fn display_is_path_colon_body_and_prefix_keeps_nil_path() {
        let e = FieldError::required("phase", "").prefixed("status");
        assert_eq!(e.to_string(), "status.phase: Required value");
        let nil = FieldError::invalid(NIL_PATH, BadValue::null(), "x").prefixed("status");
        assert_eq!(nil.field, "<nil>");
    }
}
