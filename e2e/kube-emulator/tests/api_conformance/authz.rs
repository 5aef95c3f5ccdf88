//! Authentication and authorization as kube-apiserver 1.32 answers them, driven by kubectl : bearer tokens and TokenRequest, RBAC with its Forbidden texts,
//! impersonation, access reviews (`kubectl auth can-i`, `--list`, `whoami`), the privilege-escalation check,
//! the apply-that-creates check, owner-reference enforcement, strict field validation of built-in kinds,
//! `/openapi/v2` for `kind: List`, and the decision log that names the rule behind each answer.

use std::process::Output;

use emulator_kit::wait::{Deadline, wait_until};
use serde_json::{Value, json};

use crate::support::Env;

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Creates a ServiceAccount and mints its token with `kubectl create token`.
async fn service_account_token(env: &Env, namespace: &str, name: &str) -> String {
    env.kubectl_ok(&["create", "serviceaccount", name, "-n", namespace], None)
        .await;
    env.kubectl_ok(&["create", "token", name, "-n", namespace], None)
        .await
        .trim()
        .to_string()
}

/// Authentication: no token or an unknown one gets the upstream 401 Status.
#[tokio::test]
async fn missing_or_unknown_tokens_are_unauthorized() {
    let env = Env::start_emulated().await;
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(env.emulator().ca_pem().as_bytes()).expect("CA"))
        .build()
        .expect("client");
    let expected = json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
        "message":"Unauthorized","reason":"Unauthorized","code":401});
    for token in [None, Some("not-a-token")] {
        let mut request = client.get(env.url("/api/v1/namespaces"));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.expect("sent");
        assert_eq!(response.status().as_u16(), 401);
        let body: Value = response.json().await.expect("json");
        assert_eq!(body, expected);
    }
    let out = env.kubectl_as("not-a-token", &["get", "configmaps"], None).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("You must be logged in to the server"),
        "{}",
        stderr(&out)
    );
}

