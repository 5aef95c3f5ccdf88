//! Tenants cannot reach beyond their namespace through a NebariApp: each test plays an attack by a user who may
//! only write NebariApps in their own namespace, and shows it refused with a condition reason while nothing of
//! the victim's changes.

use e2e::fixtures::standins;
use e2e::harness::cluster::unique_suffix;
use e2e::harness::{Deadline, conditions, wait_until};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::support::{
    GATEWAY_NAMESPACE, PUBLIC_GATEWAY, Setup, World, certificates, http_routes, listener, listener_names,
};

/// Issues the app's certificate (playing cert-manager) and waits until the app is Ready.
async fn issue_and_wait_ready(world: &World, namespace: &str, app: &str) {
    world.issue_certificate(&format!("{app}-{namespace}-cert")).await;
    conditions::wait_ready(&world.apps_in(namespace), app).await;
}

#[tokio::test]
async fn a_hostname_claimed_in_one_namespace_cannot_be_taken_from_another_even_across_restarts() {
    let mut world = World::start(Setup {
        cluster_issuer: true,
        ..Setup::default()
    })
    .await;
    let victim = world.namespace.clone();
    world.apply_app("shop", json!({"routing": {}})).await;
    issue_and_wait_ready(&world, &victim, "shop").await;
    let victim_listener = format!("tls-shop-{victim}");
    let listener_before = listener(&world.gateway(PUBLIC_GATEWAY).await, &victim_listener).cloned();
    assert!(
        listener_before.is_some(),
        "the victim serves its hostname on its own listener"
    );
    let route_before = world.object(&http_routes(), &victim, "shop-route").await;

    // Mallory, who may write NebariApps only in her own namespace, claims the victim's hostname. Her app is
    // older by nothing but ambition: it is created later, and the victim already serves the hostname.
    let attacker = format!("mallory{}", unique_suffix());
    let mallory = world.tenant(&attacker).await;
    let claim = world.app_document_in(
        &attacker,
        "shop",
        json!({"hostname": "shop.example.com", "routing": {}}),
    );
    mallory.apply(&claim.to_string()).await;
    let attackers = world.apps_in(&attacker);
    let message = conditions::wait_for(&attackers, "shop", "RoutingReady", "False", "HostnameConflict", "").await;
    assert!(
        !message.contains(&victim),
        "the refusal names no other tenant: {message}"
    );
    conditions::wait_for(&attackers, "shop", "Ready", "False", "HostnameConflict", "").await;
    assert!(world.object(&http_routes(), &attacker, "shop-route").await.is_none());
    let attacker_cert = format!("shop-{attacker}-cert");
    assert!(
        world
            .object(&certificates(), GATEWAY_NAMESPACE, &attacker_cert)
            .await
            .is_none()
    );
    let gateway = world.gateway(PUBLIC_GATEWAY).await;
    assert!(!listener_names(&gateway).contains(&format!("tls-shop-{attacker}")));
    assert_eq!(listener(&gateway, &victim_listener).cloned(), listener_before);
    assert_eq!(world.object(&http_routes(), &victim, "shop-route").await, route_before);

    // The verdict does not depend on which app a fresh manager sees first.
    world.manager_mut().restart().await;
    world.wait_idle().await;
    conditions::wait_for(&attackers, "shop", "RoutingReady", "False", "HostnameConflict", "").await;
    world.wait_ready("shop").await;
    assert_eq!(
        listener(&world.gateway(PUBLIC_GATEWAY).await, &victim_listener).cloned(),
        listener_before
    );

    // Once the victim lets go of the hostname, the next claimant gets it.
    world.delete_app("shop").await;
    issue_and_wait_ready(&world, &attacker, "shop").await;
}

#[tokio::test]
async fn hostnames_outside_what_the_platform_allows_a_namespace_are_refused() {
    let world = World::start(Setup {
        manager_args: vec!["--nebari-allowed-hostnames=*.{namespace}.apps.example.com".to_string()],
        ..Setup::default()
    })
    .await;
    let ns = world.namespace.clone();
    world
        .apply_app("web", json!({"hostname": "login.example.com", "routing": {}}))
        .await;
    let message = world
        .wait_condition("web", "RoutingReady", "False", "HostnameNotAllowed")
        .await;
    assert_eq!(
        message,
        format!(
            "hostname login.example.com is not allowed in namespace {ns}; the platform allows: *.{ns}.apps.example.com"
        )
    );
    world
        .wait_condition("web", "Ready", "False", "HostnameNotAllowed")
        .await;
    assert!(world.object(&http_routes(), &ns, "web-route").await.is_none());

    let allowed = format!("web.{ns}.apps.example.com");
    world
        .apply_app("web", json!({"hostname": allowed, "routing": {}}))
        .await;
    world.wait_ready("web").await;
    let route = world.object(&http_routes(), &ns, "web-route").await.expect("the route");
    assert_eq!(route["spec"]["hostnames"], json!([allowed]));
    assert_eq!(world.app("web").await.status.and_then(|s| s.hostname), Some(allowed));
}

