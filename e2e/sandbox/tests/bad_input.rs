//! The bad-input catalog: invalid and hostile objects of all four kinds, applied with kubectl to the whole
//! operator (the sandbox: shipped CRDs, RBAC and manager, every controller, Keycloak and Rancher emulators, a real
//! Keystone). Each is either refused by the API with a message naming what is wrong, or accepted and answered with
//! a condition and a reason. Afterwards the manager is still running, has not panicked, reconciles at a bounded
//! rate (no hot loop, read from its metrics), and wrote only where its objects live.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use e2e::harness::{Deadline, Kubectl, metrics, try_wait_until, wait_until};
use sandbox::kinds::{Kind, app_spec, credential_spec, inventory_spec, merged, project_spec};
use sandbox::{Sandbox, SandboxOptions};
use serde_json::{Value, json};

/// What the catalog expects of one object.
enum Expect {
    /// `kubectl apply` fails and its message contains every part.
    Refused(&'static [&'static str]),
    /// Accepted; the object reports this condition `(type, status, reason)`.
    Condition(&'static str, &'static str, &'static str),
}

/// One entry: a name for the report, the kind, the object's name, its spec, and what must happen.
struct Case {
    what: &'static str,
    kind: Kind,
    name: String,
    spec: Value,
    expect: Expect,
}

/// A case of `kind` named `name`: `base` with `patch` merged in.
fn case(what: &'static str, kind: Kind, name: &str, base: Value, patch: Value, expect: Expect) -> Case {
    Case {
        what,
        kind,
        name: name.to_string(),
        spec: merged(base, patch),
        expect,
    }
}

fn app(what: &'static str, name: &str, patch: Value, expect: Expect) -> Case {
    case(what, Kind::NebariApp, name, app_spec(name), patch, expect)
}

fn credential(what: &'static str, name: &str, patch: Value, expect: Expect) -> Case {
    case(what, Kind::Credential, name, credential_spec(), patch, expect)
}

fn project(what: &'static str, name: &str, patch: Value, expect: Expect) -> Case {
    let group = format!("catalog_{}", name.replace('-', "_"));
    case(what, Kind::Project, name, project_spec(name, &group), patch, expect)
}

fn inventory(what: &'static str, name: &str, patch: Value, expect: Expect) -> Case {
    case(what, Kind::Inventory, name, inventory_spec(), patch, expect)
}

use Expect::{Condition, Refused};

