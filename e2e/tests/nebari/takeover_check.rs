//! Before the cut-over from nebari-operator: `manager takeover-check`, given the flags the manager is going to run
//! with, lists the apps it would refuse and the flag that keeps each working, and changes nothing.

use serde_json::json;

use crate::support::{Setup, World};

/// Runs `manager takeover-check` with the test manager's flags and `extra`; the exit code and what it printed.
async fn takeover_check(world: &World, extra: &[&str]) -> (Option<i32>, String) {
    // The manager's flags come before the subcommand, as in the manager's own command line.
    let mut args = world.manager_flags(false);
    args.extend(extra.iter().map(|flag| flag.to_string()));
    args.push("takeover-check".to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, printed, errors) = e2e::harness::run_manager_command_status(world.cluster.kubeconfig(), &args).await;
    assert!(errors.is_empty() || code != Some(2), "the check ran: {errors}");
    (code, printed)
}

#[tokio::test]
async fn the_takeover_check_lists_what_would_be_refused_and_the_flag_that_keeps_it_working() {
    let world = World::start(Setup {
        manager: false,
        ..Setup::default()
    })
    .await;
    let ns = world.namespace.clone();
    // What nebari-operator accepted: a client scope outside the allow-list, members added to a group the app did
    // not create, and its own clients, which record no owner.
    world.keycloak.create_group("/admin").await;
    world.keycloak.create_user("alice", &[]).await;
    world
        .keycloak
        .create_client(json!({"clientId": format!("{ns}-legacy"), "publicClient": false,
                              "redirectUris": ["https://legacy.example.com/oauth2/callback"]}))
        .await;
    let auth = |extra: serde_json::Value| {
        let mut auth = json!({"enabled": true});
        if let (Some(auth), Some(extra)) = (auth.as_object_mut(), extra.as_object()) {
            auth.extend(extra.clone());
        }
        json!({"routing": {}, "auth": auth})
    };
    world
        .apply_app("scoped", auth(json!({"scopes": ["openid", "custom-scope"]})))
        .await;
    world
        .apply_app(
            "joiner",
            auth(json!({"keycloakConfig": {"groups": [{"name": "admin", "members": ["alice"]}]}})),
        )
        .await;
    world.apply_app("legacy", auth(json!({}))).await;
    world.apply_app("fine", auth(json!({}))).await;

    let (code, printed) = takeover_check(&world, &[]).await;
    assert_eq!(code, Some(1), "{printed}");
    for (app, condition, remedy) in [
        (
            "scoped",
            "AuthReady=False/ClientScopeNotAllowed",
            "--keycloak-allowed-client-scopes with custom-scope added",
        ),
        (
            "joiner",
            "AuthReady=False/GroupNotAllowed",
            "--keycloak-group-policy with admin (or a pattern for it) added",
        ),
        (
            "legacy",
            "AuthReady=False/KeycloakClientNotOwned",
            "--keycloak-adopt-unowned-clients until every app is Ready",
        ),
    ] {
        let entry = format!("NebariApp {ns}/{app}\n  would get: {condition}: ");
        assert!(printed.contains(&entry), "{app}: {printed}");
        assert!(
            printed.contains(&format!("keeps working with: {remedy}")),
            "{app}: {printed}"
        );
    }
    assert!(!printed.contains(&format!("{ns}/fine")), "{printed}");
    assert!(printed.ends_with("3 object(s) would be refused\n"), "{printed}");

    // It changed nothing: no member added, no client adopted or created, no app touched.
    assert_eq!(world.keycloak.group_members("/admin").await, Some(Vec::new()));
    let legacy = world
        .keycloak_client(&format!("{ns}-legacy"))
        .await
        .expect("the legacy client");
    assert!(legacy["attributes"].get("nebari.dev/owner").is_none(), "{legacy}");
    assert!(world.keycloak_client(&format!("{ns}-fine")).await.is_none());
    assert!(world.app("fine").await.status.is_none());

    // With the flags it names, nothing stands in the way.
    let scopes = "openid,profile,email,address,phone,offline_access,roles,web-origins,acr,basic,groups,custom-scope";
    let (code, printed) = takeover_check(
        &world,
        &[
            &format!("--keycloak-allowed-client-scopes={scopes}"),
            "--keycloak-group-policy=admin",
            "--keycloak-adopt-unowned-clients",
        ],
    )
    .await;
    assert_eq!(code, Some(0), "{printed}");
    assert!(printed.starts_with("no object would be refused"), "{printed}");
}
