//! Scrubbing of text that leaves the process through conditions, events and error messages.
//!
//! External systems echo credentials in odd places: URLs with userinfo, tokens in query strings, request bodies
//! quoted in error responses. Everything that may end up where namespace users can read it goes through
//! [`sanitize`] first; raw bodies never do.

use std::sync::LazyLock;

use regex::Regex;

/// The placeholder that replaces anything secret.
pub const REDACTED: &str = "[REDACTED]";
/// Longest message kept; longer text is cut (conditions and events are for humans, not dumps).
pub const MAX_MESSAGE_LEN: usize = 512;

/// Key names whose values are always secret, in JSON, form or query syntax.
const SECRET_KEYS: &str = r"(?:password|passwd|secret|client_secret|token|access_token|refresh_token|id_token|api[_-]?key|apikey|authorization|credential|private[_-]?key|session_state)";

static URL_USERINFO: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@").expect("static regex is valid"));
static AUTH_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b(bearer|basic)\s+[^\s,;"']{8,}|\b(token)\s+([A-Za-z0-9._~+/=-]{8,})"#)
        .expect("static regex is valid")
});
static JSON_FIELD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r#"(?i)("[a-z_-]*{SECRET_KEYS}[a-z_-]*"\s*:\s*)"(?:[^"\\]|\\.)*""#
    ))
    .expect("static regex is valid")
});
static KEY_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"(?i)\b([a-z_-]*{SECRET_KEYS}[a-z_-]*=)[^\s&,;]+")).expect("static regex is valid")
});
static SECRET_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(x-auth-token|x-subject-token|authorization|proxy-authorization|cookie|set-cookie)(\s*:\s*)(?:(?:bearer|basic|token)\s+)?[^\s,;]+",
    )
    .expect("static regex is valid")
});
/// Rancher API tokens, `token-<5 characters>:<secret>`: the secret part is lower case and digits only, so it
/// would pass for an id.
static RANCHER_TOKEN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(token-[a-z0-9]{5}):[a-z0-9]{16,}").expect("static regex is valid"));
/// JSON Web Tokens (access, ID and refresh tokens): three base64url parts, the first a JSON object (`eyJ`).
static JWT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*").expect("static regex is valid")
});
/// Runs long enough to be key material: Keycloak's client secrets are 32 alphanumerics.
/// (`/` and `.` end a run: URL paths and dotted field paths stay readable; secrets with a `/` — standard base64
/// — only appear in `Authorization` headers, handled above, and each part of a JWT is long enough on its own.)
static LONG_OPAQUE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z0-9_+=-]{32,}").expect("static regex is valid"));

/// Removes credentials, tokens and secret-looking values from `text` and bounds its length.
///
/// Identifiers that are not secret (UUIDs, 32-hex Keystone ids, names) are kept so messages stay useful.
pub fn sanitize(text: &str) -> String {
    let text = URL_USERINFO.replace_all(text, "${1}");
    let text = AUTH_HEADER.replace_all(&text, |caps: &regex::Captures<'_>| match (caps.get(1), caps.get(2)) {
        (Some(scheme), _) => format!("{} {REDACTED}", scheme.as_str()),
        // `token endpoint`, `token exchange`: prose, not a credential.
        (None, Some(_)) if is_word(&caps[3]) => caps[0].to_string(),
        (None, Some(word)) => format!("{} {REDACTED}", word.as_str()),
        (None, None) => caps[0].to_string(),
    });
    let text = SECRET_HEADER.replace_all(&text, format!("${{1}}${{2}}{REDACTED}"));
    let text = JSON_FIELD.replace_all(&text, format!("${{1}}\"{REDACTED}\""));
    let text = KEY_VALUE.replace_all(&text, format!("${{1}}{REDACTED}"));
    let text = RANCHER_TOKEN.replace_all(&text, format!("${{1}}:{REDACTED}"));
    let text = JWT.replace_all(&text, REDACTED);
    let text = LONG_OPAQUE.replace_all(&text, |caps: &regex::Captures<'_>| {
        let run = &caps[0];
        if looks_random(run) {
            REDACTED.to_string()
        } else {
            run.to_string()
        }
    });
    truncate(&text, MAX_MESSAGE_LEN)
}

/// Whether a long run of token characters looks like key material rather than a name: it carries base64's `+`
/// or `=`, or mixes upper and lower case with digits or with as many capitals as random letters have (a quarter
/// or more). Names stay readable: DNS names, group names, hex ids and UUIDs are single-case, and camel-case
/// identifiers (`namespaceDefaultResourceQuota`) have few capitals and no digits.
fn looks_random(run: &str) -> bool {
    let letters = run.chars().filter(char::is_ascii_alphabetic).count();
    let upper = run.chars().filter(char::is_ascii_uppercase).count();
    let lower = letters - upper;
    let digit = run.chars().any(|c| c.is_ascii_digit());
    run.contains(['+', '=']) || (upper > 0 && lower > 0 && (digit || upper * 4 >= letters))
}

/// Whether what follows `token` is an ordinary word (Envoy Gateway writes "token endpoint URL must be…"): letters
/// only, lower case after the first, shorter than any token scheme's value. Anything with a digit, a symbol or
/// mixed case is treated as the credential it may be.
fn is_word(value: &str) -> bool {
    let mut chars = value.chars();
    value.len() < 20 && chars.next().is_some_and(|c| c.is_ascii_alphabetic()) && chars.all(|c| c.is_ascii_lowercase())
}

