//! Groups through the client: what ManagedRancherProject needs (parent and child groups, paging, counts,
//! members) and NebariApp's top-level groups.

use std::collections::BTreeMap;
use std::time::Duration;

use controllers::keycloak::ErrorKind;
use keycloak_emulator::{EmulatorConfig, Fault, GroupSeed, UserSeed};

use crate::support::{REALM, realm, route, start, start_with};

fn managed() -> BTreeMap<String, Vec<String>> {
    BTreeMap::from([("managed_by".to_string(), vec!["platform-operator".to_string()])])
}

#[tokio::test]
async fn top_level_groups_are_created_once_and_found_afterwards() {
    let kc = start().await;
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
    assert_eq!(kc.hooks().count("POST", &route("/groups")), 1);
}

#[tokio::test]
async fn a_child_with_the_same_name_is_not_a_top_level_group() {
    let mut config = EmulatorConfig::with_realm(REALM);
    config.groups.push(GroupSeed::new(REALM, "/other/shared"));
    let kc = start_with(config).await;
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
    assert_eq!(kc.hooks().group_id(REALM, "/shared"), Some(made.value.id));
}

#[tokio::test]
async fn children_beyond_the_first_page_are_found() {
    let mut config = EmulatorConfig::with_realm(REALM);
    for i in 0..15 {
        config
            .groups
            .push(GroupSeed::new(REALM, &format!("/parent/child{i:02}")));
    }
    let kc = start_with(config).await;
    let parent = kc.hooks().group_id(REALM, "/parent").expect("parent");
    let realm = realm(&kc, 4);
    let children = realm.list_child_groups(&parent).await.expect("list");
    assert_eq!(children.len(), 15, "paged through /children four at a time");
    assert_eq!(kc.hooks().count("GET", &route("/groups/{id}/children")), 4);
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
    let mut config = EmulatorConfig::with_realm(REALM);
    config.groups.push(GroupSeed::new(REALM, "/c_one/admins"));
    config.groups.push(GroupSeed::new(REALM, "/c_two"));
    let kc = start_with(config).await;
    let two = kc.hooks().group_id(REALM, "/c_two").expect("c_two");
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
        kc.hooks().group_id(REALM, "/c_one/admins").is_some(),
        "the other parent's child is untouched"
    );
}

#[tokio::test]
async fn concurrent_creates_resolve_the_409_by_looking_up_again() {
    let mut config = EmulatorConfig::with_realm(REALM);
    config.groups.push(GroupSeed::new(REALM, "/parent"));
    let kc = start_with(config).await;
    let parent = kc.hooks().group_id(REALM, "/parent").expect("parent");
    // Delay the creates so both callers have looked (and found nothing) before either create lands.
    kc.hooks()
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
        kc.hooks().count("POST", &route("/groups/{id}/children")),
        2,
        "the loser met a 409"
    );
}

#[tokio::test]
async fn over_long_names_are_refused_before_calling_keycloak() {
    let kc = start().await;
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
    assert_eq!(kc.hooks().total_requests(), 0, "no request, so no 500 from Keycloak");
    realm
        .ensure_top_level_group(&"g".repeat(255), &BTreeMap::new())
        .await
        .expect("255 is fine");
}

#[tokio::test]
async fn members_are_paged_added_and_removed_idempotently() {
    let mut config = EmulatorConfig::with_realm(REALM);
    config.groups.push(GroupSeed::new(REALM, "/team"));
    for name in ["ann", "ben", "cy", "dee", "eve"] {
        config.users.push(UserSeed::new(REALM, name).member_of("/team"));
    }
    config.users.push(UserSeed::new(REALM, "fay"));
    let kc = start_with(config).await;
    let team = kc.hooks().group_id(REALM, "/team").expect("team");
    let fay = kc.hooks().user_id(REALM, "fay").expect("fay");
    let realm = realm(&kc, 2);
    let members = realm.group_members(&team).await.expect("members");
    assert_eq!(
        members.iter().map(|u| u.username.as_str()).collect::<Vec<_>>(),
        vec!["ann", "ben", "cy", "dee", "eve"]
    );
    realm.add_group_member(&team, &fay).await.expect("add");
    realm.add_group_member(&team, &fay).await.expect("add again");
    assert_eq!(kc.hooks().group_members(REALM, "/team").map(|m| m.len()), Some(6));
    realm.remove_group_member(&team, &fay).await.expect("remove");
    realm
        .remove_group_member(&team, &fay)
        .await
        .expect("remove again (204 even when not a member)");
    assert!(
        !kc.hooks()
            .group_members(REALM, "/team")
            .unwrap_or_default()
            .contains(&"fay".to_string())
    );
    let gone = realm
        .remove_group_member("no-such-group", &fay)
        .await
        .expect_err("unknown group");
    assert!(gone.is_not_found());
    let groups = realm
        .user_groups(&kc.hooks().user_id(REALM, "ann").expect("ann"))
        .await
        .expect("groups");
    assert_eq!(
        groups.iter().map(|g| g.path.as_str()).collect::<Vec<_>>(),
        vec!["/team"]
    );
}

#[tokio::test]
async fn deleting_groups_and_reading_counts() {
    let mut config = EmulatorConfig::with_realm(REALM);
    config.groups.push(GroupSeed::new(REALM, "/parent/a"));
    config.groups.push(GroupSeed::new(REALM, "/parent/b"));
    let kc = start_with(config).await;
    let parent = kc.hooks().group_id(REALM, "/parent").expect("parent");
    let a = kc.hooks().group_id(REALM, "/parent/a").expect("a");
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
}
