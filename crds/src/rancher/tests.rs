//! The CRDs accept what the original operator and the Waldur plugin write, and reject what the schema forbids.

use kube::CustomResourceExt;
use serde_json::{Value, json};

use super::*;

/// The example CR published with rancher-keycloak-operator 0.0.3 (`examples/test-project.yaml`).
const ORIGINAL_SAMPLE: &str = r#"
apiVersion: waldur.io/v1alpha1
kind: ManagedRancherProject
metadata:
  name: operator-test-project
  namespace: waldur-system
  labels:
    waldur.io/resource-uuid: "test-uuid-001"
spec:
  projectName: "waldur-operator-test"
  clusterId: "c-m-bmwbscft"
  description: "Operator integration test project"
  organization: "test-org"
  projectSlug: "operator-test"

  namespace:
    name: "waldur-operator-test"
    labels:
      managed-by: "waldur-operator"

  resourceQuotas:
    limits.cpu: "2000m"
    limits.memory: "4096Mi"

  keycloak:
    enabled: true
    parentGroupName: "c_operatortest"
    roleBindings:
      - groupName: "project_operator-test_workloads-manage"
        rancherRole: "workloads-manage"
        description: "Test project members"
        members: []
"#;

/// A CR in the shape the site-agent `rancher-kc-crd` plugin writes (operator 0.4 era, cluster block included).
const PLUGIN_CR: &str = r#"
apiVersion: waldur.io/v1alpha1
kind: ManagedRancherProject
metadata:
  name: adamas-cluster-8706dd1a
  namespace: waldur-system
  labels:
    waldur.io/resource-uuid: 8598e0db5823407ea6e03d69d2ad68e9
    waldur.io/resource-project-uuid: 8706dd1a4b2c4e7f9a0b1c2d3e4f5a6b
spec:
  clusterId: c-m-glwxdksp
  projectName: Genomics 2026
  resourceUuid: 8598e0db5823407ea6e03d69d2ad68e9
  resourceProjectUuid: 8706dd1a4b2c4e7f9a0b1c2d3e4f5a6b
  description: Genomics pipeline workspace
  keycloak:
    enabled: true
    parentGroupName: c_c-m-glwxdksp
    roleBindings:
      - groupName: c_c-m-glwxdksp_8706dd1a4b2c4e7f9a0b1c2d3e4f5a6b_project_admin
        rancherRole: project-owner
        members:
          - {userIdentifier: alice, lookupByID: false}
      - groupName: c_c-m-glwxdksp_8706dd1a4b2c4e7f9a0b1c2d3e4f5a6b_project_member
        rancherRole: project-member
        members:
          - {userIdentifier: bob, lookupByID: false}
          - {userIdentifier: carol, lookupByID: false}
  cluster:
    keycloak:
      enabled: true
      roleBindings:
        - groupName: c_c-m-glwxdksp_cluster_resource_admin
          rancherRole: cluster-owner
          members:
            - {userIdentifier: alice, lookupByID: false}
  resourceQuotas:
    cpu: 4000
    memory: "8192Mi"
    gpu: 2
"#;

/// A RancherProjectInventory as an administrator writes it.
const INVENTORY_CR: &str = r#"
apiVersion: waldur.io/v1alpha1
kind: RancherProjectInventory
metadata:
  name: cluster-c-m-glwxdksp
  namespace: waldur-system
spec:
  clusterId: c-m-glwxdksp
  scanIntervalSeconds: 300
"#;

fn yaml(text: &str) -> Value {
    serde_saphyr::from_str(text).expect("test YAML parses")
}

fn schema_of<K: CustomResourceExt>() -> Value {
    let crd = K::crd();
    let version = crd.spec.versions.first().expect("one version");
    let schema = version
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .expect("schema");
    serde_json::to_value(schema).expect("schema serializes")
}