#[tokio::test]
async fn apps_whose_names_join_alike_get_their_own_listener_and_certificate_and_never_take_over_another() {
    let world = World::start(Setup {
        cluster_issuer: true,
        ..Setup::default()
    })
    .await;
    // `x-y` in `<ns>` and `x` in `y-<ns>` both joined to nebari-operator's `tls-x-y-<ns>`.
    let first_ns = world.namespace.clone();
    let second_ns = format!("y-{first_ns}");
    let mallory = world.tenant(&second_ns).await;
    let first_names = controllers::nebari_app::naming::AppNames::new(&first_ns, "x-y");
    let second_names = controllers::nebari_app::naming::AppNames::new(&second_ns, "x");
    let legacy = first_names.legacy_listener();
    assert_eq!(legacy, second_names.legacy_listener());
    // nebari-operator left `x-y`'s listener under that name (a whole-Gateway update).
    let gateways = standins::gateways(&world.cluster.client(), GATEWAY_NAMESPACE);
    let mut gateway = gateways.get(PUBLIC_GATEWAY).await.expect("read the Gateway");
    if let Some(listeners) = gateway.data["spec"]["listeners"].as_array_mut() {
        listeners.push(json!({
            "name": legacy, "hostname": "first.example.com", "port": 443, "protocol": "HTTPS",
            "tls": {"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": "old-tls"}]},
        }));
    }
    let update = PostParams {
        field_manager: Some("nebari-operator".into()),
        ..Default::default()
    };
    gateways
        .replace(PUBLIC_GATEWAY, &update, &gateway)
        .await
        .expect("the old operator's whole-Gateway update");

    world
        .apply_app("x-y", json!({"hostname": "first.example.com", "routing": {}}))
        .await;
    let second = world.app_document_in(
        &second_ns,
        "x",
        json!({"hostname": "second.example.com", "routing": {}}),
    );
    mallory.apply(&second.to_string()).await;
    for (names, hostname) in [
        (&first_names, "first.example.com"),
        (&second_names, "second.example.com"),
    ] {
        let cert = world.issue_certificate(&names.certificate()).await;
        assert_eq!(cert["spec"]["dnsNames"], json!([hostname]));
    }
    world.wait_ready("x-y").await;
    conditions::wait_ready(&world.apps_in(&second_ns), "x").await;
    let gateway = world.gateway(PUBLIC_GATEWAY).await;
    for (names, hostname) in [
        (&first_names, "first.example.com"),
        (&second_names, "second.example.com"),
    ] {
        let own = listener(&gateway, &names.listener()).expect("each app has its own listener");
        assert_eq!(own["hostname"], hostname);
    }
    assert!(
        listener(&gateway, &legacy).is_none(),
        "the old listener is retired by the app whose hostname it served"
    );

    // A Certificate of the app's name that belongs to another owner is never rewritten: the app falls back to
    // the shared listener and says why.
    let certs =
        Api::<kube::core::DynamicObject>::namespaced_with(world.cluster.client(), GATEWAY_NAMESPACE, &certificates());
    let foreign =
        json!({"metadata": {"annotations": {"nebari.dev/owner": "reconcilers.nebari.dev/NebariApp/elsewhere/x"}}});
    certs
        .patch(
            &first_names.certificate(),
            &PatchParams::default(),
            &Patch::Merge(&foreign),
        )
        .await
        .expect("hand the Certificate to another owner");
    let before = world
        .object(&certificates(), GATEWAY_NAMESPACE, &first_names.certificate())
        .await
        .expect("the Certificate");
    world
        .apply_app("x-y", json!({"hostname": "first-moved.example.com", "routing": {}}))
        .await;
    world.wait_condition("x-y", "TLSReady", "False", "NameConflict").await;
    let after = world
        .object(&certificates(), GATEWAY_NAMESPACE, &first_names.certificate())
        .await
        .expect("the Certificate");
    assert_eq!(
        after["spec"], before["spec"],
        "the other owner's Certificate is unchanged"
    );
    assert_eq!(
        after["metadata"]["resourceVersion"],
        before["metadata"]["resourceVersion"]
    );
    let gateway = world.gateway(PUBLIC_GATEWAY).await;
    assert!(
        listener(&gateway, &first_names.listener()).is_none(),
        "its listener is withdrawn"
    );
    assert!(
        listener(&gateway, &second_names.listener()).is_some(),
        "the neighbour's stays"
    );
}

