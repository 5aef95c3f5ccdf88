//! WATCH: newline-delimited JSON events over a chunked response, from the bounded history and the live
//! broadcast, with bookmarks, initial events, timeouts and in-stream errors. Event
//! objects are the objects themselves, one-row Tables, or `PartialObjectMetadata` (`partial.rs`).
//!
//! Expired resourceVersions are answered with HTTP 200 and one `ERROR` event carrying a 410 Status, never
//! with an HTTP 410 (kube-rs only re-lists on the in-stream error).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::response::Response;
use rand::Rng;
use serde_json::{Map, Value, json};
use tokio::sync::{broadcast, mpsc};

use super::convert;
use super::partial;
use super::reads::{ListParams, selected, selectors};
use super::request::{Output, Query};
use super::resources::{GroupResource, storage_key};
use super::server::{Shared, Target};
use super::status::{ApiError, Cause};
use super::store::{EventType, StoredEvent};
use super::table::{self, IncludeObject};

struct Watcher {
    shared: Arc<Shared>,
    target: Target,
    storage: GroupResource,
    params: ListParams,
    form: EventForm,
    sent_definitions: bool,
    bookmarks: bool,
    convert: bool,
    tx: mpsc::Sender<Result<Bytes, Infallible>>,
    last_rv: u64,
}

/// What each event carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EventForm {
    /// The object.
    Object,
    /// A one-row Table.
    Table(IncludeObject),
    /// `PartialObjectMetadata` in `meta.k8s.io/<version>`.
    Metadata(&'static str),
    /// Nothing, and the watch ends: the client asked for `PartialObjectMetadataList`, which no event object can
    /// be turned into.
    Nothing,
}

fn invalid_watch(field: &str, reason: &str, message: &str) -> ApiError {
    let cause = Cause {
        reason: reason.into(),
        message: message.into(),
        field: field.into(),
    };
    ApiError::invalid("meta.k8s.io", "ListOptions", "", vec![cause])
}

/// Starts a watch; errors before streaming (bad parameters) are ordinary Status responses.
pub fn watch(shared: Arc<Shared>, target: &Target, query: &Query, output: Output) -> Result<Response, ApiError> {
    let mut params = selectors(target, query)?;
    if let Some(name) = &target.name {
        if params.fields.required_value("metadata.name").is_some_and(|n| n != name) {
            return Err(ApiError::bad_request(
                "fieldSelector metadata.name doesn't match requested name",
            ));
        }
        // A watch URL naming an object implies `metadata.name=<name>`.
        params.fields = std::mem::take(&mut params.fields).and_equals("metadata.name", name);
    }
    let rv_param = query.get("resourceVersion").filter(|s| !s.is_empty());
    let rv_match = query.get("resourceVersionMatch").filter(|s| !s.is_empty());
    let send_initial_param = query.get("sendInitialEvents").map(|v| v == "true");
    if send_initial_param == Some(true) && rv_match != Some("NotOlderThan") {
        return Err(invalid_watch(
            "sendInitialEvents",
            "FieldValueForbidden",
            "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ));
    }
    if rv_match.is_some() && send_initial_param.is_none() {
        return Err(invalid_watch(
            "resourceVersionMatch",
            "FieldValueForbidden",
            "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ));
    }
    let requested_rv: Option<u64> = match rv_param {
        Some(rv) => Some(
            rv.parse()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv}")))?,
        ),
        None => None,
    };
    // WatchList defaulting (1.32): an unset or "0" resourceVersion means "send the current state first".
    let send_initial = send_initial_param.unwrap_or(matches!(requested_rv, None | Some(0)));
    let bookmarks = query.flag("allowWatchBookmarks");
    let timeout = match query.get("timeoutSeconds").and_then(|s| s.parse::<u64>().ok()) {
        Some(secs) => Duration::from_secs(secs),
        None => Duration::from_secs(rand::rng().random_range(1800..3600)),
    };
    let form = match output {
        Output::Table => {
            EventForm::Table(IncludeObject::parse(query.get("includeObject")).map_err(ApiError::bad_request)?)
        }
        Output::Metadata { list: false, version } => EventForm::Metadata(version),
        // apimachinery transforms each event object; the list form fails for every object and kube-apiserver 1.36
        // answers 200 and ends the watch without a single event (seen on the real apiserver by the conformance
        // suite).
        Output::Metadata { list: true, .. } => EventForm::Nothing,
        Output::Object => EventForm::Object,
    };

    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(256);
    let storage = storage_key(&target.gr());
    let mut watcher = Watcher {
        shared: shared.clone(),
        target: target.clone(),
        storage,
        params,
        form,
        sent_definitions: false,
        bookmarks,
        convert: convert::needs_conversion(&target.def, &target.version),
        tx,
        last_rv: 0,
    };
    let cuts = shared.hooks.subscribe_cuts();
    if watcher.form != EventForm::Nothing {
        tokio::spawn(async move {
            watcher.run(requested_rv, send_initial, timeout, cuts).await;
        });
    }
    // (With `EventForm::Nothing` the watcher is dropped here: the stream ends at once, empty, as on 1.36.)
    let stream = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) });
    Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .header("cache-control", "no-cache, private")
        .body(Body::from_stream(stream))
        .map_err(|e| ApiError::internal(&e.to_string()))
}

