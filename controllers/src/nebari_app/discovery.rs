//! `status.serviceDiscovery`: the landing page's resolved view of the app.

use crds::nebari::{NebariApp, ServiceDiscoveryStatus};

/// Computes the descriptor from spec.landingPage, the hostname, TLS and auth; the health the prober recorded is
/// kept while `health_checks` (the operator runs them) and the app's health check is enabled.
pub fn service_discovery(app: &NebariApp, tls: bool, health_checks: bool) -> ServiceDiscoveryStatus {
    let Some(page) = app.spec.landing_page.as_ref().filter(|p| p.enabled) else {
        return ServiceDiscoveryStatus {
            enabled: false,
            ..Default::default()
        };
    };
    let auth_enabled = app.spec.auth.as_ref().is_some_and(|a| a.enabled);
    let scheme = if tls { "https" } else { "http" };
    let url = page
        .external_url
        .clone()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| format!("{scheme}://{}", app.spec.hostname));
    ServiceDiscoveryStatus {
        enabled: true,
        display_name: page.display_name.clone(),
        description: page.description.clone(),
        url: Some(url),
        icon: page.icon.clone(),
        icon_light: page.icon_light.clone(),
        icon_dark: page.icon_dark.clone(),
        category: page.category.clone(),
        priority: Some(page.priority),
        visibility: Some(if auth_enabled { "private" } else { "public" }.to_string()),
        required_groups: if auth_enabled {
            app.spec.auth.as_ref().and_then(|a| a.groups.clone())
        } else {
            None
        },
        health: page
            .health_check
            .as_ref()
            .filter(|check| check.enabled && health_checks)
            .and(app.status.as_ref())
            .and_then(|s| s.service_discovery.as_ref())
            .and_then(|d| d.health.clone()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn app(spec: serde_json::Value) -> NebariApp {
        serde_json::from_value(json!({
            "apiVersion": "reconcilers.nebari.dev/v1", "kind": "NebariApp",
            "metadata": {"name": "web", "namespace": "team"},
            "spec": spec,
        }))
        .expect("valid app")
    }

    #[test]
    fn without_a_landing_page_the_app_is_not_listed() {
        let plain = app(json!({"hostname": "web.example.com", "service": {"name": "web", "port": 80}}));
        assert_eq!(
            service_discovery(&plain, true, false),
            ServiceDiscoveryStatus::default()
        );
    }

    #[test]
    fn a_listed_app_links_to_its_hostname_and_is_private_behind_auth() {
        let listed = app(json!({
            "hostname": "web.example.com", "service": {"name": "web", "port": 80},
            "landingPage": {"enabled": true, "displayName": "Web", "priority": 5},
            "auth": {"enabled": true, "groups": ["admins"]},
        }));
        let status = service_discovery(&listed, false, false);
        assert!(status.enabled);
        assert_eq!(
            status.url.as_deref(),
            Some("http://web.example.com"),
            "the scheme follows TLS"
        );
        assert_eq!(status.visibility.as_deref(), Some("private"));
        assert_eq!(status.required_groups, Some(vec!["admins".to_string()]));
        assert_eq!(status.priority, Some(5));
    }

    #[test]
    fn an_external_url_wins_and_an_app_without_auth_is_public() {
        let public = app(json!({
            "hostname": "web.example.com", "service": {"name": "web", "port": 80},
            "landingPage": {"enabled": true, "displayName": "Web", "externalUrl": "https://docs.example.com"},
        }));
        let status = service_discovery(&public, true, false);
        assert_eq!(status.url.as_deref(), Some("https://docs.example.com"));
        assert_eq!(status.visibility.as_deref(), Some("public"));
        assert_eq!(status.required_groups, None);
    }
}