/// Structural problems plus failed CEL rules of `object` against the CRD schema of `K`.
fn problems<K: CustomResourceExt>(object: &Value, old: Option<&Value>) -> Vec<String> {
    let schema = schema_of::<K>();
    let mut found = Vec::new();
    structural::check(object, &schema, "", &mut found);
    if let Err(errors) = kube_cel::Validator::new().validate(&schema, object, old) {
        found.extend(
            errors
                .into_vec()
                .into_iter()
                .map(|e| format!("{}: {}", e.field_path, e.message)),
        );
    }
    found
}

/// The subset of OpenAPI v3 validation kube-apiserver applies to custom resources, enough to show that the
/// generated schema accepts or rejects a document. Unknown fields count as problems here (the API server would
/// silently prune them, which for a compatibility check is just as bad).
mod structural {
    use serde_json::Value;

    pub fn check(value: &Value, schema: &Value, path: &str, found: &mut Vec<String>) {
        if value.is_null() {
            if schema.get("nullable") != Some(&Value::Bool(true)) {
                found.push(format!("{path}: null is not allowed"));
            }
            return;
        }
        if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
            if !(value.is_i64() || value.is_u64() || value.is_string()) {
                found.push(format!("{path}: must be an integer or a string"));
            }
            return;
        }
        if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
            && schema.get("type").is_none()
        {
            return;
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("object") => check_object(value, schema, path, found),
            Some("array") => check_array(value, schema, path, found),
            Some("string") => check_string(value, schema, path, found),
            Some("integer") => check_integer(value, schema, path, found),
            Some("boolean") if !value.is_boolean() => found.push(format!("{path}: must be a boolean")),
            Some("number") if !value.is_number() => found.push(format!("{path}: must be a number")),
            _ => {}
        }
        if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
            && !allowed.contains(value)
        {
            found.push(format!("{path}: {value} is not one of {allowed:?}"));
        }
    }

    fn check_object(value: &Value, schema: &Value, path: &str, found: &mut Vec<String>) {
        let Some(map) = value.as_object() else {
            found.push(format!("{path}: must be an object"));
            return;
        };
        for key in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
            if let Some(key) = key.as_str()
                && !map.contains_key(key)
            {
                found.push(format!("{path}.{key}: required"));
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        for (key, child) in map {
            let child_path = format!("{path}.{key}");
            if path.is_empty() && (key == "apiVersion" || key == "kind" || key == "metadata") {
                continue;
            }
            if let Some(child_schema) = properties.and_then(|p| p.get(key)) {
                check(child, child_schema, &child_path, found);
            } else if let Some(additional) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                check(child, additional, &child_path, found);
            } else if schema.get("x-kubernetes-preserve-unknown-fields") != Some(&Value::Bool(true)) {
                found.push(format!("{child_path}: unknown field"));
            }
        }
    }

    fn check_array(value: &Value, schema: &Value, path: &str, found: &mut Vec<String>) {
        let Some(items) = value.as_array() else {
            found.push(format!("{path}: must be an array"));
            return;
        };
        if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
            && items.len() as u64 > max
        {
            found.push(format!("{path}: more than {max} items"));
        }
        if let Some(item_schema) = schema.get("items") {
            for (index, item) in items.iter().enumerate() {
                check(item, item_schema, &format!("{path}[{index}]"), found);
            }
        }
    }

    fn check_string(value: &Value, schema: &Value, path: &str, found: &mut Vec<String>) {
        let Some(text) = value.as_str() else {
            found.push(format!("{path}: must be a string"));
            return;
        };
        let length = text.chars().count() as u64;
        if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
            && length < min
        {
            found.push(format!("{path}: shorter than {min}"));
        }
        if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
            && length > max
        {
            found.push(format!("{path}: longer than {max}"));
        }
    }

    fn check_integer(value: &Value, schema: &Value, path: &str, found: &mut Vec<String>) {
        let Some(number) = value.as_i64() else {
            found.push(format!("{path}: must be an integer"));
            return;
        };
        if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
            && (number as f64) < min
        {
            found.push(format!("{path}: less than {min}"));
        }
    }
}

