//! The shipped alerts (`manifests/prometheus/alerts`): the PrometheusRule's groups pass `promtool check rules`,
//! and `promtool test rules` runs `alerts_test.yaml` against them, in which every alert has a case where it
//! fires and one where it stays quiet.

use std::collections::BTreeSet;
use std::process::Command;

use e2e::harness::install::{rendered, repository_root};
use serde_json::Value;

/// The alerts test cases, beside this file.
const CASES: &str = include_str!("alerts_test.yaml");

fn promtool(dir: &std::path::Path, args: &[&str]) -> String {
    let output = Command::new("promtool")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| {
            panic!("promtool could not run ({e}): install Debian's prometheus package (e2e/test.sh does it)")
        });
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "promtool {args:?} failed:\n{text}");
    text
}

#[test]
fn every_alert_is_valid_and_tested_firing_and_quiet() {
    let path = repository_root().join("manifests/prometheus/alerts/prometheus_rule.yaml");
    let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let rule: Value = serde_saphyr::from_str(&source).expect("the PrometheusRule is YAML");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let groups = serde_saphyr::to_string(&rule["spec"]).expect("the rule groups as YAML");
    std::fs::write(dir.path().join("rules.yaml"), groups).expect("write rules.yaml");
    std::fs::write(dir.path().join("alerts_test.yaml"), CASES).expect("write alerts_test.yaml");

    let checked = promtool(dir.path(), &["check", "rules", "rules.yaml"]);
    let alerts: BTreeSet<String> = rule["spec"]["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
        .filter_map(|r| r["alert"].as_str().map(str::to_string))
        .collect();
    assert!(
        checked.contains(&format!("SUCCESS: {} rules found", alerts.len())),
        "{checked}"
    );
    promtool(dir.path(), &["test", "rules", "alerts_test.yaml"]);

    let cases: Value = serde_saphyr::from_str(CASES).expect("the cases are YAML");
    let checks: Vec<&Value> = cases["tests"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["alert_rule_test"].as_array().into_iter().flatten())
        .collect();
    for alert in &alerts {
        let of_alert = || checks.iter().filter(|c| c["alertname"] == alert.as_str());
        assert!(
            of_alert().any(|c| c["exp_alerts"].as_array().is_some_and(|a| !a.is_empty())),
            "{alert} has no case where it fires"
        );
        assert!(
            of_alert().any(|c| c["exp_alerts"].as_array().is_some_and(Vec::is_empty)),
            "{alert} has no case where it stays quiet"
        );
    }
    let rendered = rendered("overlays/monitoring");
    assert!(
        rendered
            .iter()
            .any(|d| d["kind"] == "PrometheusRule" && d["metadata"]["namespace"] == "platform-operator-system"),
        "the monitoring overlay ships the rule in the operator's namespace"
    );
}