/// TokenRequest mints a ServiceAccount token; RBAC judges it with kube-apiserver's Forbidden text until a
/// RoleBinding grants access, and `kubectl auth can-i` (also `--as` and `--list`) and `whoami` agree.
#[tokio::test]
async fn service_account_tokens_are_judged_by_rbac_and_can_i_agrees() {
    let env = Env::start_emulated().await;
    let token = service_account_token(&env, "default", "bot").await;
    let refused = env.kubectl_as(&token, &["get", "configmaps"], None).await;
    assert!(!refused.status.success());
    assert_eq!(
        stderr(&refused).trim(),
        "Error from server (Forbidden): configmaps is forbidden: User \"system:serviceaccount:default:bot\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    let whoami = env.kubectl_as(&token, &["auth", "whoami", "-o", "json"], None).await;
    let whoami: Value = serde_json::from_str(&stdout(&whoami)).expect("whoami JSON");
    assert_eq!(
        whoami["status"]["userInfo"]["username"],
        "system:serviceaccount:default:bot"
    );
    assert_eq!(
        whoami["status"]["userInfo"]["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );

    env.kubectl_ok(
        &[
            "create",
            "role",
            "reader",
            "--verb=get,list,watch",
            "--resource=configmaps",
            "-n",
            "default",
        ],
        None,
    )
    .await;
    env.kubectl_ok(
        &[
            "create",
            "rolebinding",
            "bot-reads",
            "--role=reader",
            "--serviceaccount=default:bot",
            "-n",
            "default",
        ],
        None,
    )
    .await;
    env.kubectl_ok(&["create", "configmap", "settings", "--from-literal=a=b"], None)
        .await;
    let listed = env.kubectl_as(&token, &["get", "configmaps", "-o", "name"], None).await;
    assert!(stdout(&listed).contains("configmap/settings"), "{}", stderr(&listed));

    let as_bot = "--as=system:serviceaccount:default:bot";
    assert_eq!(
        env.kubectl_ok(&["auth", "can-i", "list", "configmaps", as_bot], None)
            .await
            .trim(),
        "yes"
    );
    let no = env
        .kubectl(&["auth", "can-i", "delete", "configmaps", as_bot], None)
        .await;
    assert_eq!(stdout(&no).trim(), "no");
    assert_eq!(no.status.code(), Some(1));
    let own = env
        .kubectl_as(&token, &["auth", "can-i", "watch", "configmaps"], None)
        .await;
    assert_eq!(stdout(&own).trim(), "yes");
    let list = env.kubectl_ok(&["auth", "can-i", "--list", as_bot], None).await;
    assert!(
        list.lines()
            .any(|l| l.starts_with("configmaps") && l.contains("[get list watch]")),
        "{list}"
    );
    assert!(
        list.lines()
            .any(|l| l.starts_with("selfsubjectaccessreviews.authorization.k8s.io"))
    );

    // The decision log names the rule that allowed the ServiceAccount's list.
    let decisions = env.emulator().decisions();
    let row = decisions
        .iter()
        .find(|r| {
            r.user == "system:serviceaccount:default:bot" && r.verb == "list" && r.resource == "configmaps" && r.allowed
        })
        .expect("a decision for the list");
    assert_eq!(row.binding, "RoleBinding/default/bot-reads");
    assert_eq!(row.rule, "Role/default/reader#0");
    assert!(
        decisions
            .iter()
            .any(|r| r.user == "system:serviceaccount:default:bot" && !r.allowed && r.verb == "list"),
        "the refused list is recorded too"
    );
}

/// Impersonation needs the `impersonate` verb; with it, requests run as the impersonated user and group.
#[tokio::test]
async fn impersonation_needs_the_impersonate_verb() {
    let env = Env::start_emulated().await;
    let tenant = env.emulator().mint_token("tenant", &[]);
    let refused = env
        .kubectl_as(
            &tenant,
            &["get", "--raw", "/api/v1/namespaces/default/configmaps", "--as=someone"],
            None,
        )
        .await;
    assert_eq!(
        stderr(&refused).trim(),
        "Error from server (Forbidden): users \"someone\" is forbidden: User \"tenant\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );
    env.kubectl_ok(
        &[
            "create",
            "clusterrole",
            "impersonator",
            "--verb=impersonate",
            "--resource=users,groups",
        ],
        None,
    )
    .await;
    env.kubectl_ok(
        &[
            "create",
            "clusterrolebinding",
            "tenant-impersonates",
            "--clusterrole=impersonator",
            "--user=tenant",
        ],
        None,
    )
    .await;
    let acting = env
        .kubectl_as(
            &tenant,
            &["auth", "whoami", "--as=someone", "--as-group=team", "-o", "json"],
            None,
        )
        .await;
    let who: Value = serde_json::from_str(&stdout(&acting)).unwrap_or_else(|_| panic!("{}", stderr(&acting)));
    assert_eq!(who["status"]["userInfo"]["username"], "someone");
    assert_eq!(
        who["status"]["userInfo"]["groups"],
        json!(["team", "system:authenticated"])
    );
}

/// A user may grant only what it holds: a Role or RoleBinding beyond that is refused with the missing rules
/// listed, unless the user has `escalate` (Roles) or `bind` on the role.
#[tokio::test]
async fn granting_more_than_one_holds_is_refused_unless_escalate_or_bind() {
    let env = Env::start_emulated().await;
    let tenant = env.emulator().mint_token("tenant", &[]);
    env.kubectl_ok(
        &[
            "create",
            "role",
            "rbac-writer",
            "--verb=create",
            "--resource=roles,rolebindings",
            "-n",
            "default",
        ],
        None,
    )
    .await;
    env.kubectl_ok(
        &[
            "create",
            "role",
            "cm-reader",
            "--verb=get",
            "--resource=configmaps",
            "-n",
            "default",
        ],
        None,
    )
    .await;
    for role in ["rbac-writer", "cm-reader"] {
        env.kubectl_ok(
            &[
                "create",
                "rolebinding",
                &format!("tenant-{role}"),
                &format!("--role={role}"),
                "--user=tenant",
            ],
            None,
        )
        .await;
    }
    let ok = env
        .kubectl_as(
            &tenant,
            &["create", "role", "narrow", "--verb=get", "--resource=configmaps"],
            None,
        )
        .await;
    assert!(ok.status.success(), "{}", stderr(&ok));
    let refused = env
        .kubectl_as(
            &tenant,
            &[
                "create",
                "role",
                "wide",
                "--verb=get,list",
                "--resource=secrets,configmaps",
            ],
            None,
        )
        .await;
    assert_eq!(
        stderr(&refused).trim(),
        "Error from server (Forbidden): roles.rbac.authorization.k8s.io \"wide\" is forbidden: user \"tenant\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"list\"]}\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}"
    );
    let bind_admin = env
        .kubectl_as(
            &tenant,
            &[
                "create",
                "rolebinding",
                "me-admin",
                "--clusterrole=cluster-admin",
                "--user=tenant",
            ],
            None,
        )
        .await;
    assert!(!bind_admin.status.success());
    assert!(
        stderr(&bind_admin)
            .contains("rolebindings.rbac.authorization.k8s.io \"me-admin\" is forbidden: user \"tenant\""),
        "{}",
        stderr(&bind_admin)
    );
    // `bind` on one ClusterRole lets the tenant hand it out in the namespace without holding it.
    env.kubectl_ok(
        &[
            "create",
            "role",
            "binder",
            "--verb=bind",
            "--resource=clusterroles.rbac.authorization.k8s.io",
            "--resource-name=view",
            "-n",
            "default",
        ],
        None,
    )
    .await;
    env.kubectl_ok(
        &[
            "create",
            "rolebinding",
            "tenant-binder",
            "--role=binder",
            "--user=tenant",
        ],
        None,
    )
    .await;
    let bound = env
        .kubectl_as(
            &tenant,
            &[
                "create",
                "rolebinding",
                "guest-view",
                "--clusterrole=view",
                "--user=guest",
            ],
            None,
        )
        .await;
    assert!(bound.status.success(), "{}", stderr(&bound));
}

/// A server-side apply that creates is also authorized as `create`; `patch` alone only updates.
#[tokio::test]
async fn an_apply_that_creates_needs_create_as_well_as_patch() {
    let env = Env::start_emulated().await;
    let tenant = env.emulator().mint_token("tenant", &[]);
    env.kubectl_ok(
        &[
            "create",
            "role",
            "patcher",
            "--verb=get,patch",
            "--resource=configmaps",
            "-n",
            "default",
        ],
        None,
    )
    .await;
    env.kubectl_ok(
        &[
            "create",
            "rolebinding",
            "tenant-patches",
            "--role=patcher",
            "--user=tenant",
        ],
        None,
    )
    .await;
    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: b\n";
    let refused = env
        .kubectl_as(&tenant, &["apply", "--server-side", "-f", "-"], Some(manifest))
        .await;
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("configmaps \"applied\" is forbidden: "),
        "{}",
        stderr(&refused)
    );
    assert!(
        !stderr(&refused).contains("cannot create"),
        "the apply-create refusal carries no RBAC text"
    );
    env.kubectl_ok(&["create", "configmap", "applied"], None).await;
    let updated = env
        .kubectl_as(&tenant, &["apply", "--server-side", "-f", "-"], Some(manifest))
        .await;
    assert!(updated.status.success(), "{}", stderr(&updated));
}

/// OwnerReferencesPermissionEnforcement: `blockOwnerDeletion` needs update on the owner's finalizers.
#[tokio::test]
async fn blocking_an_owners_deletion_needs_update_on_its_finalizers() {
    let env = Env::start_emulated().await;
    let tenant = env.emulator().mint_token("tenant", &[]);
    env.kubectl_ok(
        &[
            "create",
            "role",
            "cm-writer",
            "--verb=get,create,delete",
            "--resource=configmaps",
            "-n",
            "default",
        ],
        None,
    )
    .await;
    env.kubectl_ok(
        &[
            "create",
            "rolebinding",
            "tenant-writes",
            "--role=cm-writer",
            "--user=tenant",
        ],
        None,
    )
    .await;
    env.kubectl_ok(&["create", "configmap", "owner"], None).await;
    let owner: Value =
        serde_json::from_str(&env.kubectl_ok(&["get", "configmap", "owner", "-o", "json"], None).await).expect("json");
    let dependent = |block: bool| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": if block {"blocking"} else {"plain"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
            "uid": owner["metadata"]["uid"], "blockOwnerDeletion": block}]}})
        .to_string()
    };
    let plain = env
        .kubectl_as(&tenant, &["create", "-f", "-"], Some(&dependent(false)))
        .await;
    assert!(plain.status.success(), "{}", stderr(&plain));
    let blocking = env
        .kubectl_as(&tenant, &["create", "-f", "-"], Some(&dependent(true)))
        .await;
    assert!(
        stderr(&blocking).contains(
            "configmaps \"blocking\" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: , <nil>"
        ),
        "{}",
        stderr(&blocking)
    );
}

