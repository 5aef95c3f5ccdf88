//! The replaced operators' environment variables, accepted as aliases so an existing Deployment's `env` works
//! unchanged: nebari-operator's `KEYCLOAK_*` names that differ from ours, and rancher-keycloak-operator's
//! `RANCHER_*`/`KEYCLOAK_*`. Each one used is announced at start-up with the flag that replaces it.
//!
//! Our own flags and variables always win: an alias only fills a setting nobody set. Both originals call their
//! Keycloak `KEYCLOAK_URL`/`KEYCLOAK_REALM`; those mean the ManagedRancherProject controller's Keycloak when
//! rancher-keycloak-operator's other variables are present, and then the NebariApp controller must not run in the
//! same process (which Keycloak would be meant is ambiguous), unless `RANCHER_KEYCLOAK_URL` settles it.

use std::time::Duration;

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches};
use secrecy::SecretString;

use super::cli::Cli;
use crate::keycloak::Credentials;

/// Variables only rancher-keycloak-operator set: their presence says its `KEYCLOAK_URL` is meant.
const RANCHER_MARKERS: [&str; 5] = [
    "RANCHER_BEARER_TOKEN",
    "RANCHER_VERIFY_SSL",
    "KEYCLOAK_USERNAME",
    "KEYCLOAK_USER_REALM",
    "KEYCLOAK_VERIFY_SSL",
];

/// Why the environment cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LegacyEnvError {
    /// The command line or a variable does not parse.
    #[error(transparent)]
    Clap(#[from] clap::Error),
    /// A variable of a replaced operator has a value we cannot read.
    #[error("{name}={value:?}: {reason}")]
    Invalid {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// Which Keycloak a variable means cannot be told.
    #[error(
        "KEYCLOAK_URL is set together with rancher-keycloak-operator's variables ({0}) while the NebariApp controller \
         runs too: set RANCHER_KEYCLOAK_URL (and RANCHER_KEYCLOAK_REALM) for the projects' Keycloak, or run the \
         controllers in separate managers"
    )]
    Ambiguous(String),
}

/// The command line as parsed, with the aliases applied, and what to announce once logging is up.
pub struct Parsed {
    /// The settings.
    pub cli: Cli,
    /// One line per alias used.
    pub deprecations: Vec<String>,
}

/// Parses `args` with the environment `env` (a lookup, so tests need not touch the process environment).
pub fn parse<I, T>(args: I, env: &dyn Fn(&str) -> Option<String>) -> Result<Parsed, LegacyEnvError>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let matches = Cli::command().try_get_matches_from(args)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    let mut aliases = Aliases {
        matches: &matches,
        env,
        deprecations: Vec::new(),
    };
    aliases.nebari(&mut cli)?;
    aliases.rancher(&mut cli)?;
    Ok(Parsed {
        cli,
        deprecations: aliases.deprecations,
    })
}

struct Aliases<'a> {
    matches: &'a ArgMatches,
    env: &'a dyn Fn(&str) -> Option<String>,
    deprecations: Vec<String>,
}

