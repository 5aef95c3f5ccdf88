//! The realm resources an app asks for: groups with additive memberships (unknown users are warned about, not
//! fatal), protocol mappers, and the SPA and device-flow clients, which disappear when turned off.

use std::time::Duration;

use e2e::harness::fault_proxy::Fault;
use serde_json::{Value, json};

use crate::support::{Setup, World, condition};

fn mapper_names(client: &Value) -> Vec<String> {
    client["protocolMappers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["name"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn groups_are_created_members_added_and_only_the_operators_additions_ever_reverted() {
    // `admins` exists already: the platform lets apps fill it.
    let world = World::start(Setup {
        manager_args: vec!["--keycloak-group-policy=admins".to_string()],
        ..Setup::default()
    })
    .await;
    world.keycloak.create_group("/admins").await;
    world.keycloak.create_user("alice", &[]).await;
    world.keycloak.create_user("bob", &[]).await;
    world.keycloak.create_user("carol", &["/admins"]).await;
    world
        .apply_app(
            "web",
            json!({
                "routing": {},
                "landingPage": {"enabled": true, "displayName": "Web", "category": "Data"},
                "auth": {
                    "enabled": true,
                    "scopes": ["openid", "profile", "email", "groups"],
                    "groups": ["admins", "viewers"],
                    "keycloakConfig": {"groups": [
                        {"name": "admins", "members": ["alice", "ghost"]},
                        {"name": "data-team", "members": ["bob"]},
                    ]},
                },
            }),
        )
        .await;
    let app = world.wait_ready("web").await;
    assert_eq!(
        condition(&app, "AuthReady").map(|c| c.0),
        Some("True".to_string()),
        "an unknown user is not fatal"
    );

    let members = |path: &'static str| world.keycloak.group_members(path);
    assert_eq!(
        members("/admins").await,
        Some(vec!["alice".to_string(), "carol".to_string()]),
        "added, nobody removed"
    );
    assert_eq!(members("/viewers").await, Some(Vec::new()), "auth.groups are created");
    assert_eq!(members("/data-team").await, Some(vec!["bob".to_string()]));
    let note = world.wait_event("web", "KeycloakWarning").await;
    assert!(note.contains("ghost") && note.contains("admins"), "{note}");
    assert_eq!(
        app.status.as_ref().map(|s| s.keycloak_groups.clone()),
        Some(vec![
            "admins".to_string(),
            "data-team".to_string(),
            "viewers".to_string()
        ]),
        "what the app created or filled is remembered"
    );

    let client = world
        .keycloak_client(&format!("{}-web", world.namespace))
        .await
        .expect("client");
    assert!(
        mapper_names(&client).contains(&"group-membership".to_string()),
        "the groups scope adds the groups mapper"
    );
    let discovery = app.status.and_then(|s| s.service_discovery).expect("serviceDiscovery");
    assert_eq!(discovery.url.as_deref(), Some("https://web.example.com"));
    assert_eq!(discovery.visibility.as_deref(), Some("private"));
    assert_eq!(
        discovery.required_groups,
        Some(vec!["admins".to_string(), "viewers".to_string()])
    );

    // alice leaves the spec: the membership the operator added is reverted; carol (added by hand) stays.
    world
        .apply_app(
            "web",
            json!({"routing": {}, "auth": {
                "enabled": true, "scopes": ["openid", "profile", "email", "groups"], "groups": ["admins", "viewers"],
                "keycloakConfig": {"groups": [{"name": "admins"}, {"name": "data-team", "members": ["bob"]}]},
            }}),
        )
        .await;
    e2e::harness::wait_until(
        "alice removed from admins",
        e2e::harness::Deadline::secs(30),
        || async {
            match members("/admins").await {
                Some(m) if m == vec!["carol".to_string()] => Ok(Some(())),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;

    // The app goes: its own groups go with it, and nobody it did not add leaves a group it did not create.
    world.delete_app("web").await;
    world.wait_typed_gone::<crds::nebari::NebariApp>("web").await;
    assert_eq!(members("/admins").await, Some(vec!["carol".to_string()]));
    assert_eq!(
        members("/data-team").await,
        None,
        "created by the app, emptied, deleted"
    );
    assert_eq!(members("/viewers").await, None);
}

#[tokio::test]
async fn configured_protocol_mappers_replace_the_default_groups_mapper() {
    let world = World::start(Setup::default()).await;
    let mapper = json!({
        "name": "department", "protocolMapper": "oidc-usermodel-attribute-mapper",
        "config": {"user.attribute": "department", "claim.name": "department", "access.token.claim": "true"},
    });
    world
        .apply_app(
            "web",
            json!({"routing": {}, "auth": {"enabled": true, "scopes": ["openid", "groups"], "keycloakConfig": {"protocolMappers": [mapper]}}}),
        )
        .await;
    world.wait_ready("web").await;
    let client = world
        .keycloak_client(&format!("{}-web", world.namespace))
        .await
        .expect("client");
    let names = mapper_names(&client);
    assert!(names.contains(&"department".to_string()), "{names:?}");
    assert!(
        !names.contains(&"group-membership".to_string()),
        "the user's mappers take full control: {names:?}"
    );
    let department = client["protocolMappers"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["name"] == "department");
    assert_eq!(
        department.map(|m| m["config"]["claim.name"].clone()),
        Some(json!("department"))
    );
}

#[tokio::test]
async fn spa_and_device_flow_clients_are_provisioned_and_deleted_when_turned_off() {
    let world = World::start(Setup::default()).await;
    let ns = world.namespace.clone();
    let (confidential, spa, device) = (format!("{ns}-web"), format!("{ns}-web-spa"), format!("{ns}-web-device"));
    let auth = |spa: Value, device: bool| json!({"routing": {}, "auth": {"enabled": true, "spaClient": spa, "deviceFlowClient": {"enabled": device}}});
    world.apply_app("web", auth(json!({"enabled": true}), true)).await;
    world.wait_ready("web").await;

    let spa_client = world.keycloak_client(&spa).await.expect("the SPA client exists");
    assert_eq!(spa_client["publicClient"], true);
    assert_eq!(spa_client["standardFlowEnabled"], true);
    assert_eq!(spa_client["attributes"]["pkce.code.challenge.method"], "S256");
    let uris = spa_client["redirectUris"].as_array().expect("redirect URIs");
    assert!(
        uris.contains(&json!("https://web.example.com/*")) && uris.contains(&json!("https://web.example.com")),
        "{uris:?}"
    );
    let device_client = world
        .keycloak_client(&device)
        .await
        .expect("the device-flow client exists");
    assert_eq!(device_client["publicClient"], true);
    assert_eq!(device_client["standardFlowEnabled"], false);
    assert_eq!(
        device_client["attributes"]["oauth2.device.authorization.grant.enabled"],
        "true"
    );
    let audience = device_client["protocolMappers"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["protocolMapper"] == "oidc-audience-mapper");
    assert_eq!(
        audience.map(|m| m["config"]["included.client.audience"].clone()),
        Some(json!(confidential))
    );
    let data = world.secret_data("web-oidc-client").await.expect("Secret");
    assert_eq!(
        (data.get("spa-client-id"), data.get("device-client-id")),
        (Some(&spa), Some(&device))
    );

    // SPA off: its client and Secret key go, the device client stays.
    world.apply_app("web", auth(json!({"enabled": false}), true)).await;
    world
        .wait_object(&crate::support::secrets(), &ns, "web-oidc-client", |s| {
            s["data"].get("spa-client-id").is_none()
        })
        .await;
    world.wait_ready("web").await;
    assert!(world.keycloak_client(&spa).await.is_none(), "the SPA client is deleted");
    assert!(world.keycloak_client(&device).await.is_some());

    // Device flow off, then on again (the hash covers it, unlike the original's).
    world.apply_app("web", auth(json!({"enabled": false}), false)).await;
    world
        .wait_object(&crate::support::secrets(), &ns, "web-oidc-client", |s| {
            s["data"].get("device-client-id").is_none()
        })
        .await;
    world.wait_ready("web").await;
    assert!(
        world.keycloak_client(&device).await.is_none(),
        "the device-flow client is deleted"
    );
    world
        .apply_app("web", auth(json!({"enabled": true, "clientId": "web-frontend"}), true))
        .await;
    world
        .wait_object(&crate::support::secrets(), &ns, "web-oidc-client", |s| {
            s["data"].get("device-client-id").is_some()
        })
        .await;
    world.wait_ready("web").await;
    assert!(
        world.keycloak_client(&device).await.is_some(),
        "enabling device flow later provisions it"
    );
    assert!(
        world
            .keycloak_client("web-frontend")
            .await
            .is_some_and(|c| c["publicClient"] == true),
        "SPA client id override"
    );
    assert!(world.keycloak_client(&spa).await.is_none());
    assert!(world.keycloak_client(&confidential).await.is_some());
}

#[tokio::test]
async fn token_exchange_grants_every_other_provisioned_app_including_ones_created_later() {
    let world = World::start(Setup {
        keycloak_v1: true,
        ..Setup::default()
    })
    .await;
    let ns = world.namespace.clone();
    world
        .apply_app(
            "api",
            json!({"routing": {}, "auth": {"enabled": true, "tokenExchange": {"enabled": true}}}),
        )
        .await;
    world
        .apply_app("web", json!({"routing": {}, "auth": {"enabled": true}}))
        .await;
    world.wait_ready("api").await;
    world.wait_ready("web").await;
    let api_id = world.keycloak_client(&format!("{ns}-api")).await.expect("api client")["id"]
        .as_str()
        .expect("id")
        .to_string();
    let permission = format!("token-exchange.permission.client.{api_id}");
    let (permission, ns) = (&permission, &ns);
    let keycloak = &world.keycloak;
    let granted = |peer: &str| {
        let expected = format!("{ns}-{peer}-token-exchange");
        move || {
            let expected = expected.clone();
            async move {
                let policies = keycloak.permission_policies(permission).await;
                let found = policies
                    .as_ref()
                    .is_some_and(|(strategy, names)| strategy == "AFFIRMATIVE" && names.contains(&expected));
                if found {
                    Ok(Some(()))
                } else {
                    Err(format!("{policies:?}"))
                }
            }
        }
    };
    e2e::harness::wait_until(
        "web may exchange tokens for api",
        e2e::harness::Deadline::secs(30),
        granted("web"),
    )
    .await;

    // A third app appears later and its client takes a while to create: it is granted once that client exists
    // (not skipped for good because the target re-provisioned first).
    world.keycloak.proxy().add_fault(
        Fault::on("POST", "/admin/realms/{realm}/clients")
            .latency(Duration::from_millis(1500))
            .times(1),
    );
    world
        .apply_app("cli", json!({"routing": {}, "auth": {"enabled": true}}))
        .await;
    world.wait_ready("cli").await;
    e2e::harness::wait_until(
        "cli may exchange tokens for api",
        e2e::harness::Deadline::secs(30),
        granted("cli"),
    )
    .await;
}

#[tokio::test]
async fn an_spa_client_id_naming_another_apps_or_an_unmanaged_client_is_refused_and_that_client_left_alone() {
    let world = World::start(Setup::default()).await;
    let ns = world.namespace.clone();
    let victim = format!("{ns}-web");
    world
        .apply_app("web", json!({"routing": {}, "auth": {"enabled": true}}))
        .await;
    world.wait_ready("web").await;
    let before = world.keycloak_client(&victim).await.expect("web's client");
    assert_eq!(
        before["attributes"]["nebari.dev/owner"],
        format!("{ns}/web"),
        "clients record their app"
    );
    world
        .keycloak
        .create_client(json!({"clientId": "admin-console", "publicClient": true}))
        .await;
    let unmanaged = world.keycloak_client("admin-console").await.expect("seeded");

    // Another app claims web's client as its SPA client: refused, web's client untouched.
    let spa = |client_id: &str, enabled: bool| json!({"routing": {}, "auth": {"enabled": true, "spaClient": {"enabled": enabled, "clientId": client_id}}});
    world.apply_app("thief", spa(&victim, true)).await;
    let message = world
        .wait_condition("thief", "AuthReady", "False", "KeycloakClientNotOwned")
        .await;
    assert_eq!(
        message,
        format!("Keycloak client {victim} belongs to another NebariApp; choose another client id"),
        "the owner is not named: it may be another tenant"
    );
    // Or an unmanaged one.
    world.apply_app("thief", spa("admin-console", true)).await;
    let message = world
        .wait_condition_containing("thief", "AuthReady", "False", "KeycloakClientNotOwned", "admin-console")
        .await;
    assert!(message.contains("not managed by this NebariApp"), "{message}");

    // Turned off, the claimed ids are not deleted either; nor when the app goes away.
    world.apply_app("thief", spa(&victim, false)).await;
    world.wait_ready("thief").await;
    world.apply_app("thief", spa("admin-console", false)).await;
    world.wait_ready("thief").await;
    world.delete_app("thief").await;
    e2e::harness::wait_until("thief to be deleted", e2e::harness::Deadline::secs(30), || async {
        Ok(world
            .apps()
            .get_opt("thief")
            .await
            .map_err(|e| e.to_string())?
            .is_none()
            .then_some(()))
    })
    .await;
    assert_eq!(
        world.keycloak_client(&victim).await,
        Some(before),
        "web's client was neither changed nor deleted"
    );
    assert_eq!(
        world.keycloak_client("admin-console").await,
        Some(unmanaged),
        "the unmanaged client was left alone"
    );
    world.wait_ready("web").await;
}

#[tokio::test]
async fn a_client_left_by_the_original_operator_is_adopted_only_when_the_platform_opts_in_and_keeps_its_secret() {
    let mut world = World::start(Setup::default()).await;
    let client_id = format!("{}-web", world.namespace);
    world
        .keycloak
        .create_client(json!({
            "clientId": client_id, "publicClient": false, "secret": "secret-from-the-original-operator",
            "redirectUris": ["https://web.example.com/oauth2/callback"],
        }))
        .await;
    world
        .apply_app("web", json!({"routing": {}, "auth": {"enabled": true}}))
        .await;
    // An ownerless client is someone's: without the platform's opt-in it is left alone.
    let message = world
        .wait_condition("web", "AuthReady", "False", "KeycloakClientNotOwned")
        .await;
    assert!(message.contains("--keycloak-adopt-unowned-clients"), "{message}");
    let untouched = world.keycloak_client(&client_id).await.expect("client");
    assert!(untouched["attributes"].get("nebari.dev/owner").is_none(), "{untouched}");

    // Taking over the replaced operator's clients: the admin runs the manager with the opt-in.
    world.manager_mut().stop().await;
    world.manager_args.push("--keycloak-adopt-unowned-clients".to_string());
    world.start_manager(false).await;
    world.wait_ready("web").await;
    let client = world.keycloak_client(&client_id).await.expect("client");
    assert_eq!(
        client["attributes"]["nebari.dev/owner"],
        format!("{}/web", world.namespace),
        "adopted"
    );
    let data = world.secret_data("web-oidc-client").await.expect("Secret");
    assert_eq!(
        data.get("client-secret").map(String::as_str),
        Some("secret-from-the-original-operator"),
        "running apps keep working"
    );
}

/// Exchanges `subject` through `requester` (its secret) for a token meant for `audience`: the status and body.
async fn exchange(world: &World, requester: &str, secret: &str, subject: &str, audience: &str) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!(
            "{}/realms/{}/protocol/openid-connect/token",
            world.keycloak.url(),
            world.realm()
        ))
        .form(&[
            ("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"),
            ("client_id", requester),
            ("client_secret", secret),
            ("subject_token", subject),
            ("subject_token_type", "urn:ietf:params:oauth:token-type:access_token"),
            ("audience", audience),
        ])
        .send()
        .await
        .expect("token endpoint answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The `aud` claim of a JWT as a list (a single audience is a plain string, as Keycloak issues it).
fn audiences(token: &str) -> Vec<String> {
    use base64::Engine;
    let payload = token.split('.').nth(1).expect("a JWT");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url");
    match serde_json::from_slice::<Value>(&bytes).expect("claims")["aud"].clone() {
        Value::String(one) => vec![one],
        many => serde_json::from_value(many).expect("aud is a string or a list of strings"),
    }
}

#[tokio::test]
async fn on_a_keycloak_with_standard_token_exchange_peers_get_the_attribute_and_audience_and_can_exchange() {
    let world = World::start(Setup::default()).await;
    world.keycloak.create_user("alice", &[]).await;
    let ns = world.namespace.clone();
    let (api, web) = (format!("{ns}-api"), format!("{ns}-web"));
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

    // The server has v2 and not the v1 preview features: `auto` configures the requester, not the target.
    let mapper = format!("token-exchange-{api}");
    let granted = |client: &Value| {
        client["attributes"]["standard.token.exchange.enabled"] == "true"
            && client["protocolMappers"].as_array().is_some_and(|mappers| {
                mappers
                    .iter()
                    .any(|m| m["name"] == mapper.as_str() && m["config"]["included.client.audience"] == api.as_str())
            })
    };
    e2e::harness::wait_until("web may exchange for api", e2e::harness::Deadline::secs(30), || async {
        let client = world.keycloak_client(&web).await.unwrap_or_default();
        if granted(&client) {
            Ok(Some(()))
        } else {
            Err(client.to_string())
        }
    })
    .await;
    let target = world.keycloak_client(&api).await.expect("api client");
    assert_eq!(target["attributes"]["nebari.dev/token-exchange-peers"], web.as_str());
    assert!(
        world.keycloak.policy_names().await.is_empty(),
        "no fine-grained admin permission objects with v2"
    );

    // A real exchange: alice's token for web becomes a token for api.
    let secret = world.client_secret("web").await;
    let subject = world
        .keycloak
        .browser_login(&web, &secret, "alice")
        .await
        .expect("alice's token for web");
    let (status, body) = exchange(&world, &web, &secret, &subject, &api).await;
    assert_eq!(status, 200, "{body}");
    let token = body["access_token"].as_str().expect("access token");
    assert_eq!(audiences(token), vec![api.clone()]);

    // Token exchange off: the grant is withdrawn from web, and the exchange is refused.
    world
        .apply_app("api", json!({"routing": {}, "auth": {"enabled": true}}))
        .await;
    // The peer is withdrawn first, then the target forgets it: wait for both.
    e2e::harness::wait_until("web's grant withdrawn", e2e::harness::Deadline::secs(30), || async {
        let client = world.keycloak_client(&web).await.unwrap_or_default();
        let target = world.keycloak_client(&api).await.unwrap_or_default();
        let withdrawn = !granted(&client)
            && client["attributes"]["standard.token.exchange.enabled"] == "false"
            && target["attributes"].get("nebari.dev/token-exchange-peers").is_none();
        {
            if withdrawn {
                Ok(Some(()))
            } else {
                Err(format!("{client}\n{target}"))
            }
        }
    })
    .await;
    let (status, body) = exchange(&world, &web, &secret, &subject, &api).await;
    assert_eq!(status, 400, "{body}");
}