/// A ClusterRole with an aggregationRule grants the rules of the ClusterRoles its selectors match, and the
/// aggregation controller writes them into it.
#[tokio::test]
async fn aggregated_cluster_roles_grant_and_show_the_rules_they_select() {
    let env = Env::start_emulated().await;
    let tenant = env.emulator().mint_token("tenant", &[]);
    let roles = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: aggregate
aggregationRule:
  clusterRoleSelectors:
    - matchLabels:
        example.com/aggregate: "true"
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: part
  labels:
    example.com/aggregate: "true"
rules:
  - apiGroups: [""]
    resources: ["services"]
    verbs: ["list"]
"#;
    env.kubectl_ok(&["apply", "-f", "-"], Some(roles)).await;
    env.kubectl_ok(
        &[
            "create",
            "clusterrolebinding",
            "tenant-aggregate",
            "--clusterrole=aggregate",
            "--user=tenant",
        ],
        None,
    )
    .await;
    let listed = env.kubectl_as(&tenant, &["get", "services", "-A"], None).await;
    assert!(listed.status.success(), "{}", stderr(&listed));
    wait_until("the aggregated rules are written", Deadline::secs(10), || async {
        let role = env
            .kubectl_ok(&["get", "clusterrole", "aggregate", "-o", "json"], None)
            .await;
        let role: Value = serde_json::from_str(&role).map_err(|e| e.to_string())?;
        let wanted = json!([{"apiGroups": [""], "resources": ["services"], "verbs": ["list"]}]);
        Ok((role["rules"] == wanted).then_some(()))
    })
    .await;
}

