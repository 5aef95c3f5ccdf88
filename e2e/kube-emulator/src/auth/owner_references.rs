//! The OwnerReferencesPermissionEnforcement admission plugin: changing an object's owner references needs
//! `delete` on the object, and setting `blockOwnerDeletion` needs `update` on the owner's `finalizers`
//! subresource (so nobody can block the deletion of what they could not otherwise hold up).

use serde_json::Value;

use super::super::meta;
use super::super::resources::{GroupResource, Registry};
use super::super::status::ApiError;
use super::{Access, Attributes, ResourceAttributes};

/// The write being admitted.
pub struct OwnedWrite<'a> {
    /// The resource written.
    pub resource: &'a GroupResource,
    /// The subresource written, or empty.
    pub subresource: &'a str,
    /// The object's namespace.
    pub namespace: &'a str,
    /// The object before the write; `None` on create.
    pub old: Option<&'a Value>,
    /// The object as it would be stored.
    pub new: &'a Value,
}

fn owner_references(obj: Option<&Value>) -> Vec<Value> {
    obj.and_then(|o| o.pointer("/metadata/ownerReferences"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn blocks(reference: &Value) -> bool {
    reference.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true)
}

fn field(reference: &Value, key: &str) -> String {
    reference
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Admits the write, or answers the plugin's 403.
pub fn check(access: &Access, registry: &Registry, write: &OwnedWrite<'_>) -> Result<(), ApiError> {
    if access.user.is_master() || (write.resource == &GroupResource::new("", "pods") && write.subresource == "status") {
        return Ok(());
    }
    let new_refs = owner_references(Some(write.new));
    let old_refs = owner_references(write.old);
    if new_refs == old_refs {
        return Ok(());
    }
    let name = meta::name(write.new);
    let forbid = |detail: &str| ApiError::forbidden(write.resource, name, detail);
    if write.old.is_some() {
        let delete = Attributes::Resource(ResourceAttributes {
            verb: "delete".into(),
            group: write.resource.group.clone(),
            resource: write.resource.resource.clone(),
            subresource: write.subresource.into(),
            namespace: write.namespace.into(),
            name: name.into(),
        });
        if !access.probe(&delete).allowed {
            return Err(forbid("cannot set an ownerRef on a resource you can't delete: , <nil>"));
        }
    }
    let newly_blocking: Vec<&Value> = new_refs
        .iter()
        .filter(|r| blocks(r))
        .filter(|r| {
            !old_refs
                .iter()
                .any(|old| field(old, "uid") == field(r, "uid") && blocks(old))
        })
        .collect();
    if newly_blocking.is_empty() {
        return Ok(());
    }
    let finalize_anything = Attributes::Resource(ResourceAttributes {
        verb: "update".into(),
        group: "*".into(),
        resource: "*".into(),
        subresource: "finalizers".into(),
        namespace: String::new(),
        name: "*".into(),
    });
    if access.probe(&finalize_anything).allowed {
        return Ok(());
    }
    for reference in newly_blocking {
        let api_version = field(reference, "apiVersion");
        let kind = field(reference, "kind");
        let Some(owner) = registry.by_kind(&api_version, &kind) else {
            return Err(forbid(&format!(
                "cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion {api_version} Kind {kind}: no matches for kind \"{kind}\" in version \"{api_version}\""
            )));
        };
        let finalizers = Attributes::Resource(ResourceAttributes {
            verb: "update".into(),
            group: owner.group.clone(),
            resource: owner.plural.clone(),
            subresource: "finalizers".into(),
            namespace: if owner.namespaced {
                write.namespace.to_string()
            } else {
                String::new()
            },
            name: field(reference, "name"),
        });
        if !access.probe(&finalizers).allowed {
            return Err(forbid(
                "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: , <nil>",
            ));
        }
    }
    Ok(())
}
