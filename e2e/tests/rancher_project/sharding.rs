//! Three shards (`--shard-count 3 --shard-index i`, as the `sharded` overlay runs them), each electing its own
//! leader, shard 1 with a standby: every object is reconciled by exactly one shard (the one its namespace and name
//! hash to); SIGKILLing shard 1's leader hands its share to its standby within the lease duration; a Rancher
//! cluster binding shared by objects of every shard survives until the last of them is deleted; no object gets a
//! second Rancher project.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use e2e::harness::install::rendered;
use e2e::harness::{Deadline, ManagerProcess, metrics, wait_until};
use framework::shard::Shard;
use serde_json::{Value, json};

use crate::support::{CLUSTER, NAMESPACE, Setup, World, binding, group_name, writer_labels, writer_spec};

const LEASE: &str = "platform-operator-leader";
/// `framework::leader`'s lease duration (seconds).
const LEASE_SECONDS: u64 = 15;
const SHARDS: u32 = 3;

/// The shard flags of shard `shard`'s Deployment in the shipped `sharded` overlay.
fn shipped_shard_args(shard: u32) -> Vec<String> {
    let index = format!("--shard-index={shard}");
    let deployment = rendered("overlays/sharded")
        .into_iter()
        .filter(|d| d["kind"] == "Deployment")
        .find(|d| {
            d["spec"]["template"]["spec"]["containers"][0]["args"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|a| a == index.as_str())
        })
        .unwrap_or_else(|| panic!("overlays/sharded has no Deployment with {index}"));
    let args: Vec<String> = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a.as_str())
        .filter(|a| a.starts_with("--shard-") || *a == "--leader-elect")
        .map(str::to_string)
        .collect();
    assert!(args.contains(&format!("--shard-count={SHARDS}")), "{args:?}");
    args
}

/// A replica of shard `shard` as the sharded overlay runs it, logging every reconcile (JSON, with its object) so
/// the test can tell who did what.
async fn replica(world: &World, shard: u32, identity: &str) -> ManagerProcess {
    let mut args = shipped_shard_args(shard);
    args.push("--log-format=json".to_string());
    let mut options = world.manager_options(args);
    options.env.push(("POD_NAME".to_string(), identity.to_string()));
    options.env.push((
        "LOG_LEVEL".to_string(),
        "info,controllers=debug,framework::runner=debug".to_string(),
    ));
    ManagerProcess::start(&world.cluster, options).await
}

async fn leads(manager: &ManagerProcess, shard: u32) -> bool {
    let lease = format!("{LEASE}-shard-{shard}");
    metrics::sum(
        &manager.metrics().await,
        "leader_election_master_status",
        &[("name", lease.as_str())],
    ) == 1
}

async fn wait_leading(manager: &ManagerProcess, shard: u32, within: Duration) {
    wait_until(
        &format!("a replica to lead shard {shard}"),
        Deadline::secs(within.as_secs()),
        || async {
            if leads(manager, shard).await {
                Ok(Some(()))
            } else {
                Err("standing by".to_string())
            }
        },
    )
    .await;
}

/// The ManagedRancherProjects `manager` reconciled, from the `reconcile` span of its log lines.
fn reconciled(manager: &ManagerProcess) -> BTreeSet<String> {
    manager
        .log()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|entry| entry["span"]["name"] == "reconcile" && entry["span"]["controller"] == "managedrancherproject")
        .filter_map(|entry| entry["span"]["object"].as_str().map(str::to_string))
        .collect()
}

fn shard_of(name: &str) -> u32 {
    Shard::of(Some(NAMESPACE), name, SHARDS)
}

/// Writes project `n` with its own project binding and the cluster binding every project of the cluster shares.
async fn write_project(world: &World, n: u32, cluster_group: &str) -> String {
    let rp = format!("{n:08x}5ba4d0e7a0b1c2d3e4f5a6b7c8d9");
    let name = format!("shard-{n:08x}");
    let mut spec = writer_spec(
        &format!("Shard {n}"),
        &rp,
        vec![binding(
            &group_name(&rp, "project_member"),
            "project-member",
            &["alice"],
        )],
    );
    spec["cluster"] =
        json!({"keycloak": {"enabled": true, "roleBindings": [binding(cluster_group, "cluster-owner", &["alice"])]}});
    world.write(&name, spec, writer_labels(&rp)).await;
    name
}

