//! Users and memberships: reference A2 and Part C items 5 and 7.

use keycloak_emulator::{ClientSeed, EmulatorConfig, GroupSeed, UserSeed};
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{REALM, admin, admin_token, get_json, start_with};

fn usernames(rows: &Value) -> Vec<String> {
    rows.as_array()
        .expect("array")
        .iter()
        .map(|u| u["username"].as_str().expect("username").to_string())
        .collect()
}

fn config_with_users(count: usize) -> EmulatorConfig {
    let mut config = EmulatorConfig::with_realm(REALM);
    for i in 0..count {
        config
            .users
            .push(UserSeed::new(REALM, &format!("user{i:03}")).email(&format!("user{i:03}@example.org")));
    }
    config
}

// A2 "Defaults: max is 100" / Part C item 5.
#[tokio::test]
async fn user_listings_default_to_100_and_page_with_first() {
    let kc = start_with(config_with_users(105)).await;
    let token = admin_token(&kc).await;
    assert_eq!(
        get_json(&kc, &token, "/users").await.as_array().expect("array").len(),
        100
    );
    let rest = get_json(&kc, &token, "/users?first=100&max=50").await;
    assert_eq!(
        usernames(&rest),
        vec!["user100", "user101", "user102", "user103", "user104"]
    );
    assert_eq!(
        get_json(&kc, &token, "/users/count").await,
        json!(105),
        "count is a bare number"
    );
}

// A2 exact, field filters, search prefix/infix/exact and the service-account exclusion.
#[tokio::test]
async fn user_filters_and_search_match_like_keycloak() {
    let mut config = EmulatorConfig::with_realm(REALM);
    config
        .users
        .push(UserSeed::new(REALM, "Alice").email("Alice@Example.org"));
    config.users.push(UserSeed::new(REALM, "malice"));
    config.users.push(UserSeed::new(REALM, "alicia"));
    config
        .clients
        .push(ClientSeed::service_account(REALM, "alibot", "s", &[]));
    let kc = start_with(config).await;
    let token = admin_token(&kc).await;
    let exact = get_json(&kc, &token, "/users?username=ALICE&exact=true").await;
    assert_eq!(
        usernames(&exact),
        vec!["alice"],
        "usernames are stored lower-cased; exact is equality"
    );
    let substring = get_json(&kc, &token, "/users?username=lic").await;
    assert_eq!(usernames(&substring), vec!["alice", "alicia", "malice"]);
    let prefix = get_json(&kc, &token, "/users?search=ali").await;
    assert_eq!(
        usernames(&prefix),
        vec!["alice", "alicia"],
        "search is a prefix match and skips service accounts"
    );
    let infix = get_json(&kc, &token, "/users?search=*lic*").await;
    assert_eq!(usernames(&infix), vec!["alice", "alicia", "malice"]);
    let quoted = get_json(&kc, &token, "/users?search=%22alice%22").await;
    assert_eq!(usernames(&quoted), vec!["alice"]);
    let by_email = get_json(&kc, &token, "/users?email=alice@example.org&exact=true").await;
    assert_eq!(usernames(&by_email), vec!["alice"]);
    let service = get_json(&kc, &token, "/users?username=service-account-alibot&exact=true").await;
    assert_eq!(
        usernames(&service),
        vec!["service-account-alibot"],
        "field filters include service accounts"
    );
    assert_eq!(
        get_json(&kc, &token, "/users?username=nobody&exact=true").await,
        json!([])
    );
}

// A2 representations: full vs brief, `access` in listings is only {"manage"}.
#[tokio::test]
async fn user_representations_have_full_and_brief_forms() {
    let kc = start_with(config_with_users(1)).await;
    let token = admin_token(&kc).await;
    let full = get_json(&kc, &token, "/users").await;
    let row = &full[0];
    for key in [
        "id",
        "username",
        "email",
        "emailVerified",
        "enabled",
        "createdTimestamp",
        "totp",
        "requiredActions",
        "notBefore",
    ] {
        assert!(row.get(key).is_some(), "full listing row has {key}: {row}");
    }
    assert_eq!(row["access"], json!({ "manage": true }));
    let brief = get_json(&kc, &token, "/users?briefRepresentation=true").await;
    for key in ["totp", "disableableCredentialTypes", "requiredActions", "notBefore"] {
        assert!(brief[0].get(key).is_none(), "brief drops {key}");
    }
    let id = row["id"].as_str().expect("id");
    let single = get_json(&kc, &token, &format!("/users/{id}")).await;
    assert_eq!(single["access"]["manage"], true);
    assert!(
        single["access"].get("impersonate").is_some(),
        "single reads carry the full access object"
    );
    let missing = admin(&kc, &token, Method::GET, "/users/does-not-exist", None).await;
    assert_eq!(missing.status(), 404);
    assert_eq!(
        missing.json::<Value>().await.expect("json"),
        json!({ "error": "User not found" })
    );
}

