//! CustomResourceDefinitions: turning a CRD into a served resource, its status (NamesAccepted, Established,
//! Terminating, acceptedNames, storedVersions) and its cleanup finalizer.

use std::sync::Arc;

use serde_json::{Value, json};

use super::fields::Shape;
use super::validation::CrdValidator;

use super::meta;
use super::resources::{GroupResource, Origin, PrinterColumn, ResourceDef, ScaleDef, VersionDef};
use super::store::Txn;

/// The finalizer that holds a CRD until its instances are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The resource a CRD object describes, or `None` if the CRD is too malformed to serve.
pub fn resource_def(crd: &Value) -> Option<ResourceDef> {
    let group = str_at(crd, "/spec/group").to_string();
    let plural = str_at(crd, "/spec/names/plural").to_string();
    let kind = str_at(crd, "/spec/names/kind").to_string();
    if group.is_empty() || plural.is_empty() || kind.is_empty() {
        return None;
    }
    let singular = match str_at(crd, "/spec/names/singular") {
        "" => kind.to_lowercase(),
        s => s.to_string(),
    };
    let list_kind = match str_at(crd, "/spec/names/listKind") {
        "" => format!("{kind}List"),
        s => s.to_string(),
    };
    let versions_json = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut versions = Vec::new();
    let mut storage_version = String::new();
    let mut status_subresource = false;
    let mut scale = None;
    let storage_schema = versions_json
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.pointer("/schema/openAPIV3Schema"))
        .cloned();
    for v in &versions_json {
        let name = str_at(v, "/name").to_string();
        if v.get("storage").and_then(Value::as_bool) == Some(true) {
            storage_version = name.clone();
        }
        if v.pointer("/subresources/status").is_some() {
            status_subresource = true;
        }
        if let Some(s) = v.pointer("/subresources/scale") {
            scale = Some(ScaleDef {
                spec_replicas_path: str_at(s, "/specReplicasPath").to_string(),
                status_replicas_path: str_at(s, "/statusReplicasPath").to_string(),
                label_selector_path: s.get("labelSelectorPath").and_then(Value::as_str).map(str::to_string),
            });
        }
        if v.get("served").and_then(Value::as_bool) == Some(false) {
            continue;
        }
        let printer_columns = v
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
            .map(|cols| {
                cols.iter()
                    .map(|c| PrinterColumn {
                        name: str_at(c, "/name").to_string(),
                        column_type: str_at(c, "/type").to_string(),
                        format: str_at(c, "/format").to_string(),
                        description: str_at(c, "/description").to_string(),
                        priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                        json_path: str_at(c, "/jsonPath").to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let selectable_fields = v
            .get("selectableFields")
            .and_then(Value::as_array)
            .map(|f| f.iter().map(|x| str_at(x, "/jsonPath").to_string()).collect())
            .unwrap_or_default();
        // Every served version is validated with its own schema, falling back to the storage version's.
        let schema = v
            .pointer("/schema/openAPIV3Schema")
            .cloned()
            .or_else(|| storage_schema.clone());
        let shape = schema.as_ref().and_then(|s| match Shape::from_openapi_v3(s) {
            Ok(shape) => Some(Arc::new(shape)),
            Err(err) => {
                tracing::debug!(error = %err, "CRD schema has no usable apply shape; treating it as untyped");
                None
            }
        });
        versions.push(VersionDef {
            name,
            schema,
            printer_columns,
            selectable_fields,
            shape,
        });
    }
    versions.sort_by_key(|v| super::discovery::version_priority(&v.name));
    if versions.is_empty() || storage_version.is_empty() {
        return None;
    }
    let validator = match CrdValidator::from_crd(crd, &storage_version) {
        Ok(validator) => Some(Arc::new(validator)),
        Err(err) => {
            tracing::warn!(error = %err, "CRD schema does not compile; its objects are not validated");
            None
        }
    };
    Some(ResourceDef {
        group,
        plural,
        singular,
        kind,
        list_kind,
        namespaced: str_at(crd, "/spec/scope") != "Cluster",
        short_names: meta::string_list(crd.pointer("/spec/names/shortNames")),
        categories: meta::string_list(crd.pointer("/spec/names/categories")),
        versions,
        storage_version,
        status_subresource,
        scale,
        origin: Origin::Custom {
            crd_name: meta::name(crd).to_string(),
        },
        terminating: meta::is_terminating(crd),
        validator,
    })
}

fn condition(type_: &str, status: &str, reason: &str, message: &str, old: Option<&Value>, now: &str) -> Value {
    let previous = old
        .and_then(|o| o.pointer("/status/conditions"))
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c.get("type").and_then(Value::as_str) == Some(type_)));
    let since = match previous {
        Some(p) if p.get("status").and_then(Value::as_str) == Some(status) => {
            p.get("lastTransitionTime").cloned().unwrap_or(json!(now))
        }
        _ => json!(now),
    };
    json!({"type": type_, "status": status, "lastTransitionTime": since, "reason": reason, "message": message})
}

/// Sets the CRD's server-maintained parts before it is stored: the cleanup finalizer on create and the status.
pub fn prepare(txn: &Txn<'_>, crd: &mut Value, old: Option<&Value>) {
    if old.is_none() {
        let mut finalizers = meta::finalizers(crd);
        if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
            finalizers.push(CLEANUP_FINALIZER.to_string());
        }
        meta::set_finalizers(crd, &finalizers);
    }
    let now = meta::now_rfc3339();
    let own_name = meta::name(crd).to_string();
    let conflict = resource_def(crd).and_then(|def| {
        txn.registry().all().find_map(|other| {
            let same_owner = matches!(&other.origin, Origin::Custom { crd_name } if *crd_name == own_name);
            if same_owner || other.group != def.group {
                return None;
            }
            if other.plural == def.plural {
                Some(("PluralConflict", format!("\"{}\" is already in use", def.plural)))
            } else if other.kind == def.kind {
                Some(("KindConflict", format!("\"{}\" is already in use", def.kind)))
            } else {
                None
            }
        })
    });
    let mut conditions = Vec::new();
    match &conflict {
        None => {
            conditions.push(condition(
                "NamesAccepted",
                "True",
                "NoConflicts",
                "no conflicts found",
                old,
                &now,
            ));
            conditions.push(condition(
                "Established",
                "True",
                "InitialNamesAccepted",
                "the initial names have been accepted",
                old,
                &now,
            ));
        }
        Some((reason, message)) => {
            conditions.push(condition("NamesAccepted", "False", reason, message, old, &now));
            conditions.push(condition(
                "Established",
                "False",
                "NotAccepted",
                "not all names are accepted",
                old,
                &now,
            ));
        }
    }
    if meta::is_terminating(crd) {
        conditions.push(condition(
            "Terminating",
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
            old,
            &now,
        ));
    }
    let mut stored_versions = old
        .map(|o| meta::string_list(o.pointer("/status/storedVersions")))
        .unwrap_or_default();
    if let Some(storage) = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        })
        .and_then(|v| v.get("name"))
        .and_then(Value::as_str)
        && !stored_versions.iter().any(|s| s == storage)
    {
        stored_versions.push(storage.to_string());
    }
    let names = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let mut accepted = json!({});
    if conflict.is_none() {
        for key in ["plural", "singular", "shortNames", "kind", "listKind", "categories"] {
            if let Some(v) = names.get(key) {
                accepted[key] = v.clone();
            }
        }
        if accepted.get("singular").is_none() {
            accepted["singular"] = json!(str_at(crd, "/spec/names/kind").to_lowercase());
        }
        if accepted.get("listKind").is_none() {
            accepted["listKind"] = json!(format!("{}List", str_at(crd, "/spec/names/kind")));
        }
    }
    crd["status"] = json!({"conditions": conditions, "acceptedNames": accepted, "storedVersions": stored_versions});
}

