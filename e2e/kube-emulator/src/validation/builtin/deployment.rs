//! Deployments (`ValidateDeployment`), the parts an install manifest can get wrong: the selector is required,
//! non-empty and must select the pod template's labels, and the template needs containers, each named.

use serde_json::Value;

use super::super::{FieldError, names, object_meta};

fn labels(value: Option<&Value>) -> Vec<(String, String)> {
    value
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// `ValidateDeployment`.
pub fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = object_meta::validate_object_meta(obj, true, &names::name_is_dns_subdomain);
    let selector = obj.pointer("/spec/selector").filter(|s| s.is_object());
    let match_labels = labels(selector.and_then(|s| s.get("matchLabels")));
    let expressions = selector
        .and_then(|s| s.get("matchExpressions"))
        .and_then(Value::as_array)
        .is_some_and(|e| !e.is_empty());
    if selector.is_none() {
        errs.push(FieldError::required("spec.selector", ""));
    } else if match_labels.is_empty() && !expressions {
        errs.push(FieldError::invalid(
            "spec.selector",
            "{}",
            "empty selector is invalid for deployment",
        ));
    }
    let template_labels = labels(obj.pointer("/spec/template/metadata/labels"));
    if selector.is_some() && !match_labels.is_empty() && !match_labels.iter().all(|pair| template_labels.contains(pair))
    {
        let shown: Vec<String> = template_labels.iter().map(|(k, v)| format!("{k:?}:{v:?}")).collect();
        errs.push(FieldError::invalid(
            "spec.template.metadata.labels",
            format!("map[string]string{{{}}}", shown.join(", ")).as_str(),
            "`selector` does not match template `labels`",
        ));
    }
    let containers = obj.pointer("/spec/template/spec/containers").and_then(Value::as_array);
    match containers {
        None => errs.push(FieldError::required("spec.template.spec.containers", "")),
        Some(list) if list.is_empty() => errs.push(FieldError::required("spec.template.spec.containers", "")),
        Some(list) => {
            for (i, container) in list.iter().enumerate() {
                if container.get("name").and_then(Value::as_str).is_none_or(str::is_empty) {
                    errs.push(FieldError::required(
                        format!("spec.template.spec.containers[{i}].name"),
                        "",
                    ));
                }
                if container.get("image").and_then(Value::as_str).is_none_or(str::is_empty) {
                    errs.push(FieldError::required(
                        format!("spec.template.spec.containers[{i}].image"),
                        "",
                    ));
                }
            }
        }
    }
    errs
}
