//! `status.serviceDiscovery`: the landing page's resolved view of the app.

use crds::nebari::{NebariApp, ServiceDiscoveryStatus};

/// Computes the descriptor from spec.landingPage, the hostname, TLS and auth.
pub fn service_discovery(app: &NebariApp, tls: bool) -> ServiceDiscoveryStatus {
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
    }
}
