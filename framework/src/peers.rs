//! Every object of a controller's own kind, across namespaces, for decisions one object cannot make alone: who
//! claimed a hostname first, which objects share a Keycloak group.
//!
//! Reconciles read the controller's cache when it covers every namespace, and list the objects otherwise
//! (`--watch-namespace`: the caches cover the watched namespaces only): cluster-wide when the manager may, over
//! the watched namespaces when it may not (a namespaced install, see [`WidestList`]).

use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use k8s_openapi::NamespaceResourceScope;
use kube::Resource;
use kube::api::ListParams;
use kube::runtime::reflector::Store;
use serde::de::DeserializeOwned;

use crate::error::{KubeError, kube_error};
use crate::namespaces::{WatchedNamespaces, WidestList};

/// The cache of every namespace's objects of kind `K`, when the controller watches them all.
pub struct Peers<K: Resource<DynamicType = ()> + 'static> {
    cluster_wide: Mutex<Option<Store<K>>>,
    widest: WidestList,
}

impl<K: Resource<DynamicType = ()> + 'static> Default for Peers<K> {
    fn default() -> Self {
        Self {
            cluster_wide: Mutex::new(None),
            widest: WidestList::default(),
        }
    }
}

impl<K> Peers<K>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static,
{
    /// Registers the cache of one watch: kept when it covers every namespace (`namespace` is `None`); the cache of
    /// one namespace is not enough to decide what every object claims.
    pub fn register(&self, store: Store<K>, namespace: Option<&str>) {
        if namespace.is_none()
            && let Ok(mut cluster_wide) = self.cluster_wide.lock()
        {
            *cluster_wide = Some(store);
        }
    }

    /// Every object: from the cache when it covers the whole cluster, else listed.
    pub async fn all(&self, client: &kube::Client, namespaces: &WatchedNamespaces) -> Result<Vec<Arc<K>>, KubeError> {
        let cached = self
            .cluster_wide
            .lock()
            .ok()
            .and_then(|store| store.as_ref().map(Store::state));
        match cached {
            Some(all) => Ok(all),
            None => self.list_afresh(client, namespaces).await,
        }
    }

    /// Every object, listed now: cluster-wide when the manager may, else over the watched namespaces.
    pub async fn list_afresh(
        &self,
        client: &kube::Client,
        namespaces: &WatchedNamespaces,
    ) -> Result<Vec<Arc<K>>, KubeError> {
        let (listed, _) = self
            .widest
            .list::<K>(client, namespaces, &ListParams::default())
            .await
            .map_err(kube_error(format!("listing {}s", K::kind(&()))))?;
        Ok(listed.into_iter().map(Arc::new).collect())
    }
}
