//! The namespaced install (`manifests/overlays/namespaced`): the manager holds Roles only, in the namespace it
//! watches, the gateway namespace and next to its credentials, and still serves an app with auth and TLS.

use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleBinding};
use kube::api::{Api, ListParams};
use serde_json::json;

use crate::support::{NAMESPACED_INSTALL_NAMESPACE, Setup, World, http_routes, security_policies};

#[tokio::test]
async fn a_namespaced_install_serves_an_app_with_auth_and_tls_holding_only_roles() {
    let world = World::start(Setup {
        cluster_issuer: true,
        namespaced: true,
        ..Setup::default()
    })
    .await;
    let ns = world.namespace.clone();
    assert_eq!(ns, NAMESPACED_INSTALL_NAMESPACE);

    // Nothing binds the manager cluster-wide.
    let user_sa = |subjects: &Option<Vec<k8s_openapi::api::rbac::v1::Subject>>| {
        subjects
            .iter()
            .flatten()
            .any(|s| s.kind == "ServiceAccount" && s.name == e2e::harness::OPERATOR_SERVICE_ACCOUNT)
    };
    let cluster_bindings: Api<ClusterRoleBinding> = Api::all(world.cluster.client());
    let bound = cluster_bindings.list(&ListParams::default()).await.expect("list");
    assert!(
        !bound.items.iter().any(|b| user_sa(&b.subjects)),
        "the namespaced install binds no ClusterRole to the manager"
    );
    let role_bindings: Api<RoleBinding> = Api::namespaced(world.cluster.client(), &ns);
    let bound = role_bindings.list(&ListParams::default()).await.expect("list");
    assert!(bound.items.iter().any(|b| user_sa(&b.subjects)));

    world
        .apply_app(
            "web",
            json!({"serviceAccountName": "web-sa", "routing": {}, "auth": {"enabled": true}}),
        )
        .await;
    // The overlay's namespace has a `-`, so the gateway-namespace names carry a hash (naming.rs).
    let cert = controllers::nebari_app::naming::AppNames::new(&ns, "web").certificate();
    world.issue_certificate(&cert).await;
    world.wait_ready("web").await;
    for (resource, name) in [(http_routes(), "web-route"), (security_policies(), "web-security")] {
        assert!(world.object(&resource, &ns, name).await.is_some(), "{name} exists");
    }
    assert!(world.secret_data("web-oidc-client").await.is_some());
    // The manager was never refused: the harness checks every answer when the world ends.
}