/// Renders a URL for messages: scheme, host, port and path only (no userinfo, query or fragment).
pub fn display_url(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(url) => {
            let host = url.host_str().unwrap_or("");
            match url.port() {
                Some(port) => format!("{}://{}:{}{}", url.scheme(), host, port, url.path()),
                None => format!("{}://{}{}", url.scheme(), host, url.path()),
            }
        }
        Err(_) => sanitize(raw),
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &text[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_userinfo_from_urls() {
        let out = sanitize("GET https://admin:hunter2@keycloak.example.com/realms failed");
        assert!(!out.contains("hunter2") && !out.contains("admin:"), "{out}");
        assert!(out.contains("https://keycloak.example.com/realms"));
    }

    #[test]
    fn strips_bearer_and_basic_credentials() {
        let out = sanitize("sent Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.abc.def and Basic dXNlcjpwYXNz");
        assert!(!out.contains("eyJhbGci") && !out.contains("dXNlcjpwYXNz"), "{out}");
    }

    #[test]
    fn keeps_words_after_token_but_strips_token_credentials() {
        // Envoy Gateway's verdict on an OIDC policy, as the operator relays it.
        let verdict = "Invalid: OIDC: token endpoint URL must be a domain name: http://127.0.0.1:8080/token";
        assert_eq!(sanitize(verdict), verdict);
        assert_eq!(
            sanitize("standard token exchange is off"),
            "standard token exchange is off"
        );
        for secret in [
            "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b",
            "abcdEFGHijklMNOP",
            "gAAAAABk-1xyz",
            "abcdefghijklmnopqrstu",
        ] {
            let out = sanitize(&format!("Authorization failed for token {secret}"));
            assert!(!out.contains(secret), "{out}");
        }
    }

    #[test]
    fn strips_secret_json_fields_and_query_parameters() {
        let out = sanitize(r#"{"client_secret":"s3cr3t-value","name":"app"} ?access_token=abc123&x=1 password=pw1"#);
        assert!(!out.contains("s3cr3t-value"), "{out}");
        assert!(!out.contains("abc123"), "{out}");
        assert!(!out.contains("pw1"), "{out}");
        assert!(out.contains(r#""name":"app""#), "non-secret fields stay: {out}");
    }

    #[test]
    fn strips_long_opaque_strings_but_keeps_ids() {
        let secret = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6";
        let id = "7b23dbac20bc4f048f937415c84bb329";
        let uuid = "6f1c1f9e-8c1d-4b7f-9a0e-2b1d2c3d4e5f";
        let out = sanitize(&format!("secret {secret} for credential-id {id} user {uuid}"));
        assert!(!out.contains(secret), "{out}");
        assert!(out.contains(id) && out.contains(uuid), "{out}");
    }

    #[test]
    fn strips_token_headers_but_keeps_ordinary_words() {
        let out = sanitize("X-Subject-Token: gAAAAABk-1 and status code: 500 creating application credential: denied");
        assert!(!out.contains("gAAAAABk-1"), "{out}");
        assert!(out.contains("status code: 500"), "{out}");
        assert!(out.contains("application credential: denied"), "{out}");
    }

    #[test]
    fn strips_rancher_tokens_and_keycloak_client_secrets() {
        // Gaps the property tests (tests/properties.rs) found: a Rancher token's secret part is lower case and
        // digits only, and a Keycloak client secret is 32 characters, under the old 40-character threshold.
        let rancher = "token-x7k2p:4fj8s0dk2l5n7q9w1e3r6t8y0u2i4o6p8a1s3d5f7g9h2j4k6";
        let keycloak = "Xq7bT2mZ9kLp4RwN8vYc3HsJ6dFgA1eU";
        let out = sanitize(&format!(
            "answered 401 for {rancher}; client secret {keycloak} rejected"
        ));
        assert!(!out.contains("4fj8s0dk2l5n7q9w") && !out.contains(keycloak), "{out}");
        assert!(out.contains("token-x7k2p:"), "the token's public name stays: {out}");
    }

    #[test]
    fn keeps_field_paths_and_identifiers_readable() {
        // Seen in the bad-input catalog: Rancher's admission message was cut to "[REDACTED]: Forbidden".
        let message = "denied the request: project.spec.namespaceDefaultResourceQuota.limit.limitsCpu: Forbidden: \
                       namespace default quota limit exceeds project limit; see namespaceDefaultResourceQuotaLimits";
        assert_eq!(sanitize(message), message);
    }

    #[test]
    fn keeps_url_paths_readable() {
        let url = "https://keycloak.example.com/admin/realms/master/clients/6f1c1f9e-8c1d-4b7f-9a0e-2b1d2c3d4e5f";
        assert!(sanitize(&format!("GET {url} answered 404")).contains(url));
    }

    #[test]
    fn keeps_long_names_readable() {
        let group = "c_cluster-production-eu-west-1-project-analytics-admins";
        let out = sanitize(&format!("group {group} could not be created"));
        assert!(out.contains(group), "{out}");
    }

    #[test]
    fn bounds_message_length() {
        let out = sanitize(&"word ".repeat(500));
        assert!(out.len() <= MAX_MESSAGE_LEN + '…'.len_utf8());
    }

    #[test]
    fn display_url_drops_credentials_and_query() {
        assert_eq!(
            display_url("https://u:p@kc.example.com:8443/admin/realms?token=x#frag"),
            "https://kc.example.com:8443/admin/realms"
        );
    }
}
