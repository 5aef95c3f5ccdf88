//! Services, the basics (`ValidateService`, `SetDefaults_Service`): DNS-1035 names, ports (required,
//! numbers, protocols, names when there are several, target ports, no duplicate port/protocol), type,
//! session affinity, external names and selectors. Cluster IP allocation is the server's.

use serde_json::{Value, json};

use super::super::go_format::{BadValue, quote};
use super::super::{FieldError, names, object_meta, path};

const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];
const TYPES: [&str; 4] = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
const AFFINITIES: [&str; 2] = ["ClientIP", "None"];

/// Applies the Service defaults kube-apiserver sets before validation: `type: ClusterIP`,
/// `sessionAffinity: None`, each port's `protocol: TCP` and `targetPort` (= `port`),
/// `internalTrafficPolicy: Cluster`, `externalTrafficPolicy: Cluster` for NodePort/LoadBalancer,
/// `allocateLoadBalancerNodePorts: true` for LoadBalancer, and `ipFamilyPolicy: SingleStack` with
/// `ipFamilies: [IPv4]` for non-ExternalName services. `clusterIP`/`clusterIPs` are left to the server.
pub fn default_service(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let missing = |spec: &serde_json::Map<String, Value>, key: &str| {
        spec.get(key).and_then(Value::as_str).is_none_or(str::is_empty)
    };
    if missing(spec, "type") {
        spec.insert("type".into(), json!("ClusterIP"));
    }
    if missing(spec, "sessionAffinity") {
        spec.insert("sessionAffinity".into(), json!("None"));
    }
    let ty = spec.get("type").and_then(Value::as_str).unwrap_or("").to_string();
    if spec.get("sessionAffinity").and_then(Value::as_str) == Some("ClientIP")
        && !spec.contains_key("sessionAffinityConfig")
    {
        spec.insert(
            "sessionAffinityConfig".into(),
            json!({"clientIP": {"timeoutSeconds": 10800}}),
        );
    }
    if let Some(Value::Array(ports)) = spec.get_mut("ports") {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            if port.get("protocol").and_then(Value::as_str).is_none_or(str::is_empty) {
                port.insert("protocol".into(), json!("TCP"));
            }
            let target_missing = match port.get("targetPort") {
                None | Some(Value::Null) => true,
                Some(Value::Number(n)) => n.as_i64() == Some(0),
                Some(Value::String(s)) => s.is_empty(),
                Some(_) => false,
            };
            if target_missing && let Some(p) = port.get("port").cloned() {
                port.insert("targetPort".into(), p);
            }
        }
    }
    if ty != "ExternalName" {
        if !spec.contains_key("internalTrafficPolicy") {
            spec.insert("internalTrafficPolicy".into(), json!("Cluster"));
        }
        if !spec.contains_key("ipFamilyPolicy") {
            spec.insert("ipFamilyPolicy".into(), json!("SingleStack"));
        }
        if !spec.contains_key("ipFamilies") {
            spec.insert("ipFamilies".into(), json!(["IPv4"]));
        }
    }
    if (ty == "NodePort" || ty == "LoadBalancer") && missing(spec, "externalTrafficPolicy") {
        spec.insert("externalTrafficPolicy".into(), json!("Cluster"));
    }
    if ty == "LoadBalancer" && !spec.contains_key("allocateLoadBalancerNodePorts") {
        spec.insert("allocateLoadBalancerNodePorts".into(), json!(true));
    }
}

fn name_is_dns1035_label(name: &str, prefix: bool) -> Vec<String> {
    let masked = if prefix && name.len() >= 2 && name.ends_with('-') {
        format!("{}a", &name[..name.len() - 1])
    } else {
        name.to_string()
    };
    names::is_dns1035_label(&masked)
}

/// `%#v` of the `core.ServicePort` key used for duplicate detection (only protocol and port are set).
fn go_port_key(protocol: &str, port: i64) -> BadValue {
    BadValue::raw(format!(
        "core.ServicePort{{Name:\"\", Protocol:{}, AppProtocol:(*string)(nil), Port:{port}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:\"\"}}, NodePort:0}}",
        quote(protocol)
    ))
}

