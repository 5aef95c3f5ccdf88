//! Takeover from each released shape of rancher-keycloak-operator: what it left in Rancher and Keycloak (the
//! project with its `waldur/managed` annotation, the parent and binding groups marked `managed_by`, the members, the
//! group PRTBs and, from 0.4, the cluster CRTB) and the CR as it stored it (kopf's finalizer and annotation, the
//! spec and status of that version). Started on it, this operator takes every object over with no Rancher and no
//! Keycloak write, reports Ready, and its deletion still removes everything.
//!
//! Versions whose source is public as text (0.0.3) are exact; 0.3.x and 0.4.x follow what the Waldur plugin sends
//! and reads (its fixtures report synced members as `{userIdentifier}` objects).

use std::collections::BTreeMap;

use e2e::harness::{Deadline, wait_until};
use kube::api::{Patch, PatchParams};
use rancher_emulator::ProjectSeed;
use serde_json::{Value, json};

use crate::support::{
    CLUSTER, NAMESPACE, PARENT, Setup, World, binding_status, group_name, group_path, wait_state, writer_labels,
    writer_spec,
};

/// A released line of rancher-keycloak-operator whose leftovers differ.
#[derive(Clone, Copy, Debug)]
enum Release {
    /// 0.0.3: members by Keycloak id, a namespace it made, its own `Reconciled` condition.
    V0_0_3,
    /// 0.3.0 and 0.3.1: the plugin's spec (resource UUIDs, no namespace), `ResourceQuotaReady`.
    V0_3,
    /// 0.4.0 and 0.4.1: adds `spec.cluster.keycloak` and `status.clusterKeycloakRoleBindings` (a CRTB).
    V0_4,
}

/// What the takeover needs to check afterwards.
struct Leftovers {
    name: String,
    project_id: String,
    prtb: String,
    groups: Vec<String>,
}

const CLUSTER_GROUP: &str = "c_c-m-glwxdksp_cluster_resource_admin";

