//! `meta.k8s.io/v1` Tables for `kubectl get`: CRD `additionalPrinterColumns` evaluated with JSONPath,
//! printers for the built-in kinds, and the server-side HumanDuration format.

use std::sync::Arc;

use jsonpath_rust::JsonPath;
use serde_json::{Map, Value, json};

use super::resources::{BuiltinKind, PrinterColumn, ResourceDef};

const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// What object each row carries (`includeObject`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncludeObject {
    /// No object.
    None,
    /// A `PartialObjectMetadata` (the default).
    Metadata,
    /// The full object.
    Object,
}

impl IncludeObject {
    /// Parses the query parameter; `Err` carries the 400 message.
    pub fn parse(value: Option<&str>) -> Result<Self, String> {
        match value {
            None | Some("") | Some("Metadata") => Ok(IncludeObject::Metadata),
            Some("None") => Ok(IncludeObject::None),
            Some("Object") => Ok(IncludeObject::Object),
            Some(other) => Err(format!("unrecognized includeObject value: \"{other}\"")),
        }
    }
}

/// The column definitions for a resource at a version.
pub fn column_definitions(def: &ResourceDef, version: &str) -> Vec<Value> {
    columns(def, version)
        .iter()
        .map(|c| {
            json!({"name": c.name, "type": c.column_type, "format": c.format, "description": c.description, "priority": c.priority})
        })
        .collect()
}

fn column(
    name: &str,
    column_type: &str,
    format: &str,
    description: &str,
    priority: i64,
    json_path: &str,
) -> PrinterColumn {
    PrinterColumn {
        name: name.into(),
        column_type: column_type.into(),
        format: format.into(),
        description: description.into(),
        priority,
        json_path: json_path.into(),
    }
}

fn name_column() -> PrinterColumn {
    column("Name", "string", "name", NAME_DESCRIPTION, 0, ".metadata.name")
}

fn age_column() -> PrinterColumn {
    column("Age", "date", "", AGE_DESCRIPTION, 0, ".metadata.creationTimestamp")
}