/// Serves (or updates) the resource of a stored CRD, unless its names conflict.
pub fn register(txn: &mut Txn<'_>, crd: &Value) {
    let accepted = crd
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "NamesAccepted" && c["status"] == "True"));
    if !accepted {
        return;
    }
    if let Some(def) = resource_def(crd) {
        // A CRD that changed its plural stops serving the old one.
        let name = meta::name(crd).to_string();
        let stale: Vec<GroupResource> = txn
            .registry()
            .all()
            .filter(|d| matches!(&d.origin, Origin::Custom { crd_name } if *crd_name == name) && d.plural != def.plural)
            .map(|d| d.group_resource())
            .collect();
        for gr in stale {
            txn.registry_mut().remove(&gr);
        }
        txn.registry_mut().insert(def);
    }
}

/// Stops serving the resource of a removed CRD.
pub fn unregister(txn: &mut Txn<'_>, crd: &Value) {
    let group = str_at(crd, "/spec/group");
    let plural = str_at(crd, "/spec/names/plural");
    txn.registry_mut().remove(&GroupResource::new(group, plural));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crd_becomes_a_resource_with_versions_in_priority_order() {
        let crd = json!({"metadata":{"name":"gizmos.a.io"},"spec":{"group":"a.io","scope":"Namespaced",
            "names":{"plural":"gizmos","kind":"Gizmo","shortNames":["gz"]},
            "versions":[{"name":"v1beta1","served":true,"storage":false},{"name":"v1","served":true,"storage":true,
              "subresources":{"status":{}},"schema":{"openAPIV3Schema":{"type":"object"}},
              "additionalPrinterColumns":[{"name":"Size","type":"integer","jsonPath":".spec.size"}]}]}});
        let def = resource_def(&crd).unwrap();
        assert_eq!(
            def.versions.iter().map(|v| v.name.as_str()).collect::<Vec<_>>(),
            vec!["v1", "v1beta1"]
        );
        assert_eq!(def.singular, "gizmo");
        assert_eq!(def.list_kind, "GizmoList");
        assert!(def.status_subresource);
        assert_eq!(def.versions[0].printer_columns[0].json_path, ".spec.size");
        assert!(
            def.versions[1].schema.is_some(),
            "served versions fall back to the storage schema"
        );
    }
}
