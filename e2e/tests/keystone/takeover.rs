//! Taking over from keystone-operator: a credential, its Secret and its status as keystone-operator left them
//! (its finalizers, labels, immutable Secret, its own security hash and lib-common conditions) are adopted
//! without rotating — 0 new application credentials in Keystone — when Keystone shows the credential has the
//! spec's permissions; one whose permissions differ is replaced.

use std::collections::BTreeMap;

use controllers::keystone::{Endpoint, KeystoneClient, NewApplicationCredential, ServiceUser};
use framework::http::HttpSettings;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use kube::api::{Api, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use secrecy::SecretString;
use serde_json::json;

use crate::support::{CREDENTIAL, Setup, World};

/// Leaves what keystone-operator would have: a credential with `roles` in Keystone, its Secret, and the CR's
/// status in keystone-operator's shape. Returns the credential's id.
async fn leave_keystone_operators_credential(world: &World, roles: &[&str]) -> String {
    let keystone = KeystoneClient::new(HttpSettings::default(), None, None).expect("a Keystone client");
    let user = ServiceUser {
        endpoint: Endpoint::parse(&world.keystone_url()).expect("endpoint"),
        user_name: world.user.name.clone(),
        user_domain: "Default".into(),
        project_name: "service".into(),
        project_domain: "Default".into(),
        password: SecretString::from(world.user.password.clone()),
    };
    let secret = SecretString::from("secret-keystone-operator-chose".to_string());
    let roles: Vec<String> = roles.iter().map(|r| r.to_string()).collect();
    let expires_at = Timestamp::now() + SignedDuration::from_hours(24 * 300);
    let created = keystone
        .create_application_credential(
            &user,
            &NewApplicationCredential {
                name: "barbican-1a2b3c",
                description: "made by keystone-operator",
                secret: &secret,
                expires_at,
                roles: &roles,
                unrestricted: false,
                access_rules: &[],
            },
        )
        .await
        .expect("keystone-operator's credential");
    // The CR as keystone-operator left it: its finalizer, then its status.
    world.apply_credential(&["service"], "").await;
    let stored = world.credential().await;
    let patch = json!({"metadata": {"finalizers": ["openstack.org/applicationcredential"]}});
    world
        .credentials()
        .patch(CREDENTIAL, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("keystone-operator's finalizer");
    let secret_name = format!("ac-barbican-{}-secret", &created.id[..5]);
    let owner = OwnerReference {
        api_version: "keystone.openstack.org/v1beta1".into(),
        kind: "KeystoneApplicationCredential".into(),
        name: CREDENTIAL.into(),
        uid: stored.uid().expect("uid"),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    world
        .secrets()
        .create(
            &PostParams::default(),
            &Secret {
                metadata: ObjectMeta {
                    name: Some(secret_name.clone()),
                    labels: Some(BTreeMap::from([
                        ("application-credentials".to_string(), "true".to_string()),
                        ("application-credential-service".to_string(), "barbican".to_string()),
                    ])),
                    finalizers: Some(vec!["openstack.org/ac-secret-protection".to_string()]),
                    owner_references: Some(vec![owner]),
                    ..Default::default()
                },
                immutable: Some(true),
                string_data: Some(BTreeMap::from([
                    ("AC_ID".to_string(), created.id.clone()),
                    ("AC_SECRET".to_string(), "secret-keystone-operator-chose".to_string()),
                ])),
                ..Default::default()
            },
        )
        .await
        .expect("keystone-operator's Secret");
    let created_at = Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let expires = expires_at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let eligible = (expires_at - SignedDuration::from_hours(24 * 182))
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let status = json!({"status": {
        "acID": created.id, "secretName": secret_name, "createdAt": created_at, "expiresAt": expires,
        "rotationEligibleAt": eligible, "securityHash": "n5f8h7c6b4d9c57d", "observedGeneration": 1,
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "Ready", "severity": "", "message": "Setup complete",
             "lastTransitionTime": created_at},
            {"type": "KeystoneAPIReady", "status": "True", "reason": "Ready", "severity": "", "message": "ready",
             "lastTransitionTime": created_at},
        ],
    }});
    world
        .credentials()
        .patch_status(CREDENTIAL, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("keystone-operator's status");
    created.id
}

#[tokio::test]
async fn keystone_operators_credential_is_taken_over_without_a_new_one() {
    let mut world = World::start(Setup {
        manager: false,
        ..Setup::default()
    })
    .await;
    let id = leave_keystone_operators_credential(&world, &["service"]).await;
    world.start_manager(Vec::new()).await;
    let adopted = e2e::harness::wait_until("the take-over", e2e::harness::Deadline::secs(30), || async {
        let status = world.credential().await.status.unwrap_or_default();
        let ours = status
            .security_hash
            .as_deref()
            .is_some_and(|h| h.starts_with("sha256:"));
        if ours {
            Ok(Some(status))
        } else {
            Err(format!("{status:?}"))
        }
    })
    .await;
    assert_eq!(adopted.ac_id.as_deref(), Some(id.as_str()), "the same credential");
    assert_eq!(
        world.keystone_credentials().await.len(),
        1,
        "0 new application credentials in Keystone"
    );
    assert_eq!(
        world.credentials_created("initial").await + world.credentials_created("spec_change").await,
        0
    );
    let events: Api<Event> = Api::namespaced(world.cluster.client(), &world.namespace);
    let note = events
        .list(&ListParams::default())
        .await
        .expect("list events")
        .items
        .into_iter()
        .find(|e| e.reason.as_deref() == Some("ApplicationCredentialAdopted"))
        .and_then(|e| e.note)
        .expect("an ApplicationCredentialAdopted event");
    assert!(note.contains(&id), "{note}");
}

#[tokio::test]
async fn a_credential_whose_permissions_differ_from_the_spec_is_replaced() {
    let mut world = World::start(Setup {
        manager: false,
        user_roles: &["service", "reader"],
        ..Setup::default()
    })
    .await;
    let id = leave_keystone_operators_credential(&world, &["service", "reader"]).await;
    world.start_manager(Vec::new()).await;
    let replaced = world.wait_ready(Some(&id)).await.status.expect("status");
    assert_ne!(replaced.ac_id.as_deref(), Some(id.as_str()));
    assert_eq!(world.credentials_created("spec_change").await, 1);
}
