//! Kubernetes Events about an object, as `kubectl describe` shows them, and waiting for one.

use k8s_openapi::api::events::v1::Event;
use kube::api::Api;

use super::wait::{Deadline, wait_until};

/// The events about the object `name` in `namespace`, oldest first.
pub async fn about(client: &kube::Client, namespace: &str, name: &str) -> Vec<Event> {
    let api: Api<Event> = Api::namespaced(client.clone(), namespace);
    let mut events: Vec<Event> = api
        .list(&Default::default())
        .await
        .expect("list events")
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .collect();
    events.sort_by_key(|e| e.metadata.creation_timestamp.clone().map(|t| t.0));
    events
}

/// Waits for an event with `reason` about the object `name`; returns its note.
pub async fn wait_for(client: &kube::Client, namespace: &str, name: &str, reason: &str) -> String {
    wait_until(
        &format!("event {reason} about {name}"),
        Deadline::secs(30),
        || async move {
            let events = about(client, namespace, name).await;
            match events.iter().find(|e| e.reason.as_deref() == Some(reason)) {
                Some(e) => Ok(Some(e.note.clone().unwrap_or_default())),
                None => Err(format!(
                    "{:?}",
                    events.iter().map(|e| e.reason.clone()).collect::<Vec<_>>()
                )),
            }
        },
    )
    .await
}