/// The catalog: one row per object. Refusals name the field (and the rule, where the API says it); conditions
/// give the type, status and reason the operator answers with.
#[rustfmt::skip]
fn catalog() -> Vec<Case> {
    let long = "a".repeat(260);
    let many_routes: Vec<Value> = (0..300).map(|i| json!({"pathPrefix": format!("/r{i}")})).collect();
    let many_members: Vec<Value> = (0..3000).map(|i| json!({"userIdentifier": format!("user{i}")})).collect();
    let long_one = format!("{}-one", "n".repeat(240));
    let long_two = format!("{}-two", "n".repeat(240));
    let long_credential = format!("ac-{}", "x".repeat(240));
    vec![
        // NebariApp: refused by the schema.
        app("uppercase hostname", "c-upper-host", json!({"hostname": "Web.Nebari.Local"}), Refused(&["spec.hostname", "should match"])),
        app("empty hostname", "c-empty-host", json!({"hostname": ""}), Refused(&["spec.hostname"])),
        app("unicode hostname", "c-unicode-host", json!({"hostname": "bücher.nebari.local"}), Refused(&["spec.hostname", "should match"])),
        app("hostname with a path", "c-path-host", json!({"hostname": "web.nebari.local/admin"}), Refused(&["spec.hostname", "should match"])),
        app("port 0", "c-port-0", json!({"service": {"port": 0}}), Refused(&["spec.service.port", "greater than or equal to 1"])),
        app("port 70000", "c-port-70000", json!({"service": {"port": 70000}}), Refused(&["spec.service.port", "less than or equal to 65535"])),
        app("no service name", "c-no-service", json!({"service": {"name": null}}), Refused(&["spec.service.name", "Required value"])),
        app("unknown gateway", "c-gateway", json!({"gateway": "private"}), Refused(&["spec.gateway", "Unsupported value"])),
        app("relative path", "c-relative-path", json!({"routing": {"routes": [{"pathPrefix": "api"}]}}), Refused(&["spec.routing.routes[0].pathPrefix", "should match"])),
        app("path climbing out with ..", "c-dotdot", json!({"routing": {"routes": [{"pathPrefix": "/api/../admin"}]}}), Refused(&["spec.routing.routes[0].pathPrefix", "must not contain"])),
        app("encoded slash in a path", "c-encoded-slash", json!({"routing": {"routes": [{"pathPrefix": "/api%2Fadmin"}]}}), Refused(&["spec.routing.routes[0].pathPrefix", "must not contain"])),
        app("public path ending in /..", "c-public-dotdot", json!({"routing": {"publicRoutes": [{"pathPrefix": "/healthz/.."}]}}), Refused(&["spec.routing.publicRoutes[0].pathPrefix", "must not contain"])),
        app("unknown path type", "c-path-type", json!({"routing": {"publicRoutes": [{"pathPrefix": "/a", "pathType": "Regex"}]}}), Refused(&["spec.routing.publicRoutes[0].pathType", "Unsupported value"])),
        app("three hundred routes", "c-many-routes", json!({"routing": {"routes": many_routes}}), Refused(&["spec.routing.routes", "at most 64"])),
        app("TLS Secret named by a path", "c-tls-path", json!({"routing": {"tls": {"secretName": "../kube-system/admin-tls"}}}), Refused(&["spec.routing.tls.secretName", "should match"])),
        app("unknown auth provider", "c-provider", json!({"auth": {"enabled": true, "provider": "okta"}}), Refused(&["spec.auth.provider", "Unsupported value"])),
        app("forwardAccessToken without enforcement", "c-forward", json!({"auth": {"enabled": true, "enforceAtGateway": false, "forwardAccessToken": true}}), Refused(&["requires enforceAtGateway: true"])),
        app("generic-oidc without issuer", "c-generic-oidc", json!({"auth": {"enabled": true, "provider": "generic-oidc", "clientSecretRef": "oidc"}}), Refused(&["issuerURL is required"])),
        app("clientSecretRef naming another tenant's Secret", "c-foreign-secret", json!({"auth": {"enabled": true, "provider": "generic-oidc", "issuerURL": "https://idp.example.com", "clientSecretRef": "../kube-system/admin"}}), Refused(&["spec.auth.clientSecretRef", "should match"])),
        app("deny-redirect header type", "c-deny-type", json!({"auth": {"enabled": true, "denyRedirect": [{"name": "X-Requested-With", "type": "Glob", "value": "x"}]}}), Refused(&["spec.auth.denyRedirect[0].type", "Unsupported value"])),
        app("landing page priority", "c-priority", json!({"landingPage": {"enabled": true, "displayName": "Web", "priority": 5000}}), Refused(&["spec.landingPage.priority"])),
        app("landing page without a name", "c-landing-name", json!({"landingPage": {"enabled": true}}), Refused(&["spec.landingPage", "displayName"])),
        app("uppercase object name", "C-Upper", json!({}), Refused(&["metadata.name", "lowercase"])),
        app("unicode object name", "wéb", json!({}), Refused(&["metadata.name"])),
        app("object name over 253 characters", &long, json!({}), Refused(&["metadata.name", "must be no more than 253 characters"])),
        app("unknown spec field", "c-unknown-field", json!({"replicas": 3}), Refused(&["unknown field", "spec.replicas"])),
        // NebariApp: accepted, answered with a condition.
        app("service in another namespace that does not exist", "c-foreign-service", json!({"service": {"namespace": "kube-system", "name": "kube-dns", "port": 53}}), Condition("Ready", "False", "ServiceNotFound")),
        app("service that does not exist", "c-missing-service", json!({"service": {"name": "nothing-here"}}), Condition("Ready", "False", "ServiceNotFound")),
        app("disallowed protocol mapper", "c-script-mapper", json!({"auth": {"enabled": true, "keycloakConfig": {"protocolMappers": [{"name": "x", "protocolMapper": "oidc-script-based-protocol-mapper", "config": {"script": "exports = true"}}]}}}), Condition("AuthReady", "False", "ProtocolMapperNotAllowed")),
        app("mapper config trying to inject", "c-mapper-inject", json!({"auth": {"enabled": true, "keycloakConfig": {"protocolMappers": [{"name": "groups\"},{\"x", "protocolMapper": "oidc-group-membership-mapper", "config": {"claim.name": "groups\"; \"aud\": \"admin", "full.path": "true\u{0}"}}]}}}), Condition("Ready", "True", "Ready")),
        app("dotted name (listener names have no dots)", "c.dotted.app", json!({"routing": {}}), Condition("Ready", "True", "Ready")),
        app("long name, the same after truncation (1)", &long_one, json!({"hostname": "long-one.nebari.local", "routing": {}}), Condition("Ready", "True", "Ready")),
        app("long name, the same after truncation (2)", &long_two, json!({"hostname": "long-two.nebari.local", "routing": {}}), Condition("Ready", "True", "Ready")),
        // KeystoneApplicationCredential.
        credential("expirationDays 0", "ac-c-exp-0", json!({"expirationDays": 0}), Refused(&["spec.expirationDays"])),
        credential("grace period longer than the lifetime", "ac-c-grace", json!({"expirationDays": 10, "gracePeriodDays": 20}), Refused(&["gracePeriodDays"])),
        credential("no roles", "ac-c-no-roles", json!({"roles": []}), Refused(&["spec.roles"])),
        credential("empty user name", "ac-c-no-user", json!({"userName": ""}), Refused(&["spec.userName"])),
        credential("empty password Secret name", "ac-c-no-secret", json!({"secret": ""}), Refused(&["spec.secret"])),
        credential("empty password selector", "ac-c-no-selector", json!({"passwordSelector": ""}), Refused(&["spec.passwordSelector"])),
        credential("unknown access-rule method", "ac-c-method", json!({"accessRules": [{"service": "compute", "path": "/v2.1/servers", "method": "FETCH"}]}), Refused(&["spec.accessRules[0].method", "Unsupported value"])),
        credential("unknown spec field", "ac-c-unknown", json!({"lifetime": "1y"}), Refused(&["unknown field", "spec.lifetime"])),
        credential("password Secret that does not exist", "ac-c-missing-secret", json!({"secret": "nothing-here"}), Condition("Ready", "False", "PasswordSecretNotFound")),
        credential("password key that does not exist", "ac-c-missing-key", json!({"passwordSelector": "NoSuchPassword"}), Condition("Ready", "False", "PasswordKeyMissing")),
        credential("role the user does not hold", "ac-c-admin-role", json!({"roles": ["admin"]}), Condition("Ready", "False", "KeystoneRequestFailed")),
        credential("unicode user name", "ac-c-unicode-user", json!({"userName": "bärbican"}), Condition("Ready", "False", "KeystoneAuthenticationFailed")),
        credential("name as long as allowed", &long_credential, json!({}), Condition("Ready", "True", "Ready")),
        // ManagedRancherProject.
        project("empty cluster id", "c-no-cluster", json!({"clusterId": ""}), Refused(&["spec.clusterId"])),
        project("empty project name", "c-no-name", json!({"projectName": ""}), Refused(&["spec.projectName"])),
        project("group name climbing the tree", "c-group-path", json!({"keycloak": {"roleBindings": [{"groupName": "../admins", "rancherRole": "project-member", "members": []}]}}), Refused(&["groupName", "should match"])),
        project("parent group with a slash", "c-parent-path", json!({"keycloak": {"parentGroupName": "a/b"}}), Refused(&["parentGroupName", "should match"])),
        project("empty member", "c-empty-member", json!({"keycloak": {"roleBindings": [{"groupName": "catalog_empty", "rancherRole": "project-member", "members": [{"userIdentifier": ""}]}]}}), Refused(&["userIdentifier"])),
        project("unknown spec field", "c-unknown", json!({"owner": "someone"}), Refused(&["unknown field", "spec.owner"])),
        project("Rancher role that does not exist", "c-role", json!({"keycloak": {"roleBindings": [{"groupName": "catalog_role", "rancherRole": "root", "members": []}]}}), Condition("RancherBindingsReady", "False", "RancherRejected")),
        project("resource UUID that is no UUID (provenance only)", "c-uuid", json!({"resourceProjectUuid": "not-a-uuid!"}), Condition("Ready", "True", "Ready")),
        project("quota that is no quantity", "c-quota-word", json!({"resourceQuotas": {"memory": "lots"}}), Refused(&["spec.resourceQuotas", "must be a non-negative integer or quantity"])),
        project("negative quota", "c-quota-negative", json!({"resourceQuotas": {"cpu": -1000}}), Refused(&["spec.resourceQuotas", "must be a non-negative integer or quantity"])),
        project("quota key Rancher cannot express", "c-quota-key", json!({"resourceQuotas": {"rocket.launches": "3"}}), Condition("ResourceQuotaReady", "True", "QuotaPartiallyApplied")),
        project("cluster that does not exist", "c-no-such-cluster", json!({"clusterId": "c-m-nothere"}), Condition("RancherProjectReady", "False", "RancherRejected")),
        project("three thousand members nobody knows", "c-many-members", json!({"keycloak": {"roleBindings": [{"groupName": "catalog_many", "rancherRole": "project-member", "members": many_members}]}}), Condition("MembershipSynced", "True", "MembersPending")),
        project("one group under two roles", "c-two-roles", json!({"keycloak": {"roleBindings": [
            {"groupName": "catalog_shared", "rancherRole": "project-member", "members": [{"userIdentifier": "alice"}]},
            {"groupName": "catalog_shared", "rancherRole": "read-only", "members": [{"userIdentifier": "bob"}]}]}}), Condition("Ready", "True", "Ready")),
        // RancherProjectInventory.
        inventory("empty cluster id", "c-inv-no-cluster", json!({"clusterId": ""}), Refused(&["spec.clusterId"])),
        inventory("scan interval 0", "c-inv-zero", json!({"scanIntervalSeconds": 0}), Refused(&["spec.scanIntervalSeconds"])),
        inventory("negative scan interval", "c-inv-negative", json!({"scanIntervalSeconds": -5}), Refused(&["spec.scanIntervalSeconds"])),
        inventory("unknown spec field", "c-inv-unknown", json!({"clusters": ["a"]}), Refused(&["unknown field", "spec.clusters"])),
        inventory("scan interval of years", "c-inv-years", json!({"scanIntervalSeconds": 100_000_000}), Condition("Ready", "True", "Scanned")),
        inventory("cluster that does not exist", "c-inv-no-such-cluster", json!({"clusterId": "c-m-nothere"}), Condition("Ready", "False", "RancherNotFound")),
    ]
}

