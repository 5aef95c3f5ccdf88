//! Drop-in compatibility with the replaced operators' CRDs: every field path their published CRDs accept is
//! accepted by ours (`tests/fixtures/original-field-paths/`, one list per CRD version).

use std::path::Path;

use serde_json::Value;

/// Our CRD's `openAPIV3Schema` for `plural.group` at `version`.
fn our_schema(crd_name: &str, version: &str) -> Value {
    let crd = crds::all()
        .into_iter()
        .find(|crd| crd.metadata.name.as_deref() == Some(crd_name))
        .unwrap_or_else(|| panic!("we ship no CRD named {crd_name}"));
    let crd = serde_json::to_value(crd).expect("CRD serializes");
    crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["name"] == version)
        .map(|v| v["schema"]["openAPIV3Schema"].clone())
        .unwrap_or_else(|| panic!("{crd_name} serves no version {version}"))
}

/// Whether `schema` accepts the dotted `path` (`[]` a list item, `.*` any key).
fn accepts(schema: &Value, path: &str) -> bool {
    let mut node = schema;
    for segment in path.split('.') {
        let (name, item_depth) = match segment.find("[]") {
            Some(i) => (&segment[..i], segment[i..].matches("[]").count()),
            None => (segment, 0),
        };
        if node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
            && node.get("properties").and_then(|p| p.get(name)).is_none()
        {
            return true;
        }
        node = if name == "*" {
            match node.get("additionalProperties") {
                Some(values) if values.is_object() => values,
                _ => return node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)),
            }
        } else if let Some(field) = node.get("properties").and_then(|p| p.get(name)) {
            field
        } else if let Some(values) = node.get("additionalProperties").filter(|v| v.is_object()) {
            values
        } else {
            return false;
        };
        for _ in 0..item_depth {
            match node.get("items") {
                Some(items) => node = items,
                None => return false,
            }
        }
    }
    true
}

fn check(list: &str, crd_name: &str, version: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/original-field-paths")
        .join(list);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let schema = our_schema(crd_name, version);
    let missing: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter(|p| !accepts(&schema, p))
        .collect();
    assert!(
        missing.is_empty(),
        "{crd_name} {version} does not accept field paths the original accepts: {missing:#?}"
    );
}

#[test]
fn every_field_path_of_the_original_nebariapp_crd_is_accepted() {
    check(
        "nebariapps.reconcilers.nebari.dev-v1.txt",
        "nebariapps.reconcilers.nebari.dev",
        "v1",
    );
}

#[test]
fn every_field_path_of_the_original_keystoneapplicationcredential_crd_is_accepted() {
    check(
        "keystoneapplicationcredentials.keystone.openstack.org-v1beta1.txt",
        "keystoneapplicationcredentials.keystone.openstack.org",
        "v1beta1",
    );
}

#[test]
fn every_field_path_of_the_0_0_3_managedrancherproject_crd_is_accepted() {
    check(
        "managedrancherprojects.waldur.io-v0.0.3.txt",
        "managedrancherprojects.waldur.io",
        "v1alpha1",
    );
}

#[test]
fn a_path_our_schema_does_not_declare_is_reported() {
    let schema = our_schema("nebariapps.reconcilers.nebari.dev", "v1");
    assert!(accepts(&schema, "spec.routing.routes[].pathPrefix"));
    assert!(!accepts(&schema, "spec.routing.noSuchField"));
}
