//! Schema pieces shared by our CRDs, for what kube-derive cannot express on its own, and the finishing touches
//! that make the generated CRDs read well in `kubectl explain`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{CustomResourceDefinition, JSONSchemaProps};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

/// Finishes a CRD kube-derive generated: every description becomes paragraphs of joined lines (doc comments
/// wrap at the source's line width, `kubectl explain` wraps at the terminal's), and the root schema lists
/// `apiVersion`, `kind` and `metadata` like the schema of any built-in kind.
pub fn finish(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    let (group, kind) = (crd.spec.group.clone(), crd.spec.names.kind.clone());
    for version in &mut crd.spec.versions {
        let api_version = format!("{group}/{}", version.name);
        let Some(root) = version.schema.as_mut().and_then(|s| s.open_api_v3_schema.as_mut()) else {
            continue;
        };
        join_descriptions(root);
        let properties = root.properties.get_or_insert_with(Default::default);
        let text = |description: &str, type_: &str| JSONSchemaProps {
            description: Some(description.to_string()),
            type_: Some(type_.to_string()),
            ..JSONSchemaProps::default()
        };
        properties.entry("apiVersion".into()).or_insert_with(|| {
            let description = format!(
                "The API group and version of this object's schema, `{api_version}`; the API server may convert \
                 objects written in another served version."
            );
            text(&description, "string")
        });
        properties.entry("kind".into()).or_insert_with(|| {
            let description = format!("The kind of object this is, `{kind}`. Set by the client; it cannot change.");
            text(&description, "string")
        });
        properties.entry("metadata".into()).or_insert_with(|| JSONSchemaProps {
            type_: Some("object".into()),
            ..JSONSchemaProps::default()
        });
    }
    crd
}

/// Joins the wrapped lines of every description under `schema` into paragraphs.
fn join_descriptions(schema: &mut JSONSchemaProps) {
    if let Some(description) = schema.description.as_mut() {
        *description = paragraphs(description);
    }
    for child in schema.properties.iter_mut().flat_map(|p| p.values_mut()) {
        join_descriptions(child);
    }
    if let Some(additional) = schema.additional_properties.as_mut()
        && let k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaPropsOrBool::Schema(inner) =
            additional
    {
        join_descriptions(inner);
    }
    if let Some(k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaPropsOrArray::Schema(
        items,
    )) = schema.items.as_mut()
    {
        join_descriptions(items);
    }
    for list in [&mut schema.all_of, &mut schema.any_of, &mut schema.one_of] {
        for child in list.iter_mut().flatten() {
            join_descriptions(child);
        }
    }
}

/// `text` with the lines of each paragraph joined by spaces. Paragraphs stay separated by a blank line, and a
/// line starting a list item (`- `, `* `, `1. `) keeps its line break.
pub fn paragraphs(text: &str) -> String {
    let starts_item = |line: &str| {
        line.starts_with("- ")
            || line.starts_with("* ")
            || line
                .split_once(". ")
                .is_some_and(|(number, _)| !number.is_empty() && number.chars().all(|c| c.is_ascii_digit()))
    };
    text.split("\n\n")
        .map(|paragraph| {
            let mut joined = String::new();
            for line in paragraph.lines().map(str::trim).filter(|l| !l.is_empty()) {
                if !joined.is_empty() {
                    joined.push(if starts_item(line) { '\n' } else { ' ' });
                }
                joined.push_str(line);
            }
            joined
        })
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

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

/// The largest number of keys a quota map takes (Rancher knows about twenty quota keys; the plugin sends four).
pub const MAX_QUOTA_KEYS: i64 = 64;

/// A quota map (`resourceQuotas`): key to an integer or a Kubernetes quantity, each value non-negative. A value
/// that is not a quantity is refused at admission: accepted, it would leave the key's limit unset.
pub fn quota_map(_generator: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "nullable": true,
        "maxProperties": MAX_QUOTA_KEYS,
        "additionalProperties": {
            "x-kubernetes-int-or-string": true,
            "maxLength": 64,
            "x-kubernetes-validations": [{
                "rule": "isQuantity(string(self)) && !quantity(string(self)).isLessThan(quantity('0'))",
                "message": "must be a non-negative integer or quantity, such as 4000, 2000m, 8Gi or 10",
            }],
        },
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
    fn wrapped_lines_join_into_paragraphs_and_lists_keep_their_items() {
        let doc = "The first line\nwraps here.\n\nA list:\n- one\n  continued\n- two\n1. three";
        assert_eq!(
            paragraphs(doc),
            "The first line wraps here.\n\nA list:\n- one continued\n- two\n1. three"
        );
        assert_eq!(paragraphs("single"), "single");
    }

    #[test]
    fn every_kind_explains_itself_at_the_root_and_lists_the_standard_fields() {
        for crd in crate::all() {
            let kind = &crd.spec.names.kind;
            for version in &crd.spec.versions {
                let root = version
                    .schema
                    .as_ref()
                    .and_then(|s| s.open_api_v3_schema.as_ref())
                    .expect("a schema");
                let description = root.description.as_deref().unwrap_or_default();
                assert!(!description.contains("Auto-generated"), "{kind}: {description}");
                assert!(
                    description.len() > 40,
                    "{kind} needs a real description: {description:?}"
                );
                let properties = root.properties.as_ref().expect("properties");
                for field in ["apiVersion", "kind", "metadata", "spec", "status"] {
                    assert!(properties.contains_key(field), "{kind} lists {field}");
                }
                let mut stack = vec![root];
                while let Some(schema) = stack.pop() {
                    if let Some(description) = &schema.description {
                        assert_eq!(&paragraphs(description), description, "{kind}: wrapped lines survived");
                    }
                    stack.extend(schema.properties.iter().flat_map(|p| p.values()));
                }
            }
        }
    }

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
