//! Pod Security admission for the `restricted` level, as kube-apiserver applies it to workload objects: a
//! Deployment whose pod template breaks the level of its namespace (`pod-security.kubernetes.io/enforce` or
//! `warn`) is admitted with the warning `would violate PodSecurity "restricted:latest": …` (workloads are
//! never rejected; only Pods, which the emulator does not serve, would be).
//!
//! The checks and their texts follow `k8s.io/pod-security-admission/policy` (baseline checks first, then the
//! restricted ones, each group in its ID order).

use serde_json::Value;

/// The label values that ask for the restricted level.
const LEVEL_LABELS: &[&str] = &["pod-security.kubernetes.io/enforce", "pod-security.kubernetes.io/warn"];

/// The warning for a pod template in a namespace with `labels`, if the namespace asks for `restricted` and the
/// template breaks it.
pub fn warning(
    namespace_labels: &std::collections::BTreeMap<String, String>,
    pod_spec: &Value,
    pod_metadata: &Value,
) -> Option<String> {
    let restricted = LEVEL_LABELS
        .iter()
        .any(|label| namespace_labels.get(*label).map(String::as_str) == Some("restricted"));
    if !restricted {
        return None;
    }
    let violations = restricted_violations(pod_spec, pod_metadata);
    if violations.is_empty() {
        return None;
    }
    Some(format!(
        "would violate PodSecurity \"restricted:latest\": {}",
        violations.join(", ")
    ))
}

struct Container<'a> {
    name: &'a str,
    spec: &'a Value,
}

fn containers(pod: &Value) -> Vec<Container<'_>> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|key| pod.get(*key).and_then(Value::as_array).into_iter().flatten())
        .map(|spec| Container {
            name: spec.get("name").and_then(Value::as_str).unwrap_or_default(),
            spec,
        })
        .collect()
}

fn security<'a>(container: &Container<'a>, pointer: &str) -> Option<&'a Value> {
    container.spec.pointer(&format!("/securityContext{pointer}"))
}

/// `container "a"` or `containers "a", "b"`.
fn name_containers(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    if names.len() == 1 {
        format!("container {}", quoted[0])
    } else {
        format!("containers {}", quoted.join(", "))
    }
}

fn must(names: &[&str], what: &str) -> String {
    format!("{} must {what}", name_containers(names))
}