#[test]
fn the_original_sample_deserializes_with_every_field() {
    let mrp: ManagedRancherProject = serde_json::from_value(yaml(ORIGINAL_SAMPLE)).expect("sample decodes");
    assert_eq!(mrp.spec.project_name, "waldur-operator-test");
    assert_eq!(mrp.spec.cluster_id, "c-m-bmwbscft");
    assert_eq!(mrp.spec.organization.as_deref(), Some("test-org"));
    assert_eq!(mrp.spec.project_slug.as_deref(), Some("operator-test"));
    let namespace = mrp.spec.namespace.as_ref().expect("legacy namespace kept");
    assert_eq!(namespace.name.as_deref(), Some("waldur-operator-test"));
    let quotas = mrp.spec.resource_quotas.as_ref().expect("quotas");
    assert_eq!(quotas.get("limits.cpu"), Some(&IntOrString::String("2000m".into())));
    let keycloak = mrp.spec.keycloak.as_ref().expect("keycloak");
    assert!(keycloak.enabled);
    assert_eq!(keycloak.parent_group_name.as_deref(), Some("c_operatortest"));
    assert_eq!(keycloak.role_bindings[0].rancher_role, "workloads-manage");
    assert_eq!(
        keycloak.role_bindings[0].description.as_deref(),
        Some("Test project members")
    );
}

#[test]
fn the_plugin_shape_deserializes_with_integer_quotas_and_username_lookups() {
    let mrp: ManagedRancherProject = serde_json::from_value(yaml(PLUGIN_CR)).expect("plugin CR decodes");
    let quotas = mrp.spec.resource_quotas.as_ref().expect("quotas");
    assert_eq!(quotas.get("cpu"), Some(&IntOrString::Int(4000)));
    assert_eq!(quotas.get("memory"), Some(&IntOrString::String("8192Mi".into())));
    assert_eq!(
        mrp.spec.resource_project_uuid.as_deref(),
        Some("8706dd1a4b2c4e7f9a0b1c2d3e4f5a6b")
    );
    let bindings = &mrp.spec.keycloak.as_ref().expect("keycloak").role_bindings;
    assert_eq!(bindings[1].members.len(), 2);
    assert!(!bindings[1].members[0].lookup_by_id);
    let cluster = mrp
        .spec
        .cluster
        .as_ref()
        .and_then(|c| c.keycloak.as_ref())
        .expect("cluster block");
    assert_eq!(cluster.role_bindings[0].rancher_role, "cluster-owner");
}

#[test]
fn omitted_flags_default_as_in_the_original() {
    let mrp: ManagedRancherProject = serde_json::from_value(json!({
        "apiVersion": "waldur.io/v1alpha1", "kind": "ManagedRancherProject",
        "metadata": {"name": "x"},
        "spec": {"projectName": "p", "clusterId": "c", "keycloak": {"roleBindings": [
            {"groupName": "g", "rancherRole": "project-member", "members": [{"userIdentifier": "u"}]}
        ]}}
    }))
    .expect("decodes");
    let keycloak = mrp.spec.keycloak.expect("keycloak");
    assert!(keycloak.enabled, "keycloak.enabled defaults to true");
    assert!(
        keycloak.role_bindings[0].members[0].lookup_by_id,
        "lookupByID defaults to true"
    );
}

