//! Impersonation (`Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid`, `Impersonate-Extra-*`), as
//! `kubectl --as`/`--as-group` send it: each part is authorized with verb `impersonate` for the real caller,
//! and the request then runs as the impersonated user.

use std::collections::BTreeMap;

use axum::http::HeaderMap;

use super::super::status::ApiError;
use super::{AUTHENTICATED_GROUP, Access, Attributes, ResourceAttributes, UserInfo, forbidden};

fn header_values<'a>(headers: &'a HeaderMap, name: &str) -> Vec<&'a str> {
    headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).collect()
}

fn impersonate(group: &str, resource: &str, subresource: &str, namespace: &str, name: &str) -> Attributes {
    Attributes::Resource(ResourceAttributes {
        verb: "impersonate".into(),
        group: group.into(),
        resource: resource.into(),
        subresource: subresource.into(),
        namespace: namespace.into(),
        name: name.into(),
    })
}

/// The user a request acts as: the caller itself, or whom it may impersonate; 403 when it may not, 400 when
/// groups, extras or a uid come without a user.
pub fn acting_user(caller: &Access, headers: &HeaderMap) -> Result<Option<UserInfo>, ApiError> {
    let user = header_values(headers, "impersonate-user")
        .first()
        .map(|s| s.to_string());
    let groups: Vec<String> = header_values(headers, "impersonate-group")
        .into_iter()
        .map(str::to_string)
        .collect();
    let uid = header_values(headers, "impersonate-uid").first().map(|s| s.to_string());
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, value) in headers {
        if let Some(key) = name.as_str().strip_prefix("impersonate-extra-")
            && let Ok(value) = value.to_str()
        {
            extra.entry(key.to_string()).or_default().push(value.to_string());
        }
    }
    let Some(user) = user else {
        if groups.is_empty() && uid.is_none() && extra.is_empty() {
            return Ok(None);
        }
        return Err(ApiError::bad_request(
            "requested impersonation of groups, extras or a uid without impersonating a user",
        ));
    };
    let mut checks = Vec::new();
    let service_account = user
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'));
    match service_account {
        Some((namespace, name)) => checks.push(impersonate("", "serviceaccounts", "", namespace, name)),
        None => checks.push(impersonate("", "users", "", "", &user)),
    }
    checks.extend(groups.iter().map(|g| impersonate("", "groups", "", "", g)));
    for (key, values) in &extra {
        checks.extend(
            values
                .iter()
                .map(|v| impersonate("authentication.k8s.io", "userextras", key, "", v)),
        );
    }
    if let Some(uid) = &uid {
        checks.push(impersonate("authentication.k8s.io", "uids", "", "", uid));
    }
    for check in &checks {
        let decision = caller.authorize(check);
        if !decision.allowed {
            return Err(forbidden(&caller.user, check, &decision.reason));
        }
    }
    let mut impersonated_groups = groups;
    if impersonated_groups.is_empty()
        && let Some((namespace, _)) = service_account
    {
        impersonated_groups = vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{namespace}"),
        ];
    }
    if user != "system:anonymous"
        && !impersonated_groups
            .iter()
            .any(|g| g == AUTHENTICATED_GROUP || g == "system:unauthenticated")
    {
        impersonated_groups.push(AUTHENTICATED_GROUP.into());
    }
    Ok(Some(UserInfo {
        name: user,
        uid: uid.unwrap_or_default(),
        groups: impersonated_groups,
        extra,
    }))
}
