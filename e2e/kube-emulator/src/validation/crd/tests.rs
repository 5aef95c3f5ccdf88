//! End-to-end tests of [`CrdValidator`]: the decode pipeline, strategy order, the blocking rule, status
//! writes, and the real NebariApp CRD with its published samples.

use serde_json::{Value, json};

use super::*;
use crate::validation::invalid_status;

fn gizmo_validator(schema: Value) -> CrdValidator {
    let context = CrdVersionContext {
        group: "hidden.example.com".into(),
        version: "v1".into(),
        kind: "Gizmo".into(),
        namespaced: true,
    };
    CrdValidator::new(context, Some(&schema)).expect("schema compiles")
}

fn gizmo(spec: Value) -> Value {
    json!({"apiVersion": "hidden.example.com/v1", "kind": "Gizmo", "metadata": {"name": "g2", "namespace": "default"}, "spec": spec})
}

fn probe_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "required": ["owner"],
                "x-kubernetes-validations": [{"rule": "self.size >= self.min", "message": "size must be at least min"}],
                "properties": {
                    "size": {"type": "integer", "maximum": 10},
                    "min": {"type": "integer", "default": 0},
                    "mode": {"type": "string", "enum": ["fast", "slow"]},
                    "owner": {"type": "string"}
                }
            },
            "status": {"type": "object", "properties": {"phase": {"type": "string", "enum": ["Ready", "Pending"]}}}
        }
    })
}

fn texts(errors: &[FieldError]) -> Vec<String> {
    errors.iter().map(ToString::to_string).collect()
}

#[test]
fn probed_example_through_the_validator() {
    let v = gizmo_validator(probe_schema());
    let mut obj = gizmo(json!({"size": 11, "mode": "medium"}));
    assert!(v.decode(&mut obj).is_empty());
    let findings = v.validate_create(&obj);
    let mut got = texts(&findings.errors);
    let blocked = got.pop().expect("the blocking note comes last");
    assert_eq!(
        blocked,
        "<nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
    );
    // kube-apiserver visits sibling properties in Go map order, which is random; required comes last.
    assert_eq!(
        got,
        vec![
            "spec.mode: Unsupported value: \"medium\": supported values: \"fast\", \"slow\"",
            "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10",
            "spec.owner: Required value",
        ]
    );
    let status = invalid_status("hidden.example.com", "Gizmo", "g2", &findings.errors);
    assert_eq!(status.causes.last().map(|c| c.field.as_str()), Some("<nil>"));
}

#[test]
fn cel_runs_when_nothing_blocks_and_is_skipped_when_something_does() {
    let v = gizmo_validator(probe_schema());
    let mut obj = gizmo(json!({"size": 2, "min": 5, "owner": "me"}));
    v.decode(&mut obj);
    assert_eq!(
        texts(&v.validate_create(&obj).errors),
        vec!["spec: Invalid value: \"object\": size must be at least min"]
    );
    // An Invalid (non-blocking) schema error lets CEL run too.
    let mut invalid = gizmo(json!({"size": 12, "min": 20, "owner": "me"}));
    v.decode(&mut invalid);
    assert_eq!(
        texts(&v.validate_create(&invalid).errors),
        vec![
            "spec.size: Invalid value: 12: spec.size in body should be less than or equal to 10",
            "spec: Invalid value: \"object\": size must be at least min",
        ]
    );
    // A Required error blocks it.
    let mut blocked = gizmo(json!({"size": 2, "min": 5}));
    v.decode(&mut blocked);
    let errs = v.validate_create(&blocked).errors;
    assert_eq!(errs.len(), 2);
    assert_eq!(errs[1].field, "<nil>");
}

#[test]
fn type_meta_failure_stops_validation() {
    let v = gizmo_validator(probe_schema());
    let mut obj = gizmo(json!({"size": 99}));
    obj["kind"] = json!("Widget");
    obj["apiVersion"] = json!("hidden.example.com/v2");
    assert_eq!(
        texts(&v.validate_create(&obj).errors),
        vec![
            "kind: Invalid value: \"Widget\": must be Gizmo",
            "apiVersion: Invalid value: \"hidden.example.com/v2\": must be hidden.example.com/v1",
        ]
    );
}

#[test]
fn object_meta_is_checked_before_the_schema() {
    let v = gizmo_validator(probe_schema());
    let mut obj = gizmo(json!({"owner": "me", "size": 11}));
    obj["metadata"]["name"] = json!("Bad_Name");
    let errs = v.validate_create(&obj).errors;
    assert_eq!(errs[0].field, "metadata.name");
    assert_eq!(errs[1].field, "spec.size");
}