/// `ValidateService` for the fields the emulator cares about.
pub fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = object_meta::validate_object_meta(obj, true, &name_is_dns1035_label);
    let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    let text = |key: &str| spec.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let ty = text("type");
    let headless = text("clusterIP") == "None";
    let ports: Vec<Value> = spec.get("ports").and_then(Value::as_array).cloned().unwrap_or_default();
    if ports.is_empty() && !headless && ty != "ExternalName" {
        errs.push(FieldError::required("spec.ports", ""));
    }
    if ty == "ExternalName" {
        let cname = text("externalName");
        let cname = cname.trim_end_matches('.');
        if cname.is_empty() {
            errs.push(FieldError::required("spec.externalName", ""));
        } else {
            for msg in names::is_dns1123_subdomain(cname) {
                errs.push(FieldError::invalid("spec.externalName", cname, &msg));
            }
        }
    }
    let mut port_names: Vec<String> = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let at = path::index("spec.ports", i);
        let name = port.get("name").and_then(Value::as_str).unwrap_or("");
        if ports.len() > 1 && name.is_empty() {
            errs.push(FieldError::required(path::child(&at, "name"), ""));
        } else if !name.is_empty() {
            for msg in names::is_dns1123_label(name) {
                errs.push(FieldError::invalid(path::child(&at, "name"), name, &msg));
            }
            if port_names.iter().any(|n| n == name) {
                errs.push(FieldError::duplicate(path::child(&at, "name"), name));
            } else {
                port_names.push(name.to_string());
            }
        }
        let number = port.get("port").and_then(Value::as_i64).unwrap_or(0);
        for msg in names::is_valid_port_num(number) {
            errs.push(FieldError::invalid(path::child(&at, "port"), number, &msg));
        }
        let protocol = port.get("protocol").and_then(Value::as_str).unwrap_or("");
        if protocol.is_empty() {
            errs.push(FieldError::required(path::child(&at, "protocol"), ""));
        } else if !PROTOCOLS.contains(&protocol) {
            errs.push(FieldError::not_supported(
                path::child(&at, "protocol"),
                protocol,
                &PROTOCOLS,
            ));
        }
        match port.get("targetPort") {
            Some(Value::Number(n)) => {
                let target = n.as_i64().unwrap_or(0);
                for msg in names::is_valid_port_num(target) {
                    errs.push(FieldError::invalid(path::child(&at, "targetPort"), target, &msg));
                }
            }
            Some(Value::String(s)) => {
                for msg in names::is_valid_port_name(s) {
                    errs.push(FieldError::invalid(path::child(&at, "targetPort"), s, &msg));
                }
            }
            _ => {}
        }
    }
    errs.extend(object_meta::validate_labels(spec.get("selector"), "spec.selector"));
    let affinity = text("sessionAffinity");
    if affinity.is_empty() {
        errs.push(FieldError::required("spec.sessionAffinity", ""));
    } else if !AFFINITIES.contains(&affinity.as_str()) {
        errs.push(FieldError::not_supported(
            "spec.sessionAffinity",
            affinity.as_str(),
            &AFFINITIES,
        ));
    }
    if ty.is_empty() {
        errs.push(FieldError::required("spec.type", ""));
    } else if !TYPES.contains(&ty.as_str()) {
        errs.push(FieldError::not_supported("spec.type", ty.as_str(), &TYPES));
    }
    let mut seen: Vec<(String, i64)> = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let key = (
            port.get("protocol").and_then(Value::as_str).unwrap_or("").to_string(),
            port.get("port").and_then(Value::as_i64).unwrap_or(0),
        );
        if seen.contains(&key) {
            errs.push(FieldError::duplicate(
                path::index("spec.ports", i),
                go_port_key(&key.0, key.1),
            ));
        }
        seen.push(key);
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn service(spec: Value) -> Value {
        let mut s = json!({"metadata": {"name": "web", "namespace": "ns"}, "spec": spec});
        default_service(&mut s);
        s
    }

    #[test]
    fn defaults() {
        let s = service(json!({"ports": [{"port": 80}, {"port": 443, "targetPort": "https", "name": "https"}]}));
        assert_eq!(s["spec"]["type"], "ClusterIP");
        assert_eq!(s["spec"]["sessionAffinity"], "None");
        assert_eq!(
            s["spec"]["ports"][0],
            json!({"port": 80, "protocol": "TCP", "targetPort": 80})
        );
        assert_eq!(s["spec"]["ports"][1]["targetPort"], "https");
        assert_eq!(s["spec"]["internalTrafficPolicy"], "Cluster");
        assert_eq!(s["spec"]["ipFamilyPolicy"], "SingleStack");
    }

    #[test]
    fn port_rules() {
        assert_eq!(
            texts(&validate(&service(json!({})))),
            vec!["spec.ports: Required value"]
        );
        assert_eq!(
            texts(&validate(&service(json!({"ports": [{"port": 0, "protocol": "HTTP"}]})))),
            vec![
                "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "spec.ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive",
            ]
        );
        assert_eq!(
            texts(&validate(&service(
                json!({"ports": [{"port": 80}, {"port": 80, "name": "b"}]})
            ))),
            vec![
                "spec.ports[0].name: Required value",
                "spec.ports[1]: Duplicate value: core.ServicePort{Name:\"\", Protocol:\"TCP\", AppProtocol:(*string)(nil), Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}, NodePort:0}",
            ]
        );
        assert!(
            validate(&service(
                json!({"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]})
            ))
            .is_empty()
        );
        assert_eq!(
            texts(&validate(&service(json!({"type": "Fancy", "ports": [{"port": 80}]})))),
            vec![
                "spec.type: Unsupported value: \"Fancy\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\""
            ]
        );
    }

    #[test]
    fn names_are_dns1035_labels() {
        let mut s = service(json!({"ports": [{"port": 80}]}));
        s["metadata"]["name"] = json!("1web");
        assert_eq!(
            texts(&validate(&s)),
            vec![
                "metadata.name: Invalid value: \"1web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
    }
}
