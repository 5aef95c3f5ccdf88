//! Writing an object's status only when it changed.
//!
//! Every status write costs an API call and wakes every watcher of the kind; controllers compute the whole
//! desired status each reconcile and call [`write_if_changed`], which compares it with the status the object
//! already has and applies it (server-side, to the `/status` subresource) only when they differ.

use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Objects whose status the framework can compare and write.
pub trait HasStatus {
    /// The status type.
    type Status: Serialize + Clone + PartialEq;
    /// The status currently recorded on the object.
    fn status(&self) -> Option<&Self::Status>;
}

/// Applies `desired` as the object's status when it differs from the current one; returns whether it wrote.
pub async fn write_if_changed<K>(
    api: &Api<K>,
    obj: &K,
    desired: &K::Status,
    field_manager: &str,
) -> Result<bool, kube::Error>
where
    K: Resource<DynamicType = ()> + HasStatus + Clone + DeserializeOwned + std::fmt::Debug,
{
    if obj.status() == Some(desired) {
        return Ok(false);
    }
    let desired_value = serde_json::to_value(desired).map_err(kube::Error::SerdeError)?;
    if let Some(current) = obj.status() {
        let current_value = serde_json::to_value(current).map_err(kube::Error::SerdeError)?;
        if normalized(&current_value) == normalized(&desired_value) {
            return Ok(false);
        }
    }
    let body = json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "metadata": {"name": obj.name_any()},
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
