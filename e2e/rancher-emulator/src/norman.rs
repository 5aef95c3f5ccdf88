//! The norman wire conventions: error bodies (and the odd 401), resource links, and collections with exact
//! filters, sorting and marker paging.

use std::cmp::Ordering;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

/// The admission webhook that guards projects.
pub const PROJECT_WEBHOOK: &str = "rancher.cattle.io.projects.management.cattle.io";
/// The admission webhook that guards PRTBs.
pub const PRTB_WEBHOOK: &str = "rancher.cattle.io.projectroletemplatebindings.management.cattle.io";
/// The admission webhook that guards CRTBs.
pub const CRTB_WEBHOOK: &str = "rancher.cattle.io.clusterroletemplatebindings.management.cattle.io";

/// Default page size.
pub const DEFAULT_LIMIT: usize = 1000;
/// Largest page size (also what `limit=-1` means).
pub const MAX_LIMIT: usize = 10_000;

/// A norman error: `{"baseType":"error","code","fieldName"?,"message","status","type":"error"}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status.
    pub status: u16,
    /// Norman code or Kubernetes reason.
    pub code: String,
    /// Message.
    pub message: String,
    /// The offending field.
    pub field_name: Option<String>,
}

impl ApiError {
    /// Any code and status.
    pub fn new(status: u16, code: &str, message: impl Into<String>) -> Self {
        Self {
            status,
            code: code.to_string(),
            message: message.into(),
            field_name: None,
        }
    }

    /// 404 `NotFound`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(404, "NotFound", message)
    }

    /// 405 `MethodNotAllow` (sic).
    pub fn method_not_allowed(method: &str) -> Self {
        Self::new(405, "MethodNotAllow", format!("Method {method} not supported"))
    }

    /// 422 `MissingRequired` on a field, with the empty message norman gives it.
    pub fn missing_required(field: &str) -> Self {
        Self::field(422, "MissingRequired", field, "")
    }

    /// A field error with any code.
    pub fn field(status: u16, code: &str, field: &str, message: impl Into<String>) -> Self {
        Self {
            status,
            code: code.to_string(),
            message: message.into(),
            field_name: Some(field.to_string()),
        }
    }

    /// 409 `AlreadyExists` from Kubernetes for `<resource> "<name>"`.
    pub fn already_exists(resource: &str, name: &str) -> Self {
        Self::new(409, "AlreadyExists", format!("{resource} \"{name}\" already exists"))
    }

    /// A denial by an admission webhook, passed through with the Kubernetes reason as code (400 `BadRequest`,
    /// or 409 `Conflict`).
    pub fn webhook(status: u16, code: &str, webhook: &str, message: &str) -> Self {
        Self::new(
            status,
            code,
            format!("admission webhook \"{webhook}\" denied the request: {message}"),
        )
    }

    /// The JSON body (keys in Go's alphabetical order).
    pub fn body(&self) -> Value {
        let mut body = Map::new();
        body.insert("baseType".into(), json!("error"));
        body.insert("code".into(), json!(self.code));
        if let Some(field) = &self.field_name {
            body.insert("fieldName".into(), json!(field));
        }
        body.insert("message".into(), json!(self.message));
        body.insert("status".into(), json!(self.status));
        body.insert("type".into(), json!("error"));
        Value::Object(body)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        json_response(self.status, &self.body())
    }
}

/// The 401 body: `status` is a string and there is no `code` (rancher#14235).
pub fn unauthorized() -> Response {
    json_response(
        401,
        &json!({"type": "error", "status": "401", "message": "must authenticate"}),
    )
}

/// A JSON response.
pub fn json_response(status: u16, body: &Value) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [("content-type", "application/json")],
        serde_json::to_vec(body).unwrap_or_default(),
    )
        .into_response()
}

/// Fields every norman resource carries, rendered in one place.
pub struct Common<'a> {
    /// The resource id.
    pub id: &'a str,
    /// The schema type, e.g. `project`.
    pub type_name: &'a str,
    /// `metadata.name` (for projects the display name is rendered by the caller instead).
    pub name: &'a str,
    /// Creation time, RFC 3339.
    pub created: String,
    /// Milliseconds since the epoch.
    pub created_ts: i64,
    /// The creating user.
    pub creator_id: &'a str,
    /// A UUID.
    pub uuid: &'a str,
    /// Labels.
    pub labels: Value,
    /// Annotations.
    pub annotations: Value,
    /// The `self` link.
    pub self_link: String,
}

