//! A new KeystoneApplicationCredential gets a working credential in an immutable, protected Secret, a
//! consistent status, useful printer columns — and a pass with nothing to do costs nothing. Keystone is found
//! through the namespace's KeystoneAPI, or through `--keystone-url` where keystone-operator is not installed.

use std::collections::BTreeSet;

use e2e::harness::{Deadline, ManagerOptions, ManagerProcess, TestCluster, counts_since, wait_until};
use e2e::keystone::sample::{self, prepare_for_sample};
use e2e::keystone::shared;
use jiff::{SignedDuration, Timestamp};
use kube::Api;
use serde_json::Value;

use crate::support::{CREDENTIAL, Setup, World};

const ACCESS_RULES: &str = "  accessRules:\n    - service: compute\n      path: /servers\n      method: GET\n    - service: image\n      path: /images\n      method: GET\n";

#[tokio::test]
async fn a_new_credential_lands_in_an_immutable_protected_secret_and_logs_in_with_the_specs_permissions() {
    let mut world = World::start(Setup {
        user_roles: &["service", "reader"],
        ..Setup::default()
    })
    .await;
    let applied_at = Timestamp::now();
    world
        .apply_credential(
            &["service", "reader"],
            &format!("{ACCESS_RULES}  expirationDays: 30\n  gracePeriodDays: 10\n"),
        )
        .await;
    let ac = world.wait_ready(None).await;
    let status = ac.status.clone().expect("status");
    let id = status.ac_id.clone().expect("acID");
    let secret_name = status.secret_name.clone().expect("secretName");

    // The Secret: name, labels, finalizer, owner, immutable, data.
    assert_eq!(secret_name, format!("ac-barbican-{}-secret", &id[..5]));
    let secret = world.secrets().get(&secret_name).await.expect("the Secret exists");
    assert_eq!(secret.immutable, Some(true));
    let labels = secret.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("application-credentials").map(String::as_str), Some("true"));
    assert_eq!(
        labels.get("application-credential-service").map(String::as_str),
        Some("barbican")
    );
    assert_eq!(
        secret.metadata.finalizers,
        Some(vec!["openstack.org/ac-secret-protection".to_string()])
    );
    let owner = &secret.metadata.owner_references.clone().unwrap_or_default()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
        (
            "KeystoneApplicationCredential",
            CREDENTIAL,
            ac.metadata.uid.as_deref().unwrap_or_default()
        )
    );
    assert_eq!((owner.controller, owner.block_owner_deletion), (Some(true), Some(true)));
    assert!(
        ac.metadata
            .finalizers
            .clone()
            .unwrap_or_default()
            .contains(&"openstack.org/applicationcredential".to_string())
    );
    let (stored_id, _) = world.secret_credential(&secret_name).await;
    assert_eq!(stored_id, id);
    world.assert_secret_authenticates(&secret_name).await;

    // Keystone holds exactly one credential, with the spec's roles and access rules.
    assert_eq!(world.keystone_credentials().await.len(), 1);
    let credential = world
        .admin
        .application_credential(&world.user.id, &id)
        .await
        .expect("read")
        .expect("exists");
    let roles: BTreeSet<&str> = credential["roles"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(roles, BTreeSet::from(["reader", "service"]));
    let rules: BTreeSet<(String, String, String)> = credential["access_rules"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let field = |k: &str| r[k].as_str().unwrap_or_default().to_string();
            (field("service"), field("path"), field("method"))
        })
        .collect();
    assert_eq!(
        rules,
        BTreeSet::from([
            ("compute".to_string(), "/servers".to_string(), "GET".to_string()),
            ("image".to_string(), "/images".to_string(), "GET".to_string())
        ])
    );
    assert_eq!(credential["unrestricted"], Value::Bool(false));

    // Status times are consistent: expiresAt = createdAt + 30 days (Keystone's value), rotationEligibleAt =
    // expiresAt - 10 days exactly, no rotation yet.
    let created = status.created_at.expect("createdAt").0;
    let expires = status.expires_at.expect("expiresAt").0;
    let eligible = status.rotation_eligible_at.expect("rotationEligibleAt").0;
    assert!(
        created >= applied_at - SignedDuration::from_secs(2) && created <= Timestamp::now(),
        "createdAt {created}"
    );
    let lifetime = expires.duration_since(created);
    assert!(
        (lifetime - SignedDuration::from_hours(30 * 24)).abs() <= SignedDuration::from_secs(5),
        "lifetime {lifetime}"
    );
    assert_eq!(eligible, expires - SignedDuration::from_hours(10 * 24));
    assert_eq!(status.last_rotated, None);
    assert_eq!(status.previous_secret_name, None);
    // Alerts see the same times: per-object gauges in the manager's metrics.
    let exposition = world.manager().metrics().await;
    let gauge = |family: &str| {
        let prefix = format!(
            "{family}{{name=\"{}\",namespace=\"{}\"}} ",
            kube::ResourceExt::name_any(&ac),
            kube::ResourceExt::namespace(&ac).unwrap_or_default()
        );
        exposition
            .lines()
            .find_map(|l| l.strip_prefix(&prefix)?.parse::<f64>().ok())
    };
    #[allow(clippy::cast_precision_loss)]
    let seconds = |t: Timestamp| Some(t.as_second() as f64);
    assert_eq!(
        gauge("keystone_application_credential_expiry_timestamp_seconds"),
        seconds(expires)
    );
    assert_eq!(
        gauge("keystone_application_credential_rotation_eligible_timestamp_seconds"),
        seconds(eligible)
    );
    assert_eq!(status.observed_generation, ac.metadata.generation);
    let types: Vec<(&str, &str)> = status
        .conditions
        .iter()
        .map(|c| (c.type_.as_str(), c.status.as_str()))
        .collect();
    assert_eq!(
        types,
        [
            ("Ready", "True"),
            ("KeystoneAPIReady", "True"),
            ("KeystoneApplicationCredentialReady", "True")
        ]
    );

    // A first credential costs a login and a create.
    let calls = world.keystone_requests().await;
    println!("Keystone calls for the first credential: {calls}");
    assert_eq!(calls, 2, "one password login and one create");

    // `kubectl get appcred` shows the credential, its Secret, readiness and schedule.
    let table = world
        .cluster
        .kubectl()
        .run(&["get", "appcred", "-n", &world.namespace])
        .await
        .expect_success("get appcred");
    let header = table.lines().next().unwrap_or_default();
    for column in [
        "NAME",
        "ACID",
        "SECRET",
        "READY",
        "REASON",
        "ROTATIONELIGIBLE",
        "LASTROTATED",
        "AGE",
    ] {
        assert!(header.contains(column), "column {column} missing in:\n{table}");
    }
    let row = table.lines().nth(1).unwrap_or_default();
    for value in [CREDENTIAL, id.as_str(), secret_name.as_str(), "True", "Ready"] {
        assert!(row.contains(value), "{value} missing in:\n{table}");
    }
    println!("{table}");
}

