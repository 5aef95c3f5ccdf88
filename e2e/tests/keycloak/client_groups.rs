//! Groups through the client: what ManagedRancherProject needs (parent and child groups, paging, counts,
//! members) and NebariApp's top-level groups.

use std::collections::BTreeMap;
use std::time::Duration;

use controllers::keycloak::ErrorKind;
use e2e::harness::fault_proxy::Fault;
use reqwest::Method;
use serde_json::json;

use crate::support::{realm, route, start};

fn managed() -> BTreeMap<String, Vec<String>> {
    BTreeMap::from([("managed_by".to_string(), vec!["platform-operator".to_string()])])
}

#[tokio::test]
async fn top_level_groups_are_created_once_and_found_afterwards() {
    let kc = start("gr-top").await;
    let realm = realm(&kc, 100);
    let first = realm
        .ensure_top_level_group("c_local", &managed())
        .await
        .expect("create");
    assert!(first.created);
    let again = realm.ensure_top_level_group("c_local", &managed()).await.expect("find");
    assert!(!again.created);
    assert_eq!(again.value.id, first.value.id);
    assert_eq!(again.value.attributes, managed());
    assert_eq!(kc.proxy().count("POST", &route("/groups")), 1);
    assert_eq!(
        kc.group_attributes("/c_local").await,
        Some(managed()),
        "attributes as written"
    );
}

#[tokio::test]
async fn a_child_with_the_same_name_is_not_a_top_level_group() {
    let kc = start("gr-same-name").await;
    kc.create_group("/other").await;
    kc.create_group("/other/shared").await;
    let realm = realm(&kc, 100);
    assert_eq!(realm.find_top_level_group("shared").await.expect("search"), None);
    let made = realm
        .ensure_top_level_group("shared", &BTreeMap::new())
        .await
        .expect("ensure");
    assert!(
        made.created,
        "the original's top-level-only comparison bug is not repeated"
    );
    assert_eq!(kc.group_id("/shared").await, Some(made.value.id));
}

#[tokio::test]
async fn children_beyond_the_first_page_are_found() {
    let kc = start("gr-paging").await;
    let parent = kc.create_group("/parent").await;
    for i in 0..15 {
        let (status, body) = kc
            .admin(
                Method::POST,
                &format!("/groups/{parent}/children"),
                Some(json!({ "name": format!("child{i:02}") })),
            )
            .await;
        assert_eq!(status, 201, "create child{i:02}: {body}");
    }
    let realm = realm(&kc, 4);
    let children = realm.list_child_groups(&parent).await.expect("list");
    assert_eq!(children.len(), 15, "paged through /children four at a time");
    assert_eq!(kc.proxy().count("GET", &route("/groups/{id}/children")), 4);
    let found = realm.find_child_group(&parent, "child14").await.expect("find");
    assert_eq!(found.map(|g| g.name), Some("child14".to_string()));
    assert_eq!(realm.count_child_groups(&parent).await.expect("count"), 15);
    let ensured = realm
        .ensure_child_group(&parent, "child14", &BTreeMap::new())
        .await
        .expect("ensure");
    assert!(
        !ensured.created,
        "an existing child past Keycloak's default page of 10 is reused"
    );
}

#[tokio::test]
async fn child_groups_are_scoped_to_their_parent() {
    let kc = start("gr-scoped").await;
    kc.create_group("/c_one").await;
    kc.create_group("/c_one/admins").await;
    let two = kc.create_group("/c_two").await;
    let realm = realm(&kc, 100);
    assert_eq!(realm.find_child_group(&two, "admins").await.expect("find"), None);
    let made = realm
        .ensure_child_group(&two, "admins", &managed())
        .await
        .expect("ensure");
    assert!(made.created);
    assert_eq!(made.value.parent_id.as_deref(), Some(two.as_str()));
    assert_eq!(made.value.path, "/c_two/admins");
    assert!(
        kc.group_id("/c_one/admins").await.is_some(),
        "the other parent's child is untouched"
    );
    assert_eq!(
        realm.find_top_level_group("admins").await.expect("search"),
        None,
        "a child is not a top-level group"
    );
}