#[test]
fn synced_members_read_both_the_legacy_string_and_the_object_form() {
    let status: ManagedRancherProjectStatus = serde_json::from_value(json!({
        "phase": "Ready",
        "keycloakRoleBindings": [{
            "groupName": "g", "keycloakGroupId": "gid", "rancherBindingId": "c-p:prtb-abcde", "memberCount": 2,
            "syncedMembers": ["0c1d-legacy-id", {"userIdentifier": "alice", "keycloakUserId": "a-id"}]
        }]
    }))
    .expect("status decodes");
    let members = &status.keycloak_role_bindings[0].synced_members;
    assert_eq!(
        members[0],
        SyncedMember {
            user_identifier: "0c1d-legacy-id".into(),
            keycloak_user_id: Some("0c1d-legacy-id".into())
        }
    );
    assert_eq!(
        members[1],
        SyncedMember {
            user_identifier: "alice".into(),
            keycloak_user_id: Some("a-id".into())
        }
    );
    let written = serde_json::to_value(members).expect("serializes");
    assert_eq!(
        written[0],
        json!({"userIdentifier": "0c1d-legacy-id", "keycloakUserId": "0c1d-legacy-id"})
    );
}

#[test]
fn the_schema_accepts_the_original_sample_the_plugin_shape_and_an_inventory() {
    let sample = yaml(ORIGINAL_SAMPLE);
    assert_eq!(problems::<ManagedRancherProject>(&sample, None), Vec::<String>::new());
    let plugin = yaml(PLUGIN_CR);
    assert_eq!(problems::<ManagedRancherProject>(&plugin, None), Vec::<String>::new());
    let inventory = yaml(INVENTORY_CR);
    assert_eq!(
        problems::<RancherProjectInventory>(&inventory, None),
        Vec::<String>::new()
    );
}

