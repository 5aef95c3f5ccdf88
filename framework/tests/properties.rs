//! Properties of the framework's pure helpers, checked on generated input: name shortening (valid, bounded,
//! stable, injective), label values, the message sanitizer (no secret of any shape the suite's systems use
//! survives, in any of the places they show up), and condition merging.
//!
//! CI runs proptest's default number of cases; `PROPTEST_CASES=100000 cargo nextest run -p framework --test
//! properties` is the longer run.

use framework::conditions::{self, Change, ConditionUpdate};
use framework::names::{
    DNS1123_LABEL_MAX, DNS1123_SUBDOMAIN_MAX, check_dns1123_label, check_dns1123_subdomain, check_label_value,
    label_value, truncate_with_hash,
};
use framework::sanitize::sanitize;
use jiff::Timestamp;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

/// proptest's defaults (`PROPTEST_CASES` sets the number of cases) without writing regression files into the
/// source tree: a failure prints its minimal input, which becomes an ordinary test.
fn config() -> ProptestConfig {
    ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..ProptestConfig::default()
    }
}

/// A DNS-1123 label of any length (possibly too long for one).
fn label_like() -> impl Strategy<Value = String> {
    "[a-z0-9]([a-z0-9-]{0,120}[a-z0-9])?"
}

/// A DNS-1123 subdomain of any length (possibly too long for one): labels joined by dots.
fn subdomain_like() -> impl Strategy<Value = String> {
    proptest::collection::vec("[a-z0-9]([a-z0-9-]{0,40}[a-z0-9])?", 1..10).prop_map(|labels| labels.join("."))
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn shortened_labels_are_valid_bounded_and_stable(name in label_like(), max in 12usize..=DNS1123_LABEL_MAX) {
        let short = truncate_with_hash(&name, max);
        prop_assert!(short.len() <= max, "{short} longer than {max}");
        prop_assert_eq!(&short, &truncate_with_hash(&name, max), "stable");
        if name.len() <= max {
            prop_assert_eq!(&short, &name, "a name that fits is kept");
        }
        prop_assert!(check_dns1123_label(&short).is_ok(), "{short}");
    }

    #[test]
    fn shortened_subdomains_are_valid(name in subdomain_like()) {
        let short = truncate_with_hash(&name, DNS1123_SUBDOMAIN_MAX);
        prop_assert!(short.len() <= DNS1123_SUBDOMAIN_MAX);
        prop_assert!(check_dns1123_subdomain(&short).is_ok(), "{short}");
    }

    #[test]
    fn names_that_share_the_kept_prefix_stay_distinct(
        prefix in "[a-z0-9]{70,90}",
        a in "[a-z0-9]{1,8}",
        b in "[a-z0-9]{1,8}",
    ) {
        prop_assume!(a != b);
        // Both exceed the limit and agree on everything that is kept: only the hash tells them apart.
        let (x, y) = (format!("{prefix}{a}"), format!("{prefix}{b}"));
        prop_assert_ne!(truncate_with_hash(&x, DNS1123_LABEL_MAX), truncate_with_hash(&y, DNS1123_LABEL_MAX));
    }

    #[test]
    fn any_text_becomes_a_valid_label_value(text in any::<String>()) {
        let value = label_value(&text);
        prop_assert!(value.len() <= 63);
        prop_assert!(check_label_value(&value).is_ok(), "{value:?} from {text:?}");
        prop_assert_eq!(value, label_value(&text));
    }
}

/// Secrets in the shapes the operator meets: Keycloak client secrets (32 alphanumerics), Keystone application
/// credential secrets (86 base64url characters), Rancher API tokens (`token-xxxxx:` and 54 characters), JWT
/// bearer tokens, and passwords of any form.
fn secret() -> impl Strategy<Value = (String, &'static str)> {
    prop_oneof![
        "[A-Za-z0-9]{32}".prop_map(|s| (s, "keycloak")),
        "[A-Za-z0-9_-]{86}".prop_map(|s| (s, "keystone")),
        "token-[a-z0-9]{5}:[a-z0-9]{54}".prop_map(|s| (s, "rancher")),
        "eyJ[A-Za-z0-9_-]{20,40}\\.[A-Za-z0-9_-]{20,80}\\.[A-Za-z0-9_-]{20,60}".prop_map(|s| (s, "jwt")),
        "[A-Za-z0-9!#%*?^~]{8,24}".prop_map(|s| (s, "password")),
    ]
}

