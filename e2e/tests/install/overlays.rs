//! The overlays hold exactly what their controllers need: each per-controller install ships only its own
//! ClusterRole, and the namespaced install's Role grants in its namespace what the per-controller ClusterRoles
//! grant cluster-wide (kept equal here, so a rule added to one cannot be forgotten in the other).

use std::collections::BTreeSet;

use e2e::harness::install::rendered;
use kube_emulator::PolicyRule;
use serde_json::Value;

fn kinds_named(overlay: &str, kind: &str) -> Vec<Value> {
    rendered(overlay).into_iter().filter(|d| d["kind"] == kind).collect()
}

fn names(docs: &[Value]) -> BTreeSet<String> {
    docs.iter()
        .filter_map(|d| d["metadata"]["name"].as_str().map(str::to_string))
        .collect()
}

/// One `(group, resource, verb)` per atom a set of rules grants, ignoring resource names.
fn atoms(rules: &[PolicyRule]) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for rule in rules {
        for group in &rule.api_groups {
            for resource in &rule.resources {
                for verb in &rule.verbs {
                    out.insert((group.clone(), resource.clone(), verb.clone()));
                }
            }
        }
    }
    out
}

#[test]
fn each_controller_overlay_ships_only_its_own_cluster_role_and_runs_only_its_controllers() {
    for (overlay, role, controllers) in [
        ("overlays/nebariapp", "platform-operator-nebariapp-role", "nebariapp"),
        (
            "overlays/keystoneapplicationcredential",
            "platform-operator-keystoneapplicationcredential-role",
            "keystoneapplicationcredential",
        ),
        (
            "overlays/managedrancherproject",
            "platform-operator-managedrancherproject-role",
            "managedrancherproject,rancherprojectinventory",
        ),
    ] {
        let roles = names(&kinds_named(overlay, "ClusterRole"));
        let expected: BTreeSet<String> = ["platform-operator-manager-role", "platform-operator-events-role", role]
            .into_iter()
            .map(str::to_string)
            .collect();
        assert_eq!(roles, expected, "{overlay}");
        let deployment = &kinds_named(overlay, "Deployment")[0];
        let args: Vec<&str> = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            args.contains(&format!("--controllers={controllers}").as_str()),
            "{overlay}: {args:?}"
        );
    }
}

#[test]
fn the_namespaced_install_holds_roles_only_equal_to_the_controllers_cluster_roles() {
    let overlay = "overlays/namespaced";
    assert!(kinds_named(overlay, "ClusterRole").is_empty());
    assert!(kinds_named(overlay, "ClusterRoleBinding").is_empty());
    let roles = kinds_named(overlay, "Role");
    let watched = roles
        .iter()
        .find(|r| r["metadata"]["namespace"] == "tenant-a")
        .expect("a Role in the watched namespace");
    let gateway = roles
        .iter()
        .find(|r| r["metadata"]["namespace"] == "envoy-gateway-system")
        .expect("a Role in the gateway namespace");
    assert!(!atoms(&PolicyRule::list_of(watched)).is_empty() && !atoms(&PolicyRule::list_of(gateway)).is_empty());
    // Every Role counts: the watched and gateway namespaces', and those beside the operator's credentials and CA
    // bundles (the leader-election Role is the same Role in every install and is left out).
    let namespaced: BTreeSet<_> = roles
        .iter()
        .flat_map(|r| atoms(&PolicyRule::list_of(r)))
        .filter(|(group, _, _)| group != "coordination.k8s.io")
        .collect();
    let cluster_wide: BTreeSet<_> = kinds_named("default", "ClusterRole")
        .iter()
        .flat_map(|r| atoms(&PolicyRule::list_of(r)))
        .filter(|(group, resource, _)| !(group.is_empty() && resource == "namespaces"))
        .collect();
    let only_cluster: Vec<_> = cluster_wide.difference(&namespaced).collect();
    let only_namespaced: Vec<_> = namespaced
        .difference(&cluster_wide)
        .filter(|(group, resource, verb)| !(group.is_empty() && resource == "namespaces" && verb == "get"))
        .collect();
    assert!(
        only_cluster.is_empty() && only_namespaced.is_empty(),
        "the namespaced Roles drifted from the ClusterRoles:\nmissing in the namespaced install: {only_cluster:?}\nonly in it: {only_namespaced:?}"
    );
    let deployment = &kinds_named(overlay, "Deployment")[0];
    let args = deployment["spec"]["template"]["spec"]["containers"][0]["args"].to_string();
    assert!(args.contains("--watch-namespace=tenant-a"), "{args}");
}

/// The arguments of a Deployment's manager container.
fn manager_args(deployment: &Value) -> Vec<String> {
    deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a.as_str().map(str::to_string))
        .collect()
}

#[test]
fn the_sharded_install_runs_three_disjoint_shards_with_a_standby_each_beside_one_copy_of_everything_else() {
    let sharded = rendered("overlays/sharded");
    let deployments: Vec<&Value> = sharded.iter().filter(|d| d["kind"] == "Deployment").collect();
    assert_eq!(deployments.len(), 3);
    let mut indices = BTreeSet::new();
    let mut selectors = BTreeSet::new();
    let service_accounts = names(&kinds_named("overlays/sharded", "ServiceAccount"));
    for deployment in &deployments {
        let args = manager_args(deployment);
        assert!(args.contains(&"--shard-count=3".to_string()), "{args:?}");
        assert!(
            args.contains(&"--leader-elect".to_string()),
            "each shard elects a leader: {args:?}"
        );
        let index = args
            .iter()
            .find_map(|a| a.strip_prefix("--shard-index="))
            .expect("a shard index");
        indices.insert(index.to_string());
        assert_eq!(deployment["spec"]["replicas"], 2, "a leader and a standby");
        let selector = &deployment["spec"]["selector"]["matchLabels"];
        assert_eq!(
            selector["platform-operator.dev/shard"], index,
            "the selector names the shard"
        );
        assert_eq!(
            deployment["spec"]["template"]["metadata"]["labels"]["platform-operator.dev/shard"],
            index
        );
        selectors.insert(selector.to_string());
        let account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
            .as_str()
            .expect("a service account");
        assert!(
            service_accounts.contains(account),
            "{account} is installed: {service_accounts:?}"
        );
        assert_eq!(deployment["metadata"]["namespace"], "platform-operator-system");
    }
    assert_eq!(
        indices,
        ["0", "1", "2"].map(String::from).into(),
        "one Deployment per shard"
    );
    assert_eq!(selectors.len(), 3, "no Deployment selects another shard's pods");
    // Everything but the Deployments is the default install's, once.
    let others = |docs: &[Value]| -> Vec<String> {
        let mut found: Vec<String> = docs
            .iter()
            .filter(|d| d["kind"] != "Deployment")
            .map(|d| format!("{}/{}", d["kind"], d["metadata"]["name"]))
            .collect();
        found.sort();
        found
    };
    assert_eq!(others(&sharded), others(&rendered("default")));
}
