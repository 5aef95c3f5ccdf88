//! What the CRD refuses, `kubectl apply` refuses with a message naming the field and the rule; what the
//! original operator's users already have (its published samples) and our samples apply unchanged.

use std::path::PathBuf;

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use kube::api::{ObjectMeta, PostParams};
use serde_json::json;

use crate::support::{Setup, World};

/// Invalid specs and what the refusal must say: the field path and the rule broken.
fn invalid_specs() -> Vec<(&'static str, serde_json::Value, &'static [&'static str])> {
    vec![
        (
            "uppercase hostname",
            json!({"hostname": "Web.Example.com"}),
            &["spec.hostname", "should match"],
        ),
        ("empty hostname", json!({"hostname": ""}), &["spec.hostname"]),
        (
            "port 0",
            json!({"service": {"name": "web", "port": 0}}),
            &["spec.service.port", "greater than or equal to 1"],
        ),
        (
            "port 70000",
            json!({"service": {"name": "web", "port": 70000}}),
            &["spec.service.port", "less than or equal to 65535"],
        ),
        (
            "no service name",
            json!({"service": {"port": 80}}),
            &["spec.service.name", "Required value"],
        ),
        (
            "unknown gateway",
            json!({"gateway": "private"}),
            &["spec.gateway", "Unsupported value", "\"public\"", "\"internal\""],
        ),
        (
            "relative path",
            json!({"routing": {"routes": [{"pathPrefix": "api"}]}}),
            &["spec.routing.routes[0].pathPrefix", "should match '^/.*'"],
        ),
        (
            "unknown path type",
            json!({"routing": {"publicRoutes": [{"pathPrefix": "/a", "pathType": "Regex"}]}}),
            &["spec.routing.publicRoutes[0].pathType", "Unsupported value"],
        ),
        (
            "unknown provider",
            json!({"auth": {"enabled": true, "provider": "okta"}}),
            &["spec.auth.provider", "Unsupported value"],
        ),
        (
            "forwardAccessToken without gateway enforcement",
            json!({"auth": {"enabled": true, "enforceAtGateway": false, "forwardAccessToken": true}}),
            &["spec.auth", "forwardAccessToken: true requires enforceAtGateway: true"],
        ),
        (
            "generic-oidc without issuer",
            json!({"auth": {"enabled": true, "provider": "generic-oidc", "clientSecretRef": "oidc"}}),
            &["spec.auth", "issuerURL is required when provider is generic-oidc"],
        ),
        (
            "deny redirect header type",
            json!({"auth": {"enabled": true, "denyRedirect": [{"name": "X-Requested-With", "type": "Glob", "value": "x"}]}}),
            &["spec.auth.denyRedirect[0].type", "Unsupported value"],
        ),
        (
            "a group name that reads as a path",
            json!({"auth": {"enabled": true, "groups": ["/shop-vip"]}}),
            &["spec.auth.groups[0]", "should match '^[^/]+$'"],
        ),
        (
            "generic-oidc issuer over http",
            json!({"auth": {"enabled": true, "provider": "generic-oidc", "issuerURL": "http://idp.example.com"}}),
            &["spec.auth.issuerURL", "should match '^https://'"],
        ),
        (
            "a landing page icon that runs script",
            json!({"landingPage": {"enabled": true, "displayName": "Web", "icon": "javascript:alert(1)"}}),
            &["spec.landingPage.icon", "should match"],
        ),
        (
            "a landing page link that runs script",
            json!({"landingPage": {"enabled": true, "displayName": "Web", "externalUrl": "JavaScript:alert(1)"}}),
            &["spec.landingPage.externalUrl", "should match '^https?://'"],
        ),
        (
            "landing page priority",
            json!({"landingPage": {"enabled": true, "displayName": "Web", "priority": 5000}}),
            &["spec.landingPage.priority"],
        ),
        (
            "landing page without a display name",
            json!({"landingPage": {"enabled": true}}),
            &[
                "spec.landingPage",
                "displayName is required when the landing page is enabled",
            ],
        ),
        (
            "landing page with an empty display name",
            json!({"landingPage": {"enabled": true, "displayName": ""}}),
            &[
                "spec.landingPage",
                "displayName is required when the landing page is enabled",
            ],
        ),
    ]
}

#[tokio::test]
async fn invalid_specs_are_refused_by_kubectl_apply_with_messages_naming_the_field_and_the_rule() {
    let world = World::start(Setup {
        manager: false,
        ..Setup::default()
    })
    .await;
    for (what, spec, expected) in invalid_specs() {
        let document = world.app_document("web", spec);
        let stderr = world
            .cluster
            .kubectl()
            .run_with_stdin(&["apply", "-f", "-"], Some(&document.to_string()))
            .await
            .expect_failure(what);
        eprintln!("VALIDATION {what}: {}", stderr.trim());
        for needle in expected {
            assert!(
                stderr.contains(needle),
                "{what}: the refusal should mention {needle:?}:\n{stderr}"
            );
        }
    }
    assert!(
        world.apps().get_opt("web").await.expect("read").is_none(),
        "nothing invalid was stored"
    );
}

/// Objects shaped like the original operator's published examples (`crds/tests/fixtures/original-shapes`).
fn original_shape(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../crds/tests/fixtures/original-shapes")
        .join(file)
}

fn samples(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../manifests/samples")
        .join(file)
}

#[tokio::test]
async fn the_original_samples_apply_unchanged_and_our_auth_sample_becomes_ready() {
    let world = World::start(Setup::default()).await;
    world.cluster.create_namespace_named("dev-test", &[]).await;
    let kubectl = world.cluster.kubectl();
    for file in ["nebariapp-config-samples.yaml", "nebariapp-dev-example.yaml"] {
        let path = original_shape(file);
        let path = path.to_string_lossy();
        let namespaced = ["apply", "-n", world.namespace.as_str(), "-f", &path];
        // The dev example names its namespace (dev-test); the others land in the test namespace.
        let args: &[&str] = if file.contains("dev-example") {
            &["apply", "-f", &path]
        } else {
            &namespaced
        };
        kubectl.run(args).await.expect_success(file);
    }
    world
        .apps()
        .delete_collection(&Default::default(), &Default::default())
        .await
        .expect("clear the originals");

    let service = Service {
        metadata: ObjectMeta {
            name: Some("sample-app-service".into()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            ports: Some(vec![ServicePort {
                port: 8080,
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    };
    world
        .services()
        .create(&PostParams::default(), &service)
        .await
        .expect("create the sample's Service");
    let path = samples("reconcilers_v1_nebariapp_auth.yaml");
    kubectl
        .run(&["apply", "-n", &world.namespace, "-f", &path.to_string_lossy()])
        .await
        .expect_success("our auth sample");
    world.wait_ready("auth-app").await;
    let ns = &world.namespace;
    for client in [
        format!("{ns}-auth-app"),
        format!("{ns}-auth-app-spa"),
        format!("{ns}-auth-app-device"),
    ] {
        assert!(
            world.keycloak_client(&client).await.is_some(),
            "the sample provisions {client}"
        );
    }
    let data = world
        .secret_data("auth-app-oidc-client")
        .await
        .expect("the sample's OIDC Secret");
    assert!(data.contains_key("spa-client-id") && data.contains_key("device-client-id"));
}
