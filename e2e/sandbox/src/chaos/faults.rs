//! Turning the chaos run's faults on and off in every backend at once. Each backend fails about `percent` % of
//! the operator's requests: half answered with a 5xx, a quarter cut or lost after the backend acted (the worst
//! case for duplicates), a quarter delayed or dropped. Only the manager's own Kubernetes requests fail (they alone
//! go through the API's fault proxy), so the stand-ins (cert-manager, Envoy Gateway) and the run's own writes go
//! through.

use std::time::Duration;

use crate::Sandbox;
use e2e::harness::fault_proxy::Fault as ProxyFault;
use e2e::keystone::fault_proxy::FaultMix;

/// The seeds of the rules, spread so no two rules draw alike.
fn rule_seed(seed: u64, rule: u64) -> u64 {
    seed.wrapping_mul(31)
        .wrapping_add(rule.wrapping_mul(0x2545_F491_4F6C_DD1D))
}

/// Turns the faults on: `percent` % of the manager's requests to each backend fail, drawn from `seed`.
pub fn turn_on(sandbox: &Sandbox, percent: u8, seed: u64) {
    let half = percent / 2;
    let quarter = percent / 4;
    let kube = sandbox.api().faults();
    kube.add_fault(ProxyFault::everywhere().status(503).percent(half, rule_seed(seed, 1)));
    for (rule, verb) in (2..).zip(["create", "update", "patch", "delete"]) {
        kube.add_fault(
            ProxyFault::route(&format!("{verb} *"))
                .status_after_effect(500)
                .percent(quarter, rule_seed(seed, rule)),
        );
    }
    let eighth = percent / 8;
    kube.add_fault(
        ProxyFault::everywhere()
            .latency(Duration::from_millis(1_500))
            .percent(eighth, rule_seed(seed, 6)),
    );
    kube.add_fault(
        ProxyFault::everywhere()
            .drop_connection()
            .percent(eighth, rule_seed(seed, 7)),
    );

    // The fault proxy in front of the NebariApp controller's real Keycloak.
    let keycloak = sandbox.nebari_keycloak().proxy();
    keycloak.add_fault(ProxyFault::everywhere().status(503).percent(half, rule_seed(seed, 10)));
    keycloak.add_fault(
        ProxyFault::everywhere()
            .drop_connection()
            .percent(quarter, rule_seed(seed, 11)),
    );
    keycloak.add_fault(
        ProxyFault::everywhere()
            .latency(Duration::from_secs(2))
            .percent(quarter, rule_seed(seed, 12)),
    );
    // The fault proxy in front of the ManagedRancherProject controller's real Keycloak.
    let proxy = sandbox.rancher().keycloak.proxy();
    proxy.add_fault(ProxyFault::everywhere().status(503).percent(half, rule_seed(seed, 20)));
    proxy.add_fault(
        ProxyFault::everywhere()
            .drop_connection()
            .percent(quarter, rule_seed(seed, 21)),
    );
    proxy.add_fault(
        ProxyFault::everywhere()
            .latency(Duration::from_secs(2))
            .percent(quarter, rule_seed(seed, 22)),
    );

    let rancher = &sandbox.rancher().rancher;
    rancher.inject_fault(
        rancher_emulator::Fault::on(None, None)
            .status(503)
            .percent(half, rule_seed(seed, 40)),
    );
    rancher.inject_fault(
        rancher_emulator::Fault::on(None, None)
            .drop_connection()
            .percent(quarter, rule_seed(seed, 41)),
    );
    rancher.inject_fault(
        rancher_emulator::Fault::on(None, None)
            .status(500)
            .after_handling()
            .percent(quarter, rule_seed(seed, 42)),
    );

    if let Some(proxy) = sandbox.keystone_proxy() {
        proxy.set_faults(Some(FaultMix {
            error_percent: half,
            reset_percent: quarter,
            lost_answer_percent: quarter,
            seed: rule_seed(seed, 50),
        }));
    }
}

/// Turns every fault off.
pub fn turn_off(sandbox: &Sandbox) {
    sandbox.api().faults().clear_faults();
    sandbox.nebari_keycloak().proxy().clear_faults();
    sandbox.rancher().keycloak.proxy().clear_faults();
    sandbox.rancher().rancher.clear_faults();
    if let Some(proxy) = sandbox.keystone_proxy() {
        proxy.set_faults(None);
    }
}
