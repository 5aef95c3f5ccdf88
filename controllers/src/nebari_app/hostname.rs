//! Who may serve a hostname. A NebariApp's `spec.hostname` is free text, and a per-app listener with an exact
//! hostname outranks the Gateway's shared wildcard listener, so without arbitration any tenant could take over
//! any other tenant's (or the platform's) hostname. Two rules decide:
//!
//! - **policy**: the platform may list the hostnames a namespace may use (`--nebari-allowed-hostnames`), as
//!   patterns with a `{namespace}` placeholder; a hostname no pattern allows is refused (`HostnameNotAllowed`);
//! - **first claim wins**: among the apps that claim a hostname (and that the policy allows), the one that
//!   already serves it, else the oldest (creation timestamp, then uid, so the answer survives restarts), decides
//!   the namespace that owns it. Apps of that namespace may share it; an app of any other namespace is refused
//!   (`HostnameConflict`) and serves nothing until the owner lets go.
//!
//! Messages never name the other app or its namespace: they are shown to the refused tenant.

use std::cmp::Ordering;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use crds::nebari::NebariApp;
use framework::conditions::{ConditionUpdate, READY};
use framework::runner::Outcome;
use kube::ResourceExt;

use super::error::NebariAppError;
use super::listener::ListenerWriter;
use super::reconcile::Pass;
use super::status::ROUTING_READY;

/// The reason of an app whose hostname another namespace's app already claimed.
pub const HOSTNAME_CONFLICT: &str = "HostnameConflict";
/// The reason of an app whose hostname the platform's policy does not allow in its namespace.
pub const HOSTNAME_NOT_ALLOWED: &str = "HostnameNotAllowed";
/// How often a refused claimant looks again. The apps watch wakes it when the holder changes; this is the
/// safety net for a holder in a namespace the manager does not watch.
const CONFLICT_RECHECK: Duration = Duration::from_secs(60);

/// The placeholder a pattern uses for the app's namespace.
const NAMESPACE_PLACEHOLDER: &str = "{namespace}";

/// One allowed-hostname pattern: `{namespace}.apps.example.com` allows exactly that name, `*.{namespace}.example.com`
/// any name below it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostnamePattern {
    /// Whether the pattern started with `*.` (then `template` is a suffix).
    below: bool,
    /// The pattern without the leading `*.`, lower case.
    template: String,
}

/// Why a hostname pattern given at start-up is not one.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("hostname pattern {pattern:?}: {problem}")]
pub struct PatternError {
    pattern: String,
    problem: &'static str,
}

impl FromStr for HostnamePattern {
    type Err = PatternError;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        let pattern = raw.trim().to_ascii_lowercase();
        let fail = |problem| PatternError {
            pattern: raw.to_string(),
            problem,
        };
        let (below, template) = match pattern.strip_prefix("*.") {
            Some(rest) => (true, rest.to_string()),
            None => (false, pattern.clone()),
        };
        if template.is_empty() {
            return Err(fail("is empty"));
        }
        // Validate the pattern as the hostname it becomes for a namespace named `ns`.
        let example = template.replace(NAMESPACE_PLACEHOLDER, "ns");
        if example.contains(['{', '}']) {
            return Err(fail("the only placeholder is {namespace}"));
        }
        if example.contains('*') {
            return Err(fail("a wildcard may only be the whole first label (*.)"));
        }
        // A fixed domain must follow the namespace: `*.{namespace}` or `{namespace}.com` would let the apps of
        // a namespace named `com` claim names under a public suffix.
        let fixed_labels = template
            .split('.')
            .filter(|label| !label.contains(NAMESPACE_PLACEHOLDER))
            .count();
        if template.contains(NAMESPACE_PLACEHOLDER) && fixed_labels < 2 {
            return Err(fail(
                "needs a fixed domain of at least two labels besides {namespace} (e.g. {namespace}.apps.example.com)",
            ));
        }
        let labels_valid = example.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
        if !labels_valid || example.len() > 253 {
            return Err(fail(
                "is not a DNS name (lower-case labels of letters, digits and '-', joined by '.')",
            ));
        }
        Ok(Self { below, template })
    }
}

