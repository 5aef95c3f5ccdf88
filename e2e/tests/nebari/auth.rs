//! Auth on: a Keycloak client with the app's redirect URIs, an OIDC Secret the app's ServiceAccount alone may
//! read, and an Envoy Gateway SecurityPolicy on the route. Provisioning happens once: a reconcile with nothing
//! new makes no Keycloak call, and the force annotation re-provisions and is removed.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{ObjectMeta, PostParams};
use serde_json::json;

use e2e::harness::fault_proxy::DownMode;

use crate::support::{
    ADMIN_PASSWORD, KEYCLOAK_EXTERNAL_URL, Setup, World, breakdown_delta, condition, http_routes, security_policies,
};

/// The request updating a client: made once per provisioning pass.
const UPDATE_CLIENT: &str = "PUT /admin/realms/{realm}/clients/{id}";
/// A client read by its internal id.
const READ_CLIENT: &str = "GET /admin/realms/{realm}/clients/{id}";
/// Read once per provisioning pass of an existing client (the secret the OIDC Secret carries); a client the pass
/// creates gets the secret the operator generated, so it is not read back.
const READ_CLIENT_SECRET: &str = "GET /admin/realms/{realm}/clients/{id}/client-secret";

#[tokio::test]
async fn auth_provisions_a_keycloak_client_an_oidc_secret_a_security_policy_and_rbac_once() {
    let world = World::start(Setup::default()).await;
    let ns = world.namespace.clone();
    let client_id = format!("{ns}-web");
    world.wait_idle().await;
    let (writes, calls, breakdown) = (world.writes(), world.keycloak_requests(), world.write_breakdown());
    let keycloak_before = world.keycloak_breakdown();
    world
        .apply_app(
            "web",
            json!({"serviceAccountName": "web-sa", "routing": {}, "auth": {"enabled": true}}),
        )
        .await;
    let app = world.wait_ready("web").await;
    world.wait_idle().await;
    let first = (world.writes() - writes - 1, world.keycloak_requests() - calls);
    eprintln!(
        "MEASURE auth: first reconcile: {} API writes, {} Keycloak requests; writes incl. the user's create: {:?}",
        first.0,
        first.1,
        breakdown_delta(&breakdown, &world.write_breakdown())
    );
    let keycloak = breakdown_delta(&keycloak_before, &world.keycloak_breakdown());
    eprintln!("MEASURE auth: first reconcile Keycloak requests: {keycloak:?}");
    assert_eq!(
        keycloak.get(READ_CLIENT_SECRET),
        None,
        "the new client's secret is the one the operator created it with"
    );
    let admin_requests: u64 = keycloak
        .iter()
        .filter(|(request, _)| request.contains("/admin/"))
        .map(|(_, n)| *n)
        .sum();
    assert_eq!(
        admin_requests, 5,
        "first pass: find and create the client (not read back), its default scopes, and look for SPA and \
         device clients to remove; no secret read, nothing to revoke on a new client: {keycloak:?}"
    );
    assert_eq!(
        keycloak.get(READ_CLIENT),
        None,
        "the created client is known from what was sent and the id Keycloak answered"
    );
    assert_eq!(
        keycloak.get(UPDATE_CLIENT),
        None,
        "the client is created as it should be: no update after"
    );

    // The confidential client in Keycloak.
    let client = world
        .keycloak_client(&client_id)
        .await
        .expect("the Keycloak client exists");
    assert_eq!(client["publicClient"], false);
    assert_eq!(client["standardFlowEnabled"], true);
    assert_eq!(
        client["redirectUris"],
        json!(["https://web.example.com/oauth2/callback"])
    );
    assert_eq!(client["webOrigins"], json!(["https://web.example.com"]));
    assert_eq!(
        client["attributes"]["post.logout.redirect.uris"],
        "https://web.example.com/*"
    );
    let scopes: Vec<&str> = client["defaultClientScopes"]
        .as_array()
        .expect("scopes")
        .iter()
        .filter_map(|s| s.as_str())
        .collect();
    assert!(
        scopes.contains(&"profile") && scopes.contains(&"email"),
        "default scopes attached: {scopes:?}"
    );

    // The OIDC Secret holds that client's credentials and the browser-facing issuer.
    let data = world
        .secret_data("web-oidc-client")
        .await
        .expect("the OIDC Secret exists");
    assert_eq!(data.get("client-id"), Some(&client_id));
    assert_eq!(
        data.get("client-secret").map(String::as_str),
        client["secret"].as_str(),
        "the client's secret"
    );
    assert_eq!(
        data.get("issuer-url"),
        Some(&format!("{KEYCLOAK_EXTERNAL_URL}/realms/{}", world.realm()))
    );
    assert!(!data.contains_key("spa-client-id") && !data.contains_key("device-client-id"));
    let secret: Secret = world.typed("web-oidc-client").await.expect("Secret");
    assert_eq!(
        secret.metadata.owner_references.unwrap_or_default()[0].uid,
        app.metadata.uid.clone().unwrap_or_default()
    );

    // Only the app's ServiceAccount may read it.
    let role: Role = world.typed("web-oidc-secret-reader").await.expect("the Role exists");
    let rule = &role.rules.expect("rules")[0];
    assert_eq!(
        (rule.verbs.clone(), rule.resources.clone()),
        (vec!["get".to_string()], Some(vec!["secrets".to_string()]))
    );
    assert_eq!(rule.resource_names, Some(vec!["web-oidc-client".to_string()]));
    let binding: RoleBinding = world
        .typed("web-oidc-secret-reader")
        .await
        .expect("the RoleBinding exists");
    assert_eq!(binding.role_ref.name, "web-oidc-secret-reader");
    let subject = &binding.subjects.expect("subjects")[0];
    assert_eq!(
        (subject.kind.as_str(), subject.name.as_str()),
        ("ServiceAccount", "web-sa")
    );

    // The SecurityPolicy runs the OIDC flow for the main route.
    let policy = world
        .object(&security_policies(), &ns, "web-security")
        .await
        .expect("the SecurityPolicy exists");
    assert_eq!(
        policy["spec"]["targetRefs"],
        json!([{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "web-route"}])
    );
    let oidc = &policy["spec"]["oidc"];
    let internal = format!("{}/realms/{}", world.keycloak.url(), world.realm());
    let external = format!("{KEYCLOAK_EXTERNAL_URL}/realms/{}", world.realm());
    assert_eq!(oidc["provider"]["issuer"], internal.as_str());
    assert_eq!(
        oidc["provider"]["tokenEndpoint"],
        format!("{internal}/protocol/openid-connect/token")
    );
    assert_eq!(
        oidc["provider"]["authorizationEndpoint"],
        format!("{external}/protocol/openid-connect/auth")
    );
    assert_eq!(
        oidc["provider"]["endSessionEndpoint"],
        format!("{external}/protocol/openid-connect/logout")
    );
    assert_eq!(oidc["clientID"], client_id.as_str());
    assert_eq!(oidc["clientSecret"]["name"], "web-oidc-client");
    assert_eq!(oidc["redirectURL"], "https://web.example.com/oauth2/callback");
    assert_eq!(oidc["scopes"], json!(["openid", "profile", "email"]));
    assert_eq!(oidc["logoutPath"], "/logout");

    let status = app.status.clone().expect("status");
    assert_eq!(
        condition(&app, "AuthReady").map(|c| (c.0, c.1)),
        Some(("True".into(), "AuthConfigured".into()))
    );
    let reference = status.client_secret_ref.expect("clientSecretRef");
    assert_eq!(
        (reference.name.as_str(), reference.namespace.as_deref()),
        ("web-oidc-client", Some(ns.as_str()))
    );
    let hash = status.auth_config_hash.expect("authConfigHash");
    assert_eq!(hash.len(), 64);
    world.wait_event("web", "Provisioned").await;
    let events = format!("{:?}", world.events("web").await);
    assert!(
        !events.contains(client["secret"].as_str().unwrap_or("-")),
        "the client secret never reaches an event"
    );

    // Nothing changed: no Keycloak call, no write.
    let (writes, calls) = world.measure_noop_reconcile("auth").await;
    assert_eq!(
        (writes, calls),
        (0, 0),
        "a reconcile with nothing to do writes nothing and calls no one"
    );

    // Forced: Keycloak is called again, the annotation goes away, the credentials stay valid.
    let before = world.keycloak_breakdown();
    world
        .annotate_app("web", json!({"nebari.dev/force-reprovision": "true"}))
        .await;
    let annotations_cleared = || async {
        let app = world.app("web").await;
        !app.metadata
            .annotations
            .unwrap_or_default()
            .contains_key("nebari.dev/force-reprovision")
    };
    e2e::harness::wait_until(
        "the force annotation to be removed",
        e2e::harness::Deadline::secs(30),
        || async { Ok(annotations_cleared().await.then_some(())) },
    )
    .await;
    let app = world.wait_ready("web").await;
    world.wait_idle().await;
    let forced = breakdown_delta(&before, &world.keycloak_breakdown());
    assert_eq!(
        forced.get(READ_CLIENT_SECRET),
        Some(&1),
        "forcing re-provisions exactly once: {forced:?}"
    );
    assert_eq!(
        forced.get(UPDATE_CLIENT),
        None,
        "a client that is as it should be is not written: {forced:?}"
    );
    assert_eq!(
        app.status.and_then(|s| s.auth_config_hash),
        Some(hash),
        "same configuration, same hash"
    );
    let client = world.keycloak_client(&client_id).await.expect("client");
    let data = world.secret_data("web-oidc-client").await.expect("Secret");
    assert_eq!(data.get("client-secret").map(String::as_str), client["secret"].as_str());
    let (_, calls) = world.measure_noop_reconcile("auth after force").await;
    assert_eq!(calls, 0, "after the forced pass, reconciles are free again");

    let log = world.manager().log();
    let client_secret = client["secret"].as_str().expect("secret");
    assert!(!log.contains(client_secret), "the client secret never reaches the log");
    assert!(
        !log.contains(ADMIN_PASSWORD),
        "the admin password never reaches the log"
    );
}

