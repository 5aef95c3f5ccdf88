//! What happens when a KeystoneApplicationCredential is deleted.
//!
//! As the seed document says: the credentials stay valid in Keystone until they expire (running services and
//! data-plane nodes keep authenticating), the protection finalizer of every credential Secret is removed, and the
//! garbage collector deletes the Secrets through their ownerReference. Nothing here talks to Keystone, so
//! deletion completes when Keystone or the password Secret is gone.

use crds::keystone::{KeystoneApplicationCredential, service_name};
use framework::error::kube_error;
use framework::finalizer;
use framework::runner::Context;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::{Api, ListParams, PartialObjectMeta};

use super::error::AcError;
use super::reconcile::PROTECTION;
use super::secret;

/// Removes the protection finalizer from every credential Secret of `ac` so garbage collection can delete them.
pub async fn release_secrets(ac: &KeystoneApplicationCredential, ctx: &Context) -> Result<(), AcError> {
    let namespace = ac.namespace().unwrap_or_default();
    let service = service_name(&ac.name_any()).to_string();
    let api: Api<PartialObjectMeta<Secret>> = Api::namespaced(ctx.client.clone(), &namespace);
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &namespace);
    let list = secrets
        .list_metadata(&ListParams::default().labels(&secret::selector(&service)))
        .await
        .map_err(kube_error("listing the credential's Secrets"))?;
    let uid = ac.uid().unwrap_or_default();
    let mut released = 0;
    for object in list.items.iter().filter(|s| secret::is_owned_by(&s.metadata, &uid)) {
        let name = object.name_any();
        if finalizer::remove(&api, object, &PROTECTION, &ctx.field_manager)
            .await
            .map_err(kube_error(format!("releasing Secret {name}")))?
        {
            released += 1;
        }
    }
    tracing::info!(
        released,
        "released the credential Secrets; their credentials stay valid in Keystone until they expire"
    );
    Ok(())
}
