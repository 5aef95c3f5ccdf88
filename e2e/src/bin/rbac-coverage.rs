//! `rbac-coverage`: after a test run, how many requests each verb of each rule of the shipped roles authorized.
//!
//! Every API emulator writes its authorization decisions to `E2E_AUTHZ_LOG_DIR` when it stops, labelled with
//! the overlays whose RBAC the test installed. A role is judged by the runs of every overlay that ships it: a
//! request of the overlay's ServiceAccount counts for a rule when the rule would authorize it on its own and no
//! other role of that overlay would (so a Secret read of one controller never counts for another controller's
//! Secret rule; those are judged by the suite that runs the controller alone under its own overlay). A request
//! also counts for the rule RBAC named as its grant (rules limited to object names are matched that way, as the
//! log keeps no names). For every rule and each of its verbs the command counts those requests, prints a table,
//! writes JSON, and fails naming every verb that authorized nothing: a grant the suite never needed is a
//! privilege the operator should not hold. Overlays named `--rules-only` (the namespaced one, whose Roles a test
//! keeps equal to the ClusterRoles) are checked per rule, not per verb.
//!
//! `e2e/test.sh` runs it after the suite; by hand:
//! `E2E_AUTHZ_LOG_DIR=target/authz cargo nextest run --workspace && cargo run -p e2e --bin rbac-coverage -- --log-dir target/authz`

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use e2e::harness::install::{rendered, service_account_of};
use kube_emulator::PolicyRule;
use kube_emulator::{Attributes, DecisionLogFile, DecisionRow, ResourceAttributes};
use serde_json::{Value, json};

/// Command-line flags.
#[derive(Debug, Parser)]
#[command(
    name = "rbac-coverage",
    about = "Which grants of the shipped roles the test suite used"
)]
struct Args {
    /// The directory the emulators wrote their decision logs to (`E2E_AUTHZ_LOG_DIR`).
    #[arg(long)]
    log_dir: PathBuf,
    /// Overlays under `manifests/` whose roles are checked (repeatable).
    #[arg(
        long = "overlay",
        default_values_t = [
            String::from("default"),
            String::from("overlays/nebariapp"),
            String::from("overlays/keystoneapplicationcredential"),
            String::from("overlays/managedrancherproject"),
            String::from("overlays/namespaced"),
        ]
    )]
    overlays: Vec<String>,
    /// Overlays whose roles are checked per rule rather than per verb (repeatable).
    #[arg(long = "rules-only", default_values_t = [String::from("overlays/namespaced")])]
    rules_only: Vec<String>,
    /// Where to write the JSON report.
    #[arg(long, default_value = "target/rbac-coverage.json")]
    output: PathBuf,
}

/// A role as shipped: its identity across overlays and its rules.
#[derive(Clone)]
struct ShippedRole {
    /// `ClusterRole/<name>` or `Role/<namespace>/<name>`.
    id: String,
    /// The Role's namespace (a Role grants only there); empty for ClusterRoles.
    namespace: String,
    rules: Vec<PolicyRule>,
}

/// The request a decision row describes (rows carry no object name: rules limited to names never match).
fn attributes(row: &DecisionRow) -> Attributes {
    if !row.path.is_empty() {
        return Attributes::NonResource {
            verb: row.verb.clone(),
            path: row.path.clone(),
        };
    }
    let (resource, subresource) = row.resource.split_once('/').unwrap_or((row.resource.as_str(), ""));
    Attributes::Resource(ResourceAttributes {
        verb: row.verb.clone(),
        group: row.group.clone(),
        resource: resource.to_string(),
        subresource: subresource.to_string(),
        namespace: row.namespace.clone(),
        name: row.name.clone(),
    })
}

fn read_logs(dir: &PathBuf) -> Result<Vec<DecisionLogFile>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut logs = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let text = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let log: DecisionLogFile =
            serde_json::from_slice(&text).map_err(|e| format!("{} is not a decision log: {e}", path.display()))?;
        logs.push(log);
    }
    Ok(logs)
}

fn roles_of(overlay: &str) -> Vec<ShippedRole> {
    rendered(overlay)
        .into_iter()
        .filter(|doc| {
            let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
            matches!(kind, "Role" | "ClusterRole") && doc.get("aggregationRule").is_none_or(Value::is_null)
        })
        .map(|doc| {
            let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
            let name = doc
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let namespace = if kind == "Role" {
                doc.pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            } else {
                ""
            };
            let id = if kind == "Role" {
                format!("Role/{namespace}/{name}")
            } else {
                format!("ClusterRole/{name}")
            };
            ShippedRole {
                id,
                namespace: namespace.to_string(),
                rules: PolicyRule::list_of(&doc),
            }
        })
        .collect()
}

