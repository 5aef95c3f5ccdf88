//! Routing a request path to what it addresses (type names are case-insensitive, ids may be percent-encoded),
//! and the per-request context handlers work with.

use axum::http::Method;
use serde_json::{Map, Value};

use super::norman::ApiError;

/// The norman types the emulator serves under `/v3/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `projects`
    Projects,
    /// `projectroletemplatebindings`
    ProjectBindings,
    /// `clusterroletemplatebindings`
    ClusterBindings,
    /// `clusters`
    Clusters,
    /// `roletemplates`
    RoleTemplates,
}

impl Kind {
    /// The type named by a path segment, matched case-insensitively in plural or singular form.
    pub fn parse(segment: &str) -> Option<Kind> {
        let lower = segment.to_ascii_lowercase();
        let singular = lower.strip_suffix('s').unwrap_or(&lower);
        match singular {
            "project" => Some(Kind::Projects),
            "projectroletemplatebinding" => Some(Kind::ProjectBindings),
            "clusterroletemplatebinding" => Some(Kind::ClusterBindings),
            "cluster" => Some(Kind::Clusters),
            "roletemplate" => Some(Kind::RoleTemplates),
            _ => None,
        }
    }

    /// The plural resource name used in counters and faults.
    pub fn resource(self) -> &'static str {
        match self {
            Kind::Projects => "projects",
            Kind::ProjectBindings => "projectroletemplatebindings",
            Kind::ClusterBindings => "clusterroletemplatebindings",
            Kind::Clusters => "clusters",
            Kind::RoleTemplates => "roletemplates",
        }
    }
}

/// What a path addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// `/__emulator/…`: the test hooks.
    Hooks(Vec<String>),
    /// `/v3` or `/v3/`.
    Root,
    /// `/v3/<type>`.
    Collection(Kind),
    /// `/v3/<type>/<id>`.
    Resource(Kind, String),
    /// `/v3/clusters/<id>/namespaces[/<name>]` (also `/v3/cluster/…`).
    Namespaces {
        /// The cluster.
        cluster: String,
        /// The namespace.
        name: Option<String>,
    },
    /// `/k8s/clusters/<id>/api/v1/namespaces[/<name>]`.
    KubeNamespaces {
        /// The cluster.
        cluster: String,
        /// The namespace.
        name: Option<String>,
    },
    /// `/v3/<unknown type>…`.
    UnknownType(String),
    /// Anything else.
    NotFound,
}

impl Route {
    /// Resolves a raw (still percent-encoded) path.
    pub fn parse(path: &str) -> Route {
        let segments: Vec<String> = path.split('/').filter(|s| !s.is_empty()).map(percent_decode).collect();
        let parts: Vec<&str> = segments.iter().map(String::as_str).collect();
        match parts.as_slice() {
            ["__emulator", rest @ ..] => Route::Hooks(rest.iter().map(|s| s.to_string()).collect()),
            ["v3"] => Route::Root,
            ["v3", kind] => match Kind::parse(kind) {
                Some(kind) => Route::Collection(kind),
                None => Route::UnknownType(kind.to_string()),
            },
            ["v3", kind, id] => match Kind::parse(kind) {
                Some(kind) => Route::Resource(kind, id.to_string()),
                None => Route::UnknownType(kind.to_string()),
            },
            ["v3", kind, cluster, sub, rest @ ..] if Kind::parse(kind) == Some(Kind::Clusters) && rest.len() <= 1 => {
                if sub.eq_ignore_ascii_case("namespaces") || sub.eq_ignore_ascii_case("namespace") {
                    Route::Namespaces {
                        cluster: cluster.to_string(),
                        name: rest.first().map(|s| s.to_string()),
                    }
                } else {
                    Route::UnknownType(sub.to_string())
                }
            }
            ["k8s", "clusters", cluster, "api", "v1", "namespaces", rest @ ..] if rest.len() <= 1 => {
                Route::KubeNamespaces {
                    cluster: cluster.to_string(),
                    name: rest.first().map(|s| s.to_string()),
                }
            }
            ["v3", kind, ..] if Kind::parse(kind).is_none() => Route::UnknownType(kind.to_string()),
            _ => Route::NotFound,
        }
    }

