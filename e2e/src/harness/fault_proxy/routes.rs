//! How a proxy names the requests it counts and matches faults against: Keycloak's by path with placeholders,
//! the Kubernetes API's by verb and resource (as the audit log and RBAC name them).

use hyper::Method;
use hyper::http::request::Parts;

/// Turns a request into the route it is counted and matched under.
pub type RouteOf = fn(&Parts) -> String;

/// Keycloak's routes: the realm after `realms/`, every UUID, and a group path after `group-by-path/`
/// become placeholders (`/admin/realms/{realm}/groups/{id}/children`).
pub fn keycloak_route(request: &Parts) -> String {
    keycloak_path_route(request.uri.path())
}

fn keycloak_path_route(path: &str) -> String {
    let mut route = Vec::new();
    let mut segments = path.split('/');
    let mut previous = "";
    while let Some(segment) = segments.next() {
        let placeholder = if previous == "realms" {
            Some("{realm}")
        } else if previous == "group-by-path" {
            // The rest of the path is the group's path.
            segments.by_ref().for_each(drop);
            Some("{*path}")
        } else if is_uuid(segment) {
            Some("{id}")
        } else {
            None
        };
        route.push(placeholder.unwrap_or(segment).to_string());
        previous = segment;
    }
    route.join("/")
}

fn is_uuid(segment: &str) -> bool {
    let groups: Vec<&str> = segment.split('-').collect();
    groups.len() == 5
        && groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups.iter().all(|g| g.chars().all(|c| c.is_ascii_hexdigit()))
}

/// The Kubernetes API's routes: `{verb} {resource}[.{group}][/{subresource}]`, with ` metadata` appended when
/// the client asked for metadata only (`PartialObjectMetadata`): `watch secrets metadata`,
/// `patch managedrancherprojects.waldur.io/status`, `list configmaps`. Paths outside the resource API
/// (`/version`, `/openapi/v3`) are their own route.
pub fn kube_route(request: &Parts) -> String {
    let path = request.uri.path();
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, rest) = match segments.as_slice() {
        ["api", _version, rest @ ..] => ("", rest),
        ["apis", group, _version, rest @ ..] => (*group, rest),
        _ => return path.to_string(),
    };
    let rest = match rest {
        // A namespace's own subresources (`namespaces/x/status`, `namespaces/x/finalize`) name no resource.
        ["namespaces", _, tail @ ..] if !tail.is_empty() && !matches!(tail, ["status" | "finalize"]) => tail,
        other => other,
    };
    let Some((resource, rest)) = rest.split_first() else {
        // The group's discovery document.
        return path.to_string();
    };
    let named = !rest.is_empty();
    let subresource = rest.get(1..).unwrap_or_default().join("/");
    let watch = request
        .uri
        .query()
        .is_some_and(|query| query.split('&').any(|pair| pair == "watch=true" || pair == "watch=1"));
    let verb = match (&request.method, named) {
        (&Method::GET, false) if watch => "watch",
        (&Method::GET, false) => "list",
        (&Method::GET, true) => "get",
        (&Method::POST, _) => "create",
        (&Method::PUT, _) => "update",
        (&Method::PATCH, _) => "patch",
        (&Method::DELETE, false) => "deletecollection",
        (&Method::DELETE, true) => "delete",
        (other, _) => other.as_str(),
    };
    let mut route = format!("{verb} {resource}");
    if !group.is_empty() {
        route.push('.');
        route.push_str(group);
    }
    if !subresource.is_empty() {
        route.push('/');
        route.push_str(&subresource);
    }
    let metadata_only = request
        .headers
        .get_all(hyper::header::ACCEPT)
        .iter()
        .any(|accept| accept.to_str().is_ok_and(|a| a.contains("as=PartialObjectMetadata")));
    if metadata_only {
        route.push_str(" metadata");
    }
    route
}

