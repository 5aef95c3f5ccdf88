//! API-key authentication: `Authorization: Bearer <accessKey>:<secret>` or HTTP Basic with the same pair.

use axum::http::HeaderMap;
use base64::Engine;

/// The access key and secret a request presents, if any.
pub fn credentials(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get("authorization")?.to_str().ok()?.trim();
    let (scheme, rest) = value.split_once(' ')?;
    let pair = if scheme.eq_ignore_ascii_case("bearer") {
        rest.trim().to_string()
    } else if scheme.eq_ignore_ascii_case("basic") {
        let decoded = base64::engine::general_purpose::STANDARD.decode(rest.trim()).ok()?;
        String::from_utf8(decoded).ok()?
    } else {
        return None;
    };
    let (access_key, secret) = pair.split_once(':')?;
    Some((access_key.to_string(), secret.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("authorization", value.parse().expect("header value"));
        headers
    }

    #[test]
    fn bearer_and_basic_carry_the_same_pair() {
        assert_eq!(
            credentials(&headers("Bearer token-abc:s3")),
            Some(("token-abc".into(), "s3".into()))
        );
        let basic = base64::engine::general_purpose::STANDARD.encode("token-abc:s3");
        assert_eq!(
            credentials(&headers(&format!("Basic {basic}"))),
            Some(("token-abc".into(), "s3".into()))
        );
        assert_eq!(credentials(&headers("Bearer token-abc")), None);
        assert_eq!(credentials(&HeaderMap::new()), None);
    }
}
