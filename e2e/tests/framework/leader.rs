//! Leader election on a Lease: one leader at a time, the standby takes over when the leader releases, and the
//! `leader_election_master_status` gauge follows.

use std::time::Duration;

use e2e::harness::TestCluster;
use framework::leader::{LeaderSettings, Leadership};
use framework::metrics::Metrics;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use tokio_util::sync::CancellationToken;

fn settings(identity: &str) -> LeaderSettings {
    LeaderSettings {
        lease_name: "framework-test-leader".into(),
        namespace: "default".into(),
        identity: identity.into(),
        lease_duration_secs: 15,
        renew_margin_secs: 5,
    }
}

#[tokio::test]
async fn the_standby_leads_once_the_leader_releases_the_lease() {
    let cluster = TestCluster::start().await;
    let shutdown = CancellationToken::new();
    let metrics_a = Metrics::new().expect("metrics");
    let leader = Leadership::acquire(cluster.client(), &settings("replica-a"), metrics_a.clone(), &shutdown)
        .await
        .expect("election")
        .expect("leads");
    assert!(
        metrics_a
            .render()
            .contains(r#"leader_election_master_status{name="framework-test-leader"} 1"#)
    );
    let lease: Api<Lease> = Api::namespaced(cluster.client(), "default");
    let held = lease.get("framework-test-leader").await.expect("lease exists");
    assert_eq!(held.spec.and_then(|s| s.holder_identity).as_deref(), Some("replica-a"));

    let client = cluster.client();
    let metrics_b = Metrics::new().expect("metrics");
    let standby_shutdown = shutdown.clone();
    let metrics_b_task = metrics_b.clone();
    let mut standby = tokio::spawn(async move {
        Leadership::acquire(client, &settings("replica-b"), metrics_b_task, &standby_shutdown).await
    });
    // While A holds the lease, B must not lead: B's election must still be pending after two seconds.
    let early = tokio::time::timeout(Duration::from_secs(2), &mut standby).await;
    assert!(
        early.is_err(),
        "the standby must not lead while the leader holds the lease"
    );
    assert!(
        metrics_b
            .render()
            .contains(r#"leader_election_master_status{name="framework-test-leader"} 0"#)
    );

    leader.release().await;
    assert!(
        metrics_a
            .render()
            .contains(r#"leader_election_master_status{name="framework-test-leader"} 0"#)
    );
    // A release is a handover: the standby notices within its poll (2 s), not when the lease would have
    // expired (15 s).
    let b = tokio::time::timeout(Duration::from_secs(6), standby)
        .await
        .expect("the standby takes over within seconds of a release")
        .expect("task")
        .expect("election")
        .expect("leads");
    let held = lease.get("framework-test-leader").await.expect("lease");
    assert_eq!(held.spec.and_then(|s| s.holder_identity).as_deref(), Some("replica-b"));
    b.release().await;
}
