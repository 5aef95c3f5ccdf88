//! Namespaces (`ValidateNamespace`): DNS-1123 label names, and `spec.finalizers` that are qualified names,
//! domain-qualified unless they are the standard `kubernetes`.

use serde_json::Value;

use super::super::{FieldError, names, object_meta, path};

/// `ValidateNamespace`.
pub fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = object_meta::validate_object_meta(obj, false, &names::name_is_dns_label);
    let finalizers = obj
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, finalizer) in finalizers.iter().enumerate() {
        let name = finalizer.as_str().unwrap_or("");
        let at = path::index("spec.finalizers", i);
        let problems = names::is_qualified_name(name);
        if !problems.is_empty() {
            for msg in problems {
                errs.push(FieldError::invalid(&at, name, &msg));
            }
        } else if !name.contains('/') && name != "kubernetes" {
            errs.push(FieldError::invalid(
                &at,
                name,
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn namespace_finalizers() {
        let ns = json!({"metadata": {"name": "team-a"}, "spec": {"finalizers": ["kubernetes", "custom"]}});
        let texts: Vec<String> = validate(&ns).iter().map(ToString::to_string).collect();
        assert_eq!(
            texts,
            vec![
                "spec.finalizers[1]: Invalid value: \"custom\": name is neither a standard finalizer name nor is it fully qualified"
            ]
        );
    }
}
