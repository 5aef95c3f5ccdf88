//! Finalizers that guard external cleanup.
//!
//! The runner adds the controller's finalizer before any side effect, runs cleanup when the object is being
//! deleted, and removes the finalizer last. Finalizers left by the operators this one replaces (kopf's marker,
//! nebari's old name) are swapped for ours in the same write, so a running system can be taken over.
//!
//! Writes are JSON patches that `test` the current list first: a concurrent change to the finalizers makes the
//! request fail (and the reconcile retry) instead of silently dropping someone else's finalizer.

use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::json;

/// The finalizer a controller owns, and older names it takes over.
#[derive(Clone, Copy, Debug)]
pub struct FinalizerSpec {
    /// Our finalizer, e.g. `openstack.org/applicationcredential`.
    pub name: &'static str,
    /// Finalizers of the replaced operator that mean the same thing; migrated to `name`.
    pub legacy: &'static [&'static str],
}

impl FinalizerSpec {
    /// Whether `finalizer` is ours or one we migrate.
    pub fn claims(&self, finalizer: &str) -> bool {
        finalizer == self.name || self.legacy.contains(&finalizer)
    }

    /// Whether the object carries our finalizer or a legacy one.
    pub fn is_present<K: Resource>(&self, obj: &K) -> bool {
        obj.finalizers().iter().any(|f| self.claims(f))
    }

    /// The finalizer list with ours present exactly once and legacy names removed, or `None` if it is already so.
    pub fn with_ours(&self, current: &[String]) -> Option<Vec<String>> {
        let has_ours = current.iter().any(|f| f == self.name);
        let has_legacy = current.iter().any(|f| self.legacy.contains(&f.as_str()));
        if has_ours && !has_legacy {
            return None;
        }
        let mut next: Vec<String> = Vec::with_capacity(current.len() + 1);
        for f in current {
            if self.legacy.contains(&f.as_str()) {
                if !has_ours && !next.iter().any(|n| n == self.name) {
                    // Keep the position of the legacy finalizer so other finalizers keep their order.
                    next.push(self.name.to_string());
                }
            } else {
                next.push(f.clone());
            }
        }
        if !next.iter().any(|f| f == self.name) {
            next.push(self.name.to_string());
        }
        Some(next)
    }

    /// The finalizer list without ours and without legacy names, or `None` if none of them is there.
    pub fn without_ours(&self, current: &[String]) -> Option<Vec<String>> {
        if !current.iter().any(|f| self.claims(f)) {
            return None;
        }
        Some(current.iter().filter(|f| !self.claims(f)).cloned().collect())
    }
}

fn finalizers_patch(current: &[String], next: Vec<String>) -> json_patch::Patch {
    let ops = if current.is_empty() {
        json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": next},
        ])
    } else {
        json!([
            {"op": "test", "path": "/metadata/finalizers", "value": current},
            {"op": "replace", "path": "/metadata/finalizers", "value": next},
        ])
    };
    // The JSON above is a well-formed patch by construction.
    serde_json::from_value(ops).expect("static JSON patch shape is valid")
}

/// Adds our finalizer (migrating legacy ones); returns the object as stored after the write, or `None` when
/// nothing had to change.
pub async fn ensure<K>(
    api: &Api<K>,
    obj: &K,
    spec: &FinalizerSpec,
    field_manager: &str,
) -> Result<Option<K>, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let current = obj.finalizers();
    let Some(next) = spec.with_ours(current) else {
        return Ok(None);
    };
    let patch: Patch<()> = Patch::Json(finalizers_patch(current, next));
    let params = PatchParams {
        field_manager: Some(field_manager.to_string()),
        ..Default::default()
    };
    api.patch(&obj.name_any(), &params, &patch).await.map(Some)
}

/// Removes our finalizer and legacy ones (after cleanup succeeded); returns whether the object was written.
pub async fn remove<K>(api: &Api<K>, obj: &K, spec: &FinalizerSpec, field_manager: &str) -> Result<bool, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let current = obj.finalizers();
    let Some(next) = spec.without_ours(current) else {
        return Ok(false);
    };
    let patch: Patch<()> = Patch::Json(finalizers_patch(current, next));
    let params = PatchParams {
        field_manager: Some(field_manager.to_string()),
        ..Default::default()
    };
    match api.patch(&obj.name_any(), &params, &patch).await {
        Ok(_) => Ok(true),
        // Removing the last finalizer of a deleted object deletes it; a racing delete is as good.
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(true),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: FinalizerSpec = FinalizerSpec {
        name: "waldur.io/managed-rancher-project",
        legacy: &["kopf.zalando.org/KopfFinalizerMarker"],
    };

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn adds_ours_when_absent() {
        assert_eq!(SPEC.with_ours(&[]), Some(v(&["waldur.io/managed-rancher-project"])));
        assert_eq!(
            SPEC.with_ours(&v(&["other/x"])),
            Some(v(&["other/x", "waldur.io/managed-rancher-project"]))
        );
    }

    #[test]
    fn does_nothing_when_ours_is_there() {
        assert_eq!(
            SPEC.with_ours(&v(&["waldur.io/managed-rancher-project", "other/x"])),
            None
        );
    }

    #[test]
    fn migrates_legacy_in_place() {
        assert_eq!(
            SPEC.with_ours(&v(&["a/b", "kopf.zalando.org/KopfFinalizerMarker", "c/d"])),
            Some(v(&["a/b", "waldur.io/managed-rancher-project", "c/d"]))
        );
        assert_eq!(
            SPEC.with_ours(&v(&[
                "kopf.zalando.org/KopfFinalizerMarker",
                "waldur.io/managed-rancher-project"
            ])),
            Some(v(&["waldur.io/managed-rancher-project"]))
        );
    }

    #[test]
    fn removal_drops_ours_and_legacy_but_keeps_others() {
        assert_eq!(
            SPEC.without_ours(&v(&[
                "kopf.zalando.org/KopfFinalizerMarker",
                "x/y",
                "waldur.io/managed-rancher-project"
            ])),
            Some(v(&["x/y"]))
        );
        assert_eq!(SPEC.without_ours(&v(&["x/y"])), None);
    }

    #[test]
    fn patch_tests_the_current_list() {
        let patch = serde_json::to_value(finalizers_patch(&v(&["a/b"]), v(&["a/b", "c/d"]))).expect("json");
        assert_eq!(
            patch[0],
            json!({"op": "test", "path": "/metadata/finalizers", "value": ["a/b"]})
        );
        assert_eq!(patch[1]["op"], "replace");
        let patch = serde_json::to_value(finalizers_patch(&[], v(&["c/d"]))).expect("json");
        assert_eq!(
            patch[0],
            json!({"op": "test", "path": "/metadata/finalizers", "value": null})
        );
        assert_eq!(
            patch[1],
            json!({"op": "add", "path": "/metadata/finalizers", "value": ["c/d"]})
        );
    }
}
