//! User lookups through the client: by username, email or id; unknown users reported, not fatal.

use controllers::keycloak::UserRef;
use e2e::harness::keycloak::TestRealm;

use crate::support::{create_user_with_email, realm, start};

/// A realm with `Alice` (stored lower-cased), `alice2` and `bob`.
async fn seeded(prefix: &str) -> TestRealm {
    let kc = start(prefix).await;
    create_user_with_email(&kc, "Alice", "alice@example.org").await;
    create_user_with_email(&kc, "alice2", "other@example.org").await;
    kc.create_user("bob", &[]).await;
    kc
}

#[tokio::test]
async fn users_are_found_by_exact_username_email_or_id() {
    let kc = seeded("us-find").await;
    let realm = realm(&kc, 100);
    let alice = realm
        .find_user_by_username("ALICE")
        .await
        .expect("lookup")
        .expect("alice");
    assert_eq!(alice.username, "alice");
    assert_eq!(
        realm.find_user_by_username("ali").await.expect("lookup"),
        None,
        "exact, not prefix"
    );
    let by_email = realm
        .find_user_by_email("Alice@Example.org")
        .await
        .expect("lookup")
        .expect("by email");
    assert_eq!(by_email.id, alice.id);
    assert_eq!(
        realm.get_user(&alice.id).await.expect("get").map(|u| u.username),
        Some("alice".to_string())
    );
    assert_eq!(realm.get_user("not-an-id").await.expect("get"), None);
}

#[tokio::test]
async fn resolving_reports_unknown_users_without_failing() {
    let kc = seeded("us-resolve").await;
    let realm = realm(&kc, 100);
    let bob = kc.user_id("bob").await.expect("bob");
    let references = vec![
        UserRef::Username("alice".into()),
        UserRef::Id(bob.clone()),
        UserRef::UsernameOrEmail("other@example.org".into()),
        UserRef::Username("carol".into()),
        UserRef::Email("nobody@example.org".into()),
        UserRef::Id("missing-id".into()),
    ];
    let resolution = realm.resolve_users(&references).await.expect("resolve");
    let found: Vec<(&str, &str)> = resolution
        .found
        .iter()
        .map(|(r, u)| (r.identifier(), u.username.as_str()))
        .collect();
    assert_eq!(
        found,
        vec![
            ("alice", "alice"),
            (bob.as_str(), "bob"),
            ("other@example.org", "alice2")
        ]
    );
    assert_eq!(
        resolution.unknown,
        vec![
            UserRef::Username("carol".into()),
            UserRef::Email("nobody@example.org".into()),
            UserRef::Id("missing-id".into())
        ]
    );
}