#[tokio::test]
async fn names_that_join_onto_a_platform_certificate_never_take_change_or_delete_it() {
    let world = World::start(Setup {
        cluster_issuer: true,
        ..Setup::default()
    })
    .await;
    // The platform's wildcard certificate and its issued Secret, made by the platform's own tooling.
    let platform = json!({
        "apiVersion": "cert-manager.io/v1", "kind": "Certificate",
        "metadata": {"name": "nebari-gateway-cert", "namespace": GATEWAY_NAMESPACE},
        "spec": {"secretName": "nebari-gateway-tls", "dnsNames": ["*.example.com"],
                 "issuerRef": {"name": crate::support::CLUSTER_ISSUER, "kind": "ClusterIssuer"}},
    });
    world.cluster.kubectl().apply(&platform.to_string()).await;
    standins::issue_certificate(&world.cluster.client(), GATEWAY_NAMESPACE, "nebari-gateway-cert")
        .await
        .expect("the platform's certificate is issued");
    let before = world
        .object(&certificates(), GATEWAY_NAMESPACE, "nebari-gateway-cert")
        .await
        .expect("the platform's Certificate");
    let secrets: Api<Secret> = Api::namespaced(world.cluster.client(), GATEWAY_NAMESPACE);
    let secret_before = secrets.get("nebari-gateway-tls").await.expect("the platform's Secret");

    // A tenant namespace `gateway` with an app `nebari`: its certificate's name is the platform's.
    let tenant = world.tenant("gateway").await;
    let app = world.app_document_in(
        "gateway",
        "nebari",
        json!({"hostname": "nebari.example.com", "routing": {}}),
    );
    tenant.apply(&app.to_string()).await;
    let message = conditions::wait_for(
        &world.apps_in("gateway"),
        "nebari",
        "TLSReady",
        "False",
        "NameConflict",
        "",
    )
    .await;
    assert!(message.contains("belongs to another owner"), "{message}");
    let after = world
        .object(&certificates(), GATEWAY_NAMESPACE, "nebari-gateway-cert")
        .await
        .expect("the platform's Certificate stays");
    assert_eq!(
        (
            &after["metadata"]["labels"],
            &after["metadata"]["annotations"],
            &after["spec"]
        ),
        (
            &before["metadata"]["labels"],
            &before["metadata"]["annotations"],
            &before["spec"]
        ),
        "not adopted, not rewritten"
    );

    // Deleting the app (with TLS, then without) leaves the platform's Certificate and its private key alone.
    tenant
        .run(&["delete", "nebariapp", "nebari", "-n", "gateway", "--wait=true"])
        .await
        .expect_success("delete the app");
    let without_tls = world.app_document_in(
        "gateway",
        "nebari",
        json!({"hostname": "nebari.example.com", "routing": {"tls": {"enabled": false}}}),
    );
    tenant.apply(&without_tls.to_string()).await;
    conditions::wait_ready(&world.apps_in("gateway"), "nebari").await;
    tenant
        .run(&["delete", "nebariapp", "nebari", "-n", "gateway", "--wait=true"])
        .await
        .expect_success("delete the app");
    assert!(
        world
            .object(&certificates(), GATEWAY_NAMESPACE, "nebari-gateway-cert")
            .await
            .is_some()
    );
    let secret_after = secrets
        .get("nebari-gateway-tls")
        .await
        .expect("the platform's Secret stays");
    assert_eq!(secret_after.metadata.uid, secret_before.metadata.uid);
}