/// Applies one case with kubectl; returns what happened, or why it is not what the catalog expects.
async fn apply(kubectl: &Kubectl, dir: &std::path::Path, case: &Case) -> Result<(), String> {
    let document = case.kind.object(&case.name, case.spec.clone());
    let path = dir.join("case.json");
    std::fs::write(&path, document.to_string()).map_err(|e| e.to_string())?;
    let out = kubectl.run(&["apply", "-f", &path.to_string_lossy()]).await;
    match (&case.expect, out.success) {
        (Refused(parts), false) => {
            let missing: Vec<&&str> = parts.iter().filter(|p| !out.stderr.contains(**p)).collect();
            if missing.is_empty() {
                Ok(())
            } else {
                Err(format!(
                    "refused, but the message lacks {missing:?}: {}",
                    out.stderr.trim()
                ))
            }
        }
        (Refused(_), true) => Err("accepted, but must be refused".to_string()),
        (Condition(..), false) => Err(format!("refused: {}", out.stderr.trim())),
        (Condition(type_, status, reason), true) => {
            let kind = case.kind;
            let name = case.name.clone();
            let deadline = Deadline {
                timeout: Duration::from_secs(20),
                poll: Duration::from_millis(250),
            };
            let what = format!("{type_}={status}/{reason}");
            try_wait_until(&what, deadline, || async {
                let out = kubectl
                    .run(&["get", kind.resource(), "-n", kind.namespace(), &name, "-o", "json"])
                    .await;
                let object: Value = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
                let conditions = object["status"]["conditions"].as_array().cloned().unwrap_or_default();
                if conditions
                    .iter()
                    .any(|c| c["type"] == *type_ && c["status"] == *status && c["reason"] == *reason)
                {
                    return Ok(Some(()));
                }
                Err(format!("conditions: {}", object["status"]["conditions"]))
            })
            .await
        }
    }
}

