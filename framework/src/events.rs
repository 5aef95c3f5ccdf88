//! Kubernetes Events, published only when something changed.
//!
//! Events are for people reading `kubectl describe`: a rotation happened, a dependency went missing, deletion
//! is blocked. Publishing the same Warning on every retry buries the useful ones and loads the API server, so
//! [`EventPublisher`] remembers the last note per object and reason and stays quiet while it repeats.
//!
//! Events are written through the core `v1` API with both generations of fields: `firstTimestamp`,
//! `lastTimestamp`, `count` and `source` (what `kubectl get events --sort-by=.lastTimestamp` and most dashboards
//! read) and `eventTime`, `action`, `reportingComponent` and `reportingInstance` (what `events.k8s.io/v1`
//! readers see). The `events.k8s.io/v1` API refuses the first set on create, so it cannot be used to write them.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::Mutex;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, PostParams};

use crate::sanitize;

/// How many objects are remembered before the memory is reset (about 100 bytes each).
const MEMORY_LIMIT: usize = 50_000;

/// Severity of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// Something happened as intended.
    Normal,
    /// Something needs attention.
    Warning,
}

/// Publishes events for one controller, suppressing repeats.
pub struct EventPublisher {
    client: Client,
    /// The `reportingController` (shown as "From").
    controller: String,
    /// The `reportingInstance`: this pod (or host).
    instance: String,
    /// Per object (a hash of its uid), the last note published for each reason, as hashes of both: a few
    /// dozen bytes per object instead of copies of the uid, reasons and notes. A hash collision (odds about
    /// n²/2⁶⁵) could only suppress one event.
    last: Mutex<HashMap<u64, Vec<LastNote>>>,
    hasher: RandomState,
}

/// The last note published for one reason (hashes).
#[derive(Clone, Copy, PartialEq, Eq)]
struct LastNote {
    reason: u64,
    note: u64,
}

impl EventPublisher {
    /// A publisher reporting as `controller` (shown as "From" in `kubectl describe`).
    pub fn new(client: Client, controller: &str) -> Self {
        Self {
            client,
            controller: controller.to_string(),
            instance: hostname_instance().unwrap_or_else(|| controller.to_string()),
            last: Mutex::new(HashMap::new()),
            hasher: RandomState::new(),
        }
    }

    /// Publishes `reason`/`note` about `object` unless the previous event for this object and reason had the same
    /// note. The note is sanitized. Failures are logged, never returned: events are best effort.
    pub async fn publish(&self, object: &ObjectReference, severity: Severity, reason: &str, action: &str, note: &str) {
        let note = sanitize::sanitize(note);
        let object_key = self.hasher.hash_one(object.uid.as_deref().unwrap_or_default());
        let last_note = self.last_note(reason, &note);
        {
            let Ok(mut last) = self.last.lock() else { return };
            if remembers(&last, object_key, last_note) {
                return;
            }
            if last.len() >= MEMORY_LIMIT && !last.contains_key(&object_key) {
                last.clear();
            }
            let notes = last.entry(object_key).or_default();
            notes.retain(|n| n.reason != last_note.reason);
            notes.push(last_note);
        }
        let event = self.event(object, severity, reason, action, note);
        let namespace = object.namespace.as_deref().unwrap_or("default");
        // Created directly (each event once, see above) rather than through kube-runtime's `Recorder`, which
        // scans every event it published in the last minutes on each publish (a round over N objects was O(N²))
        // and leaves the deprecated timestamps empty.
        let events: Api<Event> = Api::namespaced(self.client.clone(), namespace);
        if let Err(error) = events.create(&PostParams::default(), &event).await {
            tracing::warn!(%error, reason, "failed to publish event");
            // Forget it so the next attempt publishes again.
            if let Ok(mut last) = self.last.lock()
                && let Some(notes) = last.get_mut(&object_key)
            {
                notes.retain(|n| *n != last_note);
            }
        }
    }

    /// Forgets everything remembered about an object (after it is deleted).
    pub fn forget(&self, uid: &str) {
        if let Ok(mut last) = self.last.lock() {
            last.remove(&self.hasher.hash_one(uid));
        }
    }

    /// Whether a publish with these arguments would be suppressed as a repeat (for tests and callers that batch).
    pub fn is_repeat(&self, uid: &str, reason: &str, note: &str) -> bool {
        let last_note = self.last_note(reason, &sanitize::sanitize(note));
        self.last
            .lock()
            .map(|last| remembers(&last, self.hasher.hash_one(uid), last_note))
            .unwrap_or(false)
    }