impl Common<'_> {
    /// The common fields as a JSON object, to be extended with the type's own fields.
    pub fn render(&self) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("actions".into(), json!({}));
        out.insert("annotations".into(), self.annotations.clone());
        out.insert("baseType".into(), json!(self.type_name));
        out.insert("created".into(), json!(self.created));
        out.insert("createdTS".into(), json!(self.created_ts));
        out.insert("creatorId".into(), json!(self.creator_id));
        out.insert("id".into(), json!(self.id));
        out.insert("labels".into(), self.labels.clone());
        out.insert(
            "links".into(),
            json!({"remove": self.self_link, "self": self.self_link, "update": self.self_link}),
        );
        out.insert("name".into(), json!(self.name));
        out.insert("type".into(), json!(self.type_name));
        out.insert("uuid".into(), json!(self.uuid));
        out
    }
}

/// One filter condition from the query string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    /// The field.
    pub field: String,
    /// `eq`, `ne`, `null`, `notnull`, `in`, `notin` or `prefix`.
    pub modifier: &'static str,
    /// The value(s).
    pub values: Vec<String>,
}

impl Condition {
    fn matches(&self, item: &Value) -> bool {
        let field = item.get(&self.field).unwrap_or(&Value::Null);
        let text = scalar_text(field);
        match self.modifier {
            "eq" => self.values.iter().all(|v| *v == text),
            "ne" => self.values.iter().all(|v| *v != text),
            "null" => field.is_null() || text.is_empty(),
            "notnull" => !(field.is_null() || text.is_empty()),
            "in" => self.values.iter().flat_map(|v| v.split(',')).any(|v| v == text),
            "notin" => !self.values.iter().flat_map(|v| v.split(',')).any(|v| v == text),
            "prefix" => self.values.iter().all(|v| text.starts_with(v.as_str())),
            _ => true,
        }
    }
}

/// A scalar as norman's `convert.ToString` renders it (null is the empty string).
pub fn scalar_text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        other => other.to_string(),
    }
}

const MODIFIERS: [(&str, &str); 6] = [
    ("_notnull", "notnull"),
    ("_notin", "notin"),
    ("_prefix", "prefix"),
    ("_null", "null"),
    ("_ne", "ne"),
    ("_in", "in"),
];

/// Parses the filter conditions for `filterable` fields out of the query; every other parameter is ignored.
pub fn parse_conditions(query: &[(String, String)], filterable: &[&str]) -> Vec<Condition> {
    let mut conditions: Vec<Condition> = Vec::new();
    for (key, value) in query {
        let (field, modifier) = MODIFIERS
            .iter()
            .find_map(|(suffix, modifier)| key.strip_suffix(suffix).map(|field| (field, *modifier)))
            .filter(|(field, _)| filterable.contains(field))
            .unwrap_or((key.as_str(), "eq"));
        if !filterable.contains(&field) {
            continue;
        }
        match conditions
            .iter_mut()
            .find(|c| c.field == field && c.modifier == modifier)
        {
            Some(existing) => existing.values.push(value.clone()),
            None => conditions.push(Condition {
                field: field.to_string(),
                modifier,
                values: vec![value.clone()],
            }),
        }
    }
    conditions
}

/// What a collection is about.
pub struct CollectionSpec<'a> {
    /// The resource type, e.g. `project`.
    pub resource_type: &'a str,
    /// Fields usable as filters (and sort keys).
    pub filterable: &'a [&'a str],
    /// The full URL of the request (the `self` link).
    pub self_url: &'a str,
    /// The collection URL without query (for `createTypes` and paging links).
    pub collection_url: &'a str,
    /// Whether the collection accepts POST.
    pub creatable: bool,
}

