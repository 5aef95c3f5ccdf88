//! The manager runs under the shipped RBAC, and the harness notices every Forbidden it is answered: take a grant
//! away and the refusal is reported with kube-apiserver's text, and the app says what failed.

use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use crate::support::{Setup, World};

#[tokio::test]
async fn a_grant_taken_away_is_answered_forbidden_and_caught_by_the_harness() {
    let mut world = World::start(Setup::default()).await;
    let ns = world.namespace.clone();
    // A cluster admin takes the HTTPRoute rule out of the controller's ClusterRole.
    let roles: Api<ClusterRole> = Api::all(world.cluster.client());
    let role_name = "platform-operator-nebariapp-role";
    let mut role = roles.get(role_name).await.expect("the shipped ClusterRole");
    let rules = role.rules.take().unwrap_or_default();
    let kept: Vec<_> = rules
        .into_iter()
        .filter(|r| !r.resources.iter().flatten().any(|res| res == "httproutes"))
        .collect();
    roles
        .patch(
            role_name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"rules": kept})),
        )
        .await
        .expect("narrow the role");

    world.apply_app("web", json!({"routing": {}})).await;
    let message = world
        .wait_condition_containing("web", "RoutingReady", "False", "KubernetesAPIError", "forbidden")
        .await;
    assert!(
        !message.contains("Status {"),
        "no raw API responses in conditions: {message}"
    );

    let refused = world.manager().unexpected_forbidden();
    let expected = format!(
        "httproutes.gateway.networking.k8s.io \"web-route\" is forbidden: User \"system:serviceaccount:platform-operator-system:platform-operator-controller-manager\" cannot get resource \"httproutes\" in API group \"gateway.networking.k8s.io\" in the namespace \"{ns}\""
    );
    assert!(
        refused.iter().any(|f| f.message == expected),
        "the harness saw the refusal: {refused:#?}"
    );
    world.manager_mut().expect_forbidden("resource \"httproutes\"");
}