impl Aliases<'_> {
    /// The value of a replaced operator's variable, when set and not empty.
    fn get(&self, name: &str) -> Option<String> {
        (self.env)(name).filter(|v| !v.trim().is_empty())
    }

    /// Whether our own argument `id` was given (flag or our variable).
    fn given(&self, id: &str) -> bool {
        matches!(
            self.matches.value_source(id),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        )
    }

    fn announce(&mut self, original: &str, name: &str, replacement: &str) {
        self.deprecations.push(format!(
            "{name} ({original}) is deprecated and applied as {replacement}; set that instead"
        ));
    }

    fn nebari(&mut self, cli: &mut Cli) -> Result<(), LegacyEnvError> {
        const ORIGINAL: &str = "nebari-operator";
        let flags = &mut cli.nebari_app;
        if let Some(value) = self.get("KEYCLOAK_API_TIMEOUT")
            && !self.given("keycloak_api_timeout_seconds")
        {
            let timeout = go_duration(&value).ok_or(LegacyEnvError::Invalid {
                name: "KEYCLOAK_API_TIMEOUT",
                value: value.clone(),
                reason: "not a Go duration such as 30s or 1m",
            })?;
            flags.keycloak_api_timeout_seconds = timeout.as_secs().max(1);
            self.announce(ORIGINAL, "KEYCLOAK_API_TIMEOUT", "--keycloak-api-timeout-seconds");
        }
        let issuer_parts = [
            "KEYCLOAK_ISSUER_SERVICE_NAME",
            "KEYCLOAK_ISSUER_SERVICE_NAMESPACE",
            "KEYCLOAK_ISSUER_SERVICE_PORT",
            "KEYCLOAK_ISSUER_CONTEXT_PATH",
        ];
        if issuer_parts.iter().any(|name| self.get(name).is_some()) && !self.given("keycloak_issuer_url") {
            let service = self
                .get("KEYCLOAK_ISSUER_SERVICE_NAME")
                .unwrap_or_else(|| "keycloak-keycloakx-http".into());
            let namespace = self
                .get("KEYCLOAK_ISSUER_SERVICE_NAMESPACE")
                .unwrap_or_else(|| "keycloak".into());
            let port = self
                .get("KEYCLOAK_ISSUER_SERVICE_PORT")
                .unwrap_or_else(|| "8080".into());
            let context = self.get("KEYCLOAK_ISSUER_CONTEXT_PATH").unwrap_or_default();
            flags.keycloak_issuer_url = Some(format!(
                "http://{service}.{namespace}.svc.cluster.local:{port}{}",
                context.trim_end_matches('/')
            ));
            self.announce(ORIGINAL, "KEYCLOAK_ISSUER_SERVICE_*", "--keycloak-issuer-url");
        }
        // nebari-operator read these only when KEYCLOAK_ADMIN_SECRET_NAME was set to "".
        let secret_emptied = (self.env)("KEYCLOAK_ADMIN_SECRET_NAME").is_some_and(|v| v.trim().is_empty());
        if let (true, Some(username), Some(password)) = (
            secret_emptied,
            self.get("KEYCLOAK_ADMIN_USERNAME"),
            self.get("KEYCLOAK_ADMIN_PASSWORD"),
        ) {
            flags.legacy_admin_credentials = Some(Credentials::admin_password(username, SecretString::from(password)));
            self.announce(
                ORIGINAL,
                "KEYCLOAK_ADMIN_USERNAME/KEYCLOAK_ADMIN_PASSWORD",
                "the admin Secret (--keycloak-admin-secret-name)",
            );
        }
        Ok(())
    }

    fn rancher(&mut self, cli: &mut Cli) -> Result<(), LegacyEnvError> {
        const ORIGINAL: &str = "rancher-keycloak-operator";
        let markers: Vec<&str> = RANCHER_MARKERS
            .iter()
            .copied()
            .filter(|name| self.get(name).is_some())
            .collect();
        if let Some(token) = self.get("RANCHER_BEARER_TOKEN") {
            cli.managed_rancher_project.legacy_rancher_token = Some(SecretString::from(token));
            self.announce(
                ORIGINAL,
                "RANCHER_BEARER_TOKEN",
                "the token Secret (--rancher-token-secret-name)",
            );
        }
        if let Some(verify) = self.get("RANCHER_VERIFY_SSL")
            && !self.given("rancher_insecure_skip_verify")
        {
            cli.managed_rancher_project.rancher_insecure_skip_verify = !verification("RANCHER_VERIFY_SSL", &verify)?;
            self.announce(
                ORIGINAL,
                "RANCHER_VERIFY_SSL",
                "--rancher-insecure-skip-verify / --rancher-ca-bundle",
            );
        }
        if let Some(verify) = self.get("KEYCLOAK_VERIFY_SSL")
            && !self.given("rancher_keycloak_insecure_skip_verify")
        {
            cli.managed_rancher_project.rancher_keycloak_insecure_skip_verify =
                !verification("KEYCLOAK_VERIFY_SSL", &verify)?;
            self.announce(
                ORIGINAL,
                "KEYCLOAK_VERIFY_SSL",
                "--rancher-keycloak-insecure-skip-verify / --rancher-keycloak-ca-bundle",
            );
        }
        if let Some(realm) = self.get("KEYCLOAK_USER_REALM")
            && !self.given("rancher_keycloak_admin_realm")
        {
            cli.managed_rancher_project.rancher_keycloak_admin_realm = realm;
            self.announce(ORIGINAL, "KEYCLOAK_USER_REALM", "--rancher-keycloak-admin-realm");
        }
        if let (Some(username), Some(password)) = (self.get("KEYCLOAK_USERNAME"), self.get("KEYCLOAK_PASSWORD")) {
            cli.managed_rancher_project.legacy_keycloak_credentials =
                Some(Credentials::admin_password(username, SecretString::from(password)));
            self.announce(
                ORIGINAL,
                "KEYCLOAK_USERNAME/KEYCLOAK_PASSWORD",
                "the admin Secret (--rancher-keycloak-admin-secret-name)",
            );
        }
        if self.get("CR_NAMESPACE").is_some() {
            self.deprecations.push(
                "CR_NAMESPACE (rancher-keycloak-operator) is ignored: RancherProjectInventories are found in every \
                 watched namespace (--watch-namespace)"
                    .to_string(),
            );
        }
        let keycloak_url = self.get("KEYCLOAK_URL");
        if markers.is_empty() || keycloak_url.is_none() || self.given("rancher_keycloak_url") {
            return Ok(());
        }
        let controllers = &cli.run.controllers;
        let nebari_runs = controllers.iter().any(|c| c == "all" || c == crate::nebari_app::NAME);
        if nebari_runs {
            return Err(LegacyEnvError::Ambiguous(markers.join(", ")));
        }
        cli.managed_rancher_project.rancher_keycloak_url = keycloak_url;
        self.announce(ORIGINAL, "KEYCLOAK_URL", "--rancher-keycloak-url");
        if let Some(realm) = self.get("KEYCLOAK_REALM")
            && !self.given("rancher_keycloak_realm")
        {
            cli.managed_rancher_project.rancher_keycloak_realm = realm;
            self.announce(ORIGINAL, "KEYCLOAK_REALM", "--rancher-keycloak-realm");
        }
        Ok(())
    }
}

