//! Decoding a request: which resource a URL names, its query parameters (tolerating kube-rs's `?&k=v`),
//! and what the Accept header asks for.

use axum::http::HeaderMap;

/// The parts of a resource URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourcePath {
    /// The API group (empty for `/api/v1`).
    pub group: String,
    /// The version.
    pub version: String,
    /// The namespace segment, when present.
    pub namespace: Option<String>,
    /// The plural resource.
    pub resource: String,
    /// The object name, when present.
    pub name: Option<String>,
    /// The subresource (`status`, `scale`, `finalize`), when present.
    pub subresource: Option<String>,
}

/// Parses `/api/v1/...` and `/apis/<g>/<v>/...` resource paths; `None` for anything else.
pub fn parse_resource_path(path: &str) -> Option<ResourcePath> {
    let segments: Vec<String> = path.trim_start_matches('/').split('/').map(percent_decode).collect();
    let (group, version, rest) = match segments.first().map(String::as_str) {
        Some("api") if segments.len() >= 3 => (String::new(), segments[1].clone(), &segments[2..]),
        Some("apis") if segments.len() >= 4 => (segments[1].clone(), segments[2].clone(), &segments[3..]),
        _ => return None,
    };
    if rest.iter().any(String::is_empty) {
        return None;
    }
    let mut target = ResourcePath {
        group,
        version,
        namespace: None,
        resource: String::new(),
        name: None,
        subresource: None,
    };
    match rest {
        [resource] => target.resource = resource.clone(),
        [resource, name] => {
            target.resource = resource.clone();
            target.name = Some(name.clone());
        }
        [first, ns, third]
            if first == "namespaces" && target.group.is_empty() && (third == "status" || third == "finalize") =>
        {
            target.resource = "namespaces".into();
            target.name = Some(ns.clone());
            target.subresource = Some(third.clone());
        }
        [first, ns, resource] if first == "namespaces" => {
            target.namespace = Some(ns.clone());
            target.resource = resource.clone();
        }
        [first, ns, resource, name] if first == "namespaces" => {
            target.namespace = Some(ns.clone());
            target.resource = resource.clone();
            target.name = Some(name.clone());
        }
        [first, ns, resource, name, sub] if first == "namespaces" => {
            target.namespace = Some(ns.clone());
            target.resource = resource.clone();
            target.name = Some(name.clone());
            target.subresource = Some(sub.clone());
        }
        [resource, name, sub] => {
            target.resource = resource.clone();
            target.name = Some(name.clone());
            target.subresource = Some(sub.clone());
        }
        _ => return None,
    }
    Some(target)
}

fn percent_decode(segment: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", segment.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// Query parameters in order; empty pairs (`?&`) are skipped.
#[derive(Clone, Debug, Default)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Parses a raw query string.
    pub fn parse(raw: Option<&str>) -> Self {
        let pairs = raw
            .map(|q| {
                url::form_urlencoded::parse(q.as_bytes())
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect()
            })
            .unwrap_or_default();
        Query { pairs }
    }

    /// The first value of a parameter.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// All values of a parameter.
    pub fn all(&self, key: &str) -> Vec<&str> {
        self.pairs
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// Whether a parameter is present.
    pub fn has(&self, key: &str) -> bool {
        self.pairs.iter().any(|(k, _)| k == key)
    }

    /// A boolean parameter as Go's `strconv.ParseBool` reads query booleans (`true`, `1`, `True`, ...).
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some(v) if matches!(v, "1" | "t" | "T" | "true" | "TRUE" | "True"))
    }
}

/// Whether the Accept header asks for a `meta.k8s.io` Table.
pub fn wants_table(headers: &HeaderMap) -> bool {
    accept(headers)
        .split(',')
        .next()
        .is_some_and(|first| first.contains("as=Table"))
}

/// Whether the Accept header asks for aggregated discovery v2.
pub fn wants_aggregated_discovery(headers: &HeaderMap) -> bool {
    accept(headers).split(',').any(|part| {
        let params: Vec<&str> = part.split(';').map(str::trim).collect();
        params.contains(&"g=apidiscovery.k8s.io")
            && params.contains(&"v=v2")
            && params.contains(&"as=APIGroupDiscoveryList")
    })
}

fn accept(headers: &HeaderMap) -> &str {
    headers.get("accept").and_then(|v| v.to_str().ok()).unwrap_or("")
}

/// The media type of the request body, without parameters; empty when absent.
pub fn content_type(headers: &HeaderMap) -> String {
    headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// The User-Agent header, or empty.
pub fn user_agent(headers: &HeaderMap) -> String {
    headers
        .get("user-agent")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaced_and_cluster_paths_parse() {
        let p = parse_resource_path("/apis/a.io/v1/namespaces/ns/gizmos/g1/status").unwrap();
        assert_eq!(p.group, "a.io");
        assert_eq!(p.namespace.as_deref(), Some("ns"));
        assert_eq!(p.name.as_deref(), Some("g1"));
        assert_eq!(p.subresource.as_deref(), Some("status"));
        let ns = parse_resource_path("/api/v1/namespaces/x/finalize").unwrap();
        assert_eq!(
            (ns.resource.as_str(), ns.name.as_deref(), ns.subresource.as_deref()),
            ("namespaces", Some("x"), Some("finalize"))
        );
        let list = parse_resource_path("/api/v1/namespaces/x/configmaps").unwrap();
        assert_eq!(
            (list.namespace.as_deref(), list.resource.as_str()),
            (Some("x"), "configmaps")
        );
        assert!(parse_resource_path("/apis/a.io").is_none());
    }

    #[test]
    fn kube_rs_style_queries_skip_empty_pairs() {
        let q = Query::parse(Some("&watch=true&limit=500"));
        assert!(q.flag("watch"));
        assert_eq!(q.get("limit"), Some("500"));
        let bare = Query::parse(Some(""));
        assert!(bare.get("watch").is_none());
    }
}