#[test]
fn decode_prunes_then_drops_nulls_then_defaults() {
    let v = gizmo_validator(probe_schema());
    let mut obj = gizmo(json!({"owner": "me", "size": null, "min": null, "extra": 1}));
    obj["metadata"]["junk"] = json!(true);
    let pruned = v.decode(&mut obj);
    assert_eq!(pruned, vec!["metadata.junk", "spec.extra"]);
    assert_eq!(obj["spec"], json!({"owner": "me", "min": 0}));
}

#[test]
fn strict_decoding_texts() {
    let pruned = vec!["spec.bar".to_string(), "spec.foo".to_string()];
    assert_eq!(
        strict_decoding_error(&pruned),
        "strict decoding error: unknown field \"spec.bar\", unknown field \"spec.foo\""
    );
    assert_eq!(unknown_field_warning("spec.foo"), "unknown field \"spec.foo\"");
}

#[test]
fn runtime_cel_errors_are_not_ratcheted() {
    let v = gizmo_validator(probe_schema());
    let mut old = gizmo(json!({"owner": "me", "min": 0}));
    old["metadata"]["resourceVersion"] = json!("3");
    let findings = v.validate_update(&old, &old);
    assert_eq!(
        texts(&findings.errors),
        vec!["spec: Invalid value: \"object\": no such key: size evaluating rule: size must be at least min"]
    );
    assert!(findings.warnings.is_empty());
}

#[test]
fn updates_ratchet_and_keep_transition_rules() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "size": {"type": "integer", "maximum": 10},
        "name": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "name is immutable"}]},
        "note": {"type": "string"}
    }}}});
    let v = gizmo_validator(schema);
    let mut old = gizmo(json!({"size": 11, "name": "a", "note": "x"}));
    old["metadata"]["resourceVersion"] = json!("7");
    let mut new = old.clone();
    new["spec"]["note"] = json!("y");
    assert!(
        v.validate_update(&new, &old).is_valid(),
        "an unchanged invalid size is ratcheted"
    );
    new["spec"]["name"] = json!("b");
    assert_eq!(
        texts(&v.validate_update(&new, &old).errors),
        vec!["spec.name: Invalid value: \"string\": name is immutable"]
    );
    let mut grown = old.clone();
    grown["spec"]["size"] = json!(12);
    assert_eq!(v.validate_update(&grown, &old).errors.len(), 1);
}