/// A boolean as the replaced operators' users wrote them: `true`/`1`/`yes` or `false`/`0`/`no`, any case. Anything
/// else is refused, where the originals read it as false: a typo must not switch TLS verification or Keycloak off.
fn strict_bool(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Some(true),
        "false" | "0" | "no" => Some(false),
        _ => None,
    }
}

/// rancher-keycloak-operator's `*_VERIFY_SSL`, read strictly (see [`strict_bool`]).
fn verification(name: &'static str, value: &str) -> Result<bool, LegacyEnvError> {
    strict_bool(value).ok_or(LegacyEnvError::Invalid {
        name,
        value: value.to_string(),
        reason: "not a boolean (true or false); an unreadable value no longer turns certificate verification off",
    })
}

/// nebari-operator's booleans (`KEYCLOAK_ENABLED`), read strictly (see [`strict_bool`]).
pub fn original_bool(value: &str) -> Result<bool, String> {
    strict_bool(value).ok_or_else(|| format!("{value:?} is not a boolean (true, false, 1, 0, yes or no)"))
}

/// A Go duration of the forms nebari-operator's users write (`30s`, `1m`, `1m30s`, `500ms`, `2h`).
fn go_duration(text: &str) -> Option<Duration> {
    let mut rest = text.trim();
    let mut total = Duration::ZERO;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let (number, tail) = rest.split_at(digits);
        let value: f64 = number.parse().ok()?;
        let unit_len = tail.find(|c: char| c.is_ascii_digit()).unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        let seconds = match unit {
            "ns" => value / 1e9,
            "us" | "µs" => value / 1e6,
            "ms" => value / 1e3,
            "s" => value,
            "m" => value * 60.0,
            "h" => value * 3600.0,
            _ => return None,
        };
        total += Duration::try_from_secs_f64(seconds).ok()?;
        rest = next;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn parse_with(args: &[&str], env: &[(&str, &str)]) -> Result<Parsed, LegacyEnvError> {
        let env: BTreeMap<String, String> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let mut argv = vec!["manager"];
        argv.extend(args);
        parse(argv, &|name| env.get(name).cloned())
    }

    #[test]
    fn go_durations_parse() {
        assert_eq!(go_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(go_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(go_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(go_duration("thirty"), None);
        assert_eq!(go_duration(""), None);
    }

    #[test]
    fn nebari_operators_variables_fill_what_nobody_set() {
        let parsed = parse_with(
            &[],
            &[
                ("KEYCLOAK_API_TIMEOUT", "45s"),
                ("KEYCLOAK_ISSUER_SERVICE_NAME", "keycloak-http"),
                ("KEYCLOAK_ISSUER_CONTEXT_PATH", "/auth"),
            ],
        )
        .expect("parses");
        let flags = &parsed.cli.nebari_app;
        assert_eq!(flags.keycloak_api_timeout_seconds, 45);
        assert_eq!(
            flags.keycloak_issuer_url.as_deref(),
            Some("http://keycloak-http.keycloak.svc.cluster.local:8080/auth")
        );
        assert_eq!(parsed.deprecations.len(), 2, "{:?}", parsed.deprecations);
        // Our own flag wins.
        let parsed = parse_with(
            &["--keycloak-api-timeout-seconds=7"],
            &[("KEYCLOAK_API_TIMEOUT", "45s")],
        )
        .expect("parses");
        assert_eq!(parsed.cli.nebari_app.keycloak_api_timeout_seconds, 7);
        assert!(parsed.deprecations.is_empty());
    }

    #[test]
    fn rancher_keycloak_operators_keycloak_url_needs_the_nebari_controller_off() {
        let env = [
            ("KEYCLOAK_URL", "https://sso.example.com/auth"),
            ("KEYCLOAK_REALM", "waldur"),
            ("KEYCLOAK_USERNAME", "admin"),
            ("KEYCLOAK_PASSWORD", "pw"),
            ("RANCHER_VERIFY_SSL", "false"),
        ];
        let error = parse_with(&[], &env).err().expect("ambiguous with every controller");
        assert!(error.to_string().contains("RANCHER_KEYCLOAK_URL"), "{error}");
        let parsed =
            parse_with(&["--controllers=managedrancherproject,rancherprojectinventory"], &env).expect("parses");
        let flags = &parsed.cli.managed_rancher_project;
        assert_eq!(
            flags.rancher_keycloak_url.as_deref(),
            Some("https://sso.example.com/auth")
        );
        assert_eq!(flags.rancher_keycloak_realm, "waldur");
        assert!(flags.rancher_insecure_skip_verify);
        assert!(flags.legacy_keycloak_credentials.is_some());
    }

    #[test]
    fn unreadable_booleans_are_refused_rather_than_read_as_false() {
        let controllers = ["--controllers=managedrancherproject,rancherprojectinventory"];
        for (value, insecure) in [
            ("false", true),
            ("False", true),
            ("0", true),
            ("no", true),
            ("TRUE", false),
            ("yes", false),
        ] {
            let parsed = parse_with(&controllers, &[("RANCHER_VERIFY_SSL", value)]).expect("parses");
            assert_eq!(
                parsed.cli.managed_rancher_project.rancher_insecure_skip_verify, insecure,
                "{value}"
            );
        }
        for name in ["RANCHER_VERIFY_SSL", "KEYCLOAK_VERIFY_SSL"] {
            let error = parse_with(&controllers, &[(name, "ture")]).err().expect("refused");
            assert!(error.to_string().contains(name), "{error}");
        }
        // KEYCLOAK_ENABLED is the flag's own variable (clap reads it); its values parse the same way.
        let error = parse_with(&["--keycloak-enabled=enabled"], &[]).err().expect("refused");
        assert!(error.to_string().contains("not a boolean"), "{error}");
        let parsed = parse_with(&["--keycloak-enabled=0"], &[]).expect("parses");
        assert!(!parsed.cli.nebari_app.keycloak_enabled);
    }
}