#[tokio::test]
async fn a_reconcile_with_nothing_to_do_makes_no_keystone_call_and_no_api_write() {
    let mut world = World::start(Setup::default()).await;
    world.apply_credential(&["service"], "").await;
    world.wait_ready(None).await;
    let secrets = world.secrets();
    wait_until("the creation record to be deleted", Deadline::secs(30), || {
        let secrets = secrets.clone();
        async move {
            match secrets.get_opt("ac-barbican-pending-credential").await {
                Ok(None) => Ok(Some(())),
                other => Err(format!("{:?}", other.map(|s| s.is_some()))),
            }
        }
    })
    .await;

    let keystone_before = world.keystone_requests().await;
    let reconciles_before = world.reconciles().await;
    let requests_before = world.cluster.request_counts();
    // Any KeystoneAPI change re-checks every credential: a reconcile with nothing to do.
    world.publish_keystone_api(true, "Setup complete (re-published)").await;
    let manager: &ManagerProcess = world.manager();
    let reconciles = wait_until(
        "the KeystoneAPI change to trigger a reconcile",
        Deadline::secs(20),
        || async move {
            let finished = manager.reconciles("keystoneapplicationcredential").await - reconciles_before;
            Ok((finished >= 1).then_some(finished))
        },
    )
    .await;

    let counters = counts_since(&requests_before, &world.cluster.request_counts());
    let writes: Vec<String> = counters
        .iter()
        .filter(|row| row.is_write())
        .filter(|row| row.resource != "keystoneapis")
        .map(|row| format!("{} {}/{} x{}", row.verb, row.resource, row.subresource, row.count))
        .collect();
    let reads: u64 = counters
        .iter()
        .filter(|row| matches!(row.verb.as_str(), "get" | "list"))
        .filter(|row| row.resource != "keystoneapis" || row.verb == "list")
        .map(|row| row.count)
        .sum();
    let keystone_calls = world.keystone_requests().await - keystone_before;
    println!(
        "no-op reconciles: {reconciles}; API reads: {reads}; API writes: {writes:?}; Keystone calls: {keystone_calls}"
    );
    assert!(writes.is_empty(), "a reconcile with nothing to do wrote: {writes:?}");
    assert_eq!(keystone_calls, 0, "a reconcile with nothing to do called Keystone");
}