/// One verb of one rule and the requests it authorized.
struct Grant {
    role: String,
    index: usize,
    verb: String,
    rule: PolicyRule,
    requests: u64,
    judged_by: Vec<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let logs = match read_logs(&args.log_dir) {
        Ok(logs) if !logs.is_empty() => logs,
        Ok(_) => {
            eprintln!(
                "error: no decision logs in {}; run the suite with E2E_AUTHZ_LOG_DIR set to it first",
                args.log_dir.display()
            );
            return ExitCode::FAILURE;
        }
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    // Which roles each overlay ships, and the roles' rules.
    let mut overlay_roles: BTreeMap<String, Vec<ShippedRole>> = BTreeMap::new();
    let mut roles: BTreeMap<String, ShippedRole> = BTreeMap::new();
    for overlay in &args.overlays {
        let shipped = roles_of(overlay);
        for role in &shipped {
            roles.entry(role.id.clone()).or_insert_with(|| role.clone());
        }
        overlay_roles.insert(overlay.clone(), shipped);
    }
    let mut grants = Vec::new();
    for (id, role) in &roles {
        let judges: Vec<String> = overlay_roles
            .iter()
            .filter(|(_, shipped)| shipped.iter().any(|r| &r.id == id))
            .map(|(overlay, _)| overlay.clone())
            .collect();
        let per_rule = judges.iter().all(|o| args.rules_only.contains(o));
        // (row, the other roles of its overlay) for every allowed request of a judging overlay's ServiceAccount.
        let mut rows: Vec<(&DecisionRow, &[ShippedRole])> = Vec::new();
        for overlay in &judges {
            let (namespace, name) = service_account_of(overlay);
            let user = format!("system:serviceaccount:{namespace}:{name}");
            let label = format!("overlay:{overlay}");
            let others = overlay_roles[overlay].as_slice();
            for log in logs.iter().filter(|log| log.labels.contains(&label)) {
                rows.extend(
                    log.rows
                        .iter()
                        .filter(|row| row.allowed && row.user == user)
                        .filter(|row| role.namespace.is_empty() || row.namespace == role.namespace)
                        .map(|row| (row, others)),
                );
            }
        }
        for (index, rule) in role.rules.iter().enumerate() {
            let key = format!("{id}#{index}");
            let verbs: Vec<String> = if per_rule {
                vec![rule.verbs.join(",")]
            } else {
                rule.verbs.clone()
            };
            for verb in verbs {
                let requests = rows
                    .iter()
                    .filter(|(row, _)| per_rule || verb == "*" || row.verb == verb)
                    .filter(|(row, others)| {
                        let attributes = attributes(row);
                        row.rule == key
                            || (rule.allows(&attributes)
                                && !others
                                    .iter()
                                    .filter(|other| other.id != *id)
                                    .filter(|other| other.namespace.is_empty() || other.namespace == row.namespace)
                                    .any(|other| other.rules.iter().any(|r| r.allows(&attributes))))
                    })
                    .map(|(row, _)| row.count)
                    .sum();
                grants.push(Grant {
                    role: id.clone(),
                    index,
                    verb,
                    rule: rule.clone(),
                    requests,
                    judged_by: judges.clone(),
                });
            }
        }
    }
    println!("{:<72} {:<17} {:>9}  rule", "role#rule", "verb", "requests");
    for grant in &grants {
        println!(
            "{:<72} {:<17} {:>9}  {}",
            format!("{}#{}", grant.role, grant.index),
            grant.verb,
            grant.requests,
            grant.rule.compact_string()
        );
    }
    let report: Vec<Value> = grants
        .iter()
        .map(|g| {
            json!({"role": g.role, "rule": g.index, "verb": g.verb, "requests": g.requests,
                   "grants": g.rule.compact_string(), "judgedBy": g.judged_by})
        })
        .collect();
    if let Some(parent) = args.output.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    if let Err(error) = std::fs::write(&args.output, serde_json::to_vec_pretty(&report).unwrap_or_default()) {
        eprintln!("warning: cannot write {}: {error}", args.output.display());
    }
    let unused: Vec<&Grant> = grants.iter().filter(|g| g.requests == 0).collect();
    if unused.is_empty() {
        println!("\nevery verb of every rule of the shipped roles authorized at least one request");
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "\nerror: {} grant(s) of the shipped roles authorized nothing:",
        unused.len()
    );
    for grant in unused {
        eprintln!(
            "  {}#{} {}  {}  (judged by the runs of {})",
            grant.role,
            grant.index,
            grant.verb,
            grant.rule.compact_string(),
            grant.judged_by.join(", ")
        );
    }
    ExitCode::FAILURE
}
