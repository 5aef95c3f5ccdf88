//! Apply conflicts and the exact texts kube-apiserver reports them with.

use super::updater::ConflictSets;
use crate::fields::path_display;

/// One field another manager owns and the apply would change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The other manager as printed: `"alice"`, `"op" using apps/v1`, `"ctl" with subresource "status"`.
    pub manager: String,
    /// The field, e.g. `.spec.replicas` or `.spec.ports[port=80,protocol="TCP"]`.
    pub path: String,
}

impl Conflict {
    /// The `message` of this conflict's Status cause: `conflict with "alice"`.
    pub fn cause_message(&self) -> String {
        format!("conflict with {}", self.manager)
    }

    /// The `reason` of this conflict's Status cause.
    pub const CAUSE_REASON: &'static str = "FieldManagerConflict";
}

/// The conflicts of a rejected apply (HTTP 409, reason `Conflict`). The server answers with
/// [`Conflicts::message`] and one cause per [`Conflict`]
/// (`{"reason":"FieldManagerConflict","message":<cause_message>,"field":<path>}`), in this order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflicts {
    /// Every (manager, field) pair, sorted by manager, then by field in field-set order.
    pub conflicts: Vec<Conflict>,
    /// The Status message, e.g. `Apply failed with 1 conflict: conflict with "alice": .data.k`.
    pub message: String,
}

impl Conflicts {
    /// Builds the list and the message from per-manager conflict sets.
    pub(crate) fn from_sets(sets: &ConflictSets) -> Conflicts {
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        // Keys are the managers' identifiers, which is what kube-apiserver sorts the groups by.
        for (id, set) in sets.values() {
            let paths: Vec<String> = set.paths().iter().map(|p| path_display(p)).collect();
            if !paths.is_empty() {
                groups.push((id.describe(), paths));
            }
        }
        let conflicts: Vec<Conflict> = groups
            .iter()
            .flat_map(|(manager, paths)| {
                paths.iter().map(|path| Conflict {
                    manager: manager.clone(),
                    path: path.clone(),
                })
            })
            .collect();
        let message = if conflicts.len() == 1 {
            format!(
                "Apply failed with 1 conflict: conflict with {}: {}",
                conflicts[0].manager, conflicts[0].path
            )
        } else {
            let mut lines = Vec::new();
            for (manager, paths) in &groups {
                lines.push(format!("conflicts with {manager}:"));
                lines.extend(paths.iter().map(|p| format!("- {p}")));
            }
            format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
        };
        Conflicts { conflicts, message }
    }
}
