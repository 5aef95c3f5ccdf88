//! The committed CRD manifests must be exactly what the types generate.

use std::path::Path;

#[test]
fn manifests_are_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifests/crd");
    let files = crds::manifest_files().expect("CRDs render");
    let mut stale = Vec::new();
    for (name, expected) in &files {
        match std::fs::read_to_string(dir.join(name)) {
            Ok(actual) if &actual == expected => {}
            Ok(_) => stale.push(format!("{name} differs")),
            Err(_) => stale.push(format!("{name} is missing")),
        }
    }
    for entry in std::fs::read_dir(&dir).expect("manifests/crd exists") {
        let name = entry.expect("entry").file_name().to_string_lossy().to_string();
        if name.ends_with(".yaml") && !files.iter().any(|(f, _)| *f == name) {
            stale.push(format!("{name} is not generated any more"));
        }
    }
    assert!(
        stale.is_empty(),
        "manifests/crd is stale ({}); regenerate with `cargo run -p crds --features generator --bin crdgen`",
        stale.join(", ")
    );
}

#[test]
fn every_crd_parses_back_from_yaml() {
    for crd in crds::all() {
        let yaml = crds::to_yaml(std::slice::from_ref(&crd)).expect("render");
        let parsed: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition =
            serde_saphyr::from_str(yaml.trim_start_matches("---\n")).expect("valid YAML");
        assert_eq!(parsed, crd);
    }
}
