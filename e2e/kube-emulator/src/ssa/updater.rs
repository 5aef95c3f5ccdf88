//! The ownership core (structured-merge-diff's `Updater`, with kube-apiserver's timestamp and stripping
//! rules folded in): tracking an update, applying a configuration, pruning what an applier dropped, and
//! transferring ownership of changed fields.

use std::collections::BTreeMap;

use serde_json::Value;

use super::compare::{Comparison, compare};
use super::managed::{Managed, ManagedEntry, ManagerId, stripped_fields};
use super::merge::merge;
use super::remove::remove_items;
use super::typed::field_set;
use crate::fields::{FieldSet, Shape, values_equal};

/// Fields of other managers that an apply would take without `force`, per manager key.
pub(crate) type ConflictSets = BTreeMap<String, (ManagerId, FieldSet)>;

/// Ownership operations for one kind at one endpoint.
pub(crate) struct Updater<'a> {
    /// The kind's shape.
    pub(crate) shape: &'a Shape,
    /// The endpoint's reset fields: never owned by this endpoint's writers, never conflicting.
    pub(crate) reset: &'a FieldSet,
}

impl Updater<'_> {
    /// Compares `live` with `new` and takes every changed field away from each manager except `writer`;
    /// removed fields leave every such manager. Without `force`, fields owned by others that would change
    /// are reported as conflicts and nothing is modified.
    fn transfer(
        &self,
        live: &Value,
        new: &Value,
        managed: &mut Managed,
        writer: Option<&str>,
        force: bool,
    ) -> Result<Comparison, ConflictSets> {
        let mut comparison = compare(live, new, self.shape);
        comparison.exclude(self.reset);
        let changed = comparison.changed();
        if !force {
            let conflicts: ConflictSets = managed
                .entries
                .iter()
                .filter(|(key, _)| Some(key.as_str()) != writer)
                .filter_map(|(key, entry)| {
                    let taken = entry.set.intersection(&changed);
                    (!taken.is_empty()).then(|| (key.clone(), (entry.id.clone(), taken)))
                })
                .collect();
            if !conflicts.is_empty() {
                return Err(conflicts);
            }
        }
        for (key, entry) in managed.entries.iter_mut() {
            if Some(key.as_str()) == writer {
                continue;
            }
            entry.set = entry.set.difference(&changed).difference(&comparison.removed);
        }
        managed.drop_empty();
        Ok(comparison)
    }

    /// Records a non-apply write of `new` over `live` by `writer`: the fields it added or changed become
    /// its own (and nobody else's), removed fields leave everyone, and its time becomes `now` if it
    /// changed anything.
    pub(crate) fn update(&self, live: &Value, new: &Value, managed: &mut Managed, writer: &ManagerId, now: &str) {
        // Run as an anonymous operation first, so the writer's own previous entry is treated like any other.
        let Ok(comparison) = self.transfer(live, new, managed, None, true) else {
            return;
        };
        let changed = comparison
            .changed()
            .recursive_difference(self.reset)
            .difference(&stripped_fields());
        if changed.is_empty() {
            return;
        }
        let key = writer.key();
        match managed.entries.get_mut(&key) {
            Some(entry) => {
                entry.set.union_with(&changed);
                entry.api_version = writer.api_version.clone();
                entry.time = Some(now.to_string());
            }
            None => {
                let entry = ManagedEntry {
                    id: writer.clone(),
                    api_version: writer.api_version.clone(),
                    time: Some(now.to_string()),
                    set: changed,
                };
                managed.entries.insert(key, entry);
            }
        }
    }

    /// Applies `body` over `live` for `applier`: merges, replaces the applier's set with the body's field
    /// set, prunes what it applied last time and dropped now, then transfers ownership. Returns the new
    /// object, or `None` when its content equals `live`. The applier's time becomes `now` only when the
    /// content changed.
    pub(crate) fn apply(
        &self,
        live: &Value,
        body: &Value,
        managed: &mut Managed,
        applier: &ManagerId,
        force: bool,
        now: &str,
    ) -> Result<Option<Value>, ConflictSets> {
        let merged = merge(live, body, self.shape);
        let key = applier.key();
        let last = managed.entries.get(&key).map(|entry| entry.set.clone());
        let set = field_set(body, self.shape).recursive_difference(self.reset);
        match managed.entries.get_mut(&key) {
            Some(entry) => {
                entry.set = set;
                entry.api_version = applier.api_version.clone();
            }
            None => {
                let entry = ManagedEntry {
                    id: applier.clone(),
                    api_version: applier.api_version.clone(),
                    time: None,
                    set,
                };
                managed.entries.insert(key.clone(), entry);
            }
        }
        let pruned = self.prune(merged, managed, last.as_ref());
        self.transfer(live, &pruned, managed, Some(&key), force)?;
        let changed = !values_equal(live, &pruned);
        if let Some(entry) = managed.entries.get_mut(&key) {
            entry.set = entry.set.difference(&stripped_fields());
            if changed {
                entry.time = Some(now.to_string());
            }
        }
        managed.drop_empty();
        Ok(changed.then_some(pruned))
    }

    /// Removes from `merged` what the applier owned last time (`last`) and no longer applies, unless some
    /// manager (Apply or Update) still owns it. Struct fields count as owned through anything below them;
    /// list items and map entries must be owned themselves.
    fn prune(&self, merged: Value, managed: &Managed, last: Option<&FieldSet>) -> Value {
        let Some(last) = last.filter(|set| !set.is_empty()) else {
            return merged;
        };
        let shape = self.shape;
        let ensure = |set: &FieldSet| set.ensure_named_fields_are_members(shape);
        let last = ensure(last);
        let first_cut = remove_items(&merged, &last, shape);

        // Add back whatever someone (including the applier's new configuration) still owns.
        let mut owned = FieldSet::new();
        for entry in managed.entries.values() {
            owned.union_with(&entry.set);
        }
        let merged_set = ensure(&field_set(&merged, shape));
        let keep = ensure(&field_set(&first_cut, shape)).union(&ensure(&owned));
        let with_owned = remove_items(&merged, &merged_set.difference(&keep), shape);

        // Of what is still missing, only remove what the applier itself owned last time.
        let kept_set = ensure(&field_set(&with_owned, shape));
        let drop = merged_set.difference(&kept_set).intersection(&last);
        remove_items(&merged, &drop, shape)
    }
}
