//! A CR shaped like the Waldur plugin's gets a Rancher project with ownership annotations, the parent and
//! child Keycloak groups, PRTBs to `keycloakoidc_group://<group>`, its members, status ids and syncedMembers,
//! and becomes Ready; `kubectl get mrp` shows the printer columns.

use serde_json::json;

use crate::support::{
    CLUSTER, NAMESPACE, PARENT, Setup, World, binding, binding_status, condition, group_name, group_path, synced,
    writer_labels, writer_spec,
};

#[tokio::test]
async fn a_writer_shaped_cr_gets_a_project_groups_bindings_and_members_and_becomes_ready() {
    let world = World::start(Setup::default()).await;
    let rp = "8706dd1a4b2c4e7f9a0b1c2d3e4f5a6b";
    let admins = group_name(rp, "project_admin");
    let members = group_name(rp, "project_member");
    world.reset_counters();
    let writes_before = world.cluster.write_requests();
    world
        .write(
            "adamas-8706dd1a",
            writer_spec(
                "Genomics 2026",
                rp,
                vec![
                    binding(&admins, "project-owner", &["alice"]),
                    binding(&members, "project-member", &["bob", "Carol"]),
                ],
            ),
            writer_labels(rp),
        )
        .await;
    let object = world.wait_ready("adamas-8706dd1a").await;
    eprintln!(
        "MEASURE first reconcile (until Ready, {} reconciles): Rancher {} requests ({} writes) {:?}; Keycloak {} \
         admin requests ({} writes) {:?}; API writes {} (incl. the create)",
        world.reconciles().await,
        world.rancher_requests(),
        world.rancher_writes(),
        world.rancher_breakdown(),
        world.keycloak_requests(),
        world.keycloak_writes(),
        world.keycloak_breakdown(),
        world.cluster.write_requests() - writes_before,
    );

    // One Rancher project, with the ownership annotations and the spec's metadata.
    let projects = world.projects_named("Genomics 2026");
    assert_eq!(projects.len(), 1, "exactly one project: {projects:?}");
    let project = &projects[0];
    let project_id = project["id"].as_str().expect("project id").to_string();
    assert_eq!(object["status"]["rancherProjectId"], project_id);
    assert_eq!(
        project["annotations"]["waldur.io/owner"],
        format!("{NAMESPACE}/adamas-8706dd1a")
    );
    assert_eq!(project["annotations"]["waldur/managed"], "true");
    assert_eq!(project["annotations"]["waldur.io/resource-project-uuid"], rp);
    assert_eq!(project["description"], "Genomics 2026 workspace");

    // The parent group with both child groups under it, and the members (usernames are case-insensitive).
    assert!(world.group_exists(&format!("/{PARENT}")).await);
    assert_eq!(
        world.members(&group_path(&admins)).await,
        Some(vec!["alice".to_string()])
    );
    assert_eq!(
        world.members(&group_path(&members)).await,
        Some(vec!["bob".to_string(), "carol".to_string()])
    );

    // One PRTB per binding, granting the role to the group principal (by name).
    assert_eq!(
        world.prtbs(&project_id),
        vec![
            (format!("keycloakoidc_group://{admins}"), "project-owner".to_string()),
            (format!("keycloakoidc_group://{members}"), "project-member".to_string()),
        ]
    );

    // Status: ids, synced members as {userIdentifier, keycloakUserId}, counts, conditions.
    assert_eq!(
        object["status"]["keycloakParentGroupId"],
        world.group_id(&format!("/{PARENT}")).await.expect("parent id")
    );
    let admin_status = binding_status(&object, &admins).expect("admin binding status");
    assert_eq!(admin_status["rancherRole"], "project-owner");
    assert_eq!(
        admin_status["keycloakGroupId"],
        world.group_id(&group_path(&admins)).await.expect("group id")
    );
    assert!(
        admin_status["rancherBindingId"]
            .as_str()
            .is_some_and(|id| id.contains(":prtb-"))
    );
    assert_eq!(admin_status["memberCount"], 1);
    assert_eq!(
        admin_status["syncedMembers"],
        json!([{"userIdentifier": "alice", "keycloakUserId": world.user_id("alice").await.expect("alice")}])
    );
    assert_eq!(synced(&object, &members), vec!["bob", "carol"]);
    for type_ in [
        "RancherProjectReady",
        "ResourceQuotaReady",
        "KeycloakGroupsReady",
        "RancherBindingsReady",
        "MembershipSynced",
        "Ready",
    ] {
        let c = condition(&object, type_).unwrap_or_else(|| panic!("condition {type_}"));
        assert_eq!(c["status"], "True", "{type_}: {c}");
        assert_eq!(c["observedGeneration"], object["metadata"]["generation"], "{type_}");
    }
    assert_eq!(object["status"]["conditions"][0]["type"], "Ready", "Ready comes first");
    assert!(
        object["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f == "waldur.io/managed-rancher-project"))
    );
    assert!(object["status"]["lastReconcileTime"].is_string());
    world.wait_event("adamas-8706dd1a", "ProjectCreated").await;

    // Printer columns: Project, Cluster, Rancher ID, Phase, Age.
    let table = world
        .cluster
        .kubectl()
        .run(&["get", "mrp", "-n", NAMESPACE])
        .await
        .expect_success("get mrp");
    let header: Vec<&str> = table.lines().next().unwrap_or_default().split_whitespace().collect();
    assert_eq!(
        header,
        vec!["NAME", "PROJECT", "CLUSTER", "RANCHER", "ID", "PHASE", "AGE"],
        "{table}"
    );
    let row = table.lines().nth(1).unwrap_or_default();
    for cell in [
        "adamas-8706dd1a",
        "Genomics 2026",
        CLUSTER,
        project_id.as_str(),
        "Ready",
    ] {
        assert!(row.contains(cell), "{cell} missing from {row:?}");
    }

    // Metadata follows the spec after creation: a rename and a new description reach the same project.
    let mut renamed = writer_spec(
        "Genomics 2027",
        rp,
        vec![
            binding(&admins, "project-owner", &["alice"]),
            binding(&members, "project-member", &["bob", "Carol"]),
        ],
    );
    renamed["description"] = json!("Renamed in Waldur");
    renamed["organization"] = json!("hpc-demo-org");
    world.write("adamas-8706dd1a", renamed, writer_labels(rp)).await;
    let object = world.wait_ready("adamas-8706dd1a").await;
    assert_eq!(
        object["status"]["rancherProjectId"],
        project_id.as_str(),
        "the same project"
    );
    let project = world.project(&project_id).expect("project");
    assert_eq!(project["name"], "Genomics 2027");
    assert_eq!(project["description"], "Renamed in Waldur");
    assert_eq!(project["annotations"]["waldur/organization"], "hpc-demo-org");
    assert!(world.projects_named("Genomics 2026").is_empty());
}