impl HostnamePattern {
    /// Whether `hostname` (lower case) is allowed by this pattern for an app in `namespace`.
    pub fn matches(&self, namespace: &str, hostname: &str) -> bool {
        let expected = self.template.replace(NAMESPACE_PLACEHOLDER, namespace);
        if self.below {
            hostname
                .strip_suffix(&expected)
                .and_then(|prefix| prefix.strip_suffix('.'))
                .is_some_and(|prefix| !prefix.is_empty())
        } else {
            hostname == expected
        }
    }

    /// The pattern as the namespace sees it (`*.team.example.com`), for messages.
    fn for_namespace(&self, namespace: &str) -> String {
        let name = self.template.replace(NAMESPACE_PLACEHOLDER, namespace);
        if self.below { format!("*.{name}") } else { name }
    }
}

/// The hostnames each namespace may use. No patterns means every hostname is allowed (the replaced operator's
/// behaviour); first-claim arbitration applies either way.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostnamePolicy {
    patterns: Vec<HostnamePattern>,
}

impl HostnamePolicy {
    /// A policy allowing what any of `patterns` allows (everything when there are none).
    pub fn new(patterns: Vec<HostnamePattern>) -> Self {
        Self { patterns }
    }

    /// Whether an app in `namespace` may use `hostname`.
    pub fn allows(&self, namespace: &str, hostname: &str) -> bool {
        let hostname = hostname.to_ascii_lowercase();
        self.patterns.is_empty() || self.patterns.iter().any(|p| p.matches(namespace, &hostname))
    }

    /// The hostnames `namespace` may use, for the refusal message (the tenant's own namespace only).
    fn allowed_in(&self, namespace: &str) -> String {
        let forms: Vec<String> = self.patterns.iter().map(|p| p.for_namespace(namespace)).collect();
        forms.join(", ")
    }
}

/// The answer for one app's hostname.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// The app's namespace owns the hostname.
    Granted,
    /// The app may not serve its hostname; the Ready/RoutingReady condition says why.
    Refused(ConditionUpdate),
}

/// Decides `app`'s claim on its hostname among `peers` (every app the manager can see, `app` included or not).
pub fn decide(app: &NebariApp, peers: &[Arc<NebariApp>], policy: &HostnamePolicy) -> Claim {
    let namespace = app.namespace().unwrap_or_default();
    let hostname = app.spec.hostname.to_ascii_lowercase();
    if !policy.allows(&namespace, &hostname) {
        return Claim::Refused(ConditionUpdate::failed(
            READY,
            HOSTNAME_NOT_ALLOWED,
            format!(
                "hostname {hostname} is not allowed in namespace {namespace}; the platform allows: {}",
                policy.allowed_in(&namespace)
            ),
        ));
    }
    let winner = peers
        .iter()
        .map(AsRef::as_ref)
        .filter(|peer| peer.uid() != app.uid())
        .chain(std::iter::once(app))
        .filter(|peer| peer.spec.hostname.eq_ignore_ascii_case(&hostname))
        .filter(|peer| policy.allows(&peer.namespace().unwrap_or_default(), &hostname))
        .min_by(|a, b| precedence(a, b));
    match winner {
        Some(winner) if winner.namespace().unwrap_or_default() != namespace => Claim::Refused(ConditionUpdate::failed(
            READY,
            HOSTNAME_CONFLICT,
            format!("hostname {hostname} is already served by an application in another namespace"),
        )),
        _ => Claim::Granted,
    }
}

