//! Emulator conformance for role template bindings (Part B3 and Part C items 4 and 7 of
//! `keycloak-rancher-api.md`).

use rancher_emulator::{DuplicateBindingPolicy, RoleTemplateSeed};
use serde_json::json;

use crate::support::{Env, ids};

const GROUP: &str = "keycloakoidc_group://c_local_team_member";

// Part C 4 and 7 / B3: 201 with `<backingNs>:prtb-xxxxx` ids, the subject set and the others null.
#[tokio::test]
async fn prtbs_are_created_with_opaque_ids_in_the_backing_namespace() {
    let env = Env::start().await;
    let project = env.create_project("local", "bound").await;
    let created = env
        .post(
            "/v3/projectroletemplatebindings",
            json!({"type": "projectRoleTemplateBinding", "projectId": project, "roleTemplateId": "project-member",
                   "groupPrincipalId": GROUP}),
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let id = created.body["id"].as_str().expect("id");
    let (namespace, name) = id.split_once(':').expect("ns:name");
    assert_eq!(
        namespace,
        project.replace(':', "-"),
        "2.9+ backing namespace <clusterId>-<projectName>"
    );
    assert!(name.starts_with("prtb-"));
    assert_eq!(created.body["type"], "projectRoleTemplateBinding");
    assert_eq!(created.body["groupPrincipalId"], GROUP);
    for field in ["userId", "userPrincipalId", "groupId", "namespaceId"] {
        assert_eq!(created.body[field], json!(null), "{field}");
    }
    let found = env
        .get(&format!(
            "/v3/projectroletemplatebindings?projectId={project}&roleTemplateId=project-member&groupPrincipalId={}",
            GROUP.replace(':', "%3A").replace('/', "%2F")
        ))
        .await;
    assert_eq!(ids(&found.body), vec![id.to_string()]);
    let other_role = env
        .get(&format!(
            "/v3/projectroletemplatebindings?projectId={project}&roleTemplateId=read-only"
        ))
        .await;
    assert!(ids(&other_role.body).is_empty(), "filters combine with AND");
    let deleted = env.delete(&format!("/v3/projectroletemplatebindings/{id}")).await;
    assert_eq!(deleted.status, 200);
    let gone = env.delete(&format!("/v3/projectroletemplatebindings/{id}")).await;
    assert_eq!(gone.status, 404);
    assert_eq!(gone.body["code"], "NotFound");
}

// Part C 7 / B3 errors: 422 MissingRequired; exactly one subject; unknown, locked and wrong-context templates;
// malformed or unknown projects — the 400s from the webhook.
#[tokio::test]
async fn prtb_mistakes_are_refused() {
    let env = Env::start().await;
    env.rancher.add_role_template(RoleTemplateSeed {
        locked: true,
        ..RoleTemplateSeed::new("old-role", "project")
    });
    let project = env.create_project("local", "strict").await;
    let missing = env
        .post(
            "/v3/projectroletemplatebindings",
            json!({"projectId": project, "groupPrincipalId": GROUP}),
        )
        .await;
    assert_eq!(
        (missing.status, missing.body["fieldName"].clone()),
        (422, json!("roleTemplateId"))
    );
    let cases = [
        (
            json!({"projectId": project, "roleTemplateId": "project-member"}),
            "binding must target only a user",
        ),
        (
            json!({"projectId": project, "roleTemplateId": "project-member", "groupPrincipalId": GROUP, "userId": "u-1"}),
            "binding must target only a user",
        ),
        (
            json!({"projectId": project, "roleTemplateId": "no-such-role", "groupPrincipalId": GROUP}),
            "the referenced role template was not found",
        ),
        (
            json!({"projectId": project, "roleTemplateId": "old-role", "groupPrincipalId": GROUP}),
            "is locked and cannot be assigned",
        ),
        (
            json!({"projectId": project, "roleTemplateId": "cluster-owner", "groupPrincipalId": GROUP}),
            "Unsupported value: \"cluster\"",
        ),
        (
            json!({"projectId": "garbage", "roleTemplateId": "project-member", "groupPrincipalId": GROUP}),
            "must be of the form",
        ),
        (
            json!({"projectId": "local:p-zzzzz", "roleTemplateId": "project-member", "groupPrincipalId": GROUP}),
            "specified project p-zzzzz not found in local",
        ),
    ];
    for (body, expected) in cases {
        let answer = env.post("/v3/projectroletemplatebindings", body.clone()).await;
        assert_eq!(answer.status, 400, "{body}: {:?}", answer.body);
        assert_eq!(answer.body["code"], "BadRequest");
        let message = answer.body["message"].as_str().expect("message");
        assert!(
            message.starts_with(
                "admission webhook \"rancher.cattle.io.projectroletemplatebindings.management.cattle.io\" denied the request:"
            ),
            "{message}"
        );
        assert!(message.contains(expected), "{message} should mention {expected}");
    }
}

// Part C 7 / B3 "Duplicate bindings" ≤ 2.13: accepted under a new name.
#[tokio::test]
async fn duplicates_are_accepted_like_rancher_2_13() {
    let env = Env::start().await;
    let project = env.create_project("local", "dup").await;
    let body = json!({"projectId": project, "roleTemplateId": "project-member", "groupPrincipalId": GROUP});
    let first = env.post("/v3/projectroletemplatebindings", body.clone()).await;
    let second = env.post("/v3/projectroletemplatebindings", body).await;
    assert_eq!((first.status, second.status), (201, 201));
    assert_ne!(first.body["id"], second.body["id"]);
}

// Part C 7 / B3 "Duplicate bindings" ≥ 2.14: 409 (Conflict "duplicate prtb not allowed", or AlreadyExists when
// the content-derived name collides); an explicit name reused is 409 AlreadyExists.
#[tokio::test]
async fn duplicates_are_refused_like_rancher_2_14() {
    let env = Env::start().await;
    let project = env.create_project("local", "dup").await;
    let body = json!({"projectId": project, "roleTemplateId": "project-member", "groupPrincipalId": GROUP});
    let old = env.post("/v3/projectroletemplatebindings", body.clone()).await;
    assert_eq!(old.status, 201, "made while duplicates were still accepted");
    env.rancher.set_duplicate_bindings(DuplicateBindingPolicy::Reject);
    let refused = env.post("/v3/projectroletemplatebindings", body.clone()).await;
    assert_eq!(refused.status, 409);
    assert_eq!(
        refused.body,
        json!({"baseType": "error", "code": "Conflict",
               "message": "admission webhook \"rancher.cattle.io.projectroletemplatebindings.management.cattle.io\" denied the request: duplicate prtb not allowed",
               "status": 409, "type": "error"})
    );
    let other_role = json!({"projectId": project, "roleTemplateId": "read-only", "groupPrincipalId": GROUP});
    let first = env.post("/v3/projectroletemplatebindings", other_role.clone()).await;
    assert_eq!(first.status, 201);
    let same_name = env.post("/v3/projectroletemplatebindings", other_role).await;
    assert_eq!(same_name.status, 409);
    assert_eq!(same_name.body["code"], "AlreadyExists");
    let named =
        json!({"projectId": project, "roleTemplateId": "workloads-view", "groupPrincipalId": GROUP, "name": "mine"});
    assert_eq!(
        env.post("/v3/projectroletemplatebindings", named.clone()).await.status,
        201
    );
    let reused = env
        .post(
            "/v3/projectroletemplatebindings",
            json!({"projectId": project, "roleTemplateId": "secrets-view", "userId": "u-1", "name": "mine"}),
        )
        .await;
    assert_eq!(reused.status, 409);
    assert_eq!(reused.body["code"], "AlreadyExists");
}

// B3 "PUT": roleTemplateId, projectId and a set subject cannot change.
#[tokio::test]
async fn binding_updates_cannot_change_role_project_or_subject() {
    let env = Env::start().await;
    let project = env.create_project("local", "immutable").await;
    let created = env
        .post(
            "/v3/projectroletemplatebindings",
            json!({"projectId": project, "roleTemplateId": "project-member", "groupPrincipalId": GROUP}),
        )
        .await;
    let id = created.body["id"].as_str().expect("id").to_string();
    for body in [
        json!({"roleTemplateId": "project-owner"}),
        json!({"projectId": "local:p-other"}),
        json!({"groupPrincipalId": "keycloakoidc_group://other"}),
    ] {
        let answer = env
            .put(&format!("/v3/projectroletemplatebindings/{id}"), body.clone())
            .await;
        assert_eq!(answer.status, 400, "{body}");
        assert!(
            answer.body["message"]
                .as_str()
                .is_some_and(|m| m.contains("field is immutable"))
        );
    }
    let labelled = env
        .put(
            &format!("/v3/projectroletemplatebindings/{id}"),
            json!({"labels": {"a": "b"}}),
        )
        .await;
    assert_eq!(labelled.status, 200);
    assert_eq!(labelled.body["labels"]["a"], "b");
}

// Cluster-scope bindings (as rancher-keycloak-operator 0.4.0 writes CRTBs): `<clusterId>:crtb-xxxxx`, cluster-context templates only.
#[tokio::test]
async fn crtbs_bind_groups_to_clusters() {
    let env = Env::start().await;
    let created = env
        .post(
            "/v3/clusterRoleTemplateBindings",
            json!({"type": "clusterRoleTemplateBinding", "clusterId": "local", "roleTemplateId": "cluster-owner", "groupPrincipalId": GROUP}),
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let id = created.body["id"].as_str().expect("id");
    assert!(id.starts_with("local:crtb-"), "{id}");
    let wrong_context = env
        .post(
            "/v3/clusterroletemplatebindings",
            json!({"clusterId": "local", "roleTemplateId": "project-member", "groupPrincipalId": GROUP}),
        )
        .await;
    assert_eq!(wrong_context.status, 400);
    let unknown_cluster = env
        .post(
            "/v3/clusterroletemplatebindings",
            json!({"clusterId": "c-m-nope", "roleTemplateId": "cluster-owner", "groupPrincipalId": GROUP}),
        )
        .await;
    assert_eq!(unknown_cluster.status, 400);
    let listed = env.get("/v3/clusterroletemplatebindings?clusterId=local").await;
    assert_eq!(ids(&listed.body), vec![id.to_string()]);
}

// B3 "Role template ids": project-owner, project-member, read-only and create-ns exist with context project.
#[tokio::test]
async fn the_documented_role_templates_exist() {
    let env = Env::start().await;
    let answer = env.get("/v3/roletemplates?context=project").await;
    let found = ids(&answer.body);
    for id in ["project-owner", "project-member", "read-only", "create-ns"] {
        assert!(found.contains(&id.to_string()), "{id} missing from {found:?}");
    }
}