    /// The resource name counters and faults use for this route.
    pub fn resource(&self) -> &str {
        match self {
            Route::Collection(kind) | Route::Resource(kind, _) => kind.resource(),
            Route::Namespaces { .. } => "namespaces",
            Route::KubeNamespaces { .. } => "k8s-namespaces",
            Route::Root => "root",
            Route::Hooks(_) => "hooks",
            Route::UnknownType(_) | Route::NotFound => "unknown",
        }
    }

    /// The verb counters and faults use: `list`, `get`, `create`, `update`, `patch`, `delete` or `action`.
    pub fn verb(&self, method: &Method, query: &[(String, String)]) -> &'static str {
        let named = matches!(
            self,
            Route::Resource(..) | Route::Namespaces { name: Some(_), .. } | Route::KubeNamespaces { name: Some(_), .. }
        );
        let is_action = query.iter().any(|(k, _)| k == "action");
        match (method.as_str(), named) {
            ("GET", false) => "list",
            ("GET", true) => "get",
            ("POST", true) if is_action => "action",
            ("POST", _) => "create",
            ("PUT", _) => "update",
            ("PATCH", _) => "patch",
            ("DELETE", _) => "delete",
            _ => "other",
        }
    }
}

/// Decodes `%XX` escapes (a `+` stays a `+` in paths).
pub fn percent_decode(segment: &str) -> String {
    fn hex(byte: u8) -> Option<u8> {
        (byte as char).to_digit(16).and_then(|d| u8::try_from(d).ok())
    }
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%'
            && let (Some(high), Some(low)) = (
                bytes.get(index + 1).copied().and_then(hex),
                bytes.get(index + 2).copied().and_then(hex),
            )
        {
            out.push(high * 16 + low);
            index += 3;
            continue;
        }
        out.push(bytes[index]);
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The request as handlers see it.
pub struct Call {
    /// The method.
    pub method: Method,
    /// Decoded query parameters in order.
    pub query: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// `http://host:port`, for links.
    pub base: String,
    /// The raw path and query, for the `self` link of collections.
    pub path_and_query: String,
    /// The authenticated user.
    pub user: String,
    /// The `Content-Type` header (empty when absent).
    pub content_type: String,
}

impl Call {
    /// The first value of a query parameter.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The full URL of this request.
    pub fn self_url(&self) -> String {
        format!("{}{}", self.base, self.path_and_query)
    }

    /// The body as a JSON object; norman answers 422 `InvalidBodyContent` to anything else.
    pub fn json_object(&self) -> Result<Map<String, Value>, ApiError> {
        if self.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Map::new());
        }
        match serde_json::from_slice::<Value>(&self.body) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err(ApiError::new(
                422,
                "InvalidBodyContent",
                "Failed to parse body: not an object",
            )),
            Err(error) => Err(ApiError::new(
                422,
                "InvalidBodyContent",
                format!("Failed to parse body: {error}"),
            )),
        }
    }
}

/// A string field of a body: absent, null and `""` are all "not set".
pub fn string_field(body: &Map<String, Value>, field: &str) -> Option<String> {
    match body.get(field) {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(Value::Bool(b)) => Some(b.to_string()),
        _ => None,
    }
}

/// A string map field of a body (labels, annotations); non-string values are rendered as JSON.
pub fn string_map_field(body: &Map<String, Value>, field: &str) -> std::collections::BTreeMap<String, String> {
    body.get(field)
        .and_then(Value::as_object)
        .map(|map| {
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_are_case_insensitive_and_ids_decoded() {
        assert_eq!(
            Route::parse("/v3/projectRoleTemplateBindings/c-m-x-p-abc%3Aprtb-xyz"),
            Route::Resource(Kind::ProjectBindings, "c-m-x-p-abc:prtb-xyz".into())
        );
        assert_eq!(Route::parse("/v3/Projects"), Route::Collection(Kind::Projects));
        assert_eq!(
            Route::parse("/v3/cluster/local/namespaces/ns1"),
            Route::Namespaces {
                cluster: "local".into(),
                name: Some("ns1".into())
            }
        );
        assert_eq!(Route::parse("/v3/widgets"), Route::UnknownType("widgets".into()));
        assert_eq!(
            Route::parse("/k8s/clusters/local/api/v1/namespaces"),
            Route::KubeNamespaces {
                cluster: "local".into(),
                name: None
            }
        );
    }
}