/// The `reason` kube-apiserver gives a Status with `status`.
pub(super) fn kube_status_reason(status: hyper::StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        409 => "Conflict",
        410 => "Expired",
        422 => "Invalid",
        429 => "TooManyRequests",
        504 => "Timeout",
        503 => "ServiceUnavailable",
        _ => "InternalError",
    }
}

/// What kube-apiserver streams to a watch that resumes from a resourceVersion etcd has compacted away: one
/// `ERROR` event carrying a 410 `Expired` Status. A proxy rule answering it stands for a compaction the
/// apiserver's watch cache would otherwise hide (it serves recent resumptions from memory).
pub fn kube_watch_expired_event() -> serde_json::Value {
    serde_json::json!({
        "type": "ERROR",
        "object": {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "too old resource version (injected by the test's fault proxy)",
            "reason": "Expired",
            "code": 410,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(method: Method, uri: &str, accept: Option<&str>) -> Parts {
        let mut request = hyper::Request::builder().method(method).uri(uri);
        if let Some(accept) = accept {
            request = request.header(hyper::header::ACCEPT, accept);
        }
        request.body(()).expect("a request").into_parts().0
    }

    #[test]
    fn keycloak_routes_name_realms_ids_and_group_paths_by_placeholder() {
        let route = |path: &str| keycloak_route(&parts(Method::GET, path, None));
        let id = "0b4c6f3e-3c1d-4f52-9a7e-1d2c3b4a5f60";
        assert_eq!(
            route(&format!("/admin/realms/nebari/groups/{id}/children")),
            "/admin/realms/{realm}/groups/{id}/children"
        );
        assert_eq!(
            route("/realms/master/protocol/openid-connect/token"),
            "/realms/{realm}/protocol/openid-connect/token"
        );
        assert_eq!(
            route("/admin/realms/waldur/group-by-path/parent/child"),
            "/admin/realms/{realm}/group-by-path/{*path}"
        );
        assert_eq!(route("/admin/realms/nebari/clients"), "/admin/realms/{realm}/clients");
        assert_eq!(
            route("/admin/realms/a/users/not-an-id"),
            "/admin/realms/{realm}/users/not-an-id"
        );
    }

    #[test]
    fn kube_routes_name_verb_resource_group_subresource_and_form() {
        let route = |method: Method, uri: &str| kube_route(&parts(method, uri, None));
        assert_eq!(route(Method::GET, "/api/v1/namespaces/a/configmaps"), "list configmaps");
        assert_eq!(
            route(Method::GET, "/api/v1/configmaps?watch=true&resourceVersion=5"),
            "watch configmaps"
        );
        assert_eq!(route(Method::GET, "/api/v1/namespaces/a/secrets/s"), "get secrets");
        assert_eq!(route(Method::GET, "/api/v1/namespaces/a"), "get namespaces");
        assert_eq!(
            route(Method::PUT, "/api/v1/namespaces/a/finalize"),
            "update namespaces/finalize"
        );
        assert_eq!(
            route(
                Method::PATCH,
                "/apis/waldur.io/v1alpha1/namespaces/a/managedrancherprojects/p/status"
            ),
            "patch managedrancherprojects.waldur.io/status"
        );
        assert_eq!(
            route(Method::DELETE, "/apis/apps/v1/namespaces/a/deployments"),
            "deletecollection deployments.apps"
        );
        assert_eq!(
            route(Method::POST, "/apis/coordination.k8s.io/v1/namespaces/a/leases"),
            "create leases.coordination.k8s.io"
        );
        assert_eq!(route(Method::GET, "/version"), "/version");
        assert_eq!(
            route(Method::GET, "/apis/waldur.io/v1alpha1"),
            "/apis/waldur.io/v1alpha1"
        );
        let metadata = parts(
            Method::GET,
            "/api/v1/secrets?watch=1",
            Some("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"),
        );
        assert_eq!(kube_route(&metadata), "watch secrets metadata");
    }
}