#[tokio::test]
async fn each_object_is_reconciled_by_exactly_one_shard_and_a_killed_shard_leader_hands_its_share_to_the_standby() {
    let world = World::start(Setup {
        manager: false,
        ..Setup::default()
    })
    .await;
    let cluster_group = format!("c_{CLUSTER}_cluster_resource_admin");
    let shared = vec![(
        format!("keycloakoidc_group://{cluster_group}"),
        "cluster-owner".to_string(),
    )];

    let mut leaders = Vec::new();
    for shard in 0..SHARDS {
        let manager = replica(&world, shard, &format!("shard-{shard}-a")).await;
        wait_leading(&manager, shard, Duration::from_secs(30)).await;
        leaders.push(manager);
    }
    let mut standby = replica(&world, 1, "shard-1-b").await;
    assert!(!leads(&standby, 1).await, "shard 1 has one leader");

    let mut names = Vec::new();
    // Names chosen so that the first batch spreads over all three shards and the second has shard 1 objects.
    for n in 10..=18 {
        names.push(write_project(&world, n, &cluster_group).await);
    }
    let shards_used: BTreeSet<u32> = names.iter().map(|name| shard_of(name)).collect();
    assert_eq!(shards_used.len(), SHARDS as usize, "the names spread over every shard");
    for name in &names {
        world.wait_ready(name).await;
    }
    // Shards that create the shared binding at the same moment may both succeed (Rancher <= 2.13 keeps both);
    // their next passes agree on one copy and delete the other.
    world
        .wait_crtbs("one cluster binding shared by all shards' objects", &shared)
        .await;
    let first: Vec<BTreeSet<String>> = leaders.iter().map(reconciled).collect();
    for name in &names {
        let by: Vec<usize> = (0..leaders.len()).filter(|&i| first[i].contains(name)).collect();
        assert_eq!(by, vec![shard_of(name) as usize], "{name} reconciled by shards {by:?}");
    }
    assert_eq!(reconciled(&standby), BTreeSet::new(), "the standby reconciles nothing");

    // Shard 1's leader crashes: its standby takes the share over once the lease expires; objects written
    // meanwhile are reconciled by the standby, and by no other shard.
    leaders[1].kill().await;
    let killed = Instant::now();
    let mut later = Vec::new();
    for n in 19..=24 {
        later.push(write_project(&world, n, &cluster_group).await);
    }
    wait_leading(&standby, 1, Duration::from_secs(LEASE_SECONDS + 15)).await;
    let takeover = killed.elapsed();
    eprintln!("MEASURE sharding: shard 1's standby leads {takeover:?} after its leader's SIGKILL");
    assert!(
        takeover <= Duration::from_secs(LEASE_SECONDS + 5),
        "took {takeover:?}: more than the lease duration and one retry"
    );
    for name in &later {
        world.wait_ready(name).await;
    }
    names.extend(later.iter().cloned());
    let seen: BTreeMap<&str, BTreeSet<String>> = [
        ("shard 0", reconciled(&leaders[0])),
        ("shard 1 (killed leader)", reconciled(&leaders[1])),
        ("shard 1 (standby)", reconciled(&standby)),
        ("shard 2", reconciled(&leaders[2])),
    ]
    .into();
    for (replica, objects) in &seen {
        let foreign: Vec<&String> = objects
            .iter()
            .filter(|name| !replica.starts_with(&format!("shard {}", shard_of(name))))
            .collect();
        assert!(
            foreign.is_empty(),
            "{replica} reconciled other shards' objects: {foreign:?}"
        );
    }
    let took_over: Vec<&String> = later.iter().filter(|name| shard_of(name) == 1).collect();
    assert!(!took_over.is_empty(), "some later object belongs to shard 1");
    for name in took_over {
        assert!(
            seen["shard 1 (standby)"].contains(name),
            "{name} was reconciled by the standby"
        );
    }

    for n in 10..=24 {
        let projects = world.projects_named(&format!("Shard {n}"));
        assert_eq!(projects.len(), 1, "project {n}: {projects:?}");
    }

    // Every object but one is deleted at once, by all shards together: the shared binding stays for the last.
    let (last, rest) = names.split_last().expect("objects");
    for name in rest {
        world.delete(name).await;
    }
    for name in rest {
        world.wait_gone(name).await;
    }
    assert_eq!(
        world.crtbs(),
        shared,
        "{last} (shard {}) still uses the cluster binding",
        shard_of(last)
    );
    world.delete(last).await;
    world.wait_gone(last).await;
    world
        .wait_crtbs("the cluster binding is gone with the last object", &[])
        .await;

    assert!(standby.stop().await, "a replica exits cleanly on SIGTERM");
    for shard in [0, 2] {
        assert!(leaders[shard].stop().await, "a replica exits cleanly on SIGTERM");
    }
}