fn columns(def: &ResourceDef, version: &str) -> Vec<PrinterColumn> {
    let mut cols = vec![name_column()];
    match def.builtin() {
        None => {
            let declared = def
                .version(version)
                .map(|v| v.printer_columns.clone())
                .unwrap_or_default();
            if declared.is_empty() {
                cols.push(age_column());
            } else {
                cols.extend(declared.into_iter().map(|mut c| {
                    if c.description.is_empty() {
                        c.description = format!(
                            "Custom resource definition column (in JSONPath format): {}",
                            c.json_path
                        );
                    }
                    c
                }));
            }
        }
        Some(BuiltinKind::ConfigMap) => {
            cols.push(column(
                "Data",
                "string",
                "",
                "Data contains the configuration data.",
                0,
                "",
            ));
            cols.push(age_column());
        }
        Some(BuiltinKind::Secret) => {
            cols.push(column(
                "Type",
                "string",
                "",
                "Used to facilitate programmatic handling of secret data.",
                0,
                "",
            ));
            cols.push(column("Data", "string", "", "Data contains the secret data.", 0, ""));
            cols.push(age_column());
        }
        Some(BuiltinKind::Namespace) => {
            cols.push(column("Status", "string", "", "The status of the namespace", 0, ""));
            cols.push(age_column());
        }
        Some(BuiltinKind::Lease) => {
            cols.push(column(
                "Holder",
                "string",
                "",
                "holderIdentity contains the identity of the holder of a current lease.",
                0,
                "",
            ));
            cols.push(age_column());
        }
        Some(BuiltinKind::ServiceAccount) => {
            cols.push(column("Secrets", "string", "", "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.", 0, ""));
            cols.push(age_column());
        }
        Some(BuiltinKind::Service) => {
            cols.push(column(
                "Type",
                "string",
                "",
                "Type determines how the Service is exposed.",
                0,
                "",
            ));
            cols.push(column(
                "Cluster-IP",
                "string",
                "",
                "clusterIP is the IP address of the service.",
                0,
                "",
            ));
            cols.push(column("External-IP", "string", "", "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.", 0, ""));
            cols.push(column(
                "Port(s)",
                "string",
                "",
                "The list of ports that are exposed by this service.",
                0,
                "",
            ));
            cols.push(age_column());
            cols.push(column(
                "Selector",
                "string",
                "",
                "Route service traffic to pods with label keys and values matching this selector.",
                1,
                "",
            ));
        }
        Some(BuiltinKind::Event) => {
            cols = vec![
                column("Last Seen", "string", "", "Time when this Event was last seen", 0, ""),
                column(
                    "Type",
                    "string",
                    "",
                    "Type of this event (Normal, Warning), new types could be added in the future.",
                    0,
                    "",
                ),
                column(
                    "Reason",
                    "string",
                    "",
                    "This should be a short, machine understandable string that gives the reason for this event being generated.",
                    0,
                    "",
                ),
                column("Object", "string", "", "The object that this event is about.", 0, ""),
                column(
                    "Subobject",
                    "string",
                    "",
                    "The subobject that this event is about.",
                    1,
                    "",
                ),
                column("Source", "string", "", "The component reporting this event.", 1, ""),
                column(
                    "Message",
                    "string",
                    "",
                    "A human-readable description of the status of this operation.",
                    0,
                    "",
                ),
                column(
                    "First Seen",
                    "string",
                    "",
                    "The time at which the event was first recorded.",
                    1,
                    "",
                ),
                column(
                    "Count",
                    "string",
                    "",
                    "The number of times this event has occurred.",
                    1,
                    "",
                ),
                column("Name", "string", "name", NAME_DESCRIPTION, 1, ""),
            ];
        }
        Some(BuiltinKind::RoleBinding | BuiltinKind::ClusterRoleBinding) => {
            cols.push(column(
                "Role",
                "string",
                "",
                "Role references the role being granted.",
                0,
                "",
            ));
            cols.push(age_column());
        }
        Some(BuiltinKind::Role | BuiltinKind::ClusterRole | BuiltinKind::CustomResourceDefinition) => {
            cols.push(column("Created At", "date", "", AGE_DESCRIPTION, 0, ""));
        }
        Some(BuiltinKind::Deployment) => {
            cols.push(column(
                "Ready",
                "string",
                "",
                "Number of the pod with ready state",
                0,
                "",
            ));
            cols.push(column(
                "Up-to-date",
                "string",
                "",
                "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
                0,
                "",
            ));
            cols.push(column(
                "Available",
                "string",
                "",
                "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
                0,
                "",
            ));
            cols.push(age_column());
        }
        Some(_) => cols.push(age_column()),
    }
    cols
}