impl Watcher {
    async fn send_line(&self, value: &Value) -> bool {
        let mut line = serde_json::to_vec(value).unwrap_or_default();
        line.push(b'\n');
        self.tx.send(Ok(Bytes::from(line))).await.is_ok()
    }

    async fn send_error(&self, err: &ApiError) {
        self.send_line(&json!({"type":"ERROR","object": err.to_value()})).await;
    }

    /// The event object for `obj`, as JSON bytes.
    fn render(&mut self, obj: &Value) -> Vec<u8> {
        if let EventForm::Metadata(version) = self.form {
            // Conversion between versions never touches metadata.
            return partial::object_bytes(obj, version);
        }
        let served = convert::to_output(&self.target.def, &self.target.version, obj);
        let rendered = match self.form {
            EventForm::Object | EventForm::Metadata(_) | EventForm::Nothing => served,
            EventForm::Table(include) => {
                let first = !self.sent_definitions;
                self.sent_definitions = true;
                let mut meta = Map::new();
                meta.insert("resourceVersion".into(), json!(super::meta::resource_version(&served)));
                table::build(
                    &self.target.def,
                    &self.target.version,
                    &[Arc::new(served)],
                    meta,
                    include,
                    first,
                )
            }
        };
        serde_json::to_vec(&rendered).unwrap_or_default()
    }

    /// Sends `{"type":<kind>,"object":<object>}`; false when the client is gone.
    async fn send_event(&self, kind: &str, object: &[u8]) -> bool {
        let mut line = Vec::with_capacity(object.len() + 32);
        line.extend_from_slice(b"{\"type\":\"");
        line.extend_from_slice(kind.as_bytes());
        line.extend_from_slice(b"\",\"object\":");
        line.extend_from_slice(object);
        line.extend_from_slice(b"}\n");
        self.tx.send(Ok(Bytes::from(line))).await.is_ok()
    }

    async fn send_bookmark(&self, rv: u64, initial_end: bool) -> bool {
        let mut metadata = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let object =
            json!({"kind": self.target.def.kind, "apiVersion": self.target.api_version(), "metadata": metadata});
        let object = match self.form {
            // Bookmarks go through the same transform as every event object.
            EventForm::Metadata(version) => partial::object_bytes(&object, version),
            EventForm::Object | EventForm::Table(_) | EventForm::Nothing => {
                serde_json::to_vec(&object).unwrap_or_default()
            }
        };
        self.send_event("BOOKMARK", &object).await
    }

    fn in_scope(&self, obj: &Value) -> bool {
        self.target
            .namespace
            .as_deref()
            .is_none_or(|ns| super::meta::namespace(obj) == ns)
    }

    fn passes(&self, obj: &Value) -> bool {
        if !self.in_scope(obj) {
            return false;
        }
        if self.params.labels.is_empty() && self.params.fields.is_empty() {
            return true;
        }
        if self.convert {
            let served = convert::to_output(&self.target.def, &self.target.version, obj);
            selected(&self.params, &served)
        } else {
            selected(&self.params, obj)
        }
    }