/// Fail closed: with authentication required at the gateway but no OIDC client yet (Keycloak down), the app is
/// not exposed at all; once Keycloak answers, the policy and the route appear together.
#[tokio::test]
async fn a_keycloak_outage_withholds_the_route_until_the_policy_can_protect_it() {
    let world = World::start(Setup::default()).await;
    world.keycloak.proxy().go_down(DownMode::Unavailable);
    world
        .apply_app("web", json!({"routing": {}, "auth": {"enabled": true}}))
        .await;
    let message = world
        .wait_condition("web", "AuthReady", "False", "KeycloakUnavailable")
        .await;
    assert!(
        !message.contains("<html"),
        "the condition carries no response body: {message}"
    );
    world
        .wait_condition("web", "RoutingReady", "False", "WaitingForAuth")
        .await;
    world
        .wait_condition("web", "Ready", "False", "KeycloakUnavailable")
        .await;
    assert!(world.secret_data("web-oidc-client").await.is_none());
    assert!(
        world
            .object(&security_policies(), &world.namespace, "web-security")
            .await
            .is_none(),
        "no policy without a client"
    );
    assert!(
        world
            .object(&http_routes(), &world.namespace, "web-route")
            .await
            .is_none(),
        "no route may expose the app before its policy exists"
    );

    world.keycloak.proxy().come_up();
    world.wait_ready("web").await;
    assert!(
        world
            .keycloak_client(&format!("{}-web", world.namespace))
            .await
            .is_some()
    );
    assert!(
        world
            .object(&security_policies(), &world.namespace, "web-security")
            .await
            .is_some()
    );
    assert!(
        world
            .object(&http_routes(), &world.namespace, "web-route")
            .await
            .is_some()
    );
}