#[tokio::test]
async fn a_gateway_tls_secret_serves_only_the_namespaces_it_is_offered_to() {
    let world = World::start(Setup {
        cluster_issuer: true,
        ..Setup::default()
    })
    .await;
    let ns = world.namespace.clone();
    // The platform's wildcard certificate lives in the gateway namespace, offered to nobody.
    let secrets: Api<Secret> = Api::namespaced(world.cluster.client(), GATEWAY_NAMESPACE);
    let mut wildcard = Secret {
        type_: Some("kubernetes.io/tls".into()),
        data: Some(
            [("tls.crt", "certificate"), ("tls.key", "key")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
                .collect(),
        ),
        ..Secret::default()
    };
    wildcard.metadata.name = Some("platform-wildcard-tls".into());
    secrets
        .create(&PostParams::default(), &wildcard)
        .await
        .expect("create the platform's Secret");

    world
        .apply_app(
            "web",
            json!({"routing": {"tls": {"secretName": "platform-wildcard-tls"}}}),
        )
        .await;
    let message = world
        .wait_condition("web", "TLSReady", "False", "TLSSecretNotAllowed")
        .await;
    assert!(message.contains("nebari.dev/allowed-namespaces"), "{message}");
    let gateway = world.gateway(PUBLIC_GATEWAY).await;
    let serving_it = listener_names(&gateway).into_iter().filter(|name| {
        listener(&gateway, name).is_some_and(|l| l["tls"]["certificateRefs"][0]["name"] == "platform-wildcard-tls")
    });
    assert_eq!(serving_it.count(), 0, "no listener serves the platform's Secret");
    let route = world.object(&http_routes(), &ns, "web-route").await.expect("the route");
    assert_eq!(
        route["spec"]["parentRefs"][0]["sectionName"], "https",
        "the shared listener"
    );

    // The platform offers it to the namespace: the app may serve it.
    let offer = json!({"metadata": {"annotations": {"nebari.dev/allowed-namespaces": ns}}});
    secrets
        .patch("platform-wildcard-tls", &PatchParams::default(), &Patch::Merge(&offer))
        .await
        .expect("offer the Secret");
    world
        .wait_condition("web", "TLSReady", "True", "UserProvidedSecretReady")
        .await;
    let gateway = world.gateway(PUBLIC_GATEWAY).await;
    let own = listener(&gateway, &format!("tls-web-{ns}")).expect("the app's listener");
    assert_eq!(own["tls"]["certificateRefs"][0]["name"], "platform-wildcard-tls");
}

#[tokio::test]
async fn an_app_whose_names_derive_a_built_in_keycloak_client_never_touches_it() {
    let world = World::start(Setup::default()).await;
    let before = world
        .keycloak_client("admin-cli")
        .await
        .expect("every realm has admin-cli");
    // Namespace `admin` + app `cli` derives the client id `admin-cli`.
    let mallory = world.tenant("admin").await;
    let app = world.app_document_in("admin", "cli", json!({"routing": {}, "auth": {"enabled": true}}));
    mallory.apply(&app.to_string()).await;
    let apps = world.apps_in("admin");
    let message = conditions::wait_for(&apps, "cli", "AuthReady", "False", "KeycloakClientNotOwned", "built-in").await;
    assert_eq!(
        message,
        "admin-cli is one of Keycloak's built-in clients; rename the app or namespace"
    );
    assert_eq!(
        world.keycloak_client("admin-cli").await,
        Some(before),
        "admin-cli is unchanged"
    );
}

#[tokio::test]
async fn token_shaping_beyond_the_platform_policy_is_refused_before_anything_is_provisioned() {
    let world = World::start(Setup::default()).await;
    let ns = world.namespace.clone();
    let forged = json!({"name": "i-am-admin", "protocolMapper": "oidc-hardcoded-claim-mapper",
                        "config": {"claim.name": "groups", "claim.value": "admin", "access.token.claim": "true"}});
    world
        .apply_app(
            "web",
            json!({"routing": {}, "auth": {"enabled": true, "keycloakConfig": {"protocolMappers": [forged]}}}),
        )
        .await;
    let message = world
        .wait_condition("web", "AuthReady", "False", "ProtocolMapperNotAllowed")
        .await;
    assert!(message.starts_with("protocol mapper i-am-admin: type oidc-hardcoded-claim-mapper is not allowed"));
    assert!(
        world.keycloak_client(&format!("{ns}-web")).await.is_none(),
        "nothing was provisioned"
    );

    let other_audience = json!({"name": "aud", "protocolMapper": "oidc-audience-mapper",
                                "config": {"included.client.audience": "someone-elses-app"}});
    world
        .apply_app(
            "web",
            json!({"routing": {}, "auth": {"enabled": true, "keycloakConfig": {"protocolMappers": [other_audience]}}}),
        )
        .await;
    world
        .wait_condition_containing("web", "AuthReady", "False", "ProtocolMapperNotAllowed", "own clients")
        .await;
    world
        .apply_app(
            "web",
            json!({"routing": {}, "auth": {"enabled": true, "scopes": ["openid", "realm-admin-scope"]}}),
        )
        .await;
    world
        .wait_condition("web", "AuthReady", "False", "ClientScopeNotAllowed")
        .await;
    assert!(
        world.keycloak_client(&format!("{ns}-web")).await.is_none(),
        "nothing was provisioned"
    );
    // Within the policy, the app is provisioned.
    let own_audience = json!({"name": "aud", "protocolMapper": "oidc-audience-mapper",
                              "config": {"included.client.audience": format!("{ns}-web")}});
    world
        .apply_app(
            "web",
            json!({"routing": {}, "auth": {"enabled": true, "keycloakConfig": {"protocolMappers": [own_audience]}}}),
        )
        .await;
    world.wait_ready("web").await;
}

#[tokio::test]
async fn no_mapper_an_app_configures_may_write_the_tokens_audience() {
    let world = World::start(Setup::default()).await;
    world.keycloak.create_group("/victim-web").await;
    world.keycloak.create_user("eve", &["/victim-web"]).await;
    let aud_from_groups = json!({"name": "aud", "protocolMapper": "oidc-group-membership-mapper",
                                 "config": {"claim.name": "aud", "full.path": "false", "access.token.claim": "true"}});
    // A tenant asks for it with a mapper type the platform allows: refused before anything is provisioned.
    let mallory = world.tenant("mallory").await;
    let spec = json!({"hostname": "m.example.com", "routing": {}, "auth": {"enabled": true,
                      "keycloakConfig": {"protocolMappers": [aud_from_groups.clone()]}}});
    mallory
        .apply(&world.app_document_in("mallory", "web", spec).to_string())
        .await;
    let message = conditions::wait_for(
        &world.apps_in("mallory"),
        "web",
        "AuthReady",
        "False",
        "ProtocolMapperNotAllowed",
        "",
    )
    .await;
    assert_eq!(message, "protocol mapper aud: no mapper may write the claim aud");
    assert!(world.keycloak_client("mallory-web").await.is_none());

    // Why: on a client made by hand with that mapper, the real Keycloak puts the user's group names into the
    // token's audience, so anyone who may name a group (a NebariApp creates them) mints tokens for another app.
    let secret = "by-hand-client-secret-for-the-test";
    let mut by_hand_mapper = aud_from_groups;
    by_hand_mapper["protocol"] = json!("openid-connect");
    world
        .keycloak
        .create_client(json!({"clientId": "by-hand", "secret": secret, "publicClient": false,
                              "standardFlowEnabled": true, "redirectUris": ["https://by-hand.example.com/cb"],
                              "protocolMappers": [by_hand_mapper]}))
        .await;
    let token = world
        .keycloak
        .browser_login("by-hand", secret, "eve")
        .await
        .expect("eve logs in");
    let claims = crate::support::jwt_claims(&token);
    let audience: Vec<&str> = match &claims["aud"] {
        serde_json::Value::String(one) => vec![one.as_str()],
        serde_json::Value::Array(many) => many.iter().filter_map(|a| a.as_str()).collect(),
        _ => Vec::new(),
    };
    assert!(
        audience.contains(&"victim-web"),
        "the token is addressed to the app the group is named after: {claims}"
    );
}

#[tokio::test]
async fn token_exchange_peers_are_the_same_namespace_unless_the_target_names_another() {
    let world = World::start(Setup {
        keycloak_v1: true,
        ..Setup::default()
    })
    .await;
    let ns = world.namespace.clone();
    let other = format!("mallory{}", unique_suffix());
    let mallory = world.tenant(&other).await;
    let outsider = world.app_document_in(
        &other,
        "web",
        json!({"hostname": "outsider.example.com", "routing": {}, "auth": {"enabled": true}}),
    );
    mallory.apply(&outsider.to_string()).await;
    conditions::wait_ready(&world.apps_in(&other), "web").await;
    world
        .apply_app("web", json!({"routing": {}, "auth": {"enabled": true}}))
        .await;
    world.wait_ready("web").await;
    world
        .apply_app(
            "api",
            json!({"routing": {}, "auth": {"enabled": true, "tokenExchange": {"enabled": true}}}),
        )
        .await;
    world.wait_ready("api").await;

    let api_id = world.keycloak_client(&format!("{ns}-api")).await.expect("api client")["id"]
        .as_str()
        .expect("id")
        .to_string();
    let permission = format!("token-exchange.permission.client.{api_id}");
    let granted = |policies: &[String], peer: &str| policies.iter().any(|p| p == &format!("{peer}-token-exchange"));
    let policies = || async {
        world
            .keycloak
            .permission_policies(&permission)
            .await
            .map(|(_, names)| names)
            .unwrap_or_default()
    };
    let sibling = format!("{ns}-web");
    wait_until("the same namespace's app is granted", Deadline::secs(30), || async {
        let now = policies().await;
        if granted(&now, &sibling) {
            Ok(Some(()))
        } else {
            Err(format!("{now:?}"))
        }
    })
    .await;
    assert!(
        !granted(&policies().await, &format!("{other}-web")),
        "another namespace's app is not a peer"
    );

    // The target names the other namespace's app: now it is one.
    world
        .apply_app(
            "api",
            json!({"routing": {}, "auth": {"enabled": true,
                   "tokenExchange": {"enabled": true, "peers": [format!("{other}/web")]}}}),
        )
        .await;
    let outsider_policy = format!("{other}-web");
    wait_until("the named app is granted", Deadline::secs(30), || async {
        let now = policies().await;
        if granted(&now, &outsider_policy) {
            Ok(Some(()))
        } else {
            Err(format!("{now:?}"))
        }
    })
    .await;
}

#[tokio::test]
async fn a_tenant_cannot_add_anyone_to_an_existing_realm_group() {
    let world = World::start(Setup::default()).await;
    world.keycloak.create_group("/admin").await;
    world.keycloak.create_user("root", &["/admin"]).await;
    world.keycloak.create_user("mallory", &[]).await;
    let mallory = world.tenant("mallory").await;
    let join = json!({"hostname": "m.example.com", "routing": {}, "auth": {"enabled": true,
                      "keycloakConfig": {"groups": [{"name": "admin", "members": ["mallory"]}]}}});
    mallory
        .apply(&world.app_document_in("mallory", "web", join).to_string())
        .await;
    let apps = world.apps_in("mallory");
    let message = conditions::wait_for(&apps, "web", "AuthReady", "False", "GroupNotAllowed", "").await;
    assert!(
        message.starts_with("Keycloak group admin already exists and is not this app's"),
        "{message}"
    );
    assert_eq!(
        world.keycloak.group_members("/admin").await,
        Some(vec!["root".to_string()])
    );

    // Requiring the group (without members) is fine and changes nothing in it.
    let require = json!({"hostname": "m.example.com", "routing": {}, "auth": {"enabled": true, "groups": ["admin"]}});
    mallory
        .apply(&world.app_document_in("mallory", "web", require).to_string())
        .await;
    conditions::wait_ready(&apps, "web").await;
    assert_eq!(
        world.keycloak.group_members("/admin").await,
        Some(vec!["root".to_string()])
    );
}

#[tokio::test]
async fn a_group_another_namespace_created_first_neither_gates_nor_admits_here() {
    let world = World::start(Setup::default()).await;
    world.keycloak.create_user("mallory", &[]).await;
    world.keycloak.create_user("bob", &[]).await;
    let mallory = world.tenant("mallory").await;
    // The attacker creates the group the victim's gate is going to ask for, and puts itself in it.
    let preempt = json!({"hostname": "m.example.com", "routing": {}, "auth": {"enabled": true,
                         "keycloakConfig": {"groups": [{"name": "shop-admins", "members": ["mallory"]}]}}});
    mallory
        .apply(&world.app_document_in("mallory", "web", preempt).to_string())
        .await;
    conditions::wait_ready(&world.apps_in("mallory"), "web").await;
    let mallory_only = Some(vec!["mallory".to_string()]);
    assert_eq!(world.keycloak.group_members("/shop-admins").await, mallory_only);

    // The victim asks for it: refused, without learning who holds it, and not exposed behind a gate the
    // attacker passes.
    world
        .apply_app(
            "shop",
            json!({"routing": {}, "auth": {"enabled": true, "groups": ["shop-admins"]}}),
        )
        .await;
    let message = conditions::wait_for(&world.apps(), "shop", "AuthReady", "False", "GroupNotAllowed", "").await;
    assert!(
        message.starts_with("Keycloak group shop-admins belongs to another namespace"),
        "{message}"
    );
    assert!(!message.contains("mallory"), "names no other tenant: {message}");
    assert!(
        world
            .object(&http_routes(), &world.namespace, "shop-route")
            .await
            .is_none(),
        "the app is not routed behind a gate the attacker passes"
    );
    // Nor can the victim's namespace fill it (an admin could have allowed `shop-*` by --keycloak-group-policy;
    // a group of another namespace stays out of reach all the same).
    world
        .apply_app(
            "shop",
            json!({"routing": {}, "auth": {"enabled": true,
                   "keycloakConfig": {"groups": [{"name": "shop-admins", "members": ["bob"]}]}}}),
        )
        .await;
    conditions::wait_for(
        &world.apps(),
        "shop",
        "AuthReady",
        "False",
        "GroupNotAllowed",
        "belongs to another",
    )
    .await;
    assert_eq!(world.keycloak.group_members("/shop-admins").await, mallory_only);
}

#[tokio::test]
async fn a_group_named_like_another_groups_path_does_not_pass_its_gate() {
    use e2e::fixtures::gateway_authz::{Verdict, evaluate};
    use reqwest::Method;

    let world = World::start(Setup::default()).await;
    let mallory_id = world.keycloak.create_user("mallory", &[]).await;
    world.keycloak.create_user("alice", &[]).await;
    // Through a NebariApp the look-alike name is refused at the door.
    let mallory = world.tenant("mallory").await;
    let look_alike = json!({"hostname": "m.example.com", "routing": {}, "auth": {"enabled": true,
                            "keycloakConfig": {"groups": [{"name": "/shop-vip", "members": ["mallory"]}]}}});
    let document = world.app_document_in("mallory", "web", look_alike).to_string();
    let refusal = mallory
        .run_with_stdin(&["apply", "-f", "-"], Some(&document))
        .await
        .expect_failure("a group name with '/'");
    assert!(
        refusal.contains("spec.auth.keycloakConfig.groups[0].name") && refusal.contains("^[^/]+$"),
        "{refusal}"
    );

    // Made in the realm some other way (by hand, another tool), it still does not pass: the gateway admits by
    // the group's path alone, and the look-alike's path is not the victim's group's.
    let (status, body) = world
        .keycloak
        .admin(Method::POST, "/groups", Some(json!({"name": "/shop-vip"})))
        .await;
    assert_eq!(status, 201, "Keycloak takes a top-level group named /shop-vip: {body}");
    let (status, found) = world
        .keycloak
        .admin(Method::GET, "/groups?search=shop-vip&briefRepresentation=false", None)
        .await;
    assert_eq!(status, 200, "{found}");
    let look_alike_id = found
        .as_array()
        .into_iter()
        .flatten()
        .find(|group| group["name"] == "/shop-vip")
        .and_then(|group| group["id"].as_str())
        .unwrap_or_else(|| panic!("the look-alike group is listed: {found}"))
        .to_string();
    let (status, body) = world
        .keycloak
        .admin(
            Method::PUT,
            &format!("/users/{mallory_id}/groups/{look_alike_id}"),
            None,
        )
        .await;
    assert_eq!(status, 204, "mallory joins the look-alike: {body}");

    world
        .apply_app(
            "shop",
            json!({"routing": {}, "auth": {"enabled": true, "groups": ["shop-vip"],
                   "keycloakConfig": {"groups": [{"name": "shop-vip", "members": ["alice"]}]}}}),
        )
        .await;
    world.wait_ready("shop").await;
    let policy = world
        .object(&crate::support::security_policies(), &world.namespace, "shop-security")
        .await
        .expect("the SecurityPolicy");
    let client = format!("{}-shop", world.namespace);
    let secret = world.client_secret("shop").await;
    let alice = world
        .keycloak
        .browser_login(&client, &secret, "alice")
        .await
        .expect("alice logs in");
    assert_eq!(evaluate(&policy, &alice).await, Ok(Verdict::Allowed));
    let token = world
        .keycloak
        .browser_login(&client, &secret, "mallory")
        .await
        .expect("mallory logs in");
    let claims = crate::support::jwt_claims(&token);
    let holds = |claim: &str, value: &str| {
        claims[claim]
            .as_array()
            .is_some_and(|values| values.iter().any(|v| v == value))
    };
    assert!(
        holds("groups", "/shop-vip"),
        "by plain names the look-alike reads as the victim's path (what a name-or-path match admitted): {claims}"
    );
    assert!(
        !holds("nebari_gateway_groups", "/shop-vip"),
        "by path it does not: {claims}"
    );
    assert_eq!(evaluate(&policy, &token).await, Ok(Verdict::Denied));
}

#[tokio::test]
async fn a_realm_admins_login_to_a_tenant_app_hands_the_tenant_no_admin_power() {
    use reqwest::Method;

    let world = World::start(Setup::default()).await;
    world.keycloak.create_user("root", &[]).await;
    world
        .keycloak
        .grant_client_roles("root", "realm-management", &["realm-admin"])
        .await;
    world
        .apply_app("web", json!({"routing": {}, "auth": {"enabled": true}}))
        .await;
    world.wait_ready("web").await;
    let client_id = format!("{}-web", world.namespace);
    let client = world.keycloak.client(&client_id).await.expect("the app's client");
    assert_eq!(client["fullScopeAllowed"], false, "{client}");
    let secret = world.client_secret("web").await;
    // The app (the tenant) receives the admin's access token at login; Keycloak's admin API refuses it.
    let token = world
        .keycloak
        .browser_login(&client_id, &secret, "root")
        .await
        .expect("the admin logs in to the tenant's app");
    assert_eq!(
        world.keycloak.admin_status_with(&token, Method::GET, "/users").await,
        403
    );
    // What the tenant held before: the same login to a client with Keycloak's default (full scope) is a token
    // the admin API accepts.
    let full_secret = "full-scope-client-secret-for-the-test";
    world
        .keycloak
        .create_client(
            json!({"clientId": "full-scope", "secret": full_secret, "publicClient": false,
                              "standardFlowEnabled": true, "redirectUris": ["https://full.example.com/callback"]}),
        )
        .await;
    let full = world
        .keycloak
        .browser_login("full-scope", full_secret, "root")
        .await
        .expect("the admin logs in to a full-scope client");
    assert_eq!(
        world.keycloak.admin_status_with(&full, Method::GET, "/users").await,
        200
    );

    // Offline tokens only when asked: the role reaches the client's scope then, and not otherwise.
    let offline_roles = |client_id: String| {
        let keycloak = &world.keycloak;
        async move {
            let id = keycloak.client(&client_id).await.expect("the client")["id"]
                .as_str()
                .expect("an id")
                .to_string();
            let (status, roles) = keycloak
                .admin(Method::GET, &format!("/clients/{id}/scope-mappings/realm"), None)
                .await;
            assert_eq!(status, 200, "{roles}");
            roles
                .as_array()
                .into_iter()
                .flatten()
                .any(|role| role["name"] == "offline_access")
        }
    };
    assert!(!offline_roles(client_id.clone()).await);
    world
        .apply_app(
            "cli",
            json!({"routing": {}, "auth": {"enabled": true, "scopes": ["openid", "offline_access"]}}),
        )
        .await;
    world.wait_ready("cli").await;
    assert!(offline_roles(format!("{}-cli", world.namespace)).await);
}

#[tokio::test]
async fn only_members_of_the_listed_groups_pass_the_gateway() {
    use e2e::fixtures::gateway_authz::{Verdict, evaluate};

    let world = World::start(Setup::default()).await;
    for user in ["alice", "mallory"] {
        world.keycloak.create_user(user, &[]).await;
    }
    world
        .apply_app(
            "web",
            json!({"routing": {}, "auth": {
                "enabled": true, "groups": ["data-team"],
                "keycloakConfig": {"groups": [{"name": "data-team", "members": ["alice"]}]},
            }}),
        )
        .await;
    world.wait_ready("web").await;
    let policy = world
        .object(&crate::support::security_policies(), &world.namespace, "web-security")
        .await
        .expect("the SecurityPolicy");
    assert_eq!(policy["spec"]["authorization"]["defaultAction"], "Deny");
    let client = format!("{}-web", world.namespace);
    let secret = world.client_secret("web").await;
    let login = |user: &'static str| {
        let (client, secret) = (client.clone(), secret.clone());
        let keycloak = &world.keycloak;
        async move {
            keycloak
                .browser_login(&client, &secret, user)
                .await
                .unwrap_or_else(|e| panic!("{user} logs in: {e}"))
        }
    };

    let member = login("alice").await;
    assert_eq!(evaluate(&policy, &member).await, Ok(Verdict::Allowed));
    let outsider = login("mallory").await;
    assert_eq!(
        evaluate(&policy, &outsider).await,
        Ok(Verdict::Denied),
        "a non-member is refused"
    );

    // A token claiming the group but not signed by the realm is not even authenticated.
    let mut parts: Vec<String> = outsider.split('.').map(str::to_string).collect();
    use base64::Engine;
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut claims: serde_json::Value =
        serde_json::from_slice(&engine.decode(&parts[1]).expect("payload")).expect("claims");
    claims["groups"] = json!(["data-team"]);
    parts[1] = engine.encode(claims.to_string());
    let forged = parts.join(".");
    assert!(matches!(
        evaluate(&policy, &forged).await,
        Ok(Verdict::Unauthenticated(_))
    ));
}

