//! Decoding a request: which resource a URL names, its query parameters (tolerating kube-rs's `?&k=v`),
//! and what the Accept header asks for.

use axum::http::HeaderMap;

use super::hooks::ResponseForm;
use super::status::ApiError;

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

/// The form of a response body, negotiated from the Accept header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// The object or list itself (JSON, whatever media type was asked for).
    Object,
    /// A `meta.k8s.io` Table (`as=Table`).
    Table,
    /// `meta.k8s.io` `PartialObjectMetadata` (`list: false`) or `PartialObjectMetadataList` (`list: true`):
    /// metadata only, in `version` (`v1` or `v1beta1`).
    Metadata {
        /// Whether `as=PartialObjectMetadataList` was asked for.
        list: bool,
        /// The `meta.k8s.io` version asked for.
        version: &'static str,
    },
}

impl From<Output> for ResponseForm {
    fn from(output: Output) -> Self {
        match output {
            Output::Object => ResponseForm::Object,
            Output::Table => ResponseForm::Table,
            Output::Metadata { .. } => ResponseForm::Metadata,
        }
    }
}

/// Negotiates the response form as kube-apiserver's `negotiation.NegotiateOutputMediaType` does: the Accept
/// clauses are tried by decreasing `q`, in order; a clause names a media type the server encodes (JSON, YAML,
/// protobuf or a wildcard; protobuf and YAML are answered with JSON here, which clients accept) and,
/// optionally, a conversion `as=<Kind>;g=meta.k8s.io;v=<v1|v1beta1>` — `Table` (JSON or YAML only),
/// `PartialObjectMetadata` or `PartialObjectMetadataList` (`RequestScope.AllowsMediaTypeTransform`). A clause
/// asking for anything else is skipped; when no clause is left the answer is 406 NotAcceptable. No Accept
/// header means the object.
pub fn negotiate(headers: &HeaderMap, custom_resource: bool) -> Result<Output, ApiError> {
    let header = accept(headers).trim();
    if header.is_empty() {
        return Ok(Output::Object);
    }
    let mut clauses: Vec<(f32, &str)> = header
        .split(',')
        .filter(|clause| !clause.trim().is_empty())
        .map(|clause| (quality(clause), clause))
        .filter(|(q, _)| *q > 0.0)
        .collect();
    // Stable: clauses of equal weight keep the client's order.
    clauses.sort_by(|a, b| b.0.total_cmp(&a.0));
    clauses
        .iter()
        .find_map(|(_, clause)| clause_output(clause))
        .ok_or_else(|| {
            let accepted = if custom_resource {
                "application/json, application/yaml"
            } else {
                "application/json, application/yaml, application/vnd.kubernetes.protobuf"
            };
            ApiError::not_acceptable(format!("only the following media types are accepted: {accepted}"))
        })
}

/// The `q` parameter of one Accept clause (1 when absent or unreadable).
fn quality(clause: &str) -> f32 {
    clause
        .split(';')
        .skip(1)
        .filter_map(|param| param.split_once('='))
        .find(|(key, _)| key.trim().eq_ignore_ascii_case("q"))
        .and_then(|(_, value)| value.trim().parse().ok())
        .unwrap_or(1.0)
}

/// What one Accept clause asks for, or `None` when the server cannot answer it.
fn clause_output(clause: &str) -> Option<Output> {
    let mut parts = clause.split(';');
    let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let (kind, subtype) = media.split_once('/')?;
    let serializable = matches!(
        (kind, subtype),
        ("*", "*") | ("application", "*" | "json" | "yaml" | "vnd.kubernetes.protobuf")
    );
    if !serializable {
        return None;
    }
    let (mut as_kind, mut group, mut version) = (None, None, None);
    for param in parts {
        if let Some((key, value)) = param.split_once('=') {
            let value = value.trim();
            match key.trim() {
                "as" => as_kind = Some(value),
                "g" => group = Some(value),
                "v" => version = Some(value),
                _ => {}
            }
        }
    }
    let Some(as_kind) = as_kind else {
        return Some(Output::Object);
    };
    if group != Some("meta.k8s.io") {
        return None;
    }
    let version = match version {
        Some("v1") => "v1",
        Some("v1beta1") => "v1beta1",
        _ => return None,
    };
    match as_kind {
        "Table" if matches!(subtype, "json" | "yaml") => Some(Output::Table),
        "PartialObjectMetadata" => Some(Output::Metadata { list: false, version }),
        "PartialObjectMetadataList" => Some(Output::Metadata { list: true, version }),
        _ => None,
    }
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

    fn accept(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("accept", value.parse().unwrap());
        headers
    }

    #[test]
    fn accept_negotiates_tables_and_metadata_like_kube_apiserver() {
        assert_eq!(negotiate(&HeaderMap::new(), false).unwrap(), Output::Object);
        assert_eq!(negotiate(&accept("application/json"), false).unwrap(), Output::Object);
        let kubectl_get = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(negotiate(&accept(kubectl_get), true).unwrap(), Output::Table);
        // kube-rs's metadata requests.
        let list = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
        assert_eq!(
            negotiate(&accept(list), false).unwrap(),
            Output::Metadata {
                list: true,
                version: "v1"
            }
        );
        // client-go's metadata client: protobuf first (answered as JSON), then JSON, then the object.
        let client_go = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
        assert_eq!(
            negotiate(&accept(client_go), false).unwrap(),
            Output::Metadata {
                list: false,
                version: "v1"
            }
        );
        // A conversion the server does not offer is skipped; a Table is never protobuf.
        assert_eq!(
            negotiate(
                &accept("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2, application/json"),
                false
            )
            .unwrap(),
            Output::Object
        );
        assert_eq!(
            negotiate(
                &accept("application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1,application/json"),
                false
            )
            .unwrap(),
            Output::Object
        );
        // Weights order the clauses; nothing acceptable is a 406.
        assert_eq!(
            negotiate(
                &accept("application/json;q=0.5,application/json;as=Table;g=meta.k8s.io;v=v1"),
                true
            )
            .unwrap(),
            Output::Table
        );
        let refused = negotiate(&accept("text/html"), true).unwrap_err();
        assert_eq!((refused.code, refused.reason.as_str()), (406, "NotAcceptable"));
        assert_eq!(
            refused.message,
            "only the following media types are accepted: application/json, application/yaml"
        );
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