/// One check: the `reason (detail)` text when the pod breaks it.
type Check = fn(&Value, &[Container<'_>]) -> Option<String>;

/// The checks in upstream order: the baseline ones, then the restricted ones.
const CHECKS: &[Check] = &[
    host_namespaces,
    privileged,
    host_ports,
    proc_mount,
    privilege_escalation,
    capabilities,
    volume_types,
    run_as_non_root,
    run_as_user,
    seccomp_profile,
];

/// The `reason (detail)` texts of every restricted check the pod breaks, in upstream order.
pub fn restricted_violations(pod: &Value, _metadata: &Value) -> Vec<String> {
    let all = containers(pod);
    CHECKS.iter().filter_map(|check| check(pod, &all)).collect()
}

/// The names of the containers matching `pred`.
fn named<'a>(all: &[Container<'a>], pred: impl Fn(&Container<'a>) -> bool) -> Vec<&'a str> {
    all.iter().filter(|c| pred(c)).map(|c| c.name).collect()
}

fn host_namespaces(pod: &Value, _: &[Container<'_>]) -> Option<String> {
    let set: Vec<String> = ["hostNetwork", "hostPID", "hostIPC"]
        .into_iter()
        .filter(|key| pod.get(*key).and_then(Value::as_bool) == Some(true))
        .map(|h| format!("{h}=true"))
        .collect();
    (!set.is_empty()).then(|| format!("host namespaces ({})", set.join(", ")))
}

fn privileged(_: &Value, all: &[Container<'_>]) -> Option<String> {
    let privileged = named(all, |c| {
        security(c, "/privileged").and_then(Value::as_bool) == Some(true)
    });
    (!privileged.is_empty()).then(|| {
        format!(
            "privileged ({})",
            must(&privileged, "not set securityContext.privileged=true")
        )
    })
}

fn host_ports(_: &Value, all: &[Container<'_>]) -> Option<String> {
    let mut host_ports: Vec<String> = Vec::new();
    let mut host_port_containers: Vec<&str> = Vec::new();
    for container in all {
        let ports: Vec<String> = container
            .spec
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("hostPort").and_then(Value::as_i64))
            .filter(|p| *p != 0)
            .map(|p| p.to_string())
            .collect();
        if !ports.is_empty() {
            host_port_containers.push(container.name);
            host_ports.extend(ports);
        }
    }
    if host_ports.is_empty() {
        return None;
    }
    host_ports.sort();
    let (noun, verb) = if host_ports.len() == 1 {
        ("hostPort", "uses")
    } else {
        ("hostPorts", "use")
    };
    let verb = if host_port_containers.len() == 1 { "uses" } else { verb };
    Some(format!(
        "hostPort ({} {verb} {noun} {})",
        name_containers(&host_port_containers),
        host_ports.join(", ")
    ))
}

fn proc_mount(_: &Value, all: &[Container<'_>]) -> Option<String> {
    let unmasked = named(all, |c| {
        security(c, "/procMount")
            .and_then(Value::as_str)
            .is_some_and(|m| m != "Default")
    });
    (!unmasked.is_empty()).then(|| {
        format!(
            "procMount ({})",
            must(&unmasked, "not set securityContext.procMount to \"Unmasked\"")
        )
    })
}

fn privilege_escalation(_: &Value, all: &[Container<'_>]) -> Option<String> {
    let escalation = named(all, |c| {
        security(c, "/allowPrivilegeEscalation").and_then(Value::as_bool) != Some(false)
    });
    (!escalation.is_empty()).then(|| {
        format!(
            "allowPrivilegeEscalation != false ({})",
            must(&escalation, "set securityContext.allowPrivilegeEscalation=false")
        )
    })
}

fn capabilities(_: &Value, all: &[Container<'_>]) -> Option<String> {
    let mut details = Vec::new();
    let no_drop_all = named(all, |c| {
        !security(c, "/capabilities/drop")
            .and_then(Value::as_array)
            .is_some_and(|d| d.iter().any(|v| v == "ALL"))
    });
    if !no_drop_all.is_empty() {
        details.push(must(&no_drop_all, "set securityContext.capabilities.drop=[\"ALL\"]"));
    }
    for container in all {
        let added: Vec<String> = security(container, "/capabilities/add")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|cap| *cap != "NET_BIND_SERVICE")
            .map(|cap| format!("{cap:?}"))
            .collect();
        if !added.is_empty() {
            details.push(format!(
                "{} must not include {} in securityContext.capabilities.add",
                name_containers(&[container.name]),
                added.join(", ")
            ));
        }
    }
    (!details.is_empty()).then(|| format!("unrestricted capabilities ({})", details.join("; ")))
}

fn volume_types(pod: &Value, _: &[Container<'_>]) -> Option<String> {
    const ALLOWED_VOLUMES: &[&str] = &[
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
    ];
    let mut bad: Vec<(String, String)> = Vec::new();
    for volume in pod.get("volumes").and_then(Value::as_array).into_iter().flatten() {
        let name = volume
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if let Some(kind) = volume
            .as_object()
            .into_iter()
            .flat_map(|m| m.keys())
            .find(|k| *k != "name" && !ALLOWED_VOLUMES.contains(&k.as_str()))
        {
            bad.push((name, kind.clone()));
        }
    }
    if bad.is_empty() {
        return None;
    }
    let names: Vec<String> = bad.iter().map(|(n, _)| format!("{n:?}")).collect();
    let kinds: Vec<String> = bad.iter().map(|(_, k)| format!("{k:?}")).collect();
    Some(if bad.len() == 1 {
        format!(
            "restricted volume types (volume {} uses restricted volume type {})",
            names[0], kinds[0]
        )
    } else {
        format!(
            "restricted volume types (volumes {} use restricted volume types {})",
            names.join(", "),
            kinds.join(", ")
        )
    })
}

/// "pod and container \"a\"": who sets a forbidden value.
fn setters(pod: bool, containers: &[&str]) -> String {
    let mut setters = Vec::new();
    if pod {
        setters.push("pod".to_string());
    }
    if !containers.is_empty() {
        setters.push(name_containers(containers));
    }
    setters.join(" and ")
}

fn run_as_non_root(pod: &Value, all: &[Container<'_>]) -> Option<String> {
    let pod_non_root = pod.pointer("/securityContext/runAsNonRoot").and_then(Value::as_bool);
    let explicit_false = named(all, |c| {
        security(c, "/runAsNonRoot").and_then(Value::as_bool) == Some(false)
    });
    if pod_non_root == Some(false) || !explicit_false.is_empty() {
        return Some(format!(
            "runAsNonRoot != true ({} must not set securityContext.runAsNonRoot=false)",
            setters(pod_non_root == Some(false), &explicit_false)
        ));
    }
    if pod_non_root == Some(true) {
        return None;
    }
    let unset = named(all, |c| security(c, "/runAsNonRoot").and_then(Value::as_bool).is_none());
    (!unset.is_empty()).then(|| {
        format!(
            "runAsNonRoot != true (pod or {} must set securityContext.runAsNonRoot=true)",
            name_containers(&unset)
        )
    })
}

fn run_as_user(pod: &Value, all: &[Container<'_>]) -> Option<String> {
    let pod_root = pod.pointer("/securityContext/runAsUser").and_then(Value::as_i64) == Some(0);
    let root = named(all, |c| security(c, "/runAsUser").and_then(Value::as_i64) == Some(0));
    (pod_root || !root.is_empty())
        .then(|| format!("runAsUser=0 ({} must not set runAsUser=0)", setters(pod_root, &root)))
}

fn seccomp_profile(pod: &Value, all: &[Container<'_>]) -> Option<String> {
    let valid = |profile: Option<&Value>| {
        profile
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            .is_some_and(|t| t == "RuntimeDefault" || t == "Localhost")
    };
    let pod_profile = pod.pointer("/securityContext/seccompProfile");
    let mut details = Vec::new();
    if let Some(kind) = pod_profile.and_then(|p| p.get("type")).and_then(Value::as_str)
        && !valid(pod_profile)
    {
        details.push(format!(
            "pod must not set securityContext.seccompProfile.type to {kind:?}"
        ));
    }
    let missing = named(all, |c| security(c, "/seccompProfile").is_none() && !valid(pod_profile));
    if !missing.is_empty() {
        details.push(format!(
            "pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"",
            name_containers(&missing)
        ));
    }
    (!details.is_empty()).then(|| format!("seccompProfile ({})", details.join("; ")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_bare_container_breaks_four_restricted_rules_in_upstream_order() {
        let pod = json!({"containers": [{"name": "nginx", "image": "nginx"}]});
        assert_eq!(
            restricted_violations(&pod, &json!({})).join(", "),
            "allowPrivilegeEscalation != false (container \"nginx\" must set securityContext.allowPrivilegeEscalation=false), \
             unrestricted capabilities (container \"nginx\" must set securityContext.capabilities.drop=[\"ALL\"]), \
             runAsNonRoot != true (pod or container \"nginx\" must set securityContext.runAsNonRoot=true), \
             seccompProfile (pod or container \"nginx\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
        );
    }

    #[test]
    fn a_hardened_pod_passes_and_namespaces_without_the_label_are_not_checked() {
        let pod = json!({
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "manager", "securityContext": {
                "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]
        });
        assert!(restricted_violations(&pod, &json!({})).is_empty());
        let bare = json!({"containers": [{"name": "c"}]});
        assert_eq!(warning(&Default::default(), &bare, &json!({})), None);
        let labels = [(
            "pod-security.kubernetes.io/enforce".to_string(),
            "restricted".to_string(),
        )]
        .into();
        assert!(
            warning(&labels, &bare, &json!({}))
                .is_some_and(|w| w.starts_with("would violate PodSecurity \"restricted:latest\": "))
        );
    }

    #[test]
    fn host_access_and_root_are_named() {
        let pod = json!({"hostNetwork": true, "securityContext": {"runAsUser": 0},
            "containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}],
                "securityContext": {"privileged": true, "allowPrivilegeEscalation": false,
                    "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}, "runAsNonRoot": true,
                    "seccompProfile": {"type": "RuntimeDefault"}}}],
            "volumes": [{"name": "root", "hostPath": {"path": "/"}}]});
        let text = restricted_violations(&pod, &json!({})).join(", ");
        for part in [
            "host namespaces (hostNetwork=true)",
            "privileged (container \"c\" must not set securityContext.privileged=true)",
            "hostPort (container \"c\" uses hostPort 80)",
            "unrestricted capabilities (container \"c\" must not include \"SYS_ADMIN\" in securityContext.capabilities.add)",
            "restricted volume types (volume \"root\" uses restricted volume type \"hostPath\")",
            "runAsUser=0 (pod must not set runAsUser=0)",
        ] {
            assert!(text.contains(part), "{part} missing from {text}");
        }
    }
}
