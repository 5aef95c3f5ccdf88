//! The operator's Rancher client when Rancher misbehaves: retries of transient failures (and not of creates),
//! lost answers, outages, timeouts, and tokens that are rotated, revoked or unreadable.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use controllers::rancher::{
    BindingTarget, ErrorKind, NewProject, RancherClient, RancherError, StaticToken, Subject, TokenProvider,
};
use framework::ReconcileError;
use framework::http::HttpSettings;
use futures::future::BoxFuture;
use rancher_emulator::{ApiToken, Fault};
use secrecy::SecretString;

use crate::support::{Env, quick_settings};

fn project(name: &str) -> NewProject {
    NewProject {
        cluster_id: "local".into(),
        name: name.into(),
        ..NewProject::default()
    }
}

#[tokio::test]
async fn transient_failures_of_reads_are_retried() {
    let env = Env::start().await;
    env.rancher
        .inject_fault(Fault::on(Some("list"), Some("projects")).status(503).times(2));
    let found = env
        .client()
        .list_projects("local")
        .await
        .expect("third attempt succeeds");
    assert_eq!(found.len(), 2);
    assert_eq!(env.rancher.count("list", "projects"), 3);
    env.rancher
        .inject_fault(Fault::on(Some("get"), Some("clusters")).drop_connection().times(1));
    assert!(
        env.client()
            .get_cluster("local")
            .await
            .expect("retried after a dropped connection")
            .is_some()
    );
}

#[tokio::test]
async fn persistent_outages_end_as_unavailable_without_leaking_the_token() {
    let env = Env::start().await;
    env.rancher.inject_fault(Fault::on(None, Some("projects")).status(503));
    let error = env.client().list_projects("local").await.expect_err("keeps failing");
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert_eq!(error.category(), framework::ErrorCategory::Transient);
    assert_eq!(env.rancher.count("list", "projects"), 3, "one try plus two retries");
    env.rancher.clear_faults();
    env.rancher.set_down(true);
    let error = env.client().get_project("local:p-abcde").await.expect_err("down");
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    let message = error.to_string();
    assert!(!message.contains(&env.rancher.admin().secret), "{message}");
    assert!(!message.contains(env.rancher.url()), "no URL in the message: {message}");
}

#[tokio::test]
async fn creates_are_never_resent_blindly() {
    let env = Env::start().await;
    env.rancher
        .inject_fault(Fault::on(Some("create"), Some("projects")).status(503).times(1));
    let error = env.client().create_project(&project("once")).await.expect_err("503");
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert_eq!(
        env.rancher.count("create", "projects"),
        1,
        "a project create is sent once"
    );
    assert!(env.rancher.projects_named("local", "once").is_empty());
}

#[tokio::test]
async fn a_binding_whose_create_answer_was_lost_is_found_not_duplicated() {
    let env = Env::start().await;
    let project = env.create_project("local", "lossy").await;
    env.rancher.inject_fault(
        Fault::on(Some("create"), Some("projectroletemplatebindings"))
            .drop_connection()
            .after_handling()
            .times(1),
    );
    let target = BindingTarget::Project(project);
    let binding = env
        .client()
        .ensure_binding(&target, "project-member", &Subject::keycloak_group("g"))
        .await
        .expect("found after the lost answer");
    assert_eq!(
        env.rancher.project_bindings().len(),
        1,
        "no duplicate even though Rancher 2.13 would accept one"
    );
    assert_eq!(env.rancher.project_bindings()[0]["id"], binding.id.as_str());
}

#[tokio::test]
async fn slow_answers_time_out_as_unavailable() {
    let env = Env::start().await;
    env.rancher
        .inject_fault(Fault::on(Some("list"), Some("clusters")).latency(Duration::from_secs(2)));
    let settings = HttpSettings {
        request_timeout: Duration::from_millis(200),
        retries: 0,
        ..quick_settings()
    };
    let tokens: Arc<dyn TokenProvider> = Arc::new(StaticToken(SecretString::from(env.rancher.admin_token())));
    let client = RancherClient::new(env.rancher.url(), settings, None, tokens).expect("client");
    let error = client.list_namespaces("local", None).await;
    assert!(error.is_ok(), "other routes are not slowed");
    let slow = client.get_cluster("local").await;
    assert!(slow.is_ok(), "get is a different route from list");
    env.rancher
        .inject_fault(Fault::on(Some("get"), Some("clusters")).latency(Duration::from_secs(2)));
    let error = client.get_cluster("local").await.expect_err("times out");
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert!(error.to_string().contains("timed out"), "{error}");
}

/// A token source that hands out `tokens` in turn, advancing on each invalidation (a rotated Secret).
struct Rotating {
    tokens: Vec<String>,
    current: AtomicUsize,
    reads: AtomicUsize,
}

impl TokenProvider for Rotating {
    fn token(&self) -> BoxFuture<'_, Result<SecretString, RancherError>> {
        Box::pin(async move {
            self.reads.fetch_add(1, Ordering::SeqCst);
            let index = self.current.load(Ordering::SeqCst).min(self.tokens.len() - 1);
            Ok(SecretString::from(self.tokens[index].clone()))
        })
    }

    fn invalidate(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.current.fetch_add(1, Ordering::SeqCst);
        })
    }
}

#[tokio::test]
async fn a_rotated_token_is_picked_up_after_one_401() {
    let env = Env::start().await;
    let new_token = ApiToken::random("user-admin");
    env.rancher.add_token(new_token.clone());
    let revoked = ApiToken::random("user-admin");
    let source = Arc::new(Rotating {
        tokens: vec![revoked.bearer(), new_token.bearer()],
        current: AtomicUsize::new(0),
        reads: AtomicUsize::new(0),
    });
    let client = env.client_with(source.clone());
    let projects = client.list_projects("local").await.expect("second token works");
    assert_eq!(projects.len(), 2);
    assert_eq!(source.reads.load(Ordering::SeqCst), 2, "read, refused, re-read");
    let wrong = Arc::new(Rotating {
        tokens: vec![revoked.bearer()],
        current: AtomicUsize::new(0),
        reads: AtomicUsize::new(0),
    });
    let error = env
        .client_with(wrong.clone())
        .list_projects("local")
        .await
        .expect_err("still refused");
    assert_eq!(error.kind(), ErrorKind::Unauthorized);
    assert_eq!(wrong.reads.load(Ordering::SeqCst), 2, "only one refresh per request");
    assert!(error.to_string().contains("must authenticate"), "{error}");
    assert!(!error.to_string().contains(&revoked.secret));
}

struct Unreadable;

impl TokenProvider for Unreadable {
    fn token(&self) -> BoxFuture<'_, Result<SecretString, RancherError>> {
        Box::pin(async {
            Err(RancherError::TokenUnavailable {
                reason: "secret cattle-system/rancher-token not found".into(),
            })
        })
    }
}

#[tokio::test]
async fn an_unreadable_token_is_a_dependency_problem_and_nothing_is_sent() {
    let env = Env::start().await;
    let error = env
        .client_with(Arc::new(Unreadable))
        .list_projects("local")
        .await
        .expect_err("no token");
    assert_eq!(error.kind(), ErrorKind::Unauthorized);
    assert_eq!(error.category(), framework::ErrorCategory::Dependency);
    assert_eq!(error.reason(), "RancherTokenUnavailable");
    assert_eq!(env.rancher.count("list", "projects"), 0);
}