    /// Sends one stored change, translated for this watcher's selectors; false when the client is gone.
    async fn deliver(&mut self, event: &StoredEvent) -> bool {
        self.last_rv = self.last_rv.max(event.rv);
        if event.resource != self.storage {
            return true;
        }
        let now_matches = self.passes(&event.object);
        let before_matches = event.previous.as_deref().is_some_and(|p| self.passes(p));
        let kind = match event.event_type {
            EventType::Added if now_matches => EventType::Added,
            EventType::Modified if now_matches && before_matches => EventType::Modified,
            EventType::Modified if now_matches => EventType::Added,
            EventType::Modified if before_matches => EventType::Deleted,
            EventType::Deleted if before_matches || now_matches => EventType::Deleted,
            _ => return true,
        };
        if event.event_type == EventType::Modified && kind == EventType::Deleted {
            // An object that stopped matching leaves as it was before the change (kube's cacher sends the
            // previous state, at the event's resourceVersion), not as it is now.
            if let Some(previous) = event.previous.as_deref() {
                let mut left = previous.clone();
                left["metadata"]["resourceVersion"] = Value::String(event.rv.to_string());
                let object = self.render(&left);
                return self.send_event(kind.as_str(), &object).await;
            }
        }
        if self.form == EventForm::Object && !self.convert {
            // Fast path: splice the shared serialization of the stored object into the event line.
            return self.send_event(kind.as_str(), &event.object_json()).await;
        }
        let object = self.render(&event.object);
        self.send_event(kind.as_str(), &object).await
    }

    async fn run(
        &mut self,
        requested_rv: Option<u64>,
        send_initial: bool,
        timeout: Duration,
        mut cuts: broadcast::Receiver<Option<GroupResource>>,
    ) {
        let store = &self.shared.store;
        let current = store.current_rv();
        if let Some(rv) = requested_rv
            && rv > current
        {
            self.send_error(&ApiError::too_large_resource_version(rv, current))
                .await;
            return;
        }
        let (backlog, mut live) = if send_initial {
            let gr = self.target.gr();
            let ns = self.target.namespace.clone();
            let (snapshot, snapshot_rv, receiver) = {
                let (snapshot, rv) = store.read(|r| (r.range(&gr, ns.as_deref(), None), r.rv()));
                // Subscribe after reading: replay what changed in between from the history instead.
                match store.watch_from(rv) {
                    Ok((backlog, receiver)) => ((snapshot, backlog), rv, receiver),
                    Err(err) => {
                        self.send_error(&ApiError::expired(err.to_string())).await;
                        return;
                    }
                }
            };
            let (objects, backlog) = snapshot;
            for (_, obj) in objects {
                if self.passes(&obj) {
                    let rendered = self.render(&obj);
                    if !self.send_event("ADDED", &rendered).await {
                        return;
                    }
                }
            }
            self.last_rv = snapshot_rv;
            if self.bookmarks && !self.send_bookmark(snapshot_rv, true).await {
                return;
            }
            (backlog, receiver)
        } else {
            let from = requested_rv.unwrap_or(current);
            match store.watch_from(from) {
                Ok((backlog, receiver)) => {
                    self.last_rv = from;
                    (backlog, receiver)
                }
                Err(err) => {
                    self.send_error(&ApiError::expired(err.to_string())).await;
                    return;
                }
            }
        };
        for event in &backlog {
            if !self.deliver(event).await {
                return;
            }
        }
        let deadline = tokio::time::Instant::now() + timeout;
        let mut ticker = tokio::time::interval_at(
            tokio::time::Instant::now() + self.shared.bookmark_interval,
            self.shared.bookmark_interval,
        );
        let shutdown = self.shared.shutdown.clone();
        loop {
            tokio::select! {
                received = live.recv() => match received {
                    Ok(event) => {
                        if event.rv <= self.last_rv {
                            continue;
                        }
                        if !self.deliver(&event).await {
                            return;
                        }
                    }
                    // Fell behind the broadcast buffer or the store closed: end the stream; the client
                    // resumes from the last resourceVersion it saw.
                    Err(_) => return,
                },
                _ = tokio::time::sleep_until(deadline) => {
                    if self.bookmarks {
                        self.drain(&mut live).await;
                        self.send_bookmark(self.last_rv, false).await;
                    }
                    return;
                }
                _ = ticker.tick() => {
                    if self.bookmarks {
                        if !self.drain(&mut live).await {
                            return;
                        }
                        if !self.send_bookmark(self.last_rv, false).await {
                            return;
                        }
                    }
                }
                cut = cuts.recv() => {
                    match cut {
                        Ok(Some(gr)) if storage_key(&gr) != self.storage => {}
                        _ => return,
                    }
                }
                _ = self.tx.closed() => return,
                _ = shutdown.cancelled() => return,
            }
        }
    }

    /// Delivers every change already queued, so a bookmark never claims a resourceVersion ahead of them.
    async fn drain(&mut self, live: &mut broadcast::Receiver<Arc<StoredEvent>>) -> bool {
        while let Ok(event) = live.try_recv() {
            if event.rv <= self.last_rv {
                continue;
            }
            if !self.deliver(&event).await {
                return false;
            }
        }
        true
    }
}
