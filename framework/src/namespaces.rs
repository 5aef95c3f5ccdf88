//! The namespaces the manager watches (`--watch-namespace`), for reads that span every object a controller
//! is responsible for (reference counts, peers, inventories) rather than one namespace.
//!
//! A namespaced install holds no cluster-wide permission, so such a read must list each watched namespace
//! instead of the whole cluster.

use std::sync::Arc;

use k8s_openapi::NamespaceResourceScope;
use kube::api::ListParams;
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

/// The watched namespaces; empty means every namespace.
#[derive(Clone, Debug, Default)]
pub struct WatchedNamespaces(Arc<Vec<String>>);

impl WatchedNamespaces {
    /// From `--watch-namespace` (empty: all).
    pub fn new(namespaces: Vec<String>) -> Self {
        WatchedNamespaces(Arc::new(namespaces))
    }

    /// Whether the whole cluster is watched.
    pub fn is_all(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether objects in `namespace` are watched.
    pub fn contains(&self, namespace: &str) -> bool {
        self.is_all() || self.0.iter().any(|n| n == namespace)
    }

    /// The namespaces, or `None` for all.
    pub fn names(&self) -> Option<&[String]> {
        if self.is_all() { None } else { Some(&self.0) }
    }

    /// Lists `K` across the watched namespaces (one cluster-wide list, or one list per namespace).
    pub async fn list<K>(&self, client: &Client, params: &ListParams) -> Result<Vec<K>, kube::Error>
    where
        K: Resource<DynamicType = (), Scope = NamespaceResourceScope> + Clone + DeserializeOwned + std::fmt::Debug,
    {
        let Some(names) = self.names() else {
            return Ok(Api::<K>::all(client.clone()).list(params).await?.items);
        };
        let mut items = Vec::new();
        for namespace in names {
            items.extend(
                Api::<K>::namespaced(client.clone(), namespace)
                    .list(params)
                    .await?
                    .items,
            );
        }
        Ok(items)
    }
}
