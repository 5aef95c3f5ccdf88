//! ValidatingAdmissionPolicies (`admissionregistration.k8s.io/v1`), evaluated on creates and updates as
//! kube-apiserver does: every binding whose policy exists and whose policy's `matchConstraints` (and the binding's
//! own `matchResources`) match the request, whose `matchConditions` all hold, runs the policy's `validations`
//! with CEL (kube-cel's evaluator, with `object`, `oldObject` and `request` bound). A failing validation is acted
//! on by the binding's `validationActions`: `Deny` refuses the write with upstream's message and reason
//! (`Invalid`, 422, unless the validation names another), `Warn` adds a warning, `Audit` is ignored here.
//!
//! Supported: `resourceRules` (apiGroups, apiVersions, operations, resources incl. `x/status`, `*`, `*/*`) in
//! `matchConstraints.resourceRules`/`excludeResourceRules`, `matchLabels` of `namespaceSelector` and
//! `objectSelector`, `failurePolicy` (an expression that errors denies unless `Ignore`). Not supported: `paramKind` and
//! `variables` (a policy using them fails evaluation, saying so) and selectors' `matchExpressions` (ignored).

use kube_cel::{AdmissionRequest, GroupVersionKind, GroupVersionResource, VapEvaluator, VapExpression};
use serde_json::Value;

use super::auth::UserInfo;
use super::meta;
use super::resources::GroupResource;
use super::status::{ApiError, Cause};
use super::store::Txn;

const GROUP: &str = "admissionregistration.k8s.io";

/// The request being admitted.
pub struct Admitted<'a> {
    /// `CREATE` or `UPDATE`.
    pub operation: &'static str,
    /// The addressed resource.
    pub resource: &'a GroupResource,
    /// Its version and kind.
    pub version: &'a str,
    /// Its kind.
    pub kind: &'a str,
    /// The subresource written, if any.
    pub subresource: Option<&'a str>,
    /// Who writes.
    pub user: &'a UserInfo,
    /// The object as it would be stored.
    pub object: &'a Value,
    /// The stored object before the write (updates).
    pub old: Option<&'a Value>,
    /// Whether the request is a dry run.
    pub dry_run: bool,
}

/// Runs every matching policy; returns the warnings of `Warn` bindings, or the first `Deny`.
pub fn admit(txn: &Txn<'_>, request: &Admitted<'_>) -> Result<Vec<String>, ApiError> {
    let bindings = txn.range(&GroupResource::new(GROUP, "validatingadmissionpolicybindings"), None);
    if bindings.is_empty() {
        return Ok(Vec::new());
    }
    let policies = GroupResource::new(GROUP, "validatingadmissionpolicies");
    let namespace = meta::namespace(request.object).to_string();
    let namespace_labels = (!namespace.is_empty())
        .then(|| txn.get(&GroupResource::new("", "namespaces"), "", &namespace))
        .flatten()
        .map(|ns| meta::labels(&ns))
        .unwrap_or_default();
    let mut warnings = Vec::new();
    for (_, binding) in bindings {
        let policy_name = binding["spec"]["policyName"].as_str().unwrap_or_default();
        let Some(policy) = txn.get(&policies, "", policy_name) else {
            continue;
        };
        let scope = Scope {
            request,
            namespace_labels: &namespace_labels,
        };
        if !scope.matches(&policy["spec"]["matchConstraints"])
            || (binding["spec"].get("matchResources").is_some() && !scope.matches(&binding["spec"]["matchResources"]))
        {
            continue;
        }
        let ignore_errors = policy["spec"]["failurePolicy"].as_str() == Some("Ignore");
        let failure = evaluate(&policy["spec"], request).or_else(|error| {
            if ignore_errors {
                Ok(None)
            } else {
                Err(Failure {
                    message: error,
                    reason: "Invalid".to_string(),
                })
            }
        });
        let Some(failure) = failure.unwrap_or_else(Some) else {
            continue;
        };
        let binding_name = meta::name(&binding);
        let text = format!(
            "ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}' denied request: {}",
            failure.message
        );
        let actions: Vec<&str> = binding["spec"]["validationActions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if actions.contains(&"Deny") {
            return Err(denial(request, &failure.reason, &text));
        }
        if actions.contains(&"Warn") {
            warnings.push(format!(
                "Validation failed for ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}': {}",
                failure.message
            ));
        }
    }
    Ok(warnings)
}

/// A failed validation: its message and reason.
struct Failure {
    message: String,
    reason: String,
}

/// Upstream's denial: `NewForbidden`'s message, with the validation's reason and the matching code.
fn denial(request: &Admitted<'_>, reason: &str, text: &str) -> ApiError {
    let mut error = ApiError::forbidden(request.resource, meta::name(request.object), text);
    error.code = match reason {
        "Forbidden" => 403,
        "Unauthorized" => 401,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    };
    error.reason = reason.to_string();
    error.details.causes.push(Cause {
        reason: String::new(),
        message: text.to_string(),
        field: String::new(),
    });
    error
}

