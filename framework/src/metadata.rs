//! Metadata-only triggers: watching a kind whose changes should reconcile something, without receiving its
//! content — above all Secrets, whose data a controller must not copy into its memory just to learn that a
//! Secret appeared, changed or went away.
//!
//! An `Api<PartialObjectMeta<K>>` makes kube-client 4.2 send kube-apiserver's metadata-only Accept headers
//! (`as=PartialObjectMetadataList` for lists, `as=PartialObjectMetadata` for gets and watch events), so
//! `Controller::watches(metadata::scoped::<Secret>(scope), config, mapper)` lists and watches names, labels,
//! annotations, owner references and resource versions, never `data`. A change of the content still moves the
//! resourceVersion, so it still triggers. `Controller::watches` keeps no cache of its own: each object is
//! mapped to the objects to reconcile and dropped. (`Controller::owns` is metadata-only by itself in kube 4.2;
//! `watches` is not. kube 4.2 deprecates `metadata_watcher` for exactly this form, and it needs none of kube's
//! `unstable-runtime` features.)
//!
//! Metadata still includes annotations: a Secret written by client-side `kubectl apply` carries its content in
//! `kubectl.kubernetes.io/last-applied-configuration`. It passes through the mapper like any annotation and is
//! not kept.

use k8s_openapi::NamespaceResourceScope;
use kube::api::PartialObjectMeta;
use kube::{Api, Client, Resource};

use crate::runner::Scope;

/// A metadata-only API handle for a namespaced kind in the controller's scope (its namespace, or all).
pub fn scoped<K>(scope: &Scope) -> Api<PartialObjectMeta<K>>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>,
{
    scope.api::<PartialObjectMeta<K>>()
}

/// A metadata-only API handle for a namespaced kind in one namespace (e.g. a shared Gateway's).
pub fn namespaced<K>(client: &Client, namespace: &str) -> Api<PartialObjectMeta<K>>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>,
{
    Api::namespaced(client.clone(), namespace)
}