// A2 `/users/{id}/groups`: direct memberships only, brief by default, parentId on subgroups, count.
#[tokio::test]
async fn user_groups_are_direct_and_brief_by_default() {
    let mut config = EmulatorConfig::with_realm(REALM);
    config.groups.push(GroupSeed::new(REALM, "/parent/child"));
    config
        .users
        .push(UserSeed::new(REALM, "alice").member_of("/parent/child"));
    let kc = start_with(config).await;
    let token = admin_token(&kc).await;
    let user = kc.hooks().user_id(REALM, "alice").expect("alice");
    let groups = get_json(&kc, &token, &format!("/users/{user}/groups")).await;
    let rows = groups.as_array().expect("array");
    assert_eq!(rows.len(), 1, "the parent is not a direct membership: {groups}");
    assert_eq!(rows[0]["path"], "/parent/child");
    assert_eq!(rows[0]["subGroups"], json!([]));
    assert!(rows[0]["parentId"].is_string());
    assert!(rows[0].get("attributes").is_none(), "brief by default");
    let full = get_json(&kc, &token, &format!("/users/{user}/groups?briefRepresentation=false")).await;
    assert!(full[0].get("attributes").is_some());
    assert_eq!(
        get_json(&kc, &token, &format!("/users/{user}/groups/count")).await,
        json!({ "count": 1 })
    );
}

// A2 membership PUT/DELETE / Part C item 7: idempotent 204s; the user is checked before the group.
#[tokio::test]
async fn membership_changes_are_idempotent_and_check_the_user_first() {
    let mut config = EmulatorConfig::with_realm(REALM);
    config.groups.push(GroupSeed::new(REALM, "/team"));
    config.users.push(UserSeed::new(REALM, "alice"));
    let kc = start_with(config).await;
    let token = admin_token(&kc).await;
    let user = kc.hooks().user_id(REALM, "alice").expect("alice");
    let group = kc.hooks().group_id(REALM, "/team").expect("team");
    let path = format!("/users/{user}/groups/{group}");
    for _ in 0..2 {
        let response = admin(&kc, &token, Method::PUT, &path, None).await;
        assert_eq!(response.status(), 204);
        assert!(response.text().await.expect("body").is_empty());
    }
    assert_eq!(
        kc.hooks().group_members(REALM, "/team"),
        Some(vec!["alice".to_string()])
    );
    for _ in 0..2 {
        assert_eq!(
            admin(&kc, &token, Method::DELETE, &path, None).await.status(),
            204,
            "204 even when not a member"
        );
    }
    assert_eq!(kc.hooks().group_members(REALM, "/team"), Some(vec![]));
    let both_unknown = admin(&kc, &token, Method::PUT, "/users/nobody/groups/nothing", None).await;
    assert_eq!(both_unknown.status(), 404);
    assert_eq!(
        both_unknown.json::<Value>().await.expect("json"),
        json!({ "error": "User not found" })
    );
    let unknown_group = admin(
        &kc,
        &token,
        Method::DELETE,
        &format!("/users/{user}/groups/nothing"),
        None,
    )
    .await;
    assert_eq!(unknown_group.status(), 404);
    assert_eq!(
        unknown_group.json::<Value>().await.expect("json"),
        json!({ "error": "Group not found" })
    );
}

// A2: creating users (400 without a username, 409 on a duplicate) for completeness of the 403 story.
#[tokio::test]
async fn user_creation_requires_a_unique_username() {
    let kc = start_with(config_with_users(0)).await;
    let token = admin_token(&kc).await;
    let created = admin(
        &kc,
        &token,
        Method::POST,
        "/users",
        Some(json!({ "username": "Carol", "enabled": true })),
    )
    .await;
    assert_eq!(created.status(), 201);
    let missing = admin(
        &kc,
        &token,
        Method::POST,
        "/users",
        Some(json!({ "email": "x@example.org" })),
    )
    .await;
    assert_eq!(missing.status(), 400);
    assert_eq!(
        missing.json::<Value>().await.expect("json"),
        json!({ "errorMessage": "User name is missing" })
    );
    let duplicate = admin(
        &kc,
        &token,
        Method::POST,
        "/users",
        Some(json!({ "username": "carol" })),
    )
    .await;
    assert_eq!(duplicate.status(), 409);
    assert_eq!(
        duplicate.json::<Value>().await.expect("json"),
        json!({ "errorMessage": "User exists with same username" })
    );
}