/// Whether a policy's or binding's match rules select the request.
struct Scope<'a> {
    request: &'a Admitted<'a>,
    namespace_labels: &'a std::collections::BTreeMap<String, String>,
}

impl Scope<'_> {
    fn matches(&self, constraints: &Value) -> bool {
        let rules = |key: &str| constraints[key].as_array().cloned().unwrap_or_default();
        let included = rules("resourceRules").iter().any(|rule| self.rule_matches(rule));
        let excluded = rules("excludeResourceRules").iter().any(|rule| self.rule_matches(rule));
        included
            && !excluded
            && labels_match(&constraints["namespaceSelector"], self.namespace_labels)
            && labels_match(&constraints["objectSelector"], &meta::labels(self.request.object))
    }

    fn rule_matches(&self, rule: &Value) -> bool {
        let listed = |key: &str, value: &str| {
            rule[key]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .any(|item| item == "*" || item == value)
        };
        let request = self.request;
        let resource = match request.subresource {
            Some(sub) => format!("{}/{sub}", request.resource.resource),
            None => request.resource.resource.clone(),
        };
        let resource_listed = rule["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .any(|r| {
                r == resource
                    || (r == "*" && request.subresource.is_none())
                    || r == "*/*"
                    || r.strip_suffix("/*") == Some(request.resource.resource.as_str())
                    || (request.subresource.is_some_and(|sub| r == format!("*/{sub}")))
            });
        listed("apiGroups", &request.resource.group)
            && listed("apiVersions", request.version)
            && listed("operations", request.operation)
            && resource_listed
    }
}

/// Whether `labels` satisfy a selector's `matchLabels` (an absent or empty selector selects everything).
fn labels_match(selector: &Value, labels: &std::collections::BTreeMap<String, String>) -> bool {
    selector["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(key, value)| labels.get(key).map(String::as_str) == value.as_str())
}

/// The first failing validation of `spec` for the request, `None` when every one holds or a match condition
/// does not; `Err` for what cannot be evaluated.
fn evaluate(spec: &Value, request: &Admitted<'_>) -> Result<Option<Failure>, String> {
    for unsupported in ["paramKind", "variables"] {
        if spec.get(unsupported).is_some_and(|v| !v.is_null()) {
            return Err(format!("the API emulator does not evaluate spec.{unsupported}"));
        }
    }
    let evaluator = evaluator(request);
    let conditions: Vec<VapExpression> = spec["matchConditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| VapExpression {
            expression: c["expression"].as_str().unwrap_or_default().to_string(),
            message: None,
            message_expression: None,
        })
        .collect();
    for result in evaluator.evaluate(&conditions) {
        if !result.passed {
            match result.message.as_deref() {
                Some(m) if m.starts_with("evaluation error") || m.contains("non-boolean") => return Err(m.to_string()),
                _ => return Ok(None),
            }
        }
    }
    let validations: Vec<&Value> = spec["validations"].as_array().into_iter().flatten().collect();
    let expressions: Vec<VapExpression> = validations
        .iter()
        .map(|v| {
            let expression = v["expression"].as_str().unwrap_or_default().to_string();
            VapExpression {
                message: Some(
                    v["message"]
                        .as_str()
                        .map_or_else(|| format!("failed expression: {expression}"), str::to_string),
                ),
                message_expression: v["messageExpression"].as_str().map(str::to_string),
                expression,
            }
        })
        .collect();
    let results = evaluator.evaluate(&expressions);
    Ok(results
        .into_iter()
        .zip(validations)
        .find(|(result, _)| !result.passed)
        .map(|(result, validation)| Failure {
            message: result.message.unwrap_or_default().trim().to_string(),
            reason: validation["reason"].as_str().unwrap_or("Invalid").to_string(),
        }))
}

fn evaluator(request: &Admitted<'_>) -> VapEvaluator {
    let object = request.object;
    let cel_request = AdmissionRequest {
        operation: request.operation.to_string(),
        username: request.user.name.clone(),
        uid: request.user.uid.clone(),
        groups: request.user.groups.clone(),
        name: meta::name(object).to_string(),
        namespace: meta::namespace(object).to_string(),
        dry_run: request.dry_run,
        kind: GroupVersionKind {
            group: request.resource.group.clone(),
            version: request.version.to_string(),
            kind: request.kind.to_string(),
        },
        resource: GroupVersionResource {
            group: request.resource.group.clone(),
            version: request.version.to_string(),
            resource: request.resource.resource.clone(),
        },
    };
    let builder = VapEvaluator::builder().object(object.clone()).request(cel_request);
    match request.old {
        Some(old) => builder.old_object(old.clone()),
        None => builder,
    }
    .build()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn label_selectors_match_on_match_labels_only() {
        let labels = std::collections::BTreeMap::from([("a".to_string(), "1".to_string())]);
        assert!(labels_match(&Value::Null, &labels));
        assert!(labels_match(&json!({"matchLabels": {"a": "1"}}), &labels));
        assert!(!labels_match(&json!({"matchLabels": {"a": "2"}}), &labels));
    }
}
