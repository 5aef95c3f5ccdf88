//! The `metav1.Condition`s of any object with a status, read from its JSON form so one helper serves every kind,
//! and waiting for one to reach a state.

use std::fmt::Debug;

use kube::api::Api;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::wait::{Deadline, wait_until};

/// One condition as the tests compare it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// The PascalCase reason.
    pub reason: String,
    /// The message.
    pub message: String,
}

/// The condition `type_` of `object`.
pub fn get(object: &impl Serialize, type_: &str) -> Option<Observed> {
    let value = serde_json::to_value(object).ok()?;
    let condition = value["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)?;
    let text = |key: &str| condition[key].as_str().unwrap_or_default().to_string();
    Some(Observed {
        status: text("status"),
        reason: text("reason"),
        message: text("message"),
    })
}

/// Whether `object` is Ready for its current generation (`observedGeneration` equals `metadata.generation`).
pub fn is_ready(object: &impl Serialize) -> bool {
    let Ok(value) = serde_json::to_value(object) else {
        return false;
    };
    let current = !value["status"]["observedGeneration"].is_null()
        && value["status"]["observedGeneration"] == value["metadata"]["generation"];
    current && get(object, "Ready").is_some_and(|c| c.status == "True")
}

/// Waits until `name` is Ready for its current generation; returns it.
pub async fn wait_ready<K>(api: &Api<K>, name: &str) -> K
where
    K: Clone + DeserializeOwned + Debug + Serialize,
{
    wait_until(&format!("{name} Ready"), Deadline::secs(30), || async move {
        let object = api.get(name).await.map_err(|e| e.to_string())?;
        if is_ready(&object) {
            Ok(Some(object))
        } else {
            Err(format!("{:?}", get(&object, "Ready")))
        }
    })
    .await
}

/// Waits until condition `type_` of `name` has `status` and `reason` and a message containing `needle` (empty:
/// any); returns the message.
pub async fn wait_for<K>(api: &Api<K>, name: &str, type_: &str, status: &str, reason: &str, needle: &str) -> String
where
    K: Clone + DeserializeOwned + Debug + Serialize,
{
    let what = format!("{name} condition {type_}={status} ({reason}) mentioning {needle:?}");
    wait_until(&what, Deadline::secs(60), || async move {
        let object = api.get(name).await.map_err(|e| e.to_string())?;
        match get(&object, type_) {
            Some(c) if c.status == status && c.reason == reason && c.message.contains(needle) => Ok(Some(c.message)),
            other => Err(format!("{other:?}")),
        }
    })
    .await
}

/// The conditions of a JSON object, for messages.
pub fn all(object: &Value) -> Vec<Value> {
    object["status"]["conditions"].as_array().cloned().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn conditions_are_found_by_type_and_ready_needs_the_current_generation() {
        let object = json!({
            "metadata": {"generation": 2},
            "status": {"observedGeneration": 2, "conditions": [
                {"type": "Ready", "status": "True", "reason": "Ready", "message": "fine"},
                {"type": "AuthReady", "status": "False", "reason": "Down", "message": "Keycloak is down"},
            ]},
        });
        assert_eq!(
            get(&object, "AuthReady"),
            Some(Observed {
                status: "False".into(),
                reason: "Down".into(),
                message: "Keycloak is down".into()
            })
        );
        assert_eq!(get(&object, "Missing"), None);
        assert!(is_ready(&object));
        let stale = json!({"metadata": {"generation": 3}, "status": object["status"].clone()});
        assert!(!is_ready(&stale), "Ready for an older generation is not Ready");
        assert_eq!(all(&object).len(), 2);
    }
}
