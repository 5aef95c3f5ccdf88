//! Leases (`ValidateLease`): positive `leaseDurationSeconds`, non-negative `leaseTransitions`, a known or
//! qualified `strategy`, and `preferredHolder` only with a `strategy`.

use serde_json::Value;

use super::super::{FieldError, names, object_meta};

/// The coordinated-leader-election strategies kube-apiserver 1.32 knows.
const STRATEGIES: [&str; 1] = ["OldestEmulationVersion"];

/// `ValidateLease`.
pub fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = object_meta::validate_object_meta(obj, true, &names::name_is_dns_subdomain);
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    if let Some(duration) = spec
        .get("leaseDurationSeconds")
        .and_then(Value::as_i64)
        .filter(|d| *d <= 0)
    {
        errs.push(FieldError::invalid(
            "spec.leaseDurationSeconds",
            duration,
            "must be greater than 0",
        ));
    }
    if let Some(transitions) = spec.get("leaseTransitions").and_then(Value::as_i64).filter(|t| *t < 0) {
        errs.push(FieldError::invalid(
            "spec.leaseTransitions",
            transitions,
            "must be greater than or equal to 0",
        ));
    }
    let strategy = spec.get("strategy").and_then(Value::as_str);
    if let Some(strategy) = strategy {
        if strategy.contains('/') {
            for msg in names::is_qualified_name(strategy) {
                errs.push(FieldError::invalid("spec.strategy", strategy, &msg));
            }
        } else if !STRATEGIES.contains(&strategy) {
            errs.push(FieldError::not_supported("spec.strategy", strategy, &STRATEGIES));
        }
    }
    let preferred = spec
        .get("preferredHolder")
        .and_then(Value::as_str)
        .is_some_and(|p| !p.is_empty());
    if preferred && strategy.is_none_or(str::is_empty) {
        errs.push(FieldError::forbidden(
            "spec.preferredHolder",
            "may only be specified if `strategy` is defined",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn lease_spec_rules() {
        let lease = json!({"metadata": {"name": "l", "namespace": "n"},
            "spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1, "preferredHolder": "me"}});
        let texts: Vec<String> = validate(&lease).iter().map(ToString::to_string).collect();
        assert_eq!(
            texts,
            vec![
                "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
                "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
                "spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined",
            ]
        );
        let ok = json!({"metadata": {"name": "l", "namespace": "n"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}});
        assert!(validate(&ok).is_empty());
    }
}
