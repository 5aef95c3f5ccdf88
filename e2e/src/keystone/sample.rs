//! What keystone-operator and an OpenStack deployment would have set up around a KeystoneApplicationCredential:
//! a KeystoneAPI whose status points at a Keystone, the service user in Keystone, and the password Secret.
//! The sandbox uses [`prepare_for_sample`] so `manifests/samples`' `ac-barbican` becomes Ready; tests use the
//! pieces.

use std::collections::BTreeMap;
use std::time::Duration;

use crds::keystone::{KeystoneAPI, keystone_api_fixture_crd};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::json;

use super::FixtureError;
use super::admin::KeystoneAdmin;
use super::server::KeystoneServer;

const FIELD_MANAGER: &str = "e2e-keystone-fixture";

/// The sample's names: `manifests/samples/keystone_v1beta1_keystoneapplicationcredential.yaml` (the seed's
/// `ac-barbican`).
pub mod names {
    /// Namespace of the sample.
    pub const NAMESPACE: &str = "openstack";
    /// The KeystoneAPI created for it.
    pub const KEYSTONE_API: &str = "keystone";
    /// The service user.
    pub const USER: &str = "barbican";
    /// The password Secret.
    pub const PASSWORD_SECRET: &str = "osp-secret";
    /// Its key.
    pub const PASSWORD_KEY: &str = "BarbicanPassword";
    /// The project the user's tokens are scoped to.
    pub const PROJECT: &str = "service";
    /// The role the sample asks for.
    pub const ROLE: &str = "service";
}

/// Password given to the sample's service user (sandbox only).
pub const SAMPLE_PASSWORD: &str = "barbican-sandbox-password";

fn kube_error(what: &str) -> impl FnOnce(kube::Error) -> FixtureError + '_ {
    move |source| FixtureError::Kube {
        what: what.to_string(),
        source: Box::new(source),
    }
}

/// Installs the KeystoneAPI fixture CRD (keystone-operator's kind, minimal schema) and waits until it is served.
pub async fn install_keystone_api_crd(client: &Client) -> Result<(), FixtureError> {
    let crd = keystone_api_fixture_crd();
    let name = crd.metadata.name.clone().unwrap_or_default();
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    api.patch(&name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&crd))
        .await
        .map_err(kube_error("installing the KeystoneAPI CRD"))?;
    for _ in 0..200 {
        let current = api
            .get(&name)
            .await
            .map_err(kube_error("reading the KeystoneAPI CRD"))?;
        let established = current
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True");
        if established {
            return Ok(());
        }
        // Poll interval of a bounded wait (200 × 50 ms).
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(FixtureError::NotReady(
        "the KeystoneAPI CRD was not Established within 10 s".into(),
    ))
}

/// Creates (or updates) KeystoneAPI `name` in `namespace` and sets the status keystone-operator would publish:
/// `apiEndpoints.internal` and `.public` = `url`, and a `Ready` condition.
pub async fn publish_keystone_api(
    client: &Client,
    namespace: &str,
    name: &str,
    url: &str,
    ready: bool,
    message: &str,
) -> Result<(), FixtureError> {
    let api: Api<KeystoneAPI> = Api::namespaced(client.clone(), namespace);
    if api
        .get_opt(name)
        .await
        .map_err(kube_error("reading the KeystoneAPI"))?
        .is_none()
    {
        let object = KeystoneAPI::new(name, Default::default());
        api.create(&PostParams::default(), &object)
            .await
            .map_err(kube_error("creating the KeystoneAPI"))?;
    }
    let status = json!({"status": {
        "apiEndpoints": {"internal": url, "public": url},
        "conditions": [{
            "type": "Ready",
            "status": if ready { "True" } else { "False" },
            "reason": if ready { "Ready" } else { "Deploying" },
            "severity": if ready { "" } else { "Info" },
            "message": message,
            "lastTransitionTime": jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        }],
    }});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .map_err(kube_error("publishing the KeystoneAPI status"))?;
    Ok(())
}

/// Creates (or replaces) Secret `name` with one key, the way a deployment stores service passwords.
pub async fn write_password_secret(
    client: &Client,
    namespace: &str,
    name: &str,
    key: &str,
    password: &str,
) -> Result<(), FixtureError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(
            key.to_string(),
            ByteString(password.as_bytes().to_vec()),
        )])),
        ..Secret::default()
    };
    let mut body = serde_json::to_value(&secret).map_err(|e| FixtureError::NotReady(e.to_string()))?;
    body["apiVersion"] = json!("v1");
    body["kind"] = json!("Secret");
    api.patch(name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&body))
        .await
        .map_err(kube_error("writing the password Secret"))?;
    Ok(())
}

/// Prepares Keystone and the cluster for the `ac-barbican` sample: the `service` project, user `barbican` with
/// role `service` in it, namespace `openstack` with Secret `osp-secret` (`BarbicanPassword`), the KeystoneAPI
/// CRD and a Ready KeystoneAPI `keystone` whose endpoints point at `server`.
pub async fn prepare_for_sample(server: &KeystoneServer, client: &Client) -> Result<(), FixtureError> {
    let admin = KeystoneAdmin::login(server).await?;
    match admin.find_user(names::USER).await? {
        Some(id) => admin.set_password(&id, SAMPLE_PASSWORD).await?,
        None => {
            admin
                .create_user(names::USER, SAMPLE_PASSWORD, names::PROJECT, &[names::ROLE])
                .await?;
        }
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces
        .get_opt(names::NAMESPACE)
        .await
        .map_err(kube_error("reading the namespace"))?
        .is_none()
    {
        let mut namespace = Namespace::default();
        namespace.metadata.name = Some(names::NAMESPACE.to_string());
        namespaces
            .create(&PostParams::default(), &namespace)
            .await
            .map_err(kube_error("creating the namespace"))?;
    }
    write_password_secret(
        client,
        names::NAMESPACE,
        names::PASSWORD_SECRET,
        names::PASSWORD_KEY,
        SAMPLE_PASSWORD,
    )
    .await?;
    install_keystone_api_crd(client).await?;
    publish_keystone_api(
        client,
        names::NAMESPACE,
        names::KEYSTONE_API,
        server.url(),
        true,
        "Setup complete",
    )
    .await?;
    tracing::info!(
        namespace = names::NAMESPACE,
        keystone = server.url(),
        "prepared Keystone for the ac-barbican sample"
    );
    Ok(())
}
