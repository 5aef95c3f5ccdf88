//! Two managers with `--leader-elect`, as a Deployment with two replicas runs them: exactly one reconciles; when
//! the leader is SIGKILLed the standby takes over once the lease expires, when it is stopped with SIGTERM it
//! releases the lease and the standby takes over at once; objects written meanwhile get exactly one Rancher
//! project and binding each.
//!
//! A standby reports ready on `/readyz`, as controller-runtime's do: readiness says the replica is healthy and can
//! take over (a not-ready standby would hold up rolling updates and disruption budgets); which replica works is
//! `leader_election_master_status`.

use std::time::{Duration, Instant};

use e2e::harness::{Deadline, ManagerProcess, metrics, wait_until};

use crate::support::{Setup, World, binding, group_name, writer_labels, writer_spec};

const LEASE: &str = "platform-operator-leader";
/// `framework::leader`'s lease duration (seconds).
const LEASE_SECONDS: u64 = 15;

async fn leader(world: &World, identity: &str) -> ManagerProcess {
    let mut options = world.manager_options(vec!["--leader-elect".to_string()]);
    options.env.push(("POD_NAME".to_string(), identity.to_string()));
    ManagerProcess::start(&world.cluster, options).await
}

/// The manager's `leader_election_master_status` (0 while it waits as a standby).
async fn leads(manager: &ManagerProcess) -> u64 {
    metrics::sum(
        &manager.metrics().await,
        "leader_election_master_status",
        &[("name", LEASE)],
    )
}

async fn wait_leading(manager: &ManagerProcess, within: Duration) {
    wait_until("the replica to lead", Deadline::secs(within.as_secs()), || async {
        if leads(manager).await == 1 {
            Ok(Some(()))
        } else {
            Err("standing by".to_string())
        }
    })
    .await;
}

fn reconciles(exposition: &str) -> u64 {
    metrics::reconciles(exposition, "managedrancherproject")
}

/// Writes project `n` (one binding) the way the Waldur plugin does.
async fn write_project(world: &World, n: u32) -> String {
    let rp = format!("{n:08x}fa11f0e7a0b1c2d3e4f5a6b7c8d9");
    let name = format!("failover-{n:08x}");
    let spec = writer_spec(
        &format!("Failover {n}"),
        &rp,
        vec![binding(
            &group_name(&rp, "project_member"),
            "project-member",
            &["alice"],
        )],
    );
    world.write(&name, spec, writer_labels(&rp)).await;
    name
}

#[tokio::test]
async fn one_replica_reconciles_and_the_standby_takes_over_after_a_crash_or_a_release_without_duplicates() {
    let world = World::start(Setup {
        manager: false,
        ..Setup::default()
    })
    .await;
    let mut a = leader(&world, "replica-a").await;
    wait_leading(&a, Duration::from_secs(30)).await;
    // The harness waited for the standby's /readyz: it is ready while it waits.
    let mut b = leader(&world, "replica-b").await;
    assert_eq!(leads(&b).await, 0, "one leader");

    let mut names = Vec::new();
    for n in 1..=3 {
        names.push(write_project(&world, n).await);
    }
    for name in &names {
        world.wait_ready(name).await;
    }
    assert!(reconciles(&a.metrics().await) > 0);
    assert_eq!(reconciles(&b.metrics().await), 0, "the standby reconciles nothing");

    // The leader crashes (no release): the standby leads once the lease expires.
    a.kill().await;
    let killed = Instant::now();
    for n in 4..=5 {
        names.push(write_project(&world, n).await);
    }
    wait_leading(&b, Duration::from_secs(LEASE_SECONDS + 15)).await;
    let takeover = killed.elapsed();
    eprintln!("MEASURE failover: standby leads {takeover:?} after the leader's SIGKILL");
    assert!(
        takeover <= Duration::from_secs(LEASE_SECONDS + 5),
        "took {takeover:?}: more than the lease duration and one retry"
    );
    for name in &names {
        world.wait_ready(name).await;
    }

    // The crashed replica comes back as the standby; the leader is stopped with SIGTERM and releases the lease.
    let mut a = leader(&world, "replica-a").await;
    assert_eq!(leads(&a).await, 0);
    let stopping = Instant::now();
    assert!(b.stop().await, "the leader exits cleanly on SIGTERM");
    wait_leading(&a, Duration::from_secs(LEASE_SECONDS)).await;
    let handover = stopping.elapsed();
    eprintln!("MEASURE failover: standby leads {handover:?} after the leader's SIGTERM");
    assert!(
        handover < Duration::from_secs(LEASE_SECONDS / 2),
        "took {handover:?}: the lease was not released"
    );
    names.push(write_project(&world, 6).await);
    for name in &names {
        world.wait_ready(name).await;
    }

    // Exactly one Rancher project and one binding per object, whoever reconciled it.
    for n in 1..=6 {
        let projects = world.projects_named(&format!("Failover {n}"));
        assert_eq!(projects.len(), 1, "project {n}: {projects:?}");
        let id = projects[0]["id"].as_str().expect("project id");
        assert_eq!(world.prtbs(id).len(), 1, "bindings of project {n}");
    }
    a.stop().await;
}
