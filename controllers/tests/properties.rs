//! Properties of the controllers' pure rules, checked on generated input: the names a NebariApp gives its objects
//! (valid Kubernetes names; the ones in the shared gateway namespace distinct for distinct apps, however the app
//! and namespace names split around a `-` or run past the length limits) and the namespace default quota share.
//!
//! `PROPTEST_CASES=100000 cargo nextest run -p controllers --test properties` is the longer run.

use controllers::nebari_app::naming::AppNames;
use controllers::rancher_project::quotas::{is_quantity, share};
use framework::names::{check_dns1123_label, check_dns1123_subdomain};
use kube_quantity::ParsedQuantity;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

/// proptest's defaults (`PROPTEST_CASES` sets the number of cases), no regression files in the source tree.
fn config() -> ProptestConfig {
    ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..ProptestConfig::default()
    }
}

/// A namespace name: a DNS-1123 label.
fn namespace() -> impl Strategy<Value = String> {
    "[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
}

/// A NebariApp name: a DNS-1123 subdomain, mostly label-like, sometimes long and dotted.
fn app() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?",
        1 => proptest::collection::vec("[a-z0-9]([a-z0-9-]{0,50}[a-z0-9])?", 1..5).prop_map(|l| l.join(".")),
    ]
}

/// Two different apps whose names are built to collide when joined or cut naively: the same characters split
/// differently around a `-` (`a-b` in `c` and `a` in `b-c`), or long names that differ only past the cut.
fn confusable_pair() -> impl Strategy<Value = ((String, String), (String, String))> {
    let split = ("[a-z0-9]{1,20}", "[a-z0-9]{1,20}", "[a-z0-9]{1,20}").prop_map(|(a, b, c)| {
        let second = (format!("{b}-{c}"), a.clone());
        ((c, format!("{a}-{b}")), second)
    });
    let long = ("[a-z0-9]{50,60}", "[a-z0-9]{1,4}", "[a-z0-9]{1,4}", namespace())
        .prop_filter_map("distinct tails", |(prefix, x, y, ns)| {
            (x != y).then(|| ((ns.clone(), format!("{prefix}{x}")), (ns, format!("{prefix}{y}"))))
        });
    prop_oneof![split, long]
}

/// The names that live in the shared gateway namespace, where every app's must differ.
fn gateway_names(names: &AppNames) -> [String; 3] {
    [names.listener(), names.certificate(), names.tls_secret()]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn every_derived_name_is_a_valid_kubernetes_name(ns in namespace(), app in app()) {
        let names = AppNames::new(&ns, &app);
        prop_assert!(check_dns1123_label(&names.listener()).is_ok(), "listener {}", names.listener());
        for name in [
            names.route(),
            names.public_route(),
            names.security_policy(),
            names.certificate(),
            names.tls_secret(),
            names.oidc_secret(),
            names.secret_reader(),
        ] {
            prop_assert!(check_dns1123_subdomain(&name).is_ok(), "{name}");
        }
        prop_assert_eq!(gateway_names(&names), gateway_names(&AppNames::new(&ns, &app)), "stable");
    }

    #[test]
    fn distinct_apps_never_share_a_name_in_the_gateway_namespace(
        ((ns_a, app_a), (ns_b, app_b)) in confusable_pair(),
    ) {
        prop_assume!((ns_a.as_str(), app_a.as_str()) != (ns_b.as_str(), app_b.as_str()));
        let (a, b) = (AppNames::new(&ns_a, &app_a), AppNames::new(&ns_b, &app_b));
        for (x, y) in gateway_names(&a).iter().zip(gateway_names(&b).iter()) {
            prop_assert_ne!(x, y, "{}/{} and {}/{}", ns_a, app_a, ns_b, app_b);
        }
    }

    #[test]
    fn any_two_random_apps_never_share_a_name_in_the_gateway_namespace(
        (ns_a, app_a) in (namespace(), app()),
        (ns_b, app_b) in (namespace(), app()),
    ) {
        prop_assume!((ns_a.as_str(), app_a.as_str()) != (ns_b.as_str(), app_b.as_str()));
        let (a, b) = (AppNames::new(&ns_a, &app_a), AppNames::new(&ns_b, &app_b));
        for (x, y) in gateway_names(&a).iter().zip(gateway_names(&b).iter()) {
            prop_assert_ne!(x, y);
        }
    }
}

/// A quota key with a quantity as Waldur and users write them: cores and bytes in any unit (fractional shares
/// allowed), whole objects and devices as counts.
fn quota() -> impl Strategy<Value = (&'static str, String, bool)> {
    let divisible = (
        prop::sample::select(vec!["limitsCpu", "limitsMemory", "requestsStorage"]),
        prop_oneof![
            (1u32..1_000_000).prop_map(|m| format!("{m}m")),
            (1u32..100_000).prop_map(|n| n.to_string()),
            (
                1u32..10_000,
                prop::sample::select(vec!["Ki", "Mi", "Gi", "Ti", "k", "M", "G"])
            )
                .prop_map(|(n, unit)| format!("{n}{unit}")),
        ],
    )
        .prop_map(|(key, quantity)| (key, quantity, false));
    let whole = (
        prop::sample::select(vec!["pods", "requests.nvidia.com/gpu"]),
        1u32..10_000,
    )
        .prop_map(|(key, n)| (key, n.to_string(), true));
    prop_oneof![divisible, whole]
}

fn value(text: &str) -> f64 {
    ParsedQuantity::try_from(text)
        .expect("a quantity")
        .to_bytes_f64()
        .expect("fits an f64")
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_namespace_share_is_a_quantity_no_larger_than_the_quota_and_grows_with_the_percentage(
        (key, quota, whole) in quota(),
        (low, high) in (1u8..=100, 1u8..=100).prop_map(|(a, b)| (a.min(b), a.max(b))),
    ) {
        let (small, large) = (share(key, &quota, low), share(key, &quota, high));
        prop_assert!(is_quantity(&small) && is_quantity(&large), "{} {}", small, large);
        let total = value(&quota);
        let slack = 1.0 + 1e-9;
        prop_assert!(value(&large) <= total * slack, "{} above the quota {}", large, quota);
        prop_assert!(value(&small) <= value(&large) * slack, "{} > {}", small, large);
        if high == 100 {
            prop_assert_eq!(&large, &quota, "100 % is the quota itself");
        }
        if whole {
            prop_assert!(value(&small) >= 1.0 && value(&small).fract() == 0.0, "whole units, at least one: {}", small);
        } else {
            // Three decimals at the unit: never more than a thousandth of a unit below the exact share.
            let exact = total * f64::from(low) / 100.0;
            prop_assert!(value(&small) <= exact * slack, "{} above the exact share {}", small, exact);
        }
    }
}
