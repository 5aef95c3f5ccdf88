//! Schema pieces shared by our CRDs, for what kube-derive cannot express on its own.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

/// `status.conditions`: a list of `metav1.Condition` declared as a list-map keyed by `type`, so server-side apply
/// merges conditions by type and `kubectl wait --for=condition=X` finds them.
pub fn conditions(generator: &mut SchemaGenerator) -> Schema {
    let item = Condition::json_schema(generator);
    json_schema!({
        "type": "array",
        "items": item,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
    })
}

/// A free-form string map (`additionalProperties: string`), e.g. annotations to pass through.
pub fn string_map(_generator: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "additionalProperties": {"type": "string"},
    })
}

/// A list of strings declared as a set (`x-kubernetes-list-type: set`): unique items merged by value.
pub fn string_set(_generator: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": {"type": "string"},
        "x-kubernetes-list-type": "set",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_are_a_list_map_keyed_by_type() {
        let mut generator = schemars::generate::SchemaSettings::openapi3().into_generator();
        let schema = conditions(&mut generator);
        let value = serde_json::to_value(&schema).expect("schema serializes");
        assert_eq!(value["x-kubernetes-list-type"], "map");
        assert_eq!(value["x-kubernetes-list-map-keys"], serde_json::json!(["type"]));
        assert_eq!(value["type"], "array");
    }
}
