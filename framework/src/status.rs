//! Writing an object's status only when it changed.
//!
//! Every status write costs an API call and wakes every watcher of the kind; controllers compute the whole
//! desired status each reconcile and call [`write_if_changed`], which compares it with the status the object
//! already has and applies it (server-side, to the `/status` subresource) only when they differ.
//!
//! With [`Precondition::ResourceVersion`] the write carries the object's resourceVersion, so a status computed
//! from a stale copy (the cache lagging behind a write) is refused with a conflict instead of overwriting newer
//! facts; the reconcile then retries on the fresh object.

use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Whether a status write must be based on the latest version of the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precondition {
    /// Apply regardless of the object's resourceVersion.
    None,
    /// Fail with 409 Conflict if the object changed since `obj` was read.
    ResourceVersion,
}

/// Applies `desired` as the status of `obj` (whose current status is `current`) when the two differ; returns
/// whether it wrote.
pub async fn write_if_changed<K, S>(
    api: &Api<K>,
    obj: &K,
    current: Option<&S>,
    desired: &S,
    field_manager: &str,
    precondition: Precondition,
) -> Result<bool, kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
    S: Serialize + PartialEq,
{
    if current == Some(desired) {
        return Ok(false);
    }
    let desired_value = serde_json::to_value(desired).map_err(kube::Error::SerdeError)?;
    if let Some(current) = current {
        let current_value = serde_json::to_value(current).map_err(kube::Error::SerdeError)?;
        if normalized(&current_value) == normalized(&desired_value) {
            return Ok(false);
        }
    }
    let mut metadata = json!({"name": obj.name_any()});
    if precondition == Precondition::ResourceVersion
        && let Some(rv) = obj.resource_version()
    {
        metadata["resourceVersion"] = json!(rv);
    }
    let body = json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "metadata": metadata,
        "status": desired_value,
    });
    api.patch_status(
        &obj.name_any(),
        &PatchParams::apply(field_manager).force(),
        &Patch::Apply(&body),
    )
    .await?;
    Ok(true)
}

/// Drops nulls and empty objects/arrays so `None` and "absent" compare equal.
fn normalized(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !is_empty(v))
                .map(|(k, v)| (k.clone(), normalized(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
        other => other.clone(),
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(m) => m.values().all(is_empty),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalization_ignores_nulls_and_empties() {
        let a = json!({"x": 1, "y": null, "z": {}, "l": []});
        let b = json!({"x": 1});
        assert_eq!(normalized(&a), normalized(&b));
        assert_ne!(normalized(&json!({"x": 1})), normalized(&json!({"x": 2})));
    }
}
