//! A binding removed from the spec takes its access with it: its PRTB, its members and its group go; the shared
//! parent group and the other binding stay.

use e2e::harness::fault_proxy::Fault;

use crate::support::{
    PARENT, Setup, World, binding, binding_status, group_name, group_path, is_ready, wait_keycloak, wait_state,
    writer_labels, writer_spec,
};

#[tokio::test]
async fn a_binding_removed_from_the_spec_loses_its_prtb_members_and_group_and_the_parent_stays() {
    let world = World::start(Setup::default()).await;
    let rp = "4444dddd4b2c4e7f9a0b1c2d3e4f5a6b";
    let admins = group_name(rp, "project_admin");
    let members = group_name(rp, "project_member");
    world
        .write(
            "bindings-4444dddd",
            writer_spec(
                "Bindings",
                rp,
                vec![
                    binding(&admins, "project-owner", &["alice"]),
                    binding(&members, "project-member", &["bob", "carol"]),
                ],
            ),
            writer_labels(rp),
        )
        .await;
    let object = world.wait_ready("bindings-4444dddd").await;
    let project_id = object["status"]["rancherProjectId"]
        .as_str()
        .expect("project id")
        .to_string();
    assert_eq!(world.prtbs(&project_id).len(), 2);

    // The plugin drops a role's binding once its last member is gone.
    world
        .write(
            "bindings-4444dddd",
            writer_spec("Bindings", rp, vec![binding(&admins, "project-owner", &["alice"])]),
            writer_labels(rp),
        )
        .await;
    let object = world
        .wait_for("bindings-4444dddd", "one binding left", |o| {
            crate::support::is_ready(o) && binding_status(o, &members).is_none()
        })
        .await;
    assert_eq!(
        object["status"]["keycloakRoleBindings"].as_array().map(Vec::len),
        Some(1)
    );
    let expected = vec![(format!("keycloakoidc_group://{admins}"), "project-owner".to_string())];
    wait_state("only the admin PRTB is left", || {
        let prtbs = world.prtbs(&project_id);
        if prtbs == expected {
            Ok(())
        } else {
            Err(format!("{prtbs:?}"))
        }
    })
    .await;
    assert!(
        !world.group_exists(&group_path(&members)).await,
        "the member group is deleted"
    );
    for user in ["bob", "carol"] {
        assert!(world.user_groups(user).await.is_empty(), "{user} has no group left");
    }
    assert!(world.group_exists(&format!("/{PARENT}")).await, "the parent stays");
    assert_eq!(
        world.members(&group_path(&admins)).await,
        Some(vec!["alice".to_string()])
    );
    let note = world.wait_event("bindings-4444dddd", "BindingRemoved").await;
    assert!(
        note.contains("project-member") && note.contains("Keycloak group"),
        "{note}"
    );
}

#[tokio::test]
async fn a_changed_parent_group_leaves_no_group_with_members_under_the_old_parent() {
    let world = World::start(Setup::default()).await;
    let rp = "4545dddd4b2c4e7f9a0b1c2d3e4f5a6b";
    let group = group_name(rp, "project_member");
    let mut spec = writer_spec("Moving", rp, vec![binding(&group, "project-member", &["alice"])]);
    world.write("moving-4545dddd", spec.clone(), writer_labels(rp)).await;
    world.wait_ready("moving-4545dddd").await;
    assert!(world.group_exists(&group_path(&group)).await);

    spec["keycloak"]["parentGroupName"] = serde_json::json!("c_renamed");
    world.write("moving-4545dddd", spec, writer_labels(rp)).await;
    let new_path = format!("/c_renamed/{group}");
    wait_keycloak("the group under the new parent, recorded", || async {
        let id = world.group_id(&new_path).await.ok_or("no group under the new parent")?;
        let object = world.get("moving-4545dddd").await.ok_or("no object")?;
        if is_ready(&object) && binding_status(&object, &group).is_some_and(|b| b["keycloakGroupId"] == id.as_str()) {
            Ok(())
        } else {
            Err(object["status"].to_string())
        }
    })
    .await;
    assert_eq!(world.members(&new_path).await, Some(vec!["alice".to_string()]));
    assert!(
        !world.group_exists(&group_path(&group)).await,
        "the group under the old parent is gone"
    );
    assert_eq!(world.user_groups("alice").await, vec![new_path]);
}

