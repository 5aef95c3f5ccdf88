//! Kubernetes Events, published only when something changed.
//!
//! Events are for people reading `kubectl describe`: a rotation happened, a dependency went missing, deletion
//! is blocked. Publishing the same Warning on every retry buries the useful ones and loads the API server, so
//! [`EventPublisher`] remembers the last note per object and reason and stays quiet while it repeats.

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

use crate::sanitize;

/// How many (object, reason) pairs are remembered before the memory is reset.
const MEMORY_LIMIT: usize = 10_000;

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
    reporter: Reporter,
    last: Mutex<HashMap<(String, String), String>>,
}

impl EventPublisher {
    /// A publisher reporting as `controller` (shown as "From" in `kubectl describe`).
    pub fn new(client: Client, controller: &str) -> Self {
        let reporter = Reporter {
            controller: controller.to_string(),
            instance: hostname_instance(),
        };
        Self {
            client,
            reporter,
            last: Mutex::new(HashMap::new()),
        }
    }

    /// Publishes `reason`/`note` about `object` unless the previous event for this object and reason had the same
    /// note. The note is sanitized. Failures are logged, never returned: events are best effort.
    pub async fn publish(&self, object: &ObjectReference, severity: Severity, reason: &str, action: &str, note: &str) {
        let note = sanitize::sanitize(note);
        let key = (object.uid.clone().unwrap_or_default(), reason.to_string());
        {
            let Ok(mut last) = self.last.lock() else { return };
            if last.get(&key) == Some(&note) {
                return;
            }
            if last.len() >= MEMORY_LIMIT {
                last.clear();
            }
            last.insert(key.clone(), note.clone());
        }
        let event = Event {
            type_: match severity {
                Severity::Normal => EventType::Normal,
                Severity::Warning => EventType::Warning,
            },
            reason: reason.to_string(),
            note: Some(note),
            action: action.to_string(),
            secondary: None,
        };
        // A recorder per event: kube-runtime's `Recorder` scans every event it published in the last minutes on
        // each publish (to expire them), which made publishing O(N) and a round over N objects O(N²). Its one
        // use, counting a repeated event as a series, is covered by not repeating events at all (above).
        let recorder = Recorder::new(self.client.clone(), self.reporter.clone());
        if let Err(error) = recorder.publish(&event, object).await {
            tracing::warn!(%error, reason, "failed to publish event");
            // Forget it so the next attempt publishes again.
            if let Ok(mut last) = self.last.lock() {
                last.remove(&key);
            }
        }
    }

    /// Forgets everything remembered about an object (after it is deleted).
    pub fn forget(&self, uid: &str) {
        if let Ok(mut last) = self.last.lock() {
            last.retain(|(object, _), _| object != uid);
        }
    }

    /// Whether a publish with these arguments would be suppressed as a repeat (for tests and callers that batch).
    pub fn is_repeat(&self, uid: &str, reason: &str, note: &str) -> bool {
        let note = sanitize::sanitize(note);
        self.last
            .lock()
            .map(|last| last.get(&(uid.to_string(), reason.to_string())) == Some(&note))
            .unwrap_or(false)
    }
}

fn hostname_instance() -> Option<String> {
    std::env::var("POD_NAME")
        .ok()
        .or_else(|| hostname::get().ok().and_then(|h| h.into_string().ok()))
}
