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

/// Lists a kind across **every** namespace when the manager may (a cluster-wide install, also with
/// `--watch-namespace`), else across the watched namespaces (a namespaced install, Roles only). For reads that
/// count what all objects of a kind want, whichever of them this manager reconciles. The answer to "may it?"
/// is asked once (SelfSubjectAccessReview), so a namespaced install is never answered Forbidden.
#[derive(Debug, Default)]
pub struct WidestList {
    cluster_wide: tokio::sync::OnceCell<bool>,
}

impl WidestList {
    /// The objects, and whether they come from every namespace.
    pub async fn list<K>(
        &self,
        client: &Client,
        namespaces: &WatchedNamespaces,
        params: &ListParams,
    ) -> Result<(Vec<K>, bool), kube::Error>
    where
        K: Resource<DynamicType = (), Scope = NamespaceResourceScope> + Clone + DeserializeOwned + std::fmt::Debug,
    {
        let cluster_wide = namespaces.is_all()
            || *self
                .cluster_wide
                .get_or_try_init(|| async {
                    let allowed =
                        crate::access::may_cluster_wide(client, "list", &K::group(&()), &K::plural(&())).await?;
                    if !allowed {
                        tracing::warn!(
                            kind = %K::kind(&()),
                            "the manager may not list this kind cluster-wide (a namespaced install): reads spanning \
                             every object of it cover the watched namespaces only"
                        );
                    }
                    Ok::<bool, kube::Error>(allowed)
                })
                .await?;
        let scope = if cluster_wide {
            WatchedNamespaces::default()
        } else {
            namespaces.clone()
        };
        Ok((scope.list(client, params).await?, cluster_wide))
    }
}