/// Filters, sorts and pages `items` (rendered resources) into the norman collection envelope.
pub fn collection(spec: &CollectionSpec<'_>, query: &[(String, String)], items: Vec<Value>) -> Value {
    let conditions = parse_conditions(query, spec.filterable);
    let mut data: Vec<Value> = items
        .into_iter()
        .filter(|item| conditions.iter().all(|c| c.matches(item)))
        .collect();
    let param = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let sort_field = param("sort").filter(|s| spec.filterable.contains(s)).unwrap_or("id");
    let descending = param("order") == Some("desc");
    data.sort_by(|a, b| {
        let by_field = compare_field(a, b, sort_field);
        let by_id = compare_field(a, b, "id");
        let ordering = by_field.then(by_id);
        if descending { ordering.reverse() } else { ordering }
    });
    let total = data.len();
    let limit = match param("limit").and_then(|l| l.parse::<i64>().ok()) {
        Some(-1) => MAX_LIMIT,
        Some(l) if l > 0 => (l as usize).min(MAX_LIMIT),
        _ => DEFAULT_LIMIT,
    };
    let marker = param("marker").filter(|m| !m.is_empty());
    let start = match marker {
        None => 0,
        Some(marker) => match data
            .iter()
            .position(|item| item.get("id").and_then(Value::as_str) == Some(marker))
        {
            Some(index) => index,
            // The marker's item vanished between pages: when sorted by id, resume after where it was.
            None if sort_field == "id" && !descending => data
                .iter()
                .position(|item| item.get("id").and_then(Value::as_str) > Some(marker))
                .unwrap_or(total),
            None => total,
        },
    };
    let mut page: Vec<Value> = data.into_iter().skip(start).collect();
    let mut pagination = Map::new();
    pagination.insert("limit".into(), json!(limit));
    pagination.insert("total".into(), json!(total));
    if let Some(marker) = marker {
        pagination.insert("marker".into(), json!(marker));
        pagination.insert("first".into(), json!(page_url(spec.collection_url, query, None)));
    }
    if page.len() > limit {
        let next_id = page[limit]
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        page.truncate(limit);
        pagination.insert("partial".into(), json!(true));
        pagination.insert(
            "next".into(),
            json!(page_url(spec.collection_url, query, Some(&next_id))),
        );
    }
    let mut filters = Map::new();
    for field in spec.filterable {
        let used: Vec<Value> = conditions
            .iter()
            .filter(|c| c.field == *field)
            .flat_map(|c| {
                c.values
                    .iter()
                    .map(move |v| json!({"modifier": c.modifier, "value": v}))
            })
            .collect();
        filters.insert(
            (*field).to_string(),
            if used.is_empty() {
                Value::Null
            } else {
                Value::Array(used)
            },
        );
    }
    let sort_links: Map<String, Value> = spec
        .filterable
        .iter()
        .map(|field| {
            (
                (*field).to_string(),
                json!(format!("{}?sort={field}", spec.collection_url)),
            )
        })
        .collect();
    let create_types = if spec.creatable {
        json!({spec.resource_type: spec.collection_url})
    } else {
        json!({})
    };
    json!({
        "actions": {},
        "createTypes": create_types,
        "data": page,
        "filters": filters,
        "links": {"self": spec.self_url},
        "pagination": pagination,
        "resourceType": spec.resource_type,
        "sort": {
            "links": sort_links,
            "order": if descending { "desc" } else { "asc" },
            "reverse": format!("{}?order={}", spec.collection_url, if descending { "asc" } else { "desc" }),
        },
        "type": "collection",
    })
}

fn compare_field(a: &Value, b: &Value, field: &str) -> Ordering {
    scalar_text(a.get(field).unwrap_or(&Value::Null)).cmp(&scalar_text(b.get(field).unwrap_or(&Value::Null)))
}

/// The collection URL with the same query but another marker (or none).
fn page_url(collection_url: &str, query: &[(String, String)], marker: Option<&str>) -> String {
    let mut serializer = url::form_urlencoded::Serializer::new(String::new());
    for (key, value) in query.iter().filter(|(k, _)| k != "marker") {
        serializer.append_pair(key, value);
    }
    if let Some(marker) = marker {
        serializer.append_pair("marker", marker);
    }
    let encoded = serializer.finish();
    if encoded.is_empty() {
        collection_url.to_string()
    } else {
        format!("{collection_url}?{encoded}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn unknown_parameters_are_not_filters_and_modifiers_parse() {
        let conditions = parse_conditions(
            &query(&[("nmae", "x"), ("name_ne", "y"), ("clusterId", "c")]),
            &["name", "clusterId"],
        );
        assert_eq!(
            conditions,
            vec![
                Condition {
                    field: "name".into(),
                    modifier: "ne",
                    values: vec!["y".into()]
                },
                Condition {
                    field: "clusterId".into(),
                    modifier: "eq",
                    values: vec!["c".into()]
                },
            ]
        );
    }

    #[test]
    fn paging_hands_out_a_marker_for_the_next_page() {
        let items: Vec<Value> = (0..5).map(|i| json!({"id": format!("x{i}")})).collect();
        let spec = CollectionSpec {
            resource_type: "thing",
            filterable: &["id"],
            self_url: "http://h/v3/things",
            collection_url: "http://h/v3/things",
            creatable: false,
        };
        let first = collection(&spec, &query(&[("limit", "2")]), items.clone());
        assert_eq!(first["pagination"]["partial"], json!(true));
        assert_eq!(
            first["pagination"]["next"],
            json!("http://h/v3/things?limit=2&marker=x2")
        );
        let third = collection(&spec, &query(&[("limit", "2"), ("marker", "x4")]), items);
        assert_eq!(third["data"].as_array().map(Vec::len), Some(1));
        assert!(third["pagination"].get("next").is_none());
    }
}