/// Builds what `release` left behind for one project, with the manager stopped.
async fn leave(world: &World, release: Release) -> Leftovers {
    let rp = match release {
        Release::V0_0_3 => "00030000aaaa4e7f9a0b1c2d3e4f5a6b",
        Release::V0_3 => "00300000bbbb4e7f9a0b1c2d3e4f5a6b",
        Release::V0_4 => "00400000cccc4e7f9a0b1c2d3e4f5a6b",
    };
    let name = format!("released-{}", &rp[..8]);
    let project_name = format!("Released {release:?}");
    let group = group_name(rp, "project_member");

    let mut annotations = BTreeMap::from([("waldur/managed".to_string(), "true".to_string())]);
    if matches!(release, Release::V0_0_3) {
        annotations.insert("waldur/organization".to_string(), "org".to_string());
    }
    let project_id = world
        .env
        .rancher
        .add_project(&ProjectSeed {
            cluster_id: CLUSTER.to_string(),
            name: project_name.clone(),
            description: Some(format!("{project_name} workspace")),
            annotations,
            ..ProjectSeed::default()
        })
        .expect("seed the project");

    // The groups as the original made them (through Keycloak's admin API, as it did), marked `managed_by`.
    let keycloak = world.keycloak();
    let managed_by = || BTreeMap::from([("managed_by".to_string(), vec!["rancher-keycloak-operator".to_string()])]);
    let mut parent_attributes = managed_by();
    parent_attributes.insert("description".to_string(), vec!["Cluster access group".to_string()]);
    keycloak.create_group(&format!("/{PARENT}")).await;
    keycloak
        .set_group_attributes(&format!("/{PARENT}"), &parent_attributes)
        .await;
    let group_id = keycloak.create_group(&group_path(&group)).await;
    keycloak.set_group_attributes(&group_path(&group), &managed_by()).await;
    keycloak.add_membership("alice", &group_path(&group)).await;
    let alice = keycloak.user_id("alice").await.expect("alice");
    let prtb = world
        .rancher_call(
            reqwest::Method::POST,
            "/v3/projectroletemplatebindings",
            Some(
                json!({"type": "projectRoleTemplateBinding", "roleTemplateId": "project-member",
                        "projectId": project_id, "groupPrincipalId": format!("keycloakoidc_group://{group}")}),
            ),
        )
        .await["id"]
        .as_str()
        .expect("the PRTB's id")
        .to_string();
    let mut groups = vec![group_path(&group)];

    let (spec, labels, status) = match release {
        Release::V0_0_3 => {
            install_original_crd(world).await;
            let spec = json!({
                "projectName": project_name, "clusterId": CLUSTER, "description": format!("{project_name} workspace"),
                "organization": "org", "namespace": {"name": name.clone()},
                "keycloak": {"enabled": true, "parentGroupName": PARENT, "roleBindings": [
                    {"groupName": group, "rancherRole": "project-member", "members": [{"userIdentifier": alice}]},
                ]},
            });
            let status = json!({
                "phase": "Ready", "rancherProjectId": project_id, "namespaceName": name.clone(),
                "keycloakRoleBindings": [{"groupName": group, "keycloakGroupId": group_id, "rancherBindingId": prtb,
                                          "memberCount": 1, "syncedMembers": [alice]}],
                "conditions": [condition("Reconciled", "Done")],
            });
            (spec, json!({}), status)
        }
        Release::V0_3 | Release::V0_4 => {
            let mut spec = writer_spec(
                &project_name,
                rp,
                vec![crate::support::binding(&group, "project-member", &["alice"])],
            );
            let mut status = json!({
                "phase": "Ready", "rancherProjectId": project_id, "observedGeneration": 1,
                "keycloakRoleBindings": [{"groupName": group, "keycloakGroupId": group_id, "rancherBindingId": prtb,
                                          "memberCount": 1, "syncedMembers": [{"userIdentifier": "alice"}]}],
                "conditions": [condition("KeycloakGroupsReady", "GroupsReady"),
                               condition("RancherBindingsReady", "BindingsReady"),
                               condition("MembershipSynced", "MembersInSync"),
                               condition("ResourceQuotaReady", "NoQuota")],
            });
            if matches!(release, Release::V0_4) {
                let cluster_group = format!("/{PARENT}/{CLUSTER_GROUP}");
                let cluster_group_id = keycloak.create_group(&cluster_group).await;
                keycloak.set_group_attributes(&cluster_group, &managed_by()).await;
                keycloak.add_membership("bob", &cluster_group).await;
                let crtb = world
                    .rancher_call(
                        reqwest::Method::POST,
                        "/v3/clusterroletemplatebindings",
                        Some(
                            json!({"type": "clusterRoleTemplateBinding", "roleTemplateId": "cluster-member",
                                    "clusterId": CLUSTER,
                                    "groupPrincipalId": format!("keycloakoidc_group://{CLUSTER_GROUP}")}),
                        ),
                    )
                    .await["id"]
                    .as_str()
                    .expect("the CRTB's id")
                    .to_string();
                spec["cluster"] = json!({"keycloak": {"enabled": true, "roleBindings": [
                    crate::support::binding(CLUSTER_GROUP, "cluster-member", &["bob"]),
                ]}});
                status["clusterKeycloakRoleBindings"] = json!([{
                    "groupName": CLUSTER_GROUP, "keycloakGroupId": cluster_group_id, "rancherBindingId": crtb,
                    "memberCount": 1,
                    "syncedMembers": [{"userIdentifier": "bob"}],
                }]);
                groups.push(format!("/{PARENT}/{CLUSTER_GROUP}"));
            }
            (spec, writer_labels(rp), status)
        }
    };
    let object = json!({
        "apiVersion": "waldur.io/v1alpha1",
        "kind": "ManagedRancherProject",
        "metadata": {
            "name": name.clone(), "namespace": NAMESPACE, "labels": labels,
            "finalizers": ["kopf.zalando.org/KopfFinalizerMarker"],
            "annotations": {"kopf.zalando.org/last-handled-configuration":
                            serde_json::to_string(&json!({"spec": spec})).expect("json")},
        },
        "spec": spec,
    });
    let api = world.mrps();
    let created: kube::core::DynamicObject = serde_json::from_value(object).expect("object");
    wait_until("the CRD serves objects", Deadline::secs(20), || {
        let api = api.clone();
        let created = created.clone();
        async move {
            match api.create(&Default::default(), &created).await {
                Ok(_) => Ok(Some(())),
                Err(e) => Err(e.to_string()),
            }
        }
    })
    .await;
    api.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(&json!({ "status": status })),
    )
    .await
    .expect("write the original's status");
    Leftovers {
        name,
        project_id,
        prtb,
        groups,
    }
}

/// A condition as the original wrote them.
fn condition(type_: &str, reason: &str) -> Value {
    json!({"type": type_, "status": "True", "reason": reason, "message": "",
           "lastTransitionTime": "2025-01-01T00:00:00Z"})
}