#[tokio::test]
async fn concurrent_creates_resolve_the_409_by_looking_up_again() {
    let kc = start("gr-race").await;
    let parent = kc.create_group("/parent").await;
    // Delay the creates so both callers have looked (and found nothing) before either create lands.
    kc.proxy()
        .add_fault(Fault::on("POST", &route("/groups/{id}/children")).latency(Duration::from_millis(300)));
    let (a, b) = (realm(&kc, 100), realm(&kc, 100));
    let no_attributes = BTreeMap::new();
    let (first, second) = tokio::join!(
        a.ensure_child_group(&parent, "team", &no_attributes),
        b.ensure_child_group(&parent, "team", &no_attributes)
    );
    let (first, second) = (first.expect("first"), second.expect("second"));
    assert_eq!(first.value.id, second.value.id);
    assert_eq!(
        [first.created, second.created].iter().filter(|c| **c).count(),
        1,
        "exactly one created it"
    );
    assert_eq!(
        kc.proxy().count("POST", &route("/groups/{id}/children")),
        2,
        "the loser met a 409"
    );
    assert_eq!(kc.group_tree().await[0].children.len(), 1, "one group, not two");
}

#[tokio::test]
async fn over_long_names_are_refused_before_calling_keycloak() {
    let kc = start("gr-long").await;
    let realm = realm(&kc, 100);
    let name = "g".repeat(256);
    let error = realm
        .ensure_top_level_group(&name, &BTreeMap::new())
        .await
        .expect_err("too long");
    assert_eq!(error.kind(), ErrorKind::Invalid);
    assert!(error.to_string().contains("at most 255"), "{error}");
    let error = realm
        .ensure_child_group("parent-id", &name, &BTreeMap::new())
        .await
        .expect_err("too long");
    assert_eq!(error.kind(), ErrorKind::Invalid);
    assert_eq!(kc.proxy().total(), 0, "no request, so no error from Keycloak");
    realm
        .ensure_top_level_group(&"g".repeat(255), &BTreeMap::new())
        .await
        .expect("255 is fine");
}

#[tokio::test]
async fn members_are_paged_added_and_removed_idempotently() {
    let kc = start("gr-members").await;
    let team = kc.create_group("/team").await;
    // Keycloak's user profile wants usernames of 3 characters or more.
    for name in ["ann", "ben", "cyd", "dee", "eve"] {
        kc.create_user(name, &["/team"]).await;
    }
    let fay = kc.create_user("fay", &[]).await;
    let realm = realm(&kc, 2);
    let members = realm.group_members(&team).await.expect("members");
    assert_eq!(
        members.iter().map(|u| u.username.as_str()).collect::<Vec<_>>(),
        vec!["ann", "ben", "cyd", "dee", "eve"]
    );
    assert_eq!(
        kc.proxy().count("GET", &route("/groups/{id}/members")),
        3,
        "pages of two"
    );
    realm.add_group_member(&team, &fay).await.expect("add");
    realm.add_group_member(&team, &fay).await.expect("add again");
    assert_eq!(kc.group_members("/team").await.map(|m| m.len()), Some(6));
    realm.remove_group_member(&team, &fay).await.expect("remove");
    realm
        .remove_group_member(&team, &fay)
        .await
        .expect("remove again (204 even when not a member)");
    assert!(
        !kc.group_members("/team")
            .await
            .unwrap_or_default()
            .contains(&"fay".to_string())
    );
    let gone = realm
        .remove_group_member("no-such-group", &fay)
        .await
        .expect_err("unknown group");
    assert!(gone.is_not_found());
    let ann = kc.user_id("ann").await.expect("ann");
    let groups = realm.user_groups(&ann).await.expect("groups");
    assert_eq!(
        groups.iter().map(|g| g.path.as_str()).collect::<Vec<_>>(),
        vec!["/team"]
    );
}

#[tokio::test]
async fn deleting_groups_and_reading_counts() {
    let kc = start("gr-delete").await;
    let parent = kc.create_group("/parent").await;
    let a = kc.create_group("/parent/a").await;
    kc.create_group("/parent/b").await;
    let realm = realm(&kc, 100);
    assert_eq!(realm.count_child_groups(&parent).await.expect("count"), 2);
    assert!(realm.delete_group(&a).await.expect("delete"));
    assert!(
        !realm.delete_group(&a).await.expect("already gone"),
        "404 counts as done"
    );
    assert_eq!(realm.count_child_groups(&parent).await.expect("count"), 1);
    assert!(realm.get_group(&a).await.expect("get").is_none());
    let error = realm.count_child_groups("nope").await.expect_err("missing parent");
    assert!(error.is_not_found());
    let group = realm.get_group(&parent).await.expect("get").expect("parent exists");
    realm
        .set_group_attributes(&group, &managed())
        .await
        .expect("attributes");
    assert_eq!(
        realm.get_group(&parent).await.expect("get").expect("parent").attributes,
        managed()
    );
    // Deleting a parent takes its subtree with it (what deleting a project's groups relies on).
    assert!(realm.delete_group(&parent).await.expect("delete the parent"));
    assert_eq!(kc.group_id("/parent/b").await, None);
    assert!(kc.group_tree().await.is_empty());
}