    /// The event to create: one occurrence, now.
    fn event(&self, object: &ObjectReference, severity: Severity, reason: &str, action: &str, note: String) -> Event {
        let now = Timestamp::now();
        // The object's name (cut so the event's name stays within 253 characters) and the time, as kubectl names them.
        let name: String = object
            .name
            .as_deref()
            .unwrap_or(&self.controller)
            .chars()
            .take(200)
            .collect();
        Event {
            metadata: ObjectMeta {
                name: Some(format!("{name}.{:x}", now.as_nanosecond())),
                namespace: object.namespace.clone(),
                ..ObjectMeta::default()
            },
            involved_object: object.clone(),
            type_: Some(
                match severity {
                    Severity::Normal => "Normal",
                    Severity::Warning => "Warning",
                }
                .to_string(),
            ),
            reason: Some(reason.to_string()),
            message: Some(note),
            action: Some(action.to_string()),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            count: Some(1),
            source: Some(EventSource {
                component: Some(self.controller.clone()),
                host: None,
            }),
            event_time: Some(MicroTime(now)),
            reporting_component: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            related: None,
            series: None,
        }
    }

    fn last_note(&self, reason: &str, note: &str) -> LastNote {
        LastNote {
            reason: self.hasher.hash_one(reason),
            note: self.hasher.hash_one(note),
        }
    }
}

/// Whether `note` is the last one remembered for its reason on the object `object`.
fn remembers(last: &HashMap<u64, Vec<LastNote>>, object: u64, note: LastNote) -> bool {
    last.get(&object).is_some_and(|notes| notes.contains(&note))
}

fn hostname_instance() -> Option<String> {
    std::env::var("POD_NAME")
        .ok()
        .or_else(|| hostname::get().ok().and_then(|h| h.into_string().ok()))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    type BoxError = Box<dyn std::error::Error + Send + Sync>;

    /// A publisher whose API accepts every event, and how many it was sent.
    fn publisher() -> (EventPublisher, Arc<AtomicUsize>) {
        let sent = Arc::new(AtomicUsize::new(0));
        let counter = sent.clone();
        let api = tower::service_fn(move |_request: http::Request<kube::client::Body>| {
            counter.fetch_add(1, Ordering::SeqCst);
            async {
                let created = serde_json::json!({
                    "apiVersion": "v1",
                    "kind": "Event",
                    "metadata": {"name": "e", "namespace": "ns"},
                    "involvedObject": {},
                });
                let response = http::Response::builder()
                    .status(201)
                    .body(kube::client::Body::from(created.to_string().into_bytes()))?;
                Ok::<_, BoxError>(response)
            }
        });
        (EventPublisher::new(Client::new(api, "ns"), "test"), sent)
    }

    fn object(uid: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("ConfigMap".into()),
            namespace: Some("ns".into()),
            name: Some(format!("cm-{uid}")),
            uid: Some(uid.into()),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn a_repeated_note_is_published_once_per_object_and_reason() {
        let (events, sent) = publisher();
        let (a, b) = (object("a"), object("b"));
        events
            .publish(&a, Severity::Warning, "Blocked", "Blocking", "waiting for x")
            .await;
        events
            .publish(&a, Severity::Warning, "Blocked", "Blocking", "waiting for x")
            .await;
        assert_eq!(sent.load(Ordering::SeqCst), 1, "the repeat is suppressed");
        assert!(events.is_repeat("a", "Blocked", "waiting for x"));

        events
            .publish(&a, Severity::Normal, "Ready", "Reconcile", "waiting for x")
            .await;
        events
            .publish(&b, Severity::Warning, "Blocked", "Blocking", "waiting for x")
            .await;
        assert_eq!(
            sent.load(Ordering::SeqCst),
            3,
            "another reason, another object: both published"
        );

        events
            .publish(&a, Severity::Warning, "Blocked", "Blocking", "waiting for y")
            .await;
        events
            .publish(&a, Severity::Warning, "Blocked", "Blocking", "waiting for x")
            .await;
        assert_eq!(
            sent.load(Ordering::SeqCst),
            5,
            "a changed note is published, and so is the old one after it"
        );
        assert!(
            events.is_repeat("a", "Ready", "waiting for x"),
            "the other reason's note is kept"
        );
    }

    #[tokio::test]
    async fn a_forgotten_object_publishes_again() {
        let (events, sent) = publisher();
        let a = object("a");
        events.publish(&a, Severity::Normal, "Ready", "Reconcile", "ok").await;
        events.forget("a");
        assert!(!events.is_repeat("a", "Ready", "ok"));
        events.publish(&a, Severity::Normal, "Ready", "Reconcile", "ok").await;
        assert_eq!(sent.load(Ordering::SeqCst), 2);
    }
}