#[tokio::test]
async fn one_tenant_cannot_take_the_shared_gateways_listeners_from_the_others() {
    let world = World::start(Setup {
        cluster_issuer: true,
        manager_args: vec!["--nebari-listeners-per-namespace=2".to_string()],
        ..Setup::default()
    })
    .await;
    let victim = world.namespace.clone();

    // Mallory, who may write NebariApps only in her own namespace, asks for three apps with TLS of their own.
    let attacker = format!("mallory{}", unique_suffix());
    let mallory = world.tenant(&attacker).await;
    for app in ["m1", "m2", "m3"] {
        let document = world.app_document_in(&attacker, app, json!({"routing": {}}));
        mallory.apply(&document.to_string()).await;
    }
    let attackers = world.apps_in(&attacker);
    let message = wait_until(
        "one of mallory's apps refused a listener",
        Deadline::secs(60),
        || async {
            for app in ["m1", "m2", "m3"] {
                let Ok(found) = attackers.get(app).await else { continue };
                if let Some(tls) = conditions::get(&found, "TLSReady")
                    && tls.reason == "ListenerQuotaReached"
                {
                    return Ok(Some((app, tls.message)));
                }
            }
            Err("no app refused yet".to_string())
        },
    )
    .await;
    let (refused, message) = message;
    assert!(
        message.contains("--nebari-listeners-per-namespace=2") && !message.contains(&victim),
        "the refusal names the limit and no other tenant: {message}"
    );
    let held: Vec<String> = listener_names(&world.gateway(PUBLIC_GATEWAY).await)
        .into_iter()
        .filter(|name| name.ends_with(&attacker))
        .collect();
    assert_eq!(held.len(), 2, "mallory holds two listeners: {held:?}");

    // The victim's new app with TLS still gets a listener of its own and becomes Ready.
    world.apply_app("shop", json!({"routing": {}})).await;
    world
        .wait_listeners(PUBLIC_GATEWAY, |names| names.contains(&format!("tls-shop-{victim}")))
        .await;
    issue_and_wait_ready(&world, &victim, "shop").await;

    // Mallory frees one: her refused app takes it without being touched.
    let other = ["m1", "m2", "m3"]
        .into_iter()
        .find(|app| *app != refused)
        .unwrap_or("m1");
    let deleted = mallory
        .run(&["delete", "nebariapp", other, "-n", &attacker, "--wait=true"])
        .await;
    assert!(deleted.success, "mallory deletes {other}: {}", deleted.stderr);
    world
        .wait_listeners(PUBLIC_GATEWAY, |names| {
            names.contains(&format!("tls-{refused}-{attacker}"))
        })
        .await;
}
