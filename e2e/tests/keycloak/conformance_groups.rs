//! The group tree: reference A3 and Part C items 4–6.

use keycloak_emulator::{EmulatorConfig, GroupSeed, UserSeed};
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{REALM, admin, admin_token, create_child, create_group, get_json, start, start_with};

fn names(rows: &Value) -> Vec<String> {
    rows.as_array()
        .expect("array")
        .iter()
        .map(|g| g["name"].as_str().expect("name").to_string())
        .collect()
}

// A3 "Listing without search": only top-level groups, by name, `subGroups:[]`, `subGroupCount`, `access`;
// brief by default; no default `max`.
#[tokio::test]
async fn listing_shows_only_top_level_groups_by_name() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    let beta = create_group(&kc, &token, "beta").await;
    create_group(&kc, &token, "alpha").await;
    create_child(&kc, &token, &beta, "child").await;
    let rows = get_json(&kc, &token, "/groups").await;
    assert_eq!(names(&rows), vec!["alpha", "beta"]);
    let beta_row = &rows[1];
    assert_eq!(beta_row["subGroups"], json!([]), "subGroups stays empty since KC 23");
    assert_eq!(beta_row["subGroupCount"], 1);
    assert_eq!(beta_row["path"], "/beta");
    assert!(beta_row["access"]["manageMembership"].is_boolean());
    assert!(beta_row.get("attributes").is_none(), "brief by default");
    let full = get_json(&kc, &token, "/groups?briefRepresentation=false").await;
    assert!(full[0].get("attributes").is_some() && full[0].get("realmRoles").is_some());
    for i in 0..30 {
        create_group(&kc, &token, &format!("g{i:02}")).await;
    }
    assert_eq!(
        get_json(&kc, &token, "/groups").await.as_array().expect("array").len(),
        32,
        "no default max"
    );
    assert_eq!(
        get_json(&kc, &token, "/groups/count?top=true").await,
        json!({ "count": 32 })
    );
    assert_eq!(
        get_json(&kc, &token, "/groups/count").await,
        json!({ "count": 33 }),
        "count covers the tree"
    );
}

// A3 "With search": the whole tree, top-level ancestor with the path to the match nested; `exact`;
// `populateHierarchy=false` returns the matches flat.
#[tokio::test]
async fn search_returns_matches_under_their_top_level_ancestor() {
    let mut config = EmulatorConfig::with_realm(REALM);
    config.groups.push(GroupSeed::new(REALM, "/root/mid/target"));
    config.groups.push(GroupSeed::new(REALM, "/root/other"));
    config.groups.push(GroupSeed::new(REALM, "/Target-two"));
    let kc = start_with(config).await;
    let token = admin_token(&kc).await;
    let rows = get_json(&kc, &token, "/groups?search=target").await;
    assert_eq!(
        names(&rows),
        vec!["Target-two", "root"],
        "case-insensitive substring, roots by name"
    );
    let root = &rows[1];
    assert_eq!(
        names(&root["subGroups"]),
        vec!["mid"],
        "only the way to the match is nested"
    );
    assert_eq!(names(&root["subGroups"][0]["subGroups"]), vec!["target"]);
    assert_eq!(root["subGroups"][0]["subGroups"][0]["path"], "/root/mid/target");
    let exact = get_json(&kc, &token, "/groups?search=target&exact=true").await;
    assert_eq!(names(&exact), vec!["root"], "exact is a case-sensitive equality");
    let flat = get_json(&kc, &token, "/groups?search=target&exact=true&populateHierarchy=false").await;
    assert_eq!(names(&flat), vec!["target"]);
    assert!(flat[0]["parentId"].is_string());
    let paged = get_json(&kc, &token, "/groups?search=t&populateHierarchy=false&first=1&max=1").await;
    assert_eq!(paged.as_array().expect("array").len(), 1, "first/max page the matches");
}

// A3 POST /groups errors / Part C item 6: blank name 400, top-level duplicate 409, uniqueness per parent and
// case-sensitive.
#[tokio::test]
async fn top_level_names_are_unique_and_required() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    create_group(&kc, &token, "X").await;
    let duplicate = admin(&kc, &token, Method::POST, "/groups", Some(json!({ "name": "X" }))).await;
    assert_eq!(duplicate.status(), 409);
    assert_eq!(
        duplicate.json::<Value>().await.expect("json"),
        json!({ "errorMessage": "Top level group named 'X' already exists." })
    );
    assert_eq!(
        admin(&kc, &token, Method::POST, "/groups", Some(json!({ "name": "x" })))
            .await
            .status(),
        201
    );
    let blank = admin(&kc, &token, Method::POST, "/groups", Some(json!({ "name": "  " }))).await;
    assert_eq!(blank.status(), 400);
    assert_eq!(
        blank.json::<Value>().await.expect("json"),
        json!({ "errorMessage": "Group name is missing" })
    );
}

