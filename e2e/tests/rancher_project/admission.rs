//! The optional admission policy (`manifests/components/waldur-writers`): with it installed, a user whose RBAC
//! lets them write ManagedRancherProjects and RancherProjectInventories is still refused unless they are the
//! Waldur site agent; the agent's objects are managed as usual (the operator's own finalizer update passes).
//! The API emulator evaluates ValidatingAdmissionPolicies with CEL as kube-apiserver does.

use e2e::harness::install::rendered;
use e2e::harness::{Deadline, wait_until};
use serde_json::{Value, json};

use crate::support::{NAMESPACE, Setup, World, binding, group_name, writer_labels, writer_spec};

const AGENT: &str = "system:serviceaccount:waldur-system:waldur-site-agent";
const DENIED: &str = "ValidatingAdmissionPolicy 'waldur-writers.waldur.io' with binding 'waldur-writers.waldur.io' \
                      denied request: only the Waldur site agent may create or change";

fn object(kind: &str, name: &str, spec: Value, labels: Value) -> String {
    json!({
        "apiVersion": "waldur.io/v1alpha1", "kind": kind,
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
        "spec": spec,
    })
    .to_string()
}

#[tokio::test]
async fn only_the_site_agent_may_write_projects_and_inventories_once_the_policy_is_installed() {
    let world = World::start(Setup {
        users: vec!["alice"],
        ..Setup::default()
    })
    .await;
    let kubectl = world.cluster.kubectl();
    // What the overlay adds to the default install, applied as a cluster admin would.
    let admission: Vec<Value> = rendered("overlays/waldur-writers")
        .into_iter()
        .filter(|d| d["apiVersion"] == "admissionregistration.k8s.io/v1")
        .collect();
    assert_eq!(admission.len(), 2, "the policy and its binding");
    kubectl
        .apply(&json!({"apiVersion": "v1", "kind": "List", "items": admission}).to_string())
        .await;
    // RBAC alone would let both write.
    let rbac = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "waldur-writer", "namespace": NAMESPACE},
         "rules": [{"apiGroups": ["waldur.io"], "resources": ["managedrancherprojects", "rancherprojectinventories"],
                    "verbs": ["get", "list", "watch", "create", "update", "patch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "waldur-writer", "namespace": NAMESPACE},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "waldur-writer"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "mallory"},
                      {"kind": "ServiceAccount", "name": "waldur-site-agent", "namespace": "waldur-system"}]},
    ]});
    kubectl.apply(&rbac.to_string()).await;
    let mallory = world.cluster.kubectl_as("mallory", &["system:authenticated"]);
    let agent = world.cluster.kubectl_as(
        AGENT,
        &[
            "system:serviceaccounts",
            "system:serviceaccounts:waldur-system",
            "system:authenticated",
        ],
    );

    let rp = "abab11114b2c4e7f9a0b1c2d3e4f5a6b";
    let group = group_name(rp, "owner");
    let project = object(
        "ManagedRancherProject",
        "agent-abab1111",
        writer_spec("Agent", rp, vec![binding(&group, "project-owner", &["alice"])]),
        writer_labels(rp),
    );
    // A real apiserver enforces a new policy, and a new RoleBinding, a moment after they are written (its
    // informers): an admin checks with a server-side dry run, which stores nothing, until both show.
    wait_until(
        "the policy refuses the tenant and RBAC admits the agent",
        Deadline::secs(30),
        || {
            let (mallory, agent, project) = (&mallory, &agent, &project);
            async move {
                let dry_run = ["apply", "--dry-run=server", "-f", "-"];
                let tenant = mallory.run_with_stdin(&dry_run, Some(project)).await;
                let writer = agent.run_with_stdin(&dry_run, Some(project)).await;
                if !tenant.success && tenant.stderr.contains(DENIED) && writer.success {
                    Ok(Some(()))
                } else {
                    Err(format!(
                        "tenant: {} / agent: {}",
                        tenant.stderr.trim(),
                        writer.stderr.trim()
                    ))
                }
            }
        },
    )
    .await;
    let refused = mallory
        .run_with_stdin(&["apply", "-f", "-"], Some(&project))
        .await
        .expect_failure("a tenant's ManagedRancherProject");
    assert!(
        refused.contains(&format!("{DENIED} managedrancherprojects; mallory may not")),
        "{refused}"
    );
    let inventory = object(
        "RancherProjectInventory",
        "inventory",
        json!({"clusterId": crate::support::CLUSTER}),
        json!({}),
    );
    let refused = mallory
        .run_with_stdin(&["apply", "-f", "-"], Some(&inventory))
        .await
        .expect_failure("a tenant's RancherProjectInventory");
    assert!(
        refused.contains("rancherprojectinventories; mallory may not"),
        "{refused}"
    );
    assert!(world.get("agent-abab1111").await.is_none(), "nothing was stored");

    // The site agent writes it; the operator adds its finalizer and manages it.
    agent
        .run_with_stdin(&["apply", "-f", "-"], Some(&project))
        .await
        .expect_success("the agent's ManagedRancherProject");
    world.wait_ready("agent-abab1111").await;

    // Changing it is refused to the tenant too.
    let refused = mallory
        .run(&[
            "label",
            "-n",
            NAMESPACE,
            "managedrancherproject",
            "agent-abab1111",
            "x=y",
        ])
        .await
        .expect_failure("a tenant's change");
    assert!(refused.contains(DENIED), "{refused}");
}
