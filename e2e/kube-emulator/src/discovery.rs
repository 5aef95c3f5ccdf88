//! Discovery documents: `/version`, legacy `/api`, `/apis`, `/apis/<g>`, `/apis/<g>/<v>`, `/api/v1`, and
//! aggregated discovery v2.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::resources::{Registry, ResourceDef};

/// The Content-Type of aggregated discovery responses.
pub const AGGREGATED_CONTENT_TYPE: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// The `/version` document (minor "32": the kubectl dispatcher picks its binary from it).
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "gitVersion": "v1.32.2",
        "gitCommit": "67a30c0adcf52bd3f56ff0893ce19966be12991f",
        "gitTreeState": "clean",
        "buildDate": "2025-02-12T21:19:47Z",
        "goVersion": "go1.23.6",
        "compiler": "gc",
        "platform": "linux/amd64"
    })
}

/// Orders versions the way kube does: GA, then beta, then alpha (higher numbers first), then the rest by name.
pub fn version_priority(version: &str) -> (u8, i64, i64, String) {
    let parse = |rest: &str| -> Option<(u8, i64, i64)> {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let major: i64 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((0, -major, 0));
        }
        for (prefix, rank) in [("beta", 1u8), ("alpha", 2u8)] {
            if let Some(n) = tail.strip_prefix(prefix) {
                let minor: i64 = n.parse().ok()?;
                return Some((rank, -major, -minor));
            }
        }
        None
    };
    match version.strip_prefix('v').and_then(parse) {
        Some((rank, major, minor)) => (rank, major, minor, String::new()),
        None => (3, 0, 0, version.to_string()),
    }
}

/// Groups (other than core) with their versions in priority order.
fn groups(registry: &Registry) -> BTreeMap<String, Vec<String>> {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for def in registry.all() {
        if def.group.is_empty() {
            continue;
        }
        let versions = groups.entry(def.group.clone()).or_default();
        for v in &def.versions {
            if !versions.contains(&v.name) {
                versions.push(v.name.clone());
            }
        }
    }
    for versions in groups.values_mut() {
        versions.sort_by_key(|v| version_priority(v));
    }
    groups
}

fn group_object(name: &str, versions: &[String]) -> Value {
    let list: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    let preferred = list.first().cloned().unwrap_or(Value::Null);
    json!({"name": name, "versions": list, "preferredVersion": preferred})
}

/// Legacy `/api`.
pub fn legacy_api() -> Value {
    json!({"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1:6443"}]})
}

/// Legacy `/apis`.
pub fn legacy_apis(registry: &Registry) -> Value {
    let list: Vec<Value> = groups(registry).iter().map(|(g, vs)| group_object(g, vs)).collect();
    json!({"kind":"APIGroupList","apiVersion":"v1","groups": list})
}

/// Legacy `/apis/<group>`, or `None` if the group is not served.
pub fn legacy_group(registry: &Registry, group: &str) -> Option<Value> {
    let groups = groups(registry);
    let versions = groups.get(group)?;
    let mut obj = group_object(group, versions);
    obj["kind"] = json!("APIGroup");
    obj["apiVersion"] = json!("v1");
    Some(obj)
}

fn storage_version_hash(def: &ResourceDef) -> String {
    let digest = Sha256::digest(format!("{}/{}/{}", def.group, def.storage_version, def.kind).as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

fn resources_at<'a>(registry: &'a Registry, group: &str, version: &str) -> Vec<&'a Arc<ResourceDef>> {
    registry
        .all()
        .filter(|d| d.group == group && d.version(version).is_some())
        .collect()
}

/// Legacy `/apis/<g>/<v>` or `/api/v1`, or `None` if not served.
pub fn legacy_resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let defs = resources_at(registry, group, version);
    if defs.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for def in defs {
        let mut main = json!({
            "name": def.plural, "singularName": def.singular, "namespaced": def.namespaced, "kind": def.kind,
            "verbs": def.verbs(),
        });
        if !def.short_names.is_empty() {
            main["shortNames"] = json!(def.short_names);
        }
        if !def.categories.is_empty() {
            main["categories"] = json!(def.categories);
        }
        main["storageVersionHash"] = json!(storage_version_hash(def));
        resources.push(main);
        if def.status_subresource {
            resources.push(json!({"name": format!("{}/status", def.plural), "singularName": "", "namespaced": def.namespaced, "kind": def.kind, "verbs": ["get","patch","update"]}));
        }
        if def.scale.is_some() {
            resources.push(json!({"name": format!("{}/scale", def.plural), "singularName": "", "namespaced": def.namespaced, "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get","patch","update"]}));
        }
        if def.group.is_empty() && def.plural == "namespaces" {
            resources.push(json!({"name": "namespaces/finalize", "singularName": "", "namespaced": false, "kind": "Namespace", "verbs": ["update"]}));
        }
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({"kind":"APIResourceList","apiVersion":"v1","groupVersion": group_version, "resources": resources}))
}

fn aggregated_version(registry: &Registry, group: &str, version: &str) -> Value {
    let mut defs = resources_at(registry, group, version);
    defs.sort_by(|a, b| a.plural.cmp(&b.plural));
    let resources: Vec<Value> = defs
        .iter()
        .map(|def| {
            let response_kind = json!({"group": def.group, "version": version, "kind": def.kind});
            let mut subresources = Vec::new();
            if def.status_subresource {
                subresources.push(json!({"subresource":"status","responseKind": response_kind,"verbs":["get","patch","update"]}));
            }
            if def.scale.is_some() {
                subresources.push(json!({"subresource":"scale","responseKind":{"group":"autoscaling","version":"v1","kind":"Scale"},"verbs":["get","patch","update"]}));
            }
            let mut res = json!({
                "resource": def.plural, "responseKind": response_kind,
                "scope": if def.namespaced { "Namespaced" } else { "Cluster" },
                "singularResource": def.singular, "verbs": def.verbs(),
            });
            if !def.short_names.is_empty() {
                res["shortNames"] = json!(def.short_names);
            }
            if !def.categories.is_empty() {
                res["categories"] = json!(def.categories);
            }
            if !subresources.is_empty() {
                res["subresources"] = json!(subresources);
            }
            res
        })
        .collect();
    json!({"version": version, "freshness": "Current", "resources": resources})
}

/// Aggregated discovery for `/api` (core) or `/apis` (every group).
pub fn aggregated(registry: &Registry, core: bool) -> Value {
    let items: Vec<Value> = if core {
        vec![json!({"metadata":{"creationTimestamp":null},"versions":[aggregated_version(registry, "", "v1")]})]
    } else {
        groups(registry)
            .iter()
            .map(|(g, versions)| {
                let vs: Vec<Value> = versions.iter().map(|v| aggregated_version(registry, g, v)).collect();
                json!({"metadata":{"name": g, "creationTimestamp": null}, "versions": vs})
            })
            .collect()
    };
    json!({"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items": items})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_ga_then_beta_then_alpha() {
        let mut vs = vec!["v1alpha1", "v1beta1", "v2", "v1", "v1beta2", "foo"];
        vs.sort_by_key(|v| version_priority(v));
        assert_eq!(vs, vec!["v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]);
    }

    #[test]
    fn core_resource_list_has_configmaps_with_short_name() {
        let registry = Registry::with_builtins();
        let list = legacy_resource_list(&registry, "", "v1").unwrap();
        let cm = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "configmaps")
            .unwrap();
        assert_eq!(cm["shortNames"], json!(["cm"]));
        assert_eq!(cm["namespaced"], json!(true));
    }
}
