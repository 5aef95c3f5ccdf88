//! The operator's Rancher client against the emulator: role template bindings under both duplicate policies,
//! and namespaces for the inventory.

use std::time::Duration;

use controllers::rancher::{BindingTarget, Deletion, ErrorKind, Subject};
use rancher_emulator::{DuplicateBindingPolicy, Fault, NamespaceSeed};

use crate::support::Env;

#[tokio::test]
async fn ensure_binding_creates_once_and_then_finds_it() {
    let env = Env::start().await;
    let project = env.create_project("local", "bound").await;
    let client = env.client();
    let target = BindingTarget::Project(project.clone());
    let subject = Subject::keycloak_group("c_local_x_project_member");
    let first = client
        .ensure_binding(&target, "project-member", &subject)
        .await
        .expect("created");
    assert_eq!(first.project_id.as_deref(), Some(project.as_str()));
    assert_eq!(
        first.group_principal_id.as_deref(),
        Some("keycloakoidc_group://c_local_x_project_member")
    );
    let second = client
        .ensure_binding(&target, "project-member", &subject)
        .await
        .expect("found");
    assert_eq!(first.id, second.id);
    assert_eq!(env.rancher.count("create", "projectroletemplatebindings"), 1);
    assert_eq!(client.list_bindings(&target).await.expect("listed").len(), 1);
    assert_eq!(
        client.delete_binding(&target, &first.id).await.expect("deleted"),
        Deletion::Deleted
    );
    assert_eq!(
        client.delete_binding(&target, &first.id).await.expect("gone"),
        Deletion::AlreadyGone
    );
}

#[tokio::test]
async fn a_409_on_create_means_already_there_under_rancher_2_14() {
    let env = Env::start().await;
    env.rancher.set_duplicate_bindings(DuplicateBindingPolicy::Reject);
    let project = env.create_project("local", "raced").await;
    let client = env.client();
    let target = BindingTarget::Project(project);
    let subject = Subject::keycloak_group("team");
    // Two writers race: both look and find nothing, then both create (the creates are held back so both looks
    // happen first). Rancher 2.14 answers the second with 409; the client re-finds the winner's binding.
    env.rancher.inject_fault(
        Fault::on(Some("create"), Some("projectroletemplatebindings"))
            .latency(Duration::from_millis(200))
            .times(2),
    );
    let (a, b) = tokio::join!(
        client.ensure_binding(&target, "project-owner", &subject),
        client.ensure_binding(&target, "project-owner", &subject)
    );
    let (a, b) = (a.expect("first writer"), b.expect("second writer"));
    assert_eq!(a.id, b.id, "both writers end with the same binding");
    assert_eq!(
        env.rancher.count("create", "projectroletemplatebindings"),
        2,
        "both really tried to create"
    );
    assert_eq!(env.rancher.project_bindings().len(), 1);
    let again = client
        .create_binding(&target, "project-owner", &subject)
        .await
        .expect_err("duplicate refused");
    assert_eq!(again.kind(), ErrorKind::Conflict);
}

#[tokio::test]
async fn duplicates_left_by_rancher_2_13_are_all_found() {
    let env = Env::start().await;
    let project = env.create_project("local", "dups").await;
    let client = env.client();
    let target = BindingTarget::Project(project);
    let subject = Subject::keycloak_group("team");
    client
        .create_binding(&target, "read-only", &subject)
        .await
        .expect("first");
    client
        .create_binding(&target, "read-only", &subject)
        .await
        .expect("duplicate accepted");
    assert_eq!(
        client
            .find_bindings(&target, "read-only", &subject)
            .await
            .expect("found")
            .len(),
        2
    );
    assert!(
        client
            .find_bindings(&target, "project-owner", &subject)
            .await
            .expect("none")
            .is_empty()
    );
}

#[tokio::test]
async fn cluster_bindings_work_like_project_bindings() {
    let env = Env::start().await;
    let client = env.client();
    let target = BindingTarget::Cluster("local".into());
    let subject = Subject::keycloak_group("c_local_cluster_admin");
    let binding = client
        .ensure_binding(&target, "cluster-owner", &subject)
        .await
        .expect("created");
    assert!(binding.id.starts_with("local:crtb-"));
    assert_eq!(binding.cluster_id.as_deref(), Some("local"));
    let wrong = client
        .ensure_binding(&target, "project-member", &subject)
        .await
        .expect_err("wrong context");
    assert_eq!(wrong.kind(), ErrorKind::Invalid);
    assert_eq!(
        client.delete_binding(&target, &binding.id).await.expect("deleted"),
        Deletion::Deleted
    );
}

#[tokio::test]
async fn namespaces_are_listed_per_project_and_per_cluster() {
    let env = Env::start().await;
    let project = env.create_project("local", "inventory").await;
    for name in ["ns-a", "ns-b"] {
        env.rancher
            .add_namespace(&NamespaceSeed {
                cluster_id: "local".into(),
                name: name.into(),
                project_id: Some(project.clone()),
                ..NamespaceSeed::default()
            })
            .expect("seeded");
    }
    let client = env.client();
    let in_project = client.list_namespaces("local", Some(&project)).await.expect("listed");
    let mut names: Vec<_> = in_project.iter().map(|ns| ns.name.clone()).collect();
    names.sort();
    assert_eq!(names, vec!["ns-a".to_string(), "ns-b".to_string()]);
    let everything = client.list_namespaces("local", None).await.expect("listed");
    assert_eq!(everything.len(), 3, "default plus the two; system namespaces hidden");
    assert!(client.get_cluster("local").await.expect("get").is_some());
    assert!(client.get_cluster("c-m-nope").await.expect("get").is_none());
    let error = client
        .list_namespaces("c-m-nope", None)
        .await
        .expect_err("unknown cluster");
    assert_eq!(error.kind(), ErrorKind::NotFound);
}
