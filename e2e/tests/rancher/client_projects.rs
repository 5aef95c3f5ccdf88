//! The operator's Rancher client against the emulator: projects.

use std::collections::BTreeMap;
use std::time::Duration;

use controllers::rancher::wire::MANAGED_ANNOTATION;
use controllers::rancher::{Deletion, ErrorKind, NewProject, ProjectQuotas, ProjectUpdate};
use rancher_emulator::ProjectSeed;

use crate::support::Env;

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn new_project(name: &str) -> NewProject {
    NewProject {
        cluster_id: "local".into(),
        name: name.into(),
        description: Some("made by the operator".into()),
        annotations: map(&[(MANAGED_ANNOTATION, "true"), ("waldur/organization", "org")]),
        ..NewProject::default()
    }
}

#[tokio::test]
async fn create_find_get_and_delete_a_project() {
    let env = Env::start().await;
    env.rancher.set_project_removal_delay(Duration::ZERO);
    let client = env.client();
    let created = client
        .create_project(&new_project("Genomics 2026"))
        .await
        .expect("created");
    assert!(created.id.starts_with("local:p-"));
    assert_eq!(
        created.annotations.get(MANAGED_ANNOTATION).map(String::as_str),
        Some("true")
    );
    let found = client.find_projects("local", "Genomics 2026").await.expect("found");
    assert_eq!(
        found.iter().map(|p| p.id.clone()).collect::<Vec<_>>(),
        vec![created.id.clone()]
    );
    assert!(
        client
            .find_projects("local", "genomics 2026")
            .await
            .expect("listed")
            .is_empty(),
        "names match exactly"
    );
    let fetched = client.get_project(&created.id).await.expect("get").expect("exists");
    assert_eq!(fetched.description.as_deref(), Some("made by the operator"));
    assert_eq!(
        client.delete_project(&created.id).await.expect("deleted"),
        Deletion::Deleted
    );
    assert_eq!(client.get_project(&created.id).await.expect("get"), None);
    assert_eq!(
        client.delete_project(&created.id).await.expect("second delete"),
        Deletion::AlreadyGone
    );
}

#[tokio::test]
async fn find_returns_every_project_with_the_name_across_pages() {
    let env = Env::start().await;
    for _ in 0..3 {
        env.rancher
            .add_project(&ProjectSeed {
                cluster_id: "local".into(),
                name: "twin".into(),
                ..ProjectSeed::default()
            })
            .expect("seeded");
    }
    let found = env.client().find_projects("local", "twin").await.expect("found");
    assert_eq!(found.len(), 3, "duplicate display names are all reported");
    let all = env.client().list_projects("local").await.expect("listed");
    assert_eq!(all.len(), 5);
}

#[tokio::test]
async fn pagination_is_followed_when_a_collection_spans_pages() {
    let env = Env::start().await;
    for index in 0..1005 {
        env.rancher
            .add_project(&ProjectSeed {
                cluster_id: "local".into(),
                name: format!("bulk-{index}"),
                ..ProjectSeed::default()
            })
            .expect("seeded");
    }
    env.rancher.reset_counters();
    let all = env.client().list_projects("local").await.expect("listed");
    assert_eq!(all.len(), 1007);
    assert_eq!(env.rancher.count("list", "projects"), 2, "two pages of 1000");
}

#[tokio::test]
async fn updates_rename_describe_annotate_and_change_quotas() {
    let env = Env::start().await;
    let client = env.client();
    let quotas = ProjectQuotas {
        project: map(&[("limitsCpu", "4000m"), ("limitsMemory", "8Gi")]),
        namespace_default: map(&[("limitsCpu", "4000m"), ("limitsMemory", "8Gi")]),
    };
    let created = client
        .create_project(&NewProject {
            quotas: Some(quotas),
            ..new_project("quota")
        })
        .await
        .expect("created with quotas");
    assert_eq!(created.quotas().map(|q| q.project.len()), Some(2));
    let update = ProjectUpdate {
        name: Some("quota renamed".into()),
        description: Some("new".into()),
        annotations: [("waldur/organization".to_string(), Some("org2".to_string()))].into(),
        quotas: Some(Some(ProjectQuotas {
            project: map(&[("limitsCpu", "2000m")]),
            namespace_default: map(&[("limitsCpu", "2000m")]),
        })),
    };
    let updated = client.update_project(&created, &update).await.expect("updated");
    assert_eq!(updated.name, "quota renamed");
    assert_eq!(updated.description.as_deref(), Some("new"));
    assert_eq!(
        updated.annotations.get("waldur/organization").map(String::as_str),
        Some("org2")
    );
    assert_eq!(
        updated.annotations.get(MANAGED_ANNOTATION).map(String::as_str),
        Some("true"),
        "other annotations stay"
    );
    assert_eq!(
        updated.quotas().map(|q| q.project),
        Some(map(&[("limitsCpu", "2000m")])),
        "a removed key is really removed (sent as null)"
    );
    env.rancher.reset_counters();
    let unchanged = client.update_project(&updated, &update).await.expect("no-op");
    assert_eq!(unchanged, updated);
    assert_eq!(
        env.rancher.count("update", "projects"),
        0,
        "a no-op update sends nothing"
    );
    let cleared = client
        .update_project(
            &updated,
            &ProjectUpdate {
                quotas: Some(None),
                ..ProjectUpdate::default()
            },
        )
        .await
        .expect("quotas cleared");
    assert_eq!(cleared.quotas(), None);
}

#[tokio::test]
async fn rejected_creates_come_back_as_invalid_with_a_safe_message() {
    let env = Env::start().await;
    let error = env
        .client()
        .create_project(&NewProject {
            cluster_id: "c-m-nope".into(),
            ..new_project("x")
        })
        .await
        .expect_err("unknown cluster");
    assert_eq!(error.kind(), ErrorKind::Invalid);
    let message = error.to_string();
    assert!(
        message.contains("HTTP 400") && message.contains("cluster not found"),
        "{message}"
    );
    assert!(!message.contains(&env.rancher.admin_token()), "{message}");
}