#[test]
fn the_schema_accepts_what_the_original_status_and_a_full_status_look_like() {
    let mut object = yaml(PLUGIN_CR);
    object["status"] = json!({
        "phase": "Ready",
        "rancherProjectId": "c-m-glwxdksp:p-x7k2q",
        "namespaceName": "legacy-ns",
        "keycloakParentGroupId": "parent-id",
        "keycloakRoleBindings": [{
            "groupName": "g", "rancherRole": "project-member", "keycloakGroupId": "gid",
            "rancherBindingId": "c-m-glwxdksp-p-x7k2q:prtb-abcde", "memberCount": 1,
            "syncedMembers": [{"userIdentifier": "bob", "keycloakUserId": "b-id"}],
            "pendingMembers": [{"userIdentifier": "carol", "reason": "UserNotFound", "message": "not in Keycloak yet"}]
        }],
        "clusterKeycloakRoleBindings": [{"groupName": "cg", "rancherBindingId": "c-m-glwxdksp:crtb-abcde", "memberCount": 0}],
        "conditions": [{"type": "Ready", "status": "True", "reason": "Reconciled", "message": "",
                        "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1}],
        "lastReconcileTime": "2026-01-01T00:00:00Z",
        "observedGeneration": 1
    });
    assert_eq!(problems::<ManagedRancherProject>(&object, None), Vec::<String>::new());
    let decoded: ManagedRancherProject = serde_json::from_value(object).expect("decodes");
    assert_eq!(decoded.status.and_then(|s| s.phase), Some(Phase::Ready));
}

#[test]
fn every_field_path_of_the_original_crd_exists_in_ours() {
    // The field paths of the published 0.0.3 CRD plus those later versions added.
    let original = [
        "spec.projectName",
        "spec.clusterId",
        "spec.description",
        "spec.organization",
        "spec.projectSlug",
        "spec.namespace.name",
        "spec.namespace.labels",
        "spec.resourceQuotas",
        "spec.keycloak.enabled",
        "spec.keycloak.parentGroupName",
        "spec.keycloak.roleBindings.groupName",
        "spec.keycloak.roleBindings.rancherRole",
        "spec.keycloak.roleBindings.description",
        "spec.keycloak.roleBindings.members.userIdentifier",
        "spec.keycloak.roleBindings.members.lookupByID",
        "spec.resourceUuid",
        "spec.resourceProjectUuid",
        "spec.cluster.keycloak.enabled",
        "spec.cluster.keycloak.roleBindings.groupName",
        "spec.cluster.keycloak.roleBindings.rancherRole",
        "spec.cluster.keycloak.roleBindings.members.userIdentifier",
        "spec.cluster.keycloak.roleBindings.members.lookupByID",
        "status.phase",
        "status.rancherProjectId",
        "status.namespaceName",
        "status.keycloakParentGroupId",
        "status.keycloakRoleBindings.groupName",
        "status.keycloakRoleBindings.keycloakGroupId",
        "status.keycloakRoleBindings.rancherBindingId",
        "status.keycloakRoleBindings.memberCount",
        "status.keycloakRoleBindings.syncedMembers",
        "status.clusterKeycloakRoleBindings",
        "status.conditions.type",
        "status.conditions.status",
        "status.conditions.lastTransitionTime",
        "status.conditions.reason",
        "status.conditions.message",
        "status.lastReconcileTime",
        "status.observedGeneration",
    ];
    let schema = schema_of::<ManagedRancherProject>();
    for path in original {
        let mut node = &schema;
        for segment in path.split('.') {
            if node.get("type").and_then(Value::as_str) == Some("array") {
                node = &node["items"];
            }
            node = node
                .get("properties")
                .and_then(|p| p.get(segment))
                .unwrap_or_else(|| panic!("{path}: no field {segment} in our schema"));
        }
    }
    let inventory = schema_of::<RancherProjectInventory>();
    for path in [
        "spec.clusterId",
        "spec.scanIntervalSeconds",
        "status.lastScanTime",
        "status.managedProjects",
        "status.unmanagedProjectCount",
        "status.unmanagedProjects",
    ] {
        let mut node = &inventory;
        for segment in path.split('.') {
            node = node
                .get("properties")
                .and_then(|p| p.get(segment))
                .unwrap_or_else(|| panic!("{path} missing"));
        }
    }
    let unmanaged = &inventory["properties"]["status"]["properties"]["unmanagedProjects"]["items"]["properties"];
    for field in ["projectId", "name", "description", "namespaces", "createdAt"] {
        assert!(unmanaged.get(field).is_some(), "unmanagedProjects[].{field} missing");
    }
}

fn with_spec(change: impl FnOnce(&mut Value)) -> Value {
    let mut object = yaml(PLUGIN_CR);
    change(&mut object["spec"]);
    object
}

#[test]
fn the_schema_rejects_missing_ids_and_bad_group_names() {
    let cases: Vec<(&str, Value)> = vec![
        (
            "missing clusterId",
            with_spec(|s| drop(s.as_object_mut().map(|m| m.remove("clusterId")))),
        ),
        ("empty projectName", with_spec(|s| s["projectName"] = json!(""))),
        (
            "empty groupName",
            with_spec(|s| s["keycloak"]["roleBindings"][0]["groupName"] = json!("")),
        ),
        (
            "256-character groupName",
            with_spec(|s| s["keycloak"]["roleBindings"][0]["groupName"] = json!("g".repeat(256))),
        ),
        (
            "missing rancherRole",
            with_spec(|s| {
                drop(
                    s["keycloak"]["roleBindings"][0]
                        .as_object_mut()
                        .map(|m| m.remove("rancherRole")),
                )
            }),
        ),
        (
            "empty userIdentifier",
            with_spec(|s| s["keycloak"]["roleBindings"][0]["members"][0]["userIdentifier"] = json!("")),
        ),
        ("boolean quota", with_spec(|s| s["resourceQuotas"]["cpu"] = json!(true))),
        (
            "word for a quota",
            with_spec(|s| s["resourceQuotas"]["cpu"] = json!("lots")),
        ),
        (
            "negative quota",
            with_spec(|s| s["resourceQuotas"]["limits.memory"] = json!("-1Gi")),
        ),
        (
            "negative integer quota",
            with_spec(|s| s["resourceQuotas"]["pods"] = json!(-1)),
        ),
        ("empty quota", with_spec(|s| s["resourceQuotas"]["pods"] = json!(""))),
    ];
    for (name, object) in cases {
        assert!(
            !problems::<ManagedRancherProject>(&object, None).is_empty(),
            "{name} must be rejected"
        );
    }
    let quantities = with_spec(|s| {
        s["resourceQuotas"] =
            json!({"cpu": 4000, "memory": "8Gi", "storage": 10240, "pods": "20", "requests.nvidia.com/gpu": 0})
    });
    assert_eq!(
        problems::<ManagedRancherProject>(&quantities, None),
        Vec::<String>::new()
    );
    let exactly_255 = with_spec(|s| s["keycloak"]["roleBindings"][0]["groupName"] = json!("g".repeat(255)));
    assert_eq!(
        problems::<ManagedRancherProject>(&exactly_255, None),
        Vec::<String>::new()
    );
}

#[test]
fn cel_rules_reject_cross_field_mistakes() {
    let both_quota_keys = with_spec(|s| s["resourceQuotas"]["limits.cpu"] = json!("2"));
    let found = problems::<ManagedRancherProject>(&both_quota_keys, None);
    assert!(found.iter().any(|p| p.contains("not both")), "{found:?}");

    let parent_reused =
        with_spec(|s| s["keycloak"]["parentGroupName"] = s["keycloak"]["roleBindings"][0]["groupName"].clone());
    let found = problems::<ManagedRancherProject>(&parent_reused, None);
    assert!(found.iter().any(|p| p.contains("parentGroupName")), "{found:?}");

    let shared_group = with_spec(|s| {
        s["cluster"]["keycloak"]["roleBindings"][0]["groupName"] = s["keycloak"]["roleBindings"][0]["groupName"].clone()
    });
    let found = problems::<ManagedRancherProject>(&shared_group, None);
    assert!(found.iter().any(|p| p.contains("both")), "{found:?}");
}

#[test]
fn cluster_id_cannot_change_once_the_project_exists_but_other_fields_can() {
    let mut old = yaml(PLUGIN_CR);
    let moved = with_spec(|s| s["clusterId"] = json!("c-m-other"));
    assert_eq!(
        problems::<ManagedRancherProject>(&moved, Some(&old)),
        Vec::<String>::new(),
        "no project yet: a mistyped clusterId can be corrected"
    );
    old["status"] = json!({"rancherProjectId": "c-m-abc123:p-x7k2q"});
    let found = problems::<ManagedRancherProject>(&moved, Some(&old));
    assert!(found.iter().any(|p| p.contains("immutable")), "{found:?}");
    let renamed = with_spec(|s| s["projectName"] = json!("Genomics 2027"));
    assert_eq!(
        problems::<ManagedRancherProject>(&renamed, Some(&old)),
        Vec::<String>::new()
    );
}

#[test]
fn the_crds_keep_the_original_identity_and_columns() {
    let crd = ManagedRancherProject::crd();
    assert_eq!(crd.metadata.name.as_deref(), Some("managedrancherprojects.waldur.io"));
    assert_eq!(crd.spec.names.short_names, Some(vec!["mrp".to_string()]));
    assert_eq!(crd.spec.scope, "Namespaced");
    let version = &crd.spec.versions[0];
    assert_eq!(version.name, "v1alpha1");
    assert!(version.subresources.as_ref().and_then(|s| s.status.as_ref()).is_some());
    let columns: Vec<_> = version
        .additional_printer_columns
        .iter()
        .flatten()
        .map(|c| (c.name.as_str(), c.json_path.as_str()))
        .collect();
    assert_eq!(
        columns,
        vec![
            ("Project", ".spec.projectName"),
            ("Cluster", ".spec.clusterId"),
            ("Rancher ID", ".status.rancherProjectId"),
            ("Phase", ".status.phase"),
            ("Age", ".metadata.creationTimestamp"),
        ]
    );
    let inventory = RancherProjectInventory::crd();
    assert_eq!(
        inventory.metadata.name.as_deref(),
        Some("rancherprojectinventories.waldur.io")
    );
    assert_eq!(inventory.spec.names.short_names, Some(vec!["rpi".to_string()]));
    let conditions = &schema_of::<ManagedRancherProject>()["properties"]["status"]["properties"]["conditions"];
    assert_eq!(conditions["x-kubernetes-list-type"], "map");
    assert_eq!(conditions["x-kubernetes-list-map-keys"], json!(["type"]));
}

#[test]
fn inventory_scan_interval_defaults_to_the_original_300_seconds() {
    let rpi: RancherProjectInventory = serde_json::from_value(json!({
        "apiVersion": "waldur.io/v1alpha1", "kind": "RancherProjectInventory",
        "metadata": {"name": "cluster-local"}, "spec": {"clusterId": "local"}
    }))
    .expect("decodes");
    assert_eq!(rpi.spec.scan_interval_seconds, DEFAULT_SCAN_INTERVAL_SECONDS);
    let too_fast = json!({"apiVersion": "waldur.io/v1alpha1", "kind": "RancherProjectInventory",
        "metadata": {"name": "x"}, "spec": {"clusterId": "local", "scanIntervalSeconds": 1}});
    assert!(!problems::<RancherProjectInventory>(&too_fast, None).is_empty());
}

#[test]
fn every_cel_rule_fits_the_api_server_cost_budget() {
    // kube-cel's estimator only sees list bounds on direct children, so the spec-level rule that walks two nested
    // lists is bounded by hand below from the schema's maxItems and maxLength (as kube-apiserver's estimator does).
    const NESTED_RULE_NODE: &str = "spec";
    fn walk(node: &Value, at: &str, warnings: &mut Vec<String>, rules: &mut usize) {
        if let Some(validations) = node.get("x-kubernetes-validations").and_then(Value::as_array) {
            let compiled = kube_cel::compile_schema(node);
            for rule in validations.iter().filter_map(|v| v.get("rule").and_then(Value::as_str)) {
                *rules += 1;
                if at != NESTED_RULE_NODE {
                    warnings.extend(
                        kube_cel::estimate_rule_cost(rule, &compiled)
                            .into_iter()
                            .map(|w| format!("{rule}: {}", w.message)),
                    );
                }
            }
        }
        if let Some(children) = node.get("properties").and_then(Value::as_object) {
            children
                .iter()
                .for_each(|(name, child)| walk(child, name, warnings, rules));
        }
        for key in ["additionalProperties", "items"] {
            if let Some(child @ Value::Object(_)) = node.get(key) {
                walk(child, key, warnings, rules);
            }
        }
    }
    let schema = schema_of::<ManagedRancherProject>();
    let mut warnings = Vec::new();
    let mut rules = 0;
    walk(&schema, "", &mut warnings, &mut rules);
    assert_eq!(rules, 5, "the five rules of the MRP schema were found");
    assert_eq!(warnings, Vec::<String>::new());

    let spec = &schema["properties"]["spec"]["properties"];
    let project_bindings = &spec["keycloak"]["properties"]["roleBindings"];
    let cluster_bindings = &spec["cluster"]["properties"]["keycloak"]["properties"]["roleBindings"];
    let outer = cluster_bindings["maxItems"]
        .as_u64()
        .expect("cluster roleBindings bounded");
    let inner = project_bindings["maxItems"]
        .as_u64()
        .expect("project roleBindings bounded");
    let name_len = project_bindings["items"]["properties"]["groupName"]["maxLength"]
        .as_u64()
        .expect("bounded");
    // One string comparison costs about a tenth of its length; each iteration adds a few fixed steps.
    let nested_cost = outer * (inner * (name_len / 10 + 4) + 4);
    assert!(
        nested_cost < 1_000_000,
        "nested rule cost {nested_cost} exceeds the per-rule budget"
    );
}
