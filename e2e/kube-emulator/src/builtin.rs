//! Strategies of the built-in kinds that belong to the server rather than to validation: Namespace phase,
//! finalizers and name label; Service cluster IP allocation. Field defaults
//! (Secret `type`/`stringData`, Service ports) come from `validation::default_builtin`.

use rand::Rng;
use serde_json::{Map, Value, json};

use super::meta;
use super::resources::BuiltinKind;

/// Fills what the server sets on create.
pub fn prepare_create(kind: BuiltinKind, obj: &mut Value) {
    match kind {
        BuiltinKind::Namespace => {
            let name = meta::name(obj).to_string();
            let labels = meta::metadata_mut(obj).entry("labels").or_insert_with(|| json!({}));
            if let Value::Object(labels) = labels {
                labels.insert("kubernetes.io/metadata.name".into(), json!(name));
            }
            let spec = object_at(obj, "spec");
            if spec
                .get("finalizers")
                .is_none_or(|f| f.as_array().is_none_or(|a| a.is_empty()))
            {
                spec.insert("finalizers".into(), json!(["kubernetes"]));
            }
            obj["status"] = json!({"phase": "Active"});
        }
        BuiltinKind::Service => {
            service_defaults(obj, None);
            obj["status"] = json!({"loadBalancer": {}});
        }
        _ => {}
    }
}

/// Applies what the server keeps or recomputes on update (main endpoint).
pub fn prepare_update(kind: BuiltinKind, old: &Value, new: &mut Value) {
    match kind {
        BuiltinKind::Namespace => {
            // spec.finalizers change only through /finalize; status only through /status.
            let finalizers = old.pointer("/spec/finalizers").cloned();
            let spec = object_at(new, "spec");
            match finalizers {
                Some(f) => {
                    spec.insert("finalizers".into(), f);
                }
                None => {
                    spec.remove("finalizers");
                }
            }
            let name = meta::name(old).to_string();
            let labels = meta::metadata_mut(new).entry("labels").or_insert_with(|| json!({}));
            if let Value::Object(labels) = labels {
                labels.insert("kubernetes.io/metadata.name".into(), json!(name));
            }
        }
        BuiltinKind::Service => service_defaults(new, Some(old)),
        _ => {}
    }
}

fn object_at<'a>(obj: &'a mut Value, key: &str) -> &'a mut Map<String, Value> {
    if !obj.get(key).is_some_and(Value::is_object) {
        obj[key] = json!({});
    }
    match obj.get_mut(key) {
        Some(Value::Object(m)) => m,
        _ => unreachable!("set to an object just above"),
    }
}

fn service_defaults(obj: &mut Value, old: Option<&Value>) {
    let old_ip = old.and_then(|o| o.pointer("/spec/clusterIP")).cloned();
    let spec = object_at(obj, "spec");
    spec.entry("type").or_insert_with(|| json!("ClusterIP"));
    spec.entry("sessionAffinity").or_insert_with(|| json!("None"));
    spec.entry("ipFamilyPolicy").or_insert_with(|| json!("SingleStack"));
    spec.entry("ipFamilies").or_insert_with(|| json!(["IPv4"]));
    spec.entry("internalTrafficPolicy").or_insert_with(|| json!("Cluster"));
    if let Some(Value::Array(ports)) = spec.get_mut("ports") {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            port.entry("protocol").or_insert_with(|| json!("TCP"));
            if !port.contains_key("targetPort")
                && let Some(p) = port.get("port").cloned()
            {
                port.insert("targetPort".into(), p);
            }
        }
    }
    let is_headless = spec.get("clusterIP").and_then(Value::as_str) == Some("None");
    if !is_headless {
        let ip = match old_ip {
            Some(ip) => ip,
            None => match spec.get("clusterIP").and_then(Value::as_str).filter(|s| !s.is_empty()) {
                Some(ip) => json!(ip),
                None => {
                    let mut rng = rand::rng();
                    json!(format!(
                        "10.96.{}.{}",
                        rng.random_range(0..255),
                        rng.random_range(1..255)
                    ))
                }
            },
        };
        spec.insert("clusterIPs".into(), json!([ip.clone()]));
        spec.insert("clusterIP".into(), ip);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_get_phase_finalizer_and_name_label() {
        let mut ns = json!({"metadata":{"name":"team-a"}});
        prepare_create(BuiltinKind::Namespace, &mut ns);
        assert_eq!(ns["status"]["phase"], "Active");
        assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(ns["metadata"]["labels"]["kubernetes.io/metadata.name"], "team-a");
    }

    #[test]
    fn services_keep_their_cluster_ip_on_update() {
        let mut svc = json!({"spec":{"ports":[{"port":80}]}});
        prepare_create(BuiltinKind::Service, &mut svc);
        let ip = svc["spec"]["clusterIP"].clone();
        assert_eq!(
            svc["spec"]["ports"][0],
            json!({"port":80,"protocol":"TCP","targetPort":80})
        );
        let mut update = json!({"spec":{"ports":[{"port":81}]}});
        prepare_update(BuiltinKind::Service, &svc, &mut update);
        assert_eq!(update["spec"]["clusterIP"], ip);
    }
}