/// A protected app whose client Secret disappears (being recreated, say) keeps its SecurityPolicy: the routes
/// stay behind authentication instead of becoming public.
#[tokio::test]
async fn a_vanished_client_secret_never_strips_the_policy_from_a_live_route() {
    let world = World::start(Setup::default()).await;
    create_google_client_secret(&world).await;
    world
        .apply_app(
            "web",
            json!({"routing": {}, "auth": {
                "enabled": true, "provider": "generic-oidc", "issuerURL": "https://accounts.google.com",
                "clientSecretRef": "google-oidc",
            }}),
        )
        .await;
    world.wait_ready("web").await;

    let secrets: kube::Api<Secret> = kube::Api::namespaced(world.cluster.client(), &world.namespace);
    secrets
        .delete("google-oidc", &Default::default())
        .await
        .expect("delete the client Secret");
    world
        .wait_condition("web", "AuthReady", "False", "ClientSecretInvalid")
        .await;
    assert!(
        world
            .object(&security_policies(), &world.namespace, "web-security")
            .await
            .is_some(),
        "the policy from the last good pass still protects the route"
    );
    assert!(
        world
            .object(&http_routes(), &world.namespace, "web-route")
            .await
            .is_some()
    );
}

#[tokio::test]
async fn auth_config_changes_reprovision_and_tls_off_uses_http_redirects() {
    let world = World::start(Setup::default()).await;
    let client_id = format!("{}-web", world.namespace);
    world
        .apply_app("web", json!({"routing": {}, "auth": {"enabled": true}}))
        .await;
    let hash = world
        .wait_ready("web")
        .await
        .status
        .and_then(|s| s.auth_config_hash)
        .expect("hash");

    world
        .apply_app(
            "web",
            json!({"routing": {"tls": {"enabled": false}}, "auth": {"enabled": true, "redirectURI": "/auth/callback", "scopes": ["openid", "groups"]}}),
        )
        .await;
    world
        .wait_object(&security_policies(), &world.namespace, "web-security", |p| {
            p["spec"]["oidc"]["redirectURL"] == "http://web.example.com/auth/callback"
        })
        .await;
    let app = world.wait_ready("web").await;
    assert_ne!(
        app.status.and_then(|s| s.auth_config_hash),
        Some(hash),
        "the hash follows the configuration"
    );
    let client = world.keycloak_client(&client_id).await.expect("client");
    assert_eq!(client["redirectUris"], json!(["http://web.example.com/auth/callback"]));
    let mappers = client["protocolMappers"].as_array().expect("mappers");
    assert!(
        mappers
            .iter()
            .any(|m| m["protocolMapper"] == "oidc-group-membership-mapper"),
        "the groups scope brings the group-membership mapper: {mappers:?}"
    );
}