/// Which of two claimants of one hostname comes first: the one already serving it, then the older, then the
/// smaller uid (a total order that every replica and every restart computes alike).
fn precedence(a: &NebariApp, b: &NebariApp) -> Ordering {
    let serving = |app: &NebariApp| {
        let held = app.status.as_ref().and_then(|s| s.hostname.as_deref());
        !held.is_some_and(|held| held.eq_ignore_ascii_case(&app.spec.hostname))
    };
    let created = |app: &NebariApp| app.metadata.creation_timestamp.as_ref().map(|t| t.0);
    serving(a)
        .cmp(&serving(b))
        .then_with(|| match (created(a), created(b)) {
            (Some(x), Some(y)) => x.cmp(&y),
            // An object without a timestamp (never the case for stored objects) sorts last.
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        })
        .then_with(|| a.uid().cmp(&b.uid()))
}

impl Pass<'_> {
    /// The condition refusing the app its hostname, or `None` when its namespace owns it.
    pub async fn hostname_claim(&self) -> Result<Option<ConditionUpdate>, NebariAppError> {
        let key = super::hostname_key(&self.app.spec.hostname);
        let peers = self
            .controller
            .peers
            .sharing(&key, &self.ctx.client, &self.ctx.namespaces)
            .await?;
        Ok(
            match decide(self.app, &peers, &self.controller.settings.allowed_hostnames) {
                Claim::Granted => None,
                Claim::Refused(condition) => Some(condition),
            },
        )
    }

    /// Takes down everything that serves the app's traffic (listeners, routes, policy, certificate), because it
    /// may not serve its hostname, and records why. The Keycloak clients stay: they serve no traffic, and
    /// deleting the app removes them.
    pub async fn refuse_hostname(&mut self, refused: ConditionUpdate) -> Result<Outcome, NebariAppError> {
        let settings = &self.controller.settings;
        let listeners = ListenerWriter::new(self.ctx, &self.names, &self.controller.seen.gateways);
        for gateway in [&settings.public_gateway, &settings.internal_gateway] {
            // Only the app's own listener: a legacy-named one serving this hostname belongs to its owner.
            listeners.withdraw(None, gateway, &settings.gateway_namespace).await?;
        }
        self.children.prune().await?;
        self.status.status.hostname = None;
        self.status.status.gateway_ref = None;
        self.status.keep_only(&[ROUTING_READY]);
        self.status.set(ConditionUpdate {
            type_: ROUTING_READY.to_string(),
            ..refused.clone()
        });
        let next = if refused.reason == HOSTNAME_CONFLICT {
            Outcome::RequeueAfter(CONFLICT_RECHECK)
        } else {
            Outcome::Done
        };
        self.status.finish_with(refused);
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use serde_json::json;

    use super::*;

    fn app(namespace: &str, name: &str, hostname: &str, created: &str, serving: bool) -> Arc<NebariApp> {
        let mut app: NebariApp = serde_json::from_value(json!({
            "apiVersion": "reconcilers.nebari.dev/v1", "kind": "NebariApp",
            "metadata": {"name": name, "namespace": namespace, "uid": format!("uid-{namespace}-{name}")},
            "spec": {"hostname": hostname, "service": {"name": "s", "port": 80}},
        }))
        .expect("valid app");
        app.metadata.creation_timestamp = Some(Time(created.parse().expect("timestamp")));
        if serving {
            app.status = Some(crds::nebari::NebariAppStatus {
                hostname: Some(hostname.to_string()),
                ..Default::default()
            });
        }
        Arc::new(app)
    }

    fn patterns(raw: &[&str]) -> HostnamePolicy {
        HostnamePolicy::new(raw.iter().map(|p| p.parse().expect("pattern")).collect())
    }

    #[test]
    fn patterns_allow_the_namespace_own_names_only() {
        let policy = patterns(&["{namespace}.apps.example.com", "*.{namespace}.example.com"]);
        assert!(policy.allows("team", "team.apps.example.com"));
        assert!(policy.allows("team", "Web.Team.Example.com"));
        assert!(policy.allows("team", "a.b.team.example.com"));
        assert!(!policy.allows("team", "team.example.com"), "*. needs a label below");
        assert!(!policy.allows("team", "other.apps.example.com"));
        assert!(
            !policy.allows("team", "web.evilteam.example.com"),
            "suffixes match whole labels"
        );
        assert!(HostnamePolicy::default().allows("team", "anything.example.org"));
    }

    #[test]
    fn malformed_patterns_are_refused_with_the_reason() {
        for bad in [
            "",
            "*.",
            "a.*.example.com",
            "{ns}.example.com",
            "bad_label.example.com",
            "-a.example.com",
            "*.{namespace}",
            "{namespace}.com",
            "app-{namespace}.com",
        ] {
            assert!(bad.parse::<HostnamePattern>().is_err(), "{bad:?} accepted");
        }
        assert!("{namespace}.example.com".parse::<HostnamePattern>().is_ok());
        let error = "x.{name}.com".parse::<HostnamePattern>().expect_err("refused");
        assert_eq!(
            error.to_string(),
            "hostname pattern \"x.{name}.com\": the only placeholder is {namespace}"
        );
    }

    #[test]
    fn the_first_claim_wins_and_the_refusal_names_no_one() {
        let victim = app("victim", "web", "shop.example.com", "2026-01-01T00:00:00Z", true);
        let attacker = app("attacker", "web", "SHOP.example.com", "2025-01-01T00:00:00Z", false);
        let peers = vec![victim.clone(), attacker.clone()];
        let policy = HostnamePolicy::default();
        assert_eq!(
            decide(&victim, &peers, &policy),
            Claim::Granted,
            "serving beats an older claimant"
        );
        let Claim::Refused(refused) = decide(&attacker, &peers, &policy) else {
            panic!("the attacker was granted the hostname");
        };
        assert_eq!(refused.reason, HOSTNAME_CONFLICT);
        assert!(!refused.message.contains("victim"), "{}", refused.message);
    }

    #[test]
    fn without_a_holder_the_oldest_then_the_smallest_uid_wins() {
        let older = app("b", "web", "h.example.com", "2026-01-01T00:00:00Z", false);
        let newer = app("a", "web", "h.example.com", "2026-02-01T00:00:00Z", false);
        let peers = vec![older.clone(), newer.clone()];
        assert_eq!(decide(&older, &peers, &HostnamePolicy::default()), Claim::Granted);
        assert!(matches!(
            decide(&newer, &peers, &HostnamePolicy::default()),
            Claim::Refused(_)
        ));
        let twin = app("c", "web", "h.example.com", "2026-01-01T00:00:00Z", false);
        let peers = vec![older.clone(), twin.clone()];
        assert_eq!(
            decide(&older, &peers, &HostnamePolicy::default()),
            Claim::Granted,
            "uid-b < uid-c"
        );
        // Apps of the owning namespace share the hostname.
        let sibling = app("b", "api", "h.example.com", "2026-03-01T00:00:00Z", false);
        let peers = vec![older, sibling.clone()];
        assert_eq!(decide(&sibling, &peers, &HostnamePolicy::default()), Claim::Granted);
    }

    #[test]
    fn a_claim_the_policy_refuses_blocks_no_one() {
        let policy = patterns(&["*.{namespace}.example.com"]);
        let squatter = app("evil", "web", "www.team.example.com", "2020-01-01T00:00:00Z", false);
        let owner = app("team", "web", "www.team.example.com", "2026-01-01T00:00:00Z", false);
        let peers = vec![squatter.clone(), owner.clone()];
        assert_eq!(decide(&owner, &peers, &policy), Claim::Granted);
        let Claim::Refused(refused) = decide(&squatter, &peers, &policy) else {
            panic!("granted");
        };
        assert_eq!(refused.reason, HOSTNAME_NOT_ALLOWED);
        assert!(
            refused.message.ends_with("the platform allows: *.evil.example.com"),
            "{}",
            refused.message
        );
    }
}
