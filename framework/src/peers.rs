//! Every object of a controller's own kind, across namespaces, for decisions one object cannot make alone: who
//! claimed a hostname first, which objects share a Keycloak group.
//!
//! Reconciles read the controller's cache when it covers every namespace, and list the objects otherwise
//! (`--watch-namespace`: the caches cover the watched namespaces only): cluster-wide when the manager may, over
//! the watched namespaces when it may not (a namespaced install, see [`WidestList`]). With a [`KeyIndex`] fed by
//! a cluster-wide watch, [`Peers::sharing`] answers "the objects filed under this key" without scanning them all.

use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use k8s_openapi::NamespaceResourceScope;
use kube::Resource;
use kube::api::ListParams;
use kube::runtime::reflector::Store;
use serde::de::DeserializeOwned;

use crate::error::{KubeError, kube_error};
use crate::index::KeyIndex;
use crate::namespaces::{WatchedNamespaces, WidestList};

/// The cache of every namespace's objects of kind `K`, when the controller watches them all.
pub struct Peers<K: Resource<DynamicType = ()> + 'static> {
    cluster_wide: Mutex<Option<Store<K>>>,
    widest: WidestList,
    index: Option<KeyIndex<K>>,
}

impl<K: Resource<DynamicType = ()> + 'static> Default for Peers<K> {
    fn default() -> Self {
        Self {
            cluster_wide: Mutex::new(None),
            widest: WidestList::default(),
            index: None,
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
    /// Peers that also answer [`Self::sharing`] from `index` (which the controller feeds from a cluster-wide
    /// watch of `K`).
    pub fn with_index(index: KeyIndex<K>) -> Self {
        Self {
            index: Some(index),
            ..Self::default()
        }
    }

    /// The index [`Self::sharing`] reads, to feed it.
    pub fn index(&self) -> Option<&KeyIndex<K>> {
        self.index.as_ref()
    }

    /// The objects filed under `key` in the index: looked up when the cache covers the whole cluster and the
    /// index has listed, else every object filtered by the index's keys (all of them without an index).
    pub async fn sharing(
        &self,
        key: &str,
        client: &kube::Client,
        namespaces: &WatchedNamespaces,
    ) -> Result<Vec<Arc<K>>, KubeError> {
        let store = self.cluster_wide.lock().ok().and_then(|store| store.clone());
        if let (Some(store), Some(index)) = (&store, &self.index)
            && let Some(refs) = index.get(key)
        {
            return Ok(refs.iter().filter_map(|r| store.get(r)).collect());
        }
        let all = self.all(client, namespaces).await?;
        Ok(match &self.index {
            Some(index) => all
                .into_iter()
                .filter(|obj| index.keys_of(obj).iter().any(|k| k == key))
                .collect(),
            None => all,
        })
    }

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