#[tokio::test]
async fn an_app_doing_oidc_itself_gets_credentials_but_no_security_policy() {
    let world = World::start(Setup::default()).await;
    world
        .apply_app(
            "web",
            json!({"routing": {}, "auth": {"enabled": true, "enforceAtGateway": false}}),
        )
        .await;
    let app = world.wait_ready("web").await;
    let message = condition(&app, "AuthReady").map(|c| c.2).unwrap_or_default();
    assert!(message.contains("handles the OIDC flow itself"), "{message}");
    assert!(
        world
            .secret_data("web-oidc-client")
            .await
            .is_some_and(|d| d.contains_key("issuer-url"))
    );
    assert!(
        world
            .object(&security_policies(), &world.namespace, "web-security")
            .await
            .is_none()
    );
}

#[tokio::test]
async fn generic_oidc_uses_the_client_secret_ref_once_it_exists_and_never_calls_keycloak() {
    let world = World::start(Setup::default()).await;
    let calls = world.keycloak_requests();
    let spec = json!({"routing": {}, "auth": {
        "enabled": true, "provider": "generic-oidc", "issuerURL": "https://accounts.google.com",
        "clientSecretRef": "google-oidc",
    }});
    world.apply_app("web", spec.clone()).await;
    let message = world
        .wait_condition("web", "AuthReady", "False", "ClientSecretInvalid")
        .await;
    assert!(
        message.contains("google-oidc") && message.contains("client-id"),
        "{message}"
    );

    // The Secret appears after the app: the app picks it up without anything else changing.
    create_google_client_secret(&world).await;
    let app = world.wait_ready("web").await;
    let policy = world
        .object(&security_policies(), &world.namespace, "web-security")
        .await
        .expect("policy");
    assert_eq!(
        policy["spec"]["oidc"]["provider"]["issuer"],
        "https://accounts.google.com"
    );
    assert_eq!(policy["spec"]["oidc"]["clientID"], "google-client");
    assert_eq!(policy["spec"]["oidc"]["clientSecret"]["name"], "google-oidc");
    assert_eq!(
        app.status.and_then(|s| s.client_secret_ref).map(|r| r.name),
        Some("google-oidc".to_string())
    );
    assert!(
        world.secret_data("web-oidc-client").await.is_none(),
        "no operator Secret for generic-oidc"
    );
    assert_eq!(world.keycloak_requests(), calls, "generic-oidc never calls Keycloak");
}