/// Where a secret shows up in text the operator writes, for each shape of secret.
fn contexts(secret: &str, kind: &str) -> Vec<String> {
    let mut places = vec![
        format!(r#"400 Bad Request: {{"client_secret":"{secret}","clientId":"team-web"}}"#),
        format!("POST /token failed: password={secret}&username=admin"),
        format!("request to https://admin:{secret}@keycloak.example.com/realms/master failed"),
        format!("Authorization: Bearer {secret}"),
        format!("x-auth-token: {secret}"),
        format!("GET https://rancher.example.com/v3?token={secret} answered 401"),
    ];
    // Secrets that look like key material are also caught where nothing names them as secret.
    if kind != "password" {
        places.push(format!("unexpected answer carrying {secret} from the server"));
        places.push(secret.to_string());
    }
    places
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn no_secret_survives_the_sanitizer((secret, kind) in secret(), noise in "[ a-z:]{0,30}") {
        for place in contexts(&secret, kind) {
            let text = format!("{noise} {place} {noise}");
            let out = sanitize(&text);
            prop_assert!(!out.contains(&secret), "{kind} secret kept in {out:?}");
            // The part after Rancher's `token-xxxxx:` is the secret on its own.
            if let Some((_, key)) = secret.split_once(':') {
                prop_assert!(!out.contains(key), "{kind} key kept in {out:?}");
            }
        }
    }

    #[test]
    fn identifiers_stay_readable(
        hex in "[0-9a-f]{32}",
        uuid in "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        name in "[a-z][a-z0-9-]{0,50}[a-z0-9]",
    ) {
        let out = sanitize(&format!("credential {hex} of user {uuid} in group {name} was not found"));
        prop_assert!(out.contains(&hex) && out.contains(&uuid) && out.contains(&name), "{out}");
        let url = format!("https://keycloak.{name}.example.com/admin/realms/{name}/clients/{uuid}/client-secret");
        let out = sanitize(&format!("GET {url} answered 404"));
        prop_assert!(out.contains(&url), "{out}");
    }

    #[test]
    fn sanitizing_is_bounded_and_idempotent(text in any::<String>()) {
        let once = sanitize(&text);
        prop_assert!(once.len() <= framework::sanitize::MAX_MESSAGE_LEN + '…'.len_utf8());
        prop_assert_eq!(sanitize(&once), once.clone());
    }
}

/// One condition update: a type among a few, a status, a reason and message.
fn update() -> impl Strategy<Value = ConditionUpdate> {
    (
        prop::sample::select(vec!["Ready", "RoutingReady", "AuthReady"]),
        prop::sample::select(vec!["True", "False", "Unknown"]),
        "[A-Z][a-zA-Z]{0,10}",
        "[a-z ]{0,20}",
    )
        .prop_map(|(type_, status, reason, message)| match status {
            "True" => ConditionUpdate::ok(type_, &reason, message),
            "False" => ConditionUpdate::failed(type_, &reason, message),
            _ => ConditionUpdate::unknown(type_, &reason, message),
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn merging_conditions_keeps_one_per_type_and_moves_the_time_only_on_a_flip(
        updates in proptest::collection::vec((update(), 1i64..4), 1..20),
    ) {
        let mut conditions = Vec::new();
        for (step, (update, generation)) in updates.into_iter().enumerate() {
            let now = Timestamp::from_second(1_700_000_000 + i64::try_from(step).expect("small")).expect("time");
            let before = conditions::get(&conditions, &update.type_).cloned();
            let again = update.clone();
            let change = conditions::set(&mut conditions, update, Some(generation), now);
            let after = conditions::get(&conditions, &again.type_).cloned().expect("set");
            let types: Vec<&str> = conditions.iter().map(|c| c.type_.as_str()).collect();
            let mut unique = types.clone();
            unique.dedup();
            unique.sort_unstable();
            unique.dedup();
            prop_assert_eq!(types.len(), unique.len(), "one condition per type: {:?}", types);
            match before {
                None => {
                    prop_assert_eq!(change, Change::Added);
                    prop_assert_eq!(after.last_transition_time.0, now);
                }
                Some(before) if before.status != after.status => {
                    prop_assert_eq!(change, Change::Flipped);
                    prop_assert_eq!(after.last_transition_time.0, now);
                }
                Some(before) => {
                    prop_assert_ne!(change, Change::Flipped);
                    prop_assert_eq!(after.last_transition_time, before.last_transition_time, "no flip, same time");
                }
            }
            // Applying the same update again changes nothing.
            let snapshot = conditions.clone();
            prop_assert_eq!(conditions::set(&mut conditions, again, Some(generation), now), Change::Unchanged);
            prop_assert_eq!(&conditions, &snapshot);
        }
    }
}
