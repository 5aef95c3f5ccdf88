//! A Rancher project with the CR's name already exists: it is adopted when it carries ownership annotations
//! (this operator's owner annotation — what a crash between create and status write leaves behind — or the
//! original operator's `waldur/managed`) or when the CR explicitly allows it; otherwise a condition says why
//! and no second project is made.

use std::collections::BTreeMap;

use rancher_emulator::ProjectSeed;
use serde_json::json;

use crate::support::{CLUSTER, NAMESPACE, Setup, World, condition, writer_labels, writer_spec};

fn seed(world: &World, name: &str, annotations: &[(&str, &str)]) -> String {
    world
        .env
        .rancher
        .add_project(&ProjectSeed {
            cluster_id: CLUSTER.to_string(),
            name: name.to_string(),
            annotations: annotations
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
            ..ProjectSeed::default()
        })
        .expect("seed a project")
}

#[tokio::test]
async fn projects_with_our_or_the_original_operators_annotations_are_adopted_without_a_duplicate() {
    let world = World::start(Setup::default()).await;

    // Left by a crash between create and status write: our owner annotation, no status.
    let ours = seed(
        &world,
        "Crashed",
        &[("waldur.io/owner", &format!("{NAMESPACE}/crashed-7777aaaa"))],
    );
    let rp = "7777aaaa4b2c4e7f9a0b1c2d3e4f5a6b";
    world
        .write(
            "crashed-7777aaaa",
            writer_spec("Crashed", rp, vec![]),
            writer_labels(rp),
        )
        .await;
    let object = world.wait_ready("crashed-7777aaaa").await;
    assert_eq!(object["status"]["rancherProjectId"], ours.as_str());
    assert_eq!(world.projects_named("Crashed").len(), 1, "no duplicate");

    // Made by the original rancher-keycloak-operator.
    let legacy = seed(
        &world,
        "Legacy",
        &[("waldur/managed", "true"), ("waldur/organization", "old-org")],
    );
    let rp = "7878aaaa4b2c4e7f9a0b1c2d3e4f5a6b";
    world
        .write("legacy-7878aaaa", writer_spec("Legacy", rp, vec![]), writer_labels(rp))
        .await;
    let object = world.wait_ready("legacy-7878aaaa").await;
    assert_eq!(object["status"]["rancherProjectId"], legacy.as_str());
    assert_eq!(world.projects_named("Legacy").len(), 1, "no duplicate");
    let project = world.project(&legacy).expect("project");
    assert_eq!(
        project["annotations"]["waldur.io/owner"],
        format!("{NAMESPACE}/legacy-7878aaaa")
    );
    assert_eq!(
        project["description"], "Legacy workspace",
        "metadata synced on adoption"
    );
    let note = world.wait_event("legacy-7878aaaa", "ProjectAdopted").await;
    assert!(note.contains("original"), "{note}");
}

#[tokio::test]
async fn a_foreign_project_is_adopted_only_when_the_cr_allows_it() {
    let world = World::start(Setup::default()).await;
    let foreign = seed(&world, "Handmade", &[("team", "ops")]);
    let rp = "8888aaaa4b2c4e7f9a0b1c2d3e4f5a6b";
    world
        .write(
            "handmade-8888aaaa",
            writer_spec("Handmade", rp, vec![]),
            writer_labels(rp),
        )
        .await;
    let object = world
        .wait_for("handmade-8888aaaa", "RancherProjectReady False", |o| {
            condition(o, "RancherProjectReady").is_some_and(|c| c["status"] == "False")
        })
        .await;
    let refused = condition(&object, "RancherProjectReady").expect("condition");
    assert_eq!(refused["reason"], "ProjectNameTaken");
    let message = refused["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("adoptExistingProject") && message.contains(&foreign),
        "{message}"
    );
    assert_eq!(
        object["status"]["phase"], "Error",
        "needs a person: the plugin marks it erred"
    );
    assert_eq!(condition(&object, "Ready").expect("Ready")["status"], "False");
    assert_eq!(world.projects_named("Handmade").len(), 1, "no second project was made");
    assert!(object["status"]["rancherProjectId"].is_null());

    world
        .merge("handmade-8888aaaa", json!({"spec": {"adoptExistingProject": true}}))
        .await;
    let object = world.wait_ready("handmade-8888aaaa").await;
    assert_eq!(object["status"]["rancherProjectId"], foreign.as_str());
    assert_eq!(world.projects_named("Handmade").len(), 1);
    let project = world.project(&foreign).expect("project");
    assert_eq!(
        project["annotations"]["waldur.io/owner"],
        format!("{NAMESPACE}/handmade-8888aaaa")
    );
    assert_eq!(project["annotations"]["team"], "ops", "annotations of others are kept");
    assert_eq!(project["annotations"]["waldur.io/adopted"], "true");

    // The project existed before the object: deleting the object releases it, it does not delete it.
    world.delete("handmade-8888aaaa").await;
    world.wait_gone("handmade-8888aaaa").await;
    let project = world
        .project(&foreign)
        .expect("the adopted project outlives the object");
    assert!(project["annotations"].get("waldur.io/owner").is_none(), "{project}");
    assert!(project["annotations"].get("waldur.io/adopted").is_none(), "{project}");
    assert_eq!(project["annotations"]["team"], "ops");
}

#[tokio::test]
async fn rancher_built_in_projects_are_never_adopted() {
    let world = World::start(Setup::default()).await;
    let built_in = world.projects_named("Default");
    assert_eq!(
        built_in.len(),
        1,
        "the emulator's cluster has Rancher's Default project"
    );
    let rp = "9999aaaa4b2c4e7f9a0b1c2d3e4f5a6b";
    let mut spec = writer_spec("Default", rp, vec![]);
    spec["adoptExistingProject"] = json!(true);
    spec["deleteAdoptedProject"] = json!(true);
    world.write("default-9999aaaa", spec, writer_labels(rp)).await;
    let object = world
        .wait_for("default-9999aaaa", "RancherProjectReady False", |o| {
            condition(o, "RancherProjectReady").is_some_and(|c| c["status"] == "False")
        })
        .await;
    let refused = condition(&object, "RancherProjectReady").expect("condition");
    assert_eq!(refused["reason"], "ProjectNameTaken");
    assert!(
        refused["message"].as_str().unwrap_or_default().contains("built-in"),
        "{refused}"
    );
    world.delete("default-9999aaaa").await;
    world.wait_gone("default-9999aaaa").await;
    assert_eq!(
        world.projects_named("Default"),
        built_in,
        "Rancher's Default project is untouched"
    );
}