/// Strict field validation covers built-in kinds: `kubectl apply` refuses an unknown field (the shipped
/// leader-election RoleBinding once had `roleRef.namespace`), `--validate=warn` warns and drops it.
#[tokio::test]
async fn unknown_fields_of_built_in_kinds_are_refused_under_strict_and_warned_under_warn() {
    let env = Env::start().await;
    let binding = "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: leader\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: leader-election-role\n  namespace: system\nsubjects:\n  - kind: ServiceAccount\n    name: controller-manager\n    namespace: system\n";
    let strict = env.kubectl(&["apply", "-f", "-"], Some(binding)).await;
    assert!(!strict.status.success());
    assert_eq!(
        stderr(&strict).trim(),
        "Error from server (BadRequest): error when creating \"STDIN\": RoleBinding in version \"v1\" cannot be handled as a RoleBinding: strict decoding error: unknown field \"roleRef.namespace\""
    );
    let warned = env
        .kubectl(&["apply", "--validate=warn", "-f", "-"], Some(binding))
        .await;
    assert!(warned.status.success(), "{}", stderr(&warned));
    assert!(
        stderr(&warned).contains("Warning: unknown field \"roleRef.namespace\""),
        "{}",
        stderr(&warned)
    );
    let stored: Value = serde_json::from_str(
        &env.kubectl_ok(&["get", "rolebinding", "leader", "-o", "json"], None)
            .await,
    )
    .expect("json");
    assert!(
        stored["roleRef"].get("namespace").is_none(),
        "the unknown field is dropped"
    );
}

/// `kubectl get -o yaml` prints a `kind: List`; applying it back (a backup/restore step) makes kubectl fetch
/// `/openapi/v2`, which the emulator serves.
#[tokio::test]
async fn the_list_kubectl_get_prints_applies_back() {
    let env = Env::start().await;
    for name in ["first", "second"] {
        env.kubectl_ok(&["create", "configmap", name, "--from-literal=k=v"], None)
            .await;
    }
    let backup = env
        .kubectl_ok(&["get", "configmaps", "first", "second", "-o", "yaml"], None)
        .await;
    assert!(backup.contains("kind: List"));
    env.kubectl_ok(&["delete", "configmap", "first", "second"], None).await;
    let restored = env.kubectl(&["apply", "-f", "-"], Some(&backup)).await;
    assert!(restored.status.success(), "{}", stderr(&restored));
    assert!(
        stdout(&restored).contains("configmap/first created"),
        "{}",
        stdout(&restored)
    );
    env.kubectl_ok(&["get", "configmap", "second"], None).await;
}