// A3 POST /groups/{id}/children: 201 with Location and a body (no subGroupCount, no charset); sibling 409;
// unknown parent 404; a moved group answers 204.
#[tokio::test]
async fn children_are_created_with_a_body_and_sibling_names_are_unique() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    let parent = create_group(&kc, &token, "parent").await;
    let created = admin(
        &kc,
        &token,
        Method::POST,
        &format!("/groups/{parent}/children"),
        Some(json!({ "name": "kid" })),
    )
    .await;
    assert_eq!(created.status(), 201);
    assert_eq!(
        created.headers()["content-type"],
        "application/json",
        "no charset on this one"
    );
    let location = created.headers()["location"].to_str().expect("ascii").to_string();
    let body: Value = created.json().await.expect("json body");
    assert!(location.ends_with(&format!("/groups/{}", body["id"].as_str().expect("id"))));
    assert_eq!(body["path"], "/parent/kid");
    assert_eq!(body["parentId"], parent.as_str());
    assert_eq!(body["subGroups"], json!([]));
    assert_eq!(body["attributes"], json!({}));
    assert!(body.get("subGroupCount").is_none());
    let sibling = admin(
        &kc,
        &token,
        Method::POST,
        &format!("/groups/{parent}/children"),
        Some(json!({ "name": "kid" })),
    )
    .await;
    assert_eq!(sibling.status(), 409);
    assert_eq!(
        sibling.json::<Value>().await.expect("json"),
        json!({ "errorMessage": "Sibling group named 'kid' already exists." })
    );
    let orphan = admin(
        &kc,
        &token,
        Method::POST,
        "/groups/missing/children",
        Some(json!({ "name": "kid" })),
    )
    .await;
    assert_eq!(orphan.status(), 404);
    assert_eq!(
        orphan.json::<Value>().await.expect("json"),
        json!({ "error": "Could not find group by id" })
    );
    let loner = create_group(&kc, &token, "loner").await;
    let moved = admin(
        &kc,
        &token,
        Method::POST,
        &format!("/groups/{parent}/children"),
        Some(json!({ "id": loner })),
    )
    .await;
    assert_eq!(moved.status(), 204);
    assert_eq!(kc.hooks().group_id(REALM, "/parent/loner"), Some(loner));
}

// A3 `/children`: `max` defaults to 10 (Part C item 5); rows carry parentId and subGroupCount; full by default.
#[tokio::test]
async fn children_default_to_ten_per_page() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    let parent = create_group(&kc, &token, "parent").await;
    for i in 0..12 {
        create_child(&kc, &token, &parent, &format!("c{i:02}")).await;
    }
    let first_page = get_json(&kc, &token, &format!("/groups/{parent}/children")).await;
    assert_eq!(
        first_page.as_array().expect("array").len(),
        10,
        "the default page is only ten"
    );
    assert_eq!(first_page[0]["parentId"], parent.as_str());
    assert_eq!(first_page[0]["subGroupCount"], 0);
    assert!(
        first_page[0].get("attributes").is_some(),
        "briefRepresentation defaults to false here"
    );
    let rest = get_json(&kc, &token, &format!("/groups/{parent}/children?first=10&max=10")).await;
    assert_eq!(names(&rest), vec!["c10", "c11"]);
    let searched = get_json(&kc, &token, &format!("/groups/{parent}/children?search=c11&exact=true")).await;
    assert_eq!(names(&searched), vec!["c11"]);
    assert_eq!(
        get_json(&kc, &token, &format!("/groups/{parent}")).await["subGroupCount"],
        12
    );
}

// A3 GET /groups/{id} and group-by-path: full representation, 404 texts.
#[tokio::test]
async fn single_groups_have_the_full_representation() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    let id = create_group(&kc, &token, "solo").await;
    let group = get_json(&kc, &token, &format!("/groups/{id}")).await;
    assert_eq!(group["attributes"], json!({}));
    assert_eq!(group["subGroupCount"], 0);
    assert_eq!(group["subGroups"], json!([]));
    assert!(group["access"].is_object());
    let missing = admin(&kc, &token, Method::GET, "/groups/nope", None).await;
    assert_eq!(missing.status(), 404);
    assert_eq!(
        missing.json::<Value>().await.expect("json"),
        json!({ "error": "Could not find group by id" })
    );
    assert_eq!(get_json(&kc, &token, "/group-by-path/solo").await["id"], id.as_str());
    let no_path = admin(&kc, &token, Method::GET, "/group-by-path/solo/nothing", None).await;
    assert_eq!(no_path.status(), 404);
    assert_eq!(
        no_path.json::<Value>().await.expect("json"),
        json!({ "error": "Group path does not exist" })
    );
}

