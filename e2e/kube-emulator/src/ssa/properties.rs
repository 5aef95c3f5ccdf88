//! Server-side apply checked against a reference model on generated sequences of applies.
//!
//! The model is structured-merge-diff's rule for a granular map of scalars (a ConfigMap's `data`), the shape the
//! operator's children and the Gateway listeners rely on: an apply sets the values it names and makes its manager
//! own exactly them; a differing value owned by another manager is a conflict (refused without `force`, taken
//! over with it); and a key the manager stops applying is removed only when nobody else owns it.
//! `PROPTEST_CASES` raises the number of sequences for a longer run.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::fields::Shape;

const MANAGERS: [&str; 3] = ["alpha", "beta", "gamma"];
const KEYS: [&str; 4] = ["k1", "k2", "k3", "k4"];
const NOW: &str = "2024-10-01T21:53:28Z";

/// One apply: who, which keys with which values, forced or not.
#[derive(Clone, Debug)]
struct Op {
    manager: usize,
    data: BTreeMap<String, String>,
    force: bool,
}

fn op() -> impl Strategy<Value = Op> {
    (
        0..MANAGERS.len(),
        // At least one key: an applied empty map is a case of its own (see docs/api-emulator.md).
        proptest::collection::btree_map(0..KEYS.len(), 0..2u8, 1..=KEYS.len()),
        any::<bool>(),
    )
        .prop_map(|(manager, data, force)| Op {
            manager,
            data: data
                .into_iter()
                .map(|(k, v)| (KEYS[k].to_string(), format!("v{v}")))
                .collect(),
            force,
        })
}

/// The reference: values and each manager's keys.
#[derive(Debug, Default)]
struct Model {
    values: BTreeMap<String, String>,
    owners: BTreeMap<String, BTreeSet<String>>,
}

impl Model {
    /// Applies `op`; `Err` with the conflicting keys when refused.
    fn apply(&mut self, op: &Op) -> Result<(), BTreeSet<String>> {
        let me = MANAGERS[op.manager];
        let conflicts: BTreeSet<String> = op
            .data
            .iter()
            .filter(|(key, value)| {
                self.values.get(*key) != Some(value)
                    && self.owners.iter().any(|(m, keys)| m != me && keys.contains(*key))
            })
            .map(|(key, _)| key.clone())
            .collect();
        if !conflicts.is_empty() && !op.force {
            return Err(conflicts);
        }
        for (manager, keys) in self.owners.iter_mut() {
            if manager != me {
                keys.retain(|k| !conflicts.contains(k));
            }
        }
        let before = self.owners.remove(me).unwrap_or_default();
        for (key, value) in &op.data {
            self.values.insert(key.clone(), value.clone());
        }
        self.owners.insert(me.to_string(), op.data.keys().cloned().collect());
        for key in before.difference(&op.data.keys().cloned().collect()) {
            if !self.owners.values().any(|keys| keys.contains(key)) {
                self.values.remove(key);
            }
        }
        self.owners.retain(|_, keys| !keys.is_empty());
        Ok(())
    }
}

fn configmap() -> &'static Shape {
    Shape::builtin("", "v1", "ConfigMap").expect("ConfigMap is served")
}

/// The keys of `data` each manager owns, read from `metadata.managedFields`.
fn owners(object: &Value) -> BTreeMap<String, BTreeSet<String>> {
    let mut owners = BTreeMap::new();
    for entry in object["metadata"]["managedFields"].as_array().into_iter().flatten() {
        let keys: BTreeSet<String> = entry["fieldsV1"]["f:data"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(field, _)| field.strip_prefix("f:").map(str::to_string))
            .collect();
        if !keys.is_empty() {
            owners.insert(entry["manager"].as_str().unwrap_or_default().to_string(), keys);
        }
    }
    owners
}

fn values(object: &Value) -> BTreeMap<String, String> {
    object["data"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
        .collect()
}

proptest! {
    #[test]
    fn applies_to_a_granular_map_follow_the_reference_model(ops in proptest::collection::vec(op(), 1..24)) {
        let mut model = Model::default();
        let mut stored: Option<Value> = None;
        let reset = ResetFields::none();
        for op in &ops {
            let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": "model", "namespace": "default"}, "data": op.data});
            let request = ApplyRequest {
                endpoint: Endpoint {
                    api_version: "v1",
                    kind: "ConfigMap",
                    subresource: None,
                    shape: configmap(),
                    reset: &reset,
                },
                live: stored.as_ref(),
                body: &body,
                manager: MANAGERS[op.manager],
                force: op.force,
                now: NOW,
            };
            let expected = model.apply(op);
            match (apply(&request), expected) {
                (Ok(applied), Ok(())) => stored = Some(applied.object),
                (Err(ApplyError::Conflicts(_)), Err(_)) => {}
                (got, want) => prop_assert!(false, "{op:?}: emulator {got:?}, model {want:?}"),
            }
            let object = stored.clone().unwrap_or(Value::Null);
            prop_assert_eq!(values(&object), model.values.clone(), "values after {:?}", op);
            prop_assert_eq!(owners(&object), model.owners.clone(), "owners after {:?}", op);
        }
    }
}