/// Builds a Table of `objects` (already converted to the requested version).
pub fn build(
    def: &ResourceDef,
    version: &str,
    objects: &[Arc<Value>],
    list_meta: Map<String, Value>,
    include: IncludeObject,
    with_definitions: bool,
) -> Value {
    let cols = columns(def, version);
    let rows: Vec<Value> = objects
        .iter()
        .map(|obj| {
            let cells: Vec<Value> = cols.iter().map(|c| cell(def, c, obj)).collect();
            let mut row = Map::new();
            row.insert("cells".into(), Value::Array(cells));
            match include {
                IncludeObject::None => {}
                IncludeObject::Object => {
                    row.insert("object".into(), (**obj).clone());
                }
                IncludeObject::Metadata => {
                    row.insert(
                        "object".into(),
                        json!({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata": obj.get("metadata").cloned().unwrap_or(json!({}))}),
                    );
                }
            }
            Value::Object(row)
        })
        .collect();
    let definitions = if with_definitions {
        Value::Array(column_definitions(def, version))
    } else {
        Value::Null
    };
    json!({"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata": list_meta, "columnDefinitions": definitions, "rows": rows})
}

fn age_of(obj: &Value) -> Value {
    Value::String(
        obj.pointer("/metadata/creationTimestamp")
            .and_then(Value::as_str)
            .map_or("<unknown>".into(), human_age),
    )
}

fn count_keys(obj: &Value, fields: &[&str]) -> usize {
    fields
        .iter()
        .map(|f| obj.get(*f).and_then(Value::as_object).map_or(0, Map::len))
        .sum()
}

fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn cell(def: &ResourceDef, column: &PrinterColumn, obj: &Value) -> Value {
    if column.name == "Name" && column.priority == 0 {
        return Value::String(str_at(obj, "/metadata/name").to_string());
    }
    if column.name == "Age" && column.json_path == ".metadata.creationTimestamp" && def.builtin().is_some() {
        return age_of(obj);
    }
    match def.builtin() {
        None => custom_cell(column, obj),
        Some(kind) => builtin_cell(kind, column, obj),
    }
}

fn builtin_cell(kind: BuiltinKind, column: &PrinterColumn, obj: &Value) -> Value {
    let text = match (kind, column.name.as_str()) {
        (BuiltinKind::ConfigMap, "Data") => return json!(count_keys(obj, &["data", "binaryData"])),
        (BuiltinKind::Secret, "Data") => return json!(count_keys(obj, &["data"])),
        (BuiltinKind::Secret, "Type") => str_at(obj, "/type").to_string(),
        (BuiltinKind::Namespace, "Status") => str_at(obj, "/status/phase").to_string(),
        (BuiltinKind::Lease, "Holder") => str_at(obj, "/spec/holderIdentity").to_string(),
        (BuiltinKind::Deployment, "Ready") => {
            let count = |key: &str| {
                obj.pointer(&format!("/status/{key}"))
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
            };
            let wanted = obj.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
            format!("{}/{wanted}", count("readyReplicas"))
        }
        (BuiltinKind::Deployment, "Up-to-date") => {
            return json!(
                obj.pointer("/status/updatedReplicas")
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
            );
        }
        (BuiltinKind::Deployment, "Available") => {
            return json!(
                obj.pointer("/status/availableReplicas")
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
            );
        }
        (BuiltinKind::ServiceAccount, "Secrets") => {
            return json!(obj.get("secrets").and_then(Value::as_array).map_or(0, Vec::len));
        }
        (BuiltinKind::Service, "Type") => str_at(obj, "/spec/type").to_string(),
        (BuiltinKind::Service, "Cluster-IP") => str_at(obj, "/spec/clusterIP").to_string(),
        (BuiltinKind::Service, "External-IP") => "<none>".to_string(),
        (BuiltinKind::Service, "Port(s)") => obj
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .map(|ports| {
                ports
                    .iter()
                    .map(|p| {
                        format!(
                            "{}/{}",
                            p.get("port").map_or(String::new(), Value::to_string),
                            str_at(p, "/protocol")
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "<none>".into()),
        (BuiltinKind::Service, "Selector") => obj
            .pointer("/spec/selector")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "<none>".into()),
        (BuiltinKind::RoleBinding | BuiltinKind::ClusterRoleBinding, "Role") => {
            format!("{}/{}", str_at(obj, "/roleRef/kind"), str_at(obj, "/roleRef/name"))
        }
        (_, "Created At") => str_at(obj, "/metadata/creationTimestamp").to_string(),
        (BuiltinKind::Event, name) => event_cell(name, obj),
        _ => String::new(),
    };
    Value::String(text)
}

fn event_cell(column: &str, obj: &Value) -> String {
    let last = [
        str_at(obj, "/lastTimestamp"),
        str_at(obj, "/series/lastObservedTime"),
        str_at(obj, "/eventTime"),
    ]
    .into_iter()
    .find(|s| !s.is_empty())
    .unwrap_or("");
    match column {
        "Last Seen" => {
            if last.is_empty() {
                "<unknown>".into()
            } else {
                human_age(last)
            }
        }
        "Type" => str_at(obj, "/type").to_string(),
        "Reason" => str_at(obj, "/reason").to_string(),
        "Object" => format!(
            "{}/{}",
            str_at(obj, "/involvedObject/kind").to_lowercase(),
            str_at(obj, "/involvedObject/name")
        ),
        "Subobject" => str_at(obj, "/involvedObject/fieldPath").to_string(),
        "Source" => {
            let component = str_at(obj, "/source/component");
            if component.is_empty() {
                str_at(obj, "/reportingComponent").to_string()
            } else {
                component.to_string()
            }
        }
        "Message" => str_at(obj, "/message").to_string(),
        "First Seen" => {
            let first = str_at(obj, "/firstTimestamp");
            if first.is_empty() {
                "<unknown>".into()
            } else {
                human_age(first)
            }
        }
        "Count" => obj.get("count").map_or("1".into(), Value::to_string),
        "Name" => str_at(obj, "/metadata/name").to_string(),
        _ => String::new(),
    }
}

fn custom_cell(column: &PrinterColumn, obj: &Value) -> Value {
    let path = column.json_path.trim().trim_start_matches('{').trim_end_matches('}');
    let query = if path.starts_with('$') {
        path.to_string()
    } else {
        format!("${path}")
    };
    let Ok(results) = obj.query(&query) else {
        return Value::Null;
    };
    let Some(first) = results.first() else {
        return Value::Null;
    };
    if results.len() > 1 {
        let texts: Vec<String> = results.iter().map(|v| print_value(v)).collect();
        return Value::String(texts.join(" "));
    }
    match column.column_type.as_str() {
        "integer" => first.as_i64().map_or(Value::Null, |n| json!(n)),
        "number" => first.as_f64().map_or(Value::Null, |n| json!(n)),
        "boolean" => first.as_bool().map_or(Value::Null, Value::Bool),
        "date" => match first.as_str() {
            Some(ts) => Value::String(human_age(ts)),
            None => Value::Null,
        },
        _ => Value::String(print_value(first)),
    }
}

fn print_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The age of an RFC3339 timestamp as kube's HumanDuration prints it.
pub fn human_age(timestamp: &str) -> String {
    let Ok(then) = chrono::DateTime::parse_from_rfc3339(timestamp) else {
        return "<invalid>".into();
    };
    let elapsed = chrono::Utc::now().signed_duration_since(then);
    if elapsed.num_milliseconds() < -1000 {
        return "<invalid>".into();
    }
    human_duration(elapsed.num_seconds().max(0))
}

/// HumanDuration of a number of seconds (`apimachinery/pkg/util/duration`).
pub fn human_duration(seconds: i64) -> String {
    let minutes = seconds / 60;
    let hours = seconds / 3600;
    let days = hours / 24;
    let years = days / 365;
    if seconds < 120 {
        format!("{seconds}s")
    } else if minutes < 10 {
        let s = seconds % 60;
        if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        }
    } else if minutes < 180 {
        format!("{minutes}m")
    } else if hours < 8 {
        let m = minutes % 60;
        if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        }
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            format!("{days}d")
        } else {
            format!("{days}d{h}h")
        }
    } else if hours < 24 * 365 * 2 {
        format!("{days}d")
    } else if hours < 24 * 365 * 8 {
        let d = days % 365;
        if d == 0 {
            format!("{years}y")
        } else {
            format!("{years}y{d}d")
        }
    } else {
        format!("{years}y")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_duration_follows_apimachinery_buckets() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(119), "119s");
        assert_eq!(human_duration(125), "2m5s");
        assert_eq!(human_duration(600), "10m");
        assert_eq!(human_duration(3 * 3600 + 60), "3h1m");
        assert_eq!(human_duration(10 * 3600), "10h");
        assert_eq!(human_duration(3 * 86400 + 3600), "3d1h");
        assert_eq!(human_duration(30 * 86400), "30d");
        assert_eq!(human_duration(3 * 365 * 86400 + 86400), "3y1d");
    }

    #[test]
    fn printer_column_jsonpath_filters_work() {
        let col = column(
            "Ready",
            "string",
            "",
            "",
            0,
            r#".status.conditions[?(@.type=="Ready")].status"#,
        );
        let obj =
            json!({"status":{"conditions":[{"type":"Synced","status":"False"},{"type":"Ready","status":"True"}]}});
        assert_eq!(custom_cell(&col, &obj), json!("True"));
        let size = column("Size", "integer", "", "", 0, ".spec.size");
        assert_eq!(custom_cell(&size, &json!({"spec":{"size":3}})), json!(3));
        assert_eq!(custom_cell(&size, &json!({"spec":{}})), Value::Null);
    }
}