// A3 PUT /groups/{id}: sibling rename 409, blank name 400, mismatched id 400, attributes replaced.
#[tokio::test]
async fn renames_respect_siblings_and_attributes_are_replaced() {
    let kc = start().await;
    let token = admin_token(&kc).await;
    let a = create_group(&kc, &token, "a").await;
    create_group(&kc, &token, "b").await;
    let onto_sibling = admin(
        &kc,
        &token,
        Method::PUT,
        &format!("/groups/{a}"),
        Some(json!({ "name": "b" })),
    )
    .await;
    assert_eq!(onto_sibling.status(), 409);
    assert_eq!(
        onto_sibling.json::<Value>().await.expect("json"),
        json!({ "errorMessage": "Sibling group named 'b' already exists." })
    );
    assert_eq!(
        admin(
            &kc,
            &token,
            Method::PUT,
            &format!("/groups/{a}"),
            Some(json!({ "name": "" }))
        )
        .await
        .status(),
        400
    );
    let wrong_id = admin(
        &kc,
        &token,
        Method::PUT,
        &format!("/groups/{a}"),
        Some(json!({ "id": "other", "name": "a" })),
    )
    .await;
    assert_eq!(wrong_id.status(), 400);
    assert_eq!(
        wrong_id.json::<Value>().await.expect("json"),
        json!({ "errorMessage": "Invalid group id" })
    );
    let path = format!("/groups/{a}");
    admin(
        &kc,
        &token,
        Method::PUT,
        &path,
        Some(json!({ "name": "a", "attributes": { "k1": ["v"] } })),
    )
    .await;
    admin(
        &kc,
        &token,
        Method::PUT,
        &path,
        Some(json!({ "name": "a", "attributes": { "k2": ["w"] } })),
    )
    .await;
    assert_eq!(get_json(&kc, &token, &path).await["attributes"], json!({ "k2": ["w"] }));
}

// A3 DELETE /groups/{id}: the subtree and its memberships go; unknown id 404.
#[tokio::test]
async fn deleting_a_group_removes_its_subtree_and_memberships() {
    let mut config = EmulatorConfig::with_realm(REALM);
    config.groups.push(GroupSeed::new(REALM, "/p/c/g"));
    config
        .users
        .push(UserSeed::new(REALM, "alice").member_of("/p/c/g").member_of("/p"));
    let kc = start_with(config).await;
    let token = admin_token(&kc).await;
    let p = kc.hooks().group_id(REALM, "/p").expect("p");
    assert_eq!(
        admin(&kc, &token, Method::DELETE, &format!("/groups/{p}"), None)
            .await
            .status(),
        204
    );
    assert!(kc.hooks().group_tree(REALM).is_empty());
    assert!(kc.hooks().user_group_paths(REALM, "alice").is_empty());
    assert_eq!(
        admin(&kc, &token, Method::DELETE, &format!("/groups/{p}"), None)
            .await
            .status(),
        404
    );
}

// A3 `/members`: direct members only, `max` defaults to 100 (Part C item 5), users without `access`.
#[tokio::test]
async fn members_default_to_100_and_are_direct_only() {
    let mut config = EmulatorConfig::with_realm(REALM);
    config.groups.push(GroupSeed::new(REALM, "/big/sub"));
    for i in 0..101 {
        config
            .users
            .push(UserSeed::new(REALM, &format!("m{i:03}")).member_of("/big"));
    }
    config.users.push(UserSeed::new(REALM, "subonly").member_of("/big/sub"));
    let kc = start_with(config).await;
    let token = admin_token(&kc).await;
    let big = kc.hooks().group_id(REALM, "/big").expect("big");
    let members = get_json(&kc, &token, &format!("/groups/{big}/members")).await;
    let rows = members.as_array().expect("array");
    assert_eq!(rows.len(), 100);
    assert!(rows[0].get("access").is_none());
    let last = get_json(&kc, &token, &format!("/groups/{big}/members?first=100&max=100")).await;
    assert_eq!(
        last.as_array().expect("array").len(),
        1,
        "subgroup members are not direct members"
    );
}