#[tokio::test]
async fn every_bad_input_is_refused_or_answered_with_a_condition_and_nothing_loops_or_leaks() {
    let dir = tempfile::tempdir().expect("scratch directory");
    let repo_root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let sandbox = Sandbox::start(SandboxOptions {
        control_plane: sandbox::api::ControlPlaneKind::of_test_run(),
        ..SandboxOptions::in_dir(&dir.path().join("work"), &repo_root)
    })
    .await
    .expect("start the sandbox");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("kubectl home");
    let kubectl = sandbox.api().kubectl().clone();
    // The samples are Ready first: the hostile objects meet a working system.
    wait_until("the NebariApp sample to be Ready", Deadline::secs(120), || async {
        let out = kubectl.run(&["get", "nebariapps", "-A", "-o", "json"]).await;
        let list: Value = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
        let ready = list["items"].as_array().is_some_and(|items| {
            items.iter().any(|i| {
                i["status"]["conditions"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
            })
        });
        Ok(ready.then_some(()))
    })
    .await;

    let cases = catalog();
    assert!(cases.len() >= 60, "the catalog holds {} cases", cases.len());
    let mut failures = Vec::new();
    let mut accepted: BTreeMap<Kind, u64> = BTreeMap::new();
    for case in &cases {
        let result = apply(&kubectl, dir.path(), case).await;
        let verdict = match &result {
            Ok(()) => "ok",
            Err(_) => "WRONG",
        };
        eprintln!(
            "{verdict:5} {:?} {}{}",
            case.kind,
            case.what,
            result.as_ref().err().map(|e| format!(": {e}")).unwrap_or_default()
        );
        if let Err(why) = result {
            failures.push(format!("{:?} {:?}: {why}", case.kind, case.what));
        }
        if matches!(case.expect, Condition(..)) {
            *accepted.entry(case.kind).or_default() += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} case(s) wrong:\n{}",
        failures.len(),
        failures.join("\n")
    );

    // No hot loop: over ten quiet seconds each controller reconciles at most a few times per object it holds.
    let read = || async {
        reqwest::get(sandbox.manager_metrics_url())
            .await
            .expect("the manager still serves metrics")
            .text()
            .await
            .expect("metrics")
    };
    let before = read().await;
    tokio::time::sleep(Duration::from_secs(10)).await; // a measurement window, not a wait for a state
    let after = read().await;
    for kind in [Kind::NebariApp, Kind::Credential, Kind::Project, Kind::Inventory] {
        let ran = metrics::reconciles(&after, kind.controller()) - metrics::reconciles(&before, kind.controller());
        let objects = accepted.get(&kind).copied().unwrap_or(0) + 2;
        eprintln!(
            "MEASURE bad input: {:?} reconciled {ran} times in 10 s holding {objects} objects",
            kind
        );
        assert!(
            ran <= 5 * objects,
            "{kind:?}: {ran} reconciles in 10 s for {objects} objects"
        );
    }

    // No panic, and writes only where the operator's objects live.
    let log = std::fs::read_to_string(sandbox.manager_log()).expect("manager log");
    assert!(!log.contains("panicked"), "the manager panicked");
    let allowed: BTreeSet<&str> = BTreeSet::from([
        "",
        "default",
        "services",
        "openstack",
        "waldur-system",
        "envoy-gateway-system",
        "platform-operator-system",
    ]);
    let strays: Vec<String> = sandbox
        .api()
        .requests_of(sandbox.manager_user())
        .into_iter()
        .filter(|(verb, _, _)| {
            matches!(
                verb.as_str(),
                "create" | "update" | "patch" | "delete" | "deletecollection"
            )
        })
        .filter(|(_, _, namespace)| !allowed.contains(namespace.as_str()))
        .map(|(verb, resource, namespace)| format!("{verb} {resource} in {namespace}"))
        .collect();
    assert!(
        strays.is_empty(),
        "writes outside the operator's namespaces: {strays:?}"
    );
    sandbox.stop().await;
}