/// 0.0.3's CRD, as that release installed it (replaced by ours before the manager starts).
async fn install_original_crd(world: &World) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crds/tests/fixtures/original-shapes/managedrancherproject-v0.0.3-crd.yaml");
    assert!(path.exists(), "{} is missing", path.display());
    world
        .cluster
        .kubectl()
        .run(&[
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            &path.to_string_lossy(),
        ])
        .await
        .expect_success("install the 0.0.3 CRD");
}

/// Leaves `release`'s objects, starts the manager on them and checks the takeover and the deletion.
async fn takes_over(release: Release) {
    let mut world = World::start(Setup {
        manager: false,
        ..Setup::default()
    })
    .await;
    let left = leave(&world, release).await;
    // The upgrade: our CRD replaces the original one; stored objects are not touched.
    world.cluster.install_crds(&crds::all()).await;

    let alice = world.user_id("alice").await.expect("alice");
    world.reset_counters();
    world.start_manager(Vec::new()).await;
    let taken = world.wait_ready(&left.name).await;
    world.manager().wait_idle("managedrancherproject").await;
    assert_eq!(
        world.rancher_writes(),
        0,
        "{release:?}: {:?}",
        world.rancher_breakdown()
    );
    assert_eq!(
        world.keycloak_writes(),
        0,
        "{release:?}: {:?}",
        world.keycloak_breakdown()
    );

    assert_eq!(
        taken["metadata"]["finalizers"],
        json!(["waldur.io/managed-rancher-project"]),
        "{release:?}: kopf's finalizer is swapped for ours"
    );
    assert_eq!(taken["status"]["rancherProjectId"], left.project_id.as_str());
    let project_name = format!("Released {release:?}");
    assert_eq!(world.projects_named(&project_name).len(), 1, "no duplicate project");
    assert_eq!(world.prtbs(&left.project_id).len(), 1, "no duplicate PRTB");
    let binding = binding_status(&taken, left.groups[0].rsplit('/').next().expect("name")).expect("binding");
    assert_eq!(binding["memberCount"], 1, "{binding}");
    assert_eq!(
        binding["rancherBindingId"],
        left.prtb.as_str(),
        "the original's PRTB is recorded as ours"
    );
    assert!(taken["status"]["namespaceName"].is_null(), "{}", taken["status"]);
    assert!(
        crate::support::condition(&taken, "Reconciled").is_none(),
        "the original's own condition is gone"
    );
    assert_eq!(
        binding["syncedMembers"][0]["userIdentifier"],
        if matches!(release, Release::V0_0_3) {
            json!(alice)
        } else {
            json!("alice")
        },
    );
    // Converged: later passes write nothing, not even the status.
    let settled = world.wait_reconciles(world.reconciles().await, 1).await;
    let writes = world.cluster.write_requests();
    world.wait_reconciles(settled, 2).await;
    assert_eq!(
        world.cluster.write_requests(),
        writes,
        "no status write loop after the takeover"
    );
    if matches!(release, Release::V0_4) {
        assert_eq!(world.crtbs().len(), 1, "no duplicate CRTB: {:?}", world.crtbs());
        assert_eq!(
            taken["status"]["clusterKeycloakRoleBindings"][0]["memberCount"], 1,
            "{}",
            taken["status"]
        );
    }

    world.delete(&left.name).await;
    world.wait_gone(&left.name).await;
    for group in &left.groups {
        assert!(!world.group_exists(group).await, "{release:?}: {group} is removed");
    }
    assert!(
        !world.group_exists(&format!("/{PARENT}")).await,
        "the parent group is removed"
    );
    assert!(world.crtbs().is_empty(), "{:?}", world.crtbs());
    wait_state("the project is deleted", || match world.project(&left.project_id) {
        Some(p) if p["state"] != "removing" => Err(format!("{}", p["state"])),
        _ => Ok(()),
    })
    .await;
}

#[tokio::test]
async fn release_0_0_3_is_taken_over_without_external_writes_and_deletes_cleanly() {
    takes_over(Release::V0_0_3).await;
}

#[tokio::test]
async fn release_0_3_is_taken_over_without_external_writes_and_deletes_cleanly() {
    takes_over(Release::V0_3).await;
}

#[tokio::test]
async fn release_0_4_is_taken_over_without_external_writes_and_deletes_cleanly() {
    takes_over(Release::V0_4).await;
}