/// Groups the gateway cannot enforce (a provider other than Keycloak) withhold the routes even where the app
/// was protected before: the earlier SecurityPolicy checks no groups, so keeping it would serve every user of
/// the provider although the spec now restricts the app to a group. Dropping the groups brings the app back.
#[tokio::test]
async fn groups_the_gateway_cannot_enforce_withhold_the_routes_instead_of_keeping_a_looser_policy() {
    let world = World::start(Setup::default()).await;
    create_google_client_secret(&world).await;
    let spec = |groups: Option<serde_json::Value>| {
        let mut auth = json!({
            "enabled": true, "provider": "generic-oidc", "issuerURL": "https://accounts.google.com",
            "clientSecretRef": "google-oidc",
        });
        if let Some(groups) = groups {
            auth["groups"] = groups;
        }
        json!({"routing": {}, "auth": auth})
    };
    let routed = || async {
        world
            .object(&http_routes(), &world.namespace, "web-route")
            .await
            .is_some()
    };
    world.apply_app("web", spec(None)).await;
    world.wait_ready("web").await;
    assert!(routed().await);

    world.apply_app("web", spec(Some(json!(["admins"])))).await;
    world
        .wait_condition("web", "AuthReady", "False", "GroupsNotEnforceable")
        .await;
    let message = world
        .wait_condition("web", "RoutingReady", "False", "WaitingForAuth")
        .await;
    assert!(message.contains("cannot enforce"), "{message}");
    world
        .wait_object_gone(&http_routes(), &world.namespace, "web-route")
        .await;
    world
        .wait_object_gone(&security_policies(), &world.namespace, "web-security")
        .await;

    world.apply_app("web", spec(None)).await;
    world.wait_ready("web").await;
    assert!(routed().await, "the route is back");
}

#[tokio::test]
async fn a_client_secret_ref_secret_is_noticed_through_a_metadata_only_watch_without_polling() {
    use kube::api::{Patch, PatchParams};

    let world = World::start(Setup {
        api_faults: true,
        ..Setup::default()
    })
    .await;
    let spec = json!({"routing": {}, "auth": {
        "enabled": true, "provider": "generic-oidc", "issuerURL": "https://accounts.google.com",
        "clientSecretRef": "oidc-client",
    }});
    world.apply_app("web", spec).await;
    world
        .wait_condition("web", "AuthReady", "False", "ClientSecretInvalid")
        .await;
    let idle = world.wait_idle().await;
    let metrics = world.manager().metrics().await;
    let polled = e2e::harness::metrics::sum(
        &metrics,
        "controller_runtime_reconcile_total",
        &[("controller", "nebariapp"), ("result", "requeue_after")],
    );
    assert_eq!(
        polled, 0,
        "a missing clientSecretRef Secret must wait for a watch, not a timer"
    );

    // An incomplete Secret: the watch brings a reconcile (nothing else changed), which still reports it.
    let secrets: kube::Api<Secret> = kube::Api::namespaced(world.cluster.client(), &world.namespace);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("oidc-client".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "client-id".to_string(),
            ByteString(b"google-client".to_vec()),
        )])),
        ..Default::default()
    };
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .expect("create the incomplete client Secret");
    e2e::harness::wait_until(
        "creating the Secret to reconcile the app",
        e2e::harness::Deadline::secs(15),
        || async { Ok((world.reconciles().await > idle).then_some(())) },
    )
    .await;
    world
        .wait_condition("web", "AuthReady", "False", "ClientSecretInvalid")
        .await;

    // Completing it (a data-only change) makes the app Ready.
    secrets
        .patch(
            "oidc-client",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"client-secret": "s3cret"}})),
        )
        .await
        .expect("complete the client Secret");
    world.wait_ready("web").await;

    let requests = world.cluster.api_faults();
    assert!(requests.count_route("watch secrets metadata") >= 1);
    assert_eq!(
        requests.count_route("watch secrets"),
        0,
        "a Secret watch asked for full objects"
    );
}

/// Creates the `google-oidc` Secret that the generic-OIDC apps of these tests reference.
async fn create_google_client_secret(world: &World) {
    let secrets: kube::Api<Secret> = kube::Api::namespaced(world.cluster.client(), &world.namespace);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("google-oidc".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([
            ("client-id".to_string(), ByteString(b"google-client".to_vec())),
            ("client-secret".to_string(), ByteString(b"s3cret".to_vec())),
        ])),
        ..Default::default()
    };
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .expect("create the client Secret");
}
