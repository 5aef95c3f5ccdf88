//! Field paths, field sets and the structural "shape" of a kind: the vocabulary of server-side apply.
//!
//! A [`Shape`] says how each node of an object merges and is owned (scalar, struct, granular or atomic map,
//! atomic list, set, or list-map with keys). It is derived from a CRD's `openAPIV3Schema`
//! ([`Shape::from_openapi_v3`]) or, for built-in kinds, from the k8s-openapi schemas plus the list and map
//! types kube-apiserver declares for them ([`Shape::builtin`]). A [`FieldSet`] is a set of paths into an
//! object and round-trips through the `fieldsV1` encoding used in `metadata.managedFields`.

mod builtin;
pub(crate) mod gojson;
mod openapi;
mod path;
mod set;

use std::collections::BTreeMap;

use serde_json::Value;

pub(crate) use builtin::zero_object;
pub use openapi::ShapeError;
pub use path::{Path, PathElement, path_display, values_equal};
pub use set::{FieldSet, FieldsV1Error};

/// How a list merges and how its items are owned.
#[derive(Clone, Debug, PartialEq)]
pub enum ListKind {
    /// Replaced wholesale; owned as one node (`x-kubernetes-list-type: atomic`, or no list type).
    Atomic,
    /// Items are scalars keyed by value (`v:` path elements).
    Set,
    /// Items are objects keyed by the named fields (`k:` path elements); a key field missing from an item
    /// takes its default from `key_defaults` (e.g. `protocol: TCP`).
    Map {
        /// The key fields, in the order `x-kubernetes-list-map-keys` gives them.
        keys: Vec<String>,
        /// Schema defaults of key fields, used when an item leaves one out.
        key_defaults: BTreeMap<String, Value>,
    },
}

/// The merge/ownership type of one node of an object.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// A string, number, boolean or int-or-string.
    Scalar,
    /// An object with declared properties. `atomic` objects are replaced and owned as one node.
    /// `rest` types keys that are not declared (from `additionalProperties` or preserved unknown fields);
    /// `None` means undeclared keys are unknown fields.
    Struct {
        /// The declared properties.
        fields: BTreeMap<String, Shape>,
        /// Replaced and owned as one node (`x-kubernetes-map-type: atomic`).
        atomic: bool,
        /// The shape of undeclared keys, if they are allowed.
        rest: Option<Box<Shape>>,
    },
    /// An object whose keys are free-form (`additionalProperties`), all values of one shape.
    Map {
        /// The shape of every value.
        values: Box<Shape>,
        /// Replaced and owned as one node (`x-kubernetes-map-type: atomic`).
        atomic: bool,
    },
    /// A list of items of one shape.
    List {
        /// The shape of every item.
        items: Box<Shape>,
        /// How items are merged and owned.
        kind: ListKind,
    },
    /// Content without a schema (`x-kubernetes-preserve-unknown-fields` with no properties): objects merge
    /// as granular maps, lists are atomic, any key is accepted.
    Untyped,
}

/// The shape given to content that has no schema.
static UNTYPED: Shape = Shape::Untyped;

impl Shape {
    /// The shape of a custom resource from its CRD version's `openAPIV3Schema`: `metadata` is typed as
    /// ObjectMeta and `apiVersion`/`kind` as scalars, whatever the schema says about them.
    pub fn from_openapi_v3(schema: &Value) -> Result<Shape, ShapeError> {
        openapi::custom_resource_shape(schema)
    }

    /// The shape of a built-in kind the emulator serves (`group` is empty for the core group), or `None`
    /// for any other kind. Built once and cached.
    pub fn builtin(group: &str, version: &str, kind: &str) -> Option<&'static Shape> {
        builtin::shape(group, version, kind)
    }

    /// Whether `name` is a declared field of this struct (not a map key or a preserved unknown field).
    pub(crate) fn declares_field(&self, name: &str) -> bool {
        matches!(self, Shape::Struct { fields, .. } if fields.contains_key(name))
    }

    /// The shape of the value under key `name` of an object node, and whether `name` is a declared field.
    /// `None` means the key is not allowed here (an unknown field).
    pub(crate) fn field(&self, name: &str) -> Option<(&Shape, bool)> {
        match self {
            Shape::Struct { fields, rest, .. } => match fields.get(name) {
                Some(shape) => Some((shape, true)),
                None => rest.as_deref().map(|shape| (shape, false)),
            },
            Shape::Map { values, .. } => Some((values, false)),
            Shape::Untyped => Some((&UNTYPED, false)),
            Shape::Scalar | Shape::List { .. } => None,
        }
    }

    /// The shape of the value under key `name`, treating unknown keys as untyped content (used on stored
    /// objects, which are never rejected).
    pub(crate) fn field_or_untyped(&self, name: &str) -> (&Shape, bool) {
        self.field(name).unwrap_or((&UNTYPED, false))
    }

    /// The shape of the child reached by `element` (a field for objects, an item for lists).
    pub(crate) fn child_for(&self, element: &PathElement) -> &Shape {
        match (self, element) {
            (_, PathElement::Field(name)) => self.field_or_untyped(name).0,
            (Shape::List { items, .. }, _) => items,
            _ => &UNTYPED,
        }
    }
}