#[tokio::test]
async fn a_binding_someone_else_made_is_used_but_never_deleted() {
    let world = World::start(Setup::default()).await;
    let rp = "5555dddd4b2c4e7f9a0b1c2d3e4f5a6b";
    let admins = group_name(rp, "project_admin");
    let viewers = group_name(rp, "project_viewer");
    world
        .write(
            "handmade-5555dddd",
            writer_spec("Handmade bindings", rp, vec![binding(&admins, "project-owner", &[])]),
            writer_labels(rp),
        )
        .await;
    let object = world.wait_ready("handmade-5555dddd").await;
    let project_id = object["status"]["rancherProjectId"]
        .as_str()
        .expect("project id")
        .to_string();

    // A Rancher admin grants the viewers' group by hand, before the spec asks for the same.
    world
        .rancher_call(
            reqwest::Method::POST,
            "/v3/projectroletemplatebindings",
            Some(serde_json::json!({
                "type": "projectRoleTemplateBinding", "projectId": project_id,
                "roleTemplateId": "read-only", "groupPrincipalId": format!("keycloakoidc_group://{viewers}"),
            })),
        )
        .await;
    let handmade = (format!("keycloakoidc_group://{viewers}"), "read-only".to_string());
    world
        .write(
            "handmade-5555dddd",
            writer_spec(
                "Handmade bindings",
                rp,
                vec![
                    binding(&admins, "project-owner", &[]),
                    binding(&viewers, "read-only", &[]),
                ],
            ),
            writer_labels(rp),
        )
        .await;
    world
        .wait_for("handmade-5555dddd", "both bindings", |o| {
            crate::support::is_ready(o) && binding_status(o, &viewers).is_some()
        })
        .await;
    let prtbs = world.prtbs(&project_id);
    assert_eq!(
        prtbs.iter().filter(|p| **p == handmade).count(),
        1,
        "used, not duplicated: {prtbs:?}"
    );

    // The spec drops it: the hand-made binding stays.
    world
        .write(
            "handmade-5555dddd",
            writer_spec("Handmade bindings", rp, vec![binding(&admins, "project-owner", &[])]),
            writer_labels(rp),
        )
        .await;
    world
        .wait_for("handmade-5555dddd", "one binding left", |o| {
            crate::support::is_ready(o) && binding_status(o, &viewers).is_none()
        })
        .await;
    // The pass that forgot it would have deleted it; one more pass (the drift resync) changes nothing either.
    let since = world.reconciles().await;
    world.wait_reconciles(since, 1).await;
    assert!(
        world.prtbs(&project_id).contains(&handmade),
        "the hand-made binding stays"
    );
}

#[tokio::test]
async fn a_failed_removal_of_the_replaced_group_is_recorded_and_retried_until_done() {
    let world = World::start(Setup::default()).await;
    let rp = "4646dddd4b2c4e7f9a0b1c2d3e4f5a6b";
    let group = group_name(rp, "project_member");
    let mut spec = writer_spec("Retried move", rp, vec![binding(&group, "project-member", &["alice"])]);
    world.write("retried-4646dddd", spec.clone(), writer_labels(rp)).await;
    world.wait_ready("retried-4646dddd").await;
    let old_id = world
        .group_id(&group_path(&group))
        .await
        .expect("the group under the first parent");

    // Keycloak refuses to delete groups while the parent changes: the old group stays, and so does its record.
    let fault = world
        .keycloak_proxy()
        .add_fault(Fault::on("DELETE", "/admin/realms/{realm}/groups/{id}").status(500));
    spec["keycloak"]["parentGroupName"] = serde_json::json!("c_retried");
    world.write("retried-4646dddd", spec, writer_labels(rp)).await;
    let waiting = world
        .wait_for("retried-4646dddd", "the replaced group recorded", |o| {
            binding_status(o, &group).is_some_and(|b| b["replacedKeycloakGroupId"] == old_id.as_str())
                && crate::support::condition(o, "KeycloakGroupsReady").is_some_and(|c| c["status"] == "False")
        })
        .await;
    assert!(
        world.group_exists(&group_path(&group)).await,
        "the delete failed: the group is still there"
    );
    assert_ne!(
        binding_status(&waiting, &group).expect("entry")["keycloakGroupId"],
        old_id.as_str(),
        "the entry already names the new group"
    );

    // Once Keycloak accepts deletes again, the retry removes the old group and forgets it.
    assert!(world.keycloak_proxy().remove_fault(fault));
    world
        .wait_for("retried-4646dddd", "the replaced group removed", |o| {
            crate::support::is_ready(o)
                && binding_status(o, &group).is_some_and(|b| b.get("replacedKeycloakGroupId").is_none())
        })
        .await;
    assert!(!world.group_exists(&group_path(&group)).await, "the old group is gone");
    assert_eq!(world.user_groups("alice").await, vec![format!("/c_retried/{group}")]);
}

#[tokio::test]
async fn a_changed_binding_description_is_written_to_the_group_this_object_created() {
    let world = World::start(Setup::default()).await;
    let rp = "4747dddd4b2c4e7f9a0b1c2d3e4f5a6b";
    let group = group_name(rp, "project_member");
    let described = |words: &str| {
        let mut entry = binding(&group, "project-member", &["alice"]);
        entry["description"] = serde_json::json!(words);
        entry
    };
    let path = group_path(&group);
    let description = || async {
        world
            .keycloak()
            .group_attributes(&path)
            .await
            .and_then(|attributes| attributes.get("description").and_then(|d| d.first().cloned()))
    };
    world
        .write(
            "described-4747dddd",
            writer_spec("Described", rp, vec![described("Members of the first team")]),
            writer_labels(rp),
        )
        .await;
    world.wait_ready("described-4747dddd").await;
    assert_eq!(description().await.as_deref(), Some("Members of the first team"));

    world.reset_counters();
    world
        .write(
            "described-4747dddd",
            writer_spec("Described", rp, vec![described("Members of the renamed team")]),
            writer_labels(rp),
        )
        .await;
    wait_keycloak("the new description in Keycloak", || async {
        match description().await {
            Some(words) if words == "Members of the renamed team" => Ok(()),
            other => Err(format!("description {other:?}")),
        }
    })
    .await;
    world.wait_ready("described-4747dddd").await;
    let breakdown = world.keycloak_breakdown();
    assert_eq!(
        breakdown.get("PUT /admin/realms/{realm}/groups/{id}").copied(),
        Some(1),
        "one group update: {breakdown:?}"
    );
    let attributes = world.keycloak().group_attributes(&path).await.expect("group");
    assert_eq!(attributes["managed_by"], vec!["rancher-keycloak-operator".to_string()]);
    assert_eq!(attributes["waldur.io/owner"].len(), 1, "the owner record is kept");
}
