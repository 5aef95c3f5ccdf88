//! Where Keystone is: the internal endpoint of the namespace's KeystoneAPI when that kind is installed, else the
//! manager's configured URL.

use std::sync::Arc;

use crds::keystone::KeystoneAPI;
use framework::error::KubeError;
use framework::sanitize;
use framework::trust::{BundleKind, BundleRef, TrustSettings};
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};

use super::error::AcError;
use crate::keystone::Endpoint;

/// The key of keystone-operator's CA bundle Secrets (`spec.tls.caBundleSecretName`).
pub const CA_BUNDLE_KEY: &str = "tls-ca-bundle.pem";

/// The endpoint type read from `status.apiEndpoints`, and the one used when it is absent.
const PREFERRED_ENDPOINT: &str = "internal";
const FALLBACK_ENDPOINT: &str = "public";

/// Where the endpoint came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A KeystoneAPI object: its name and which endpoint type was used.
    KeystoneApi {
        /// The KeystoneAPI's name.
        name: String,
        /// `internal` or `public`.
        endpoint_type: &'static str,
    },
    /// The manager's `--keystone-url` (the KeystoneAPI kind is not installed).
    Configured,
}

/// The Keystone to talk to for one namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The base URL.
    pub endpoint: Endpoint,
    /// Where it came from.
    pub source: Source,
}

impl Resolved {
    /// A sentence for the `KeystoneAPIReady` condition.
    pub fn describe(&self) -> String {
        match &self.source {
            Source::KeystoneApi { name, endpoint_type } => {
                format!(
                    "using the {endpoint_type} endpoint {} of KeystoneAPI {name}",
                    self.endpoint
                )
            }
            Source::Configured => format!("using the configured Keystone endpoint {}", self.endpoint),
        }
    }
}

/// Finds the Keystone for `namespace`: from `seen` (the namespace's KeystoneAPIs as the controller's watch has
/// them) when the watch has listed, else by one list request. A 404 for the list means the KeystoneAPI kind is
/// not served, and the configured fallback is used.
pub async fn resolve(
    client: &Client,
    namespace: &str,
    configured: Option<&Endpoint>,
    seen: Option<Vec<Arc<KeystoneAPI>>>,
) -> Result<Resolved, AcError> {
    if let Some(seen) = seen {
        return select(namespace, seen.iter().map(Arc::as_ref));
    }
    let api: Api<KeystoneAPI> = Api::namespaced(client.clone(), namespace);
    match api.list(&ListParams::default()).await {
        Ok(list) => select(namespace, &list.items),
        Err(kube::Error::Api(status)) if status.code == 404 => match configured {
            Some(endpoint) => Ok(Resolved {
                endpoint: endpoint.clone(),
                source: Source::Configured,
            }),
            None => Err(AcError::EndpointNotConfigured),
        },
        Err(source) => Err(AcError::from(KubeError::new(
            format!("listing KeystoneAPIs in {namespace}"),
            source,
        ))),
    }
}

/// Picks the namespace's KeystoneAPI (the first by name, as there is one per namespace in practice) and its
/// endpoint.
pub fn select<'a>(namespace: &str, apis: impl IntoIterator<Item = &'a KeystoneAPI>) -> Result<Resolved, AcError> {
    let mut live: Vec<&KeystoneAPI> = apis
        .into_iter()
        .filter(|a| a.metadata.deletion_timestamp.is_none())
        .collect();
    live.sort_by_key(|a| a.name_any());
    let Some(api) = live.first() else {
        return Err(AcError::KeystoneApiNotFound {
            namespace: namespace.to_string(),
        });
    };
    let name = api.name_any();
    if !api.is_ready() {
        let detail = api
            .ready_condition()
            .and_then(|c| c.message.as_deref())
            .filter(|m| !m.is_empty())
            .map(sanitize::sanitize);
        return Err(AcError::KeystoneApiNotReady { name, detail });
    }
    let (endpoint_type, url) = match (api.endpoint(PREFERRED_ENDPOINT), api.endpoint(FALLBACK_ENDPOINT)) {
        (Some(url), _) => (PREFERRED_ENDPOINT, url),
        (None, Some(url)) => (FALLBACK_ENDPOINT, url),
        (None, None) => return Err(AcError::KeystoneApiNoEndpoint { name }),
    };
    let mut endpoint = Endpoint::parse(url).map_err(AcError::InvalidEndpoint)?;
    if let (Some(secret), true) = (api.ca_bundle_secret(), endpoint.as_str().starts_with("https://")) {
        endpoint = endpoint.with_trust(TrustSettings {
            bundle: Some(BundleRef {
                kind: BundleKind::Secret,
                namespace: namespace.to_string(),
                name: secret.to_string(),
                key: CA_BUNDLE_KEY.to_string(),
            }),
            ..TrustSettings::default()
        });
    }
    Ok(Resolved {
        endpoint,
        source: Source::KeystoneApi { name, endpoint_type },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn api(name: &str, ready: &str, endpoints: serde_json::Value) -> KeystoneAPI {
        serde_json::from_value(json!({
            "apiVersion": "keystone.openstack.org/v1beta1", "kind": "KeystoneAPI",
            "metadata": {"name": name, "namespace": "openstack"},
            "spec": {},
            "status": {"apiEndpoints": endpoints,
                       "conditions": [{"type": "Ready", "status": ready, "message": "Setup started",
                                       "lastTransitionTime": "2025-01-01T00:00:00Z"}]}
        }))
        .expect("KeystoneAPI")
    }

    #[test]
    fn the_internal_endpoint_of_a_ready_keystone_api_is_used() {
        let apis = [api(
            "keystone",
            "True",
            json!({"internal": "http://keystone-internal.openstack.svc:5000", "public": "https://keystone.example.com"}),
        )];
        let resolved = select("openstack", &apis).expect("resolved");
        assert_eq!(
            resolved.endpoint.as_str(),
            "http://keystone-internal.openstack.svc:5000"
        );
        assert_eq!(
            resolved.source,
            Source::KeystoneApi {
                name: "keystone".into(),
                endpoint_type: "internal"
            }
        );
    }

    #[test]
    fn the_public_endpoint_is_the_fallback() {
        let apis = [api(
            "keystone",
            "True",
            json!({"public": "http://keystone-public:5000/v3"}),
        )];
        let resolved = select("openstack", &apis).expect("resolved");
        assert_eq!(resolved.endpoint.as_str(), "http://keystone-public:5000");
    }

    #[test]
    fn missing_not_ready_and_endpointless_keystone_apis_block_with_reasons() {
        assert!(matches!(
            select("openstack", &[] as &[KeystoneAPI]),
            Err(AcError::KeystoneApiNotFound { .. })
        ));
        let not_ready = select("openstack", &[api("keystone", "False", json!({}))]).expect_err("not ready");
        assert_eq!(
            not_ready.to_string(),
            "KeystoneAPI keystone is not ready yet: Setup started"
        );
        assert!(matches!(
            select("openstack", &[api("keystone", "True", json!({}))]),
            Err(AcError::KeystoneApiNoEndpoint { .. })
        ));
    }
}