#[test]
fn update_runs_common_checks_and_finalizer_rules() {
    let v = gizmo_validator(probe_schema());
    let mut old = gizmo(json!({"owner": "me", "size": 1, "min": 0}));
    old["metadata"]["resourceVersion"] = json!("3");
    old["metadata"]["uid"] = json!("u1");
    old["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
    let mut new = old.clone();
    new["metadata"]["finalizers"] = json!(["cleanup"]);
    let findings = v.validate_update(&new, &old);
    assert_eq!(
        texts(&findings.errors),
        vec![
            "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"cleanup\"}",
            "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"cleanup\"}",
        ],
        "kube-apiserver reports it from the common checks and from the CR strategy; the aggregate drops the repeat"
    );
    assert_eq!(
        findings.warnings,
        vec![
            "metadata.finalizers: \"cleanup\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"
        ]
    );
}

#[test]
fn status_writes_validate_the_status_subtree() {
    let v = gizmo_validator(probe_schema());
    let mut old = gizmo(json!({"owner": "me", "size": 1, "min": 0}));
    old["metadata"]["resourceVersion"] = json!("3");
    let mut new = old.clone();
    new["status"] = json!({"phase": "Gone"});
    assert_eq!(
        texts(&v.validate_status_update(&new, &old).errors),
        vec![
            "status.phase: Unsupported value: \"Gone\": supported values: \"Ready\", \"Pending\"",
            "<nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ]
    );
    new["status"] = json!({"phase": "Ready"});
    assert!(v.validate_status_update(&new, &old).is_valid());
}

/// A fixture of objects shaped like the replaced operators' published examples (kept with the CRD crate).
fn original_shape(file: &str) -> Vec<Value> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../crds/tests/fixtures/original-shapes")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_saphyr::from_multiple(&text).expect("fixtures are YAML")
}

/// One of the CRDs the operator ships, in its JSON form, defaulted as the API server defaults it.
fn our_crd(name: &str) -> Value {
    let crd = crds::all()
        .into_iter()
        .find(|crd| crd.metadata.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no CRD {name}"));
    let mut crd = serde_json::to_value(crd).expect("CRD serializes");
    definition::default_crd(&mut crd);
    assert!(
        definition::validate_crd(&crd).is_empty(),
        "{name}: {:#?}",
        texts(&definition::validate_crd(&crd))
    );
    crd
}

fn nebari_validator() -> CrdValidator {
    CrdValidator::from_crd(&our_crd("nebariapps.reconcilers.nebari.dev"), "v1").expect("NebariApp schema compiles")
}

#[test]
fn nebari_samples_are_accepted_and_defaulted() {
    let v = nebari_validator();
    for file in ["nebariapp-config-samples.yaml", "nebariapp-dev-example.yaml"] {
        let docs = original_shape(file);
        assert!(!docs.is_empty());
        for mut doc in docs {
            if doc["metadata"].get("namespace").is_none() {
                doc["metadata"]["namespace"] = json!("default");
            }
            let pruned = v.decode(&mut doc);
            assert!(pruned.is_empty(), "{file}: pruned {pruned:?}");
            let findings = v.validate_create(&doc);
            assert!(findings.is_valid(), "{file}: {:#?}", texts(&findings.errors));
        }
    }
}

#[test]
fn nebari_schema_rules_and_cel_fire() {
    let v = nebari_validator();
    let mut app = json!({
        "apiVersion": "reconcilers.nebari.dev/v1",
        "kind": "NebariApp",
        "metadata": {"name": "app", "namespace": "default"},
        "spec": {"hostname": "app.example.com", "service": {"name": "svc", "port": 8080},
                 "auth": {"enabled": true, "forwardAccessToken": true, "enforceAtGateway": false}}
    });
    v.decode(&mut app);
    let errs = texts(&v.validate_create(&app).errors);
    assert_eq!(
        errs,
        vec!["spec.auth: Invalid value: \"object\": forwardAccessToken: true requires enforceAtGateway: true"]
    );
    app["spec"]["service"]["port"] = json!(70000);
    app["spec"]["auth"]["forwardAccessToken"] = json!(false);
    let errs = texts(&v.validate_create(&app).errors);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert!(
        errs[0].starts_with(
            "spec.service.port: Invalid value: 70000: spec.service.port in body should be less than or equal to 65535"
        ),
        "{errs:#?}"
    );
}

/// Not a benchmark (nothing is timed): exercises the steady-state path many times so a regression that
/// recompiles per write or walks quadratically shows up as a slow test run.
#[test]
fn repeated_writes_reuse_the_compiled_schema() {
    let v = nebari_validator();
    let base = json!({
        "apiVersion": "reconcilers.nebari.dev/v1",
        "kind": "NebariApp",
        "metadata": {"name": "app", "namespace": "default", "resourceVersion": "1"},
        "spec": {"hostname": "app.example.com", "service": {"name": "svc", "port": 8080},
                 "routing": {"routes": [{"pathPrefix": "/", "pathType": "PathPrefix"}]},
                 "auth": {"enabled": true, "provider": "keycloak"}}
    });
    let mut old = base.clone();
    v.decode(&mut old);
    for i in 0..2_000 {
        let mut new = base.clone();
        new["spec"]["hostname"] = json!(format!("app{i}.example.com"));
        v.decode(&mut new);
        assert!(v.validate_update(&new, &old).is_valid());
    }
}

#[test]
fn every_crd_we_ship_is_valid_and_accepts_the_original_operators_examples() {
    let cases = [
        (
            "keystoneapplicationcredentials.keystone.openstack.org",
            "v1beta1",
            "keystoneapplicationcredential.yaml",
        ),
        (
            "managedrancherprojects.waldur.io",
            "v1alpha1",
            "managedrancherproject-v0.0.3.yaml",
        ),
        (
            "nebariapps.reconcilers.nebari.dev",
            "v1",
            "nebariapp-config-samples.yaml",
        ),
    ];
    for (crd_name, version, sample_file) in cases {
        let v = CrdValidator::from_crd(&our_crd(crd_name), version).expect("schema compiles");
        for mut doc in original_shape(sample_file) {
            if doc["metadata"].get("namespace").is_none() {
                doc["metadata"]["namespace"] = json!("default");
            }
            let pruned = v.decode(&mut doc);
            assert!(pruned.is_empty(), "{sample_file}: pruned {pruned:?}");
            let findings = v.validate_create(&doc);
            assert!(findings.is_valid(), "{sample_file}: {:#?}", texts(&findings.errors));
        }
    }
}

#[test]
fn keystone_grace_period_rule_fires() {
    let crd = our_crd("keystoneapplicationcredentials.keystone.openstack.org");
    let v = CrdValidator::from_crd(&crd, "v1beta1").expect("schema compiles");
    let mut docs = original_shape("keystoneapplicationcredential.yaml");
    let mut ac = docs.remove(0);
    ac["spec"]["gracePeriodDays"] = json!(400);
    v.decode(&mut ac);
    let errs = texts(&v.validate_create(&ac).errors);
    assert_eq!(
        errs,
        vec!["spec: Invalid value: \"object\": gracePeriodDays must be smaller than expirationDays"]
    );
}