#[tokio::test]
async fn the_seed_sample_becomes_ready_in_an_environment_prepared_like_the_sandbox() {
    let keystone = shared::keystone().await;
    let cluster = TestCluster::start().await;
    cluster.install_crds(&crds::all()).await;
    prepare_for_sample(keystone, &cluster.client())
        .await
        .expect("prepare Keystone and the cluster for the sample");
    let options = ManagerOptions::controllers(&["keystoneapplicationcredential"], None, Vec::new());
    let _manager = ManagerProcess::start(&cluster, options).await;
    let sample = e2e::keystone::install::repo_root()
        .join("manifests/samples/keystone_v1beta1_keystoneapplicationcredential.yaml");
    let path = sample.to_string_lossy().to_string();
    cluster
        .kubectl()
        .run(&["apply", "-f", &path])
        .await
        .expect_success("apply the sample");
    let api: Api<crds::keystone::KeystoneApplicationCredential> =
        Api::namespaced(cluster.client(), sample::names::NAMESPACE);
    wait_until("ac-barbican to be Ready", Deadline::secs(60), || {
        let api = api.clone();
        async move {
            let ac = api.get("ac-barbican").await.map_err(|e| e.to_string())?;
            let conditions = ac.status.map(|s| s.conditions).unwrap_or_default();
            let ready = conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True");
            if ready {
                Ok(Some(()))
            } else {
                Err(format!("{conditions:?}"))
            }
        }
    })
    .await;
    let table = cluster
        .kubectl()
        .run(&["get", "appcred", "-n", sample::names::NAMESPACE])
        .await
        .expect_success("get");
    println!("{table}");
    assert!(
        table
            .lines()
            .nth(1)
            .is_some_and(|row| row.starts_with("ac-barbican") && row.contains("True")),
        "{table}"
    );
}

#[tokio::test]
async fn without_keystone_operator_the_configured_keystone_url_is_used() {
    let setup = Setup {
        keystone_api_kind: false,
        keystone_api: false,
        manager: false,
        ..Setup::default()
    };
    let mut world = World::start(setup).await;
    world.start_manager(Vec::new()).await;
    world.apply_credential(&["service"], "").await;
    world
        .wait_condition_message(
            "KeystoneAPIReady",
            "False",
            "KeystoneEndpointNotConfigured",
            "the KeystoneAPI kind is not installed and no Keystone URL is configured (manager flag --keystone-url)",
        )
        .await;

    world.manager().stop().await;
    world.manager = None;
    world
        .start_manager(vec![format!("--keystone-url={}/v3", world.keystone.url())])
        .await;
    let ac = world.wait_ready(None).await;
    let expected = format!("using the configured Keystone endpoint {}", world.keystone.url());
    world
        .wait_condition_message("KeystoneAPIReady", "True", "KeystoneAPIReady", &expected)
        .await;
    world
        .assert_secret_authenticates(ac.status.and_then(|s| s.secret_name).as_deref().expect("secretName"))
        .await;
}
