//! Applying and pruning the objects a reconcile produces.
//!
//! A controller declares once, in [`ChildKinds`], every kind of child it makes and where each lives. A
//! [`ChildSet`] collects the children of one reconcile: each is applied by server-side apply under the
//! controller's field manager (with `force`, since these fields are ours), labelled with the standard labels,
//! and owned by the parent through a controller ownerReference when they share a namespace. After applying,
//! [`ChildSet::prune`] deletes, for every declared kind, the labelled children this pass did not apply, so
//! turning a feature off removes what it made. Applying a kind that was not declared fails, so no kind can be
//! left out of pruning (a forgotten kind would leave, say, an unauthenticated route behind). Children in other
//! namespaces (cluster-shared gateways) are found by label and an owner annotation, since ownerReferences cannot
//! cross namespaces. Children are namespaced kinds.
//!
//! An apply is skipped when the live child already carries the same desired content (recorded as a hash
//! annotation) and still matches it, so a no-op reconcile writes nothing.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Debug;

use futures::future::BoxFuture;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::child_cache::{CachedChild, ChildCache, WrittenChild};
use crate::names;

/// `app.kubernetes.io/managed-by`: which operator made the object.
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// `app.kubernetes.io/name`: what kind of thing the object is part of.
pub const LABEL_NAME: &str = "app.kubernetes.io/name";
/// `app.kubernetes.io/instance`: which parent object it belongs to.
pub const LABEL_INSTANCE: &str = "app.kubernetes.io/instance";

/// Where children of one kind live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// In the owner's namespace (owned through an ownerReference).
    OwnerNamespace,
    /// In this namespace (owned through the owner annotation), e.g. a shared Gateway's.
    Namespace(String),
}

type PruneFn = for<'a> fn(&'a mut ChildSet, Option<String>) -> BoxFuture<'a, Result<Vec<String>, ChildError>>;

#[derive(Clone)]
struct ChildKind {
    api_version: String,
    kind: String,
    placement: Placement,
    prune: PruneFn,
}

/// Every kind of child a controller makes, with where each lives.
#[derive(Clone, Default)]
pub struct ChildKinds {
    kinds: Vec<ChildKind>,
}

impl Debug for ChildKinds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.kinds.iter().map(|k| (&k.kind, &k.placement)))
            .finish()
    }
}

impl ChildKinds {
    /// No kinds yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares children of kind `T`, placed as `placement`.
    pub fn with<T>(mut self, placement: Placement) -> Self
    where
        T: Resource<DynamicType = (), Scope = NamespaceResourceScope> + Clone + DeserializeOwned + Debug + Send,
    {
        fn prune_kind<T>(
            set: &mut ChildSet,
            namespace: Option<String>,
        ) -> BoxFuture<'_, Result<Vec<String>, ChildError>>
        where
            T: Resource<DynamicType = (), Scope = NamespaceResourceScope> + Clone + DeserializeOwned + Debug + Send,
        {
            Box::pin(async move { set.prune_kind::<T>(namespace.as_deref()).await })
        }
        self.kinds.push(ChildKind {
            api_version: T::api_version(&()).to_string(),
            kind: T::kind(&()).to_string(),
            placement,
            prune: prune_kind::<T>,
        });
        self
    }

    fn declares(&self, api_version: &str, kind: &str, namespace: Option<&str>, owner_namespace: Option<&str>) -> bool {
        self.kinds.iter().any(|k| {
            k.api_version == api_version
                && k.kind == kind
                && match &k.placement {
                    Placement::OwnerNamespace => namespace == owner_namespace,
                    Placement::Namespace(ns) => namespace == Some(ns.as_str()),
                }
        })
    }
}

/// Where a [`ChildSet`] writes its bookkeeping annotations, who it says it is, and which kinds it makes.
#[derive(Clone, Debug)]
pub struct ChildConfig {
    /// The SSA field manager of this controller (stable across releases).
    pub field_manager: String,
    /// The value of `app.kubernetes.io/managed-by`.
    pub managed_by: String,
    /// Annotation naming the owner of a child (`<group>/<kind>/<namespace>/<name>`), e.g. `example.com/owner`.
    pub owner_annotation: String,
    /// Annotation holding the hash of the last applied content, e.g. `example.com/applied-hash`.
    pub hash_annotation: String,
    /// Every kind of child, with where each lives: what [`ChildSet::prune`] covers.
    pub kinds: ChildKinds,
    /// The children the controller's watches saw, when they record them: pruning then lists only what the
    /// cache cannot answer yet.
    pub cache: Option<ChildCache>,
}

/// Errors while applying or pruning children.
#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    /// The Kubernetes API refused or failed the request.
    #[error("{verb} {kind} {name}: {}", crate::error::KubeErrorDisplay(source))]
    Api {
        /// apply, delete or list.
        verb: &'static str,
        /// The child's kind.
        kind: String,
        /// The child's name (or `*` for lists).
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// The child's kind (or its namespace) was not declared in [`ChildKinds`] (a bug in the controller).
    #[error("{kind} in namespace {namespace} is not a declared child kind, so it would never be pruned")]
    Undeclared {
        /// The child's kind.
        kind: String,
        /// The child's namespace.
        namespace: String,
    },
    /// An object of the child's name exists and is not this owner's: its owner annotation names another owner,
    /// or it has none and was not made by this operator (nor the operator it replaces, which shares its
    /// `managed-by` label). Applying would take it over (two owners whose names join to the same child name, or
    /// a platform object in a shared namespace), so it is left alone. The message does not say who the other
    /// owner is; that may be another tenant.
    #[error("{kind} {name} already exists and belongs to another owner; it was left unchanged")]
    OwnedByAnother {
        /// The child's kind.
        kind: String,
        /// The child's name.
        name: String,
    },
    /// The child could not be serialized (a bug in a builder).
    #[error("cannot serialize {kind} {name}: {source}")]
    Serialize {
        /// The child's kind.
        kind: String,
        /// The child's name.
        name: String,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
}

impl ChildError {
    /// The underlying Kubernetes error, if any.
    pub fn kube_error(&self) -> Option<&kube::Error> {
        match self {
            ChildError::Api { source, .. } => Some(source),
            ChildError::Undeclared { .. } | ChildError::OwnedByAnother { .. } | ChildError::Serialize { .. } => None,
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct ChildKey {
    api_version: String,
    kind: String,
    namespace: Option<String>,
    name: String,
}

/// What a child's controller reads of it to report on it: its place, generation and (kept part of its) status.
#[derive(Clone, Debug, PartialEq)]
pub struct Observed {
    /// The child's name.
    pub name: String,
    /// The child's namespace.
    pub namespace: Option<String>,
    /// Its `metadata.generation` (what status conditions' `observedGeneration` is compared with).
    pub generation: Option<i64>,
    /// Its status, as far as its kind keeps it.
    pub status: Value,
}

impl Observed {
    /// The child as a JSON object with just `metadata.name`, `.namespace`, `.generation` and `status`.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "metadata": {"name": self.name, "namespace": self.namespace, "generation": self.generation},
            "status": self.status,
        })
    }
}

/// A child decorated for applying, with what deciding whether to apply it needs.
struct Prepared<T> {
    child: T,
    desired: Value,
    hash: String,
    kind: String,
    name: String,
    namespace: Option<String>,
}

/// The children of one parent object, applied during one reconcile.
pub struct ChildSet {
    client: Client,
    config: ChildConfig,
    owner_ref: OwnerReference,
    owner_namespace: Option<String>,
    owner_id: String,
    labels: BTreeMap<String, String>,
    applied: HashSet<ChildKey>,
    writes: usize,
}

/// An API handle for `T` in `namespace`, or across all namespaces.
fn api_in<T: Resource<DynamicType = (), Scope = NamespaceResourceScope>>(
    client: &Client,
    namespace: Option<&str>,
) -> Api<T> {
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// How a child names its owner in the owner annotation: `<group>/<kind>/<namespace>/<name>`. Builders that
/// mark other objects as the owner's (the Secret a Certificate's issuer writes, say) use the same value.
pub fn owner_id<K: Resource<DynamicType = ()>>(owner: &K) -> String {
    format!(
        "{}/{}/{}/{}",
        K::group(&()),
        K::kind(&()),
        owner.namespace().as_deref().unwrap_or(""),
        owner.name_any()
    )
}

impl ChildSet {
    /// Starts a set for `owner`, labelling children `name=<component>` and `instance=<owner name>`.
    pub fn new<K>(client: Client, config: ChildConfig, owner: &K, component: &str) -> Option<Self>
    where
        K: Resource<DynamicType = ()>,
    {
        let owner_ref = owner.controller_owner_ref(&())?;
        let owner_namespace = owner.namespace();
        let owner_id = owner_id(owner);
        let labels = BTreeMap::from([
            (LABEL_MANAGED_BY.to_string(), names::label_value(&config.managed_by)),
            (LABEL_NAME.to_string(), names::label_value(component)),
            (LABEL_INSTANCE.to_string(), names::label_value(&owner.name_any())),
        ]);
        Some(Self {
            client,
            config,
            owner_ref,
            owner_namespace,
            owner_id,
            labels,
            applied: HashSet::new(),
            writes: 0,
        })
    }

    /// The standard labels every child gets (for selectors in builders and tests).
    pub fn labels(&self) -> &BTreeMap<String, String> {
        &self.labels
    }

    /// How many API writes (applies and deletes) this set made so far.
    pub fn writes(&self) -> usize {
        self.writes
    }

    /// As [`Self::apply`] for a child whose live copy the caller does not need: when the watches show it
    /// untouched since this process last confirmed it and its desired content is unchanged, neither read nor
    /// written.
    pub async fn ensure<T>(&mut self, child: T) -> Result<(), ChildError>
    where
        T: Resource<DynamicType = (), Scope = NamespaceResourceScope> + Clone + Serialize + DeserializeOwned + Debug,
    {
        let prepared = self.prepare(child)?;
        if self.unchanged_since_confirmed::<T>(&prepared).is_some() {
            return Ok(());
        }
        self.write(prepared).await.map(|_| ())
    }

    /// As [`Self::ensure`] for a child whose status the caller reports (a gateway's verdict on a route): returns
    /// what the child's kind keeps of its status (see
    /// [`ChildCache::with_status`](crate::child_cache::ChildCache::with_status)) from the watch when the child
    /// is untouched since confirmed, else from the live copy read or written.
    pub async fn apply_observed<T>(&mut self, child: T) -> Result<Observed, ChildError>
    where
        T: Resource<DynamicType = (), Scope = NamespaceResourceScope> + Clone + Serialize + DeserializeOwned + Debug,
    {
        let prepared = self.prepare(child)?;
        if let Some(cached) = self.unchanged_since_confirmed::<T>(&prepared)
            && let Some(status) = cached.status.as_deref()
        {
            return Ok(Observed {
                name: cached.name,
                namespace: cached.namespace,
                generation: cached.generation,
                status: serde_json::from_str(status).unwrap_or(Value::Null),
            });
        }
        let live = self.write(prepared).await?;
        let status = crate::child_cache::status_json(&live);
        let status = match self.config.cache.as_ref().and_then(ChildCache::status_trim::<T>) {
            Some(trim) => trim(status),
            None => status,
        };
        Ok(Observed {
            name: live.name_any(),
            namespace: live.namespace(),
            generation: live.meta().generation,
            status,
        })
    }

    /// Applies `child` (namespace defaults to the owner's) and records it as wanted in this pass; returns the
    /// live copy (read when unchanged, so it carries the current status).
    pub async fn apply<T>(&mut self, child: T) -> Result<T, ChildError>
    where
        T: Resource<DynamicType = (), Scope = NamespaceResourceScope> + Clone + Serialize + DeserializeOwned + Debug,
    {
        let prepared = self.prepare(child)?;
        self.write(prepared).await
    }

    /// Decorates `child` (owner, labels, content hash) and records it as wanted in this pass.
    // The error type every ChildSet method returns; the async ones are not linted, so boxing it here alone would
    // only make this one different.
    #[allow(clippy::result_large_err)]
    fn prepare<T>(&mut self, mut child: T) -> Result<Prepared<T>, ChildError>
    where
        T: Resource<DynamicType = (), Scope = NamespaceResourceScope> + Serialize,
    {
        let kind = T::kind(&()).to_string();
        let name = child.name_any();
        if child.meta().namespace.is_none() && self.owner_namespace.is_some() {
            child.meta_mut().namespace = self.owner_namespace.clone();
        }
        let namespace = child.namespace();
        let declared = self.config.kinds.declares(
            T::api_version(&()).as_ref(),
            &kind,
            namespace.as_deref(),
            self.owner_namespace.as_deref(),
        );
        if !declared {
            return Err(ChildError::Undeclared {
                kind,
                namespace: namespace.unwrap_or_default(),
            });
        }
        self.decorate(&mut child);
        let desired = serde_json::to_value(&child).map_err(|source| ChildError::Serialize {
            kind: kind.clone(),
            name: name.clone(),
            source,
        })?;
        let hash = content_hash(&desired);
        child
            .annotations_mut()
            .insert(self.config.hash_annotation.clone(), hash.clone());
        self.applied.insert(ChildKey {
            api_version: T::api_version(&()).to_string(),
            kind: kind.clone(),
            namespace: namespace.clone(),
            name: name.clone(),
        });
        Ok(Prepared {
            child,
            desired,
            hash,
            kind,
            name,
            namespace,
        })
    }

    /// The child as the watches show it, when they show it as this owner's, untouched since confirmed, with the
    /// same content hash.
    fn unchanged_since_confirmed<T>(&self, prepared: &Prepared<T>) -> Option<CachedChild>
    where
        T: Resource<DynamicType = ()>,
    {
        let cache = self.config.cache.as_ref()?;
        let instance = &self.labels[LABEL_INSTANCE];
        cache
            .find::<T>(
                prepared.namespace.as_deref(),
                &self.owner_ref.uid,
                &self.owner_id,
                instance,
                &prepared.name,
            )
            .flatten()
            .filter(|cached| {
                !cached.deleting
                    && cached.content_hash.as_deref() == Some(prepared.hash.as_str())
                    && cache.is_confirmed(cached)
            })
    }

    /// Notes that `live` holds what this pass applied, so a later [`Self::ensure`] can skip it.
    fn confirm<T: Resource>(&self, live: &T) {
        if let Some(cache) = self.config.cache.as_ref() {
            cache.confirm(live.meta());
        }
    }

    /// Reads the live child and applies the prepared one unless the live copy already holds it.
    async fn write<T>(&mut self, prepared: Prepared<T>) -> Result<T, ChildError>
    where
        T: Resource<DynamicType = (), Scope = NamespaceResourceScope> + Clone + Serialize + DeserializeOwned + Debug,
    {
        let Prepared {
            child,
            desired,
            hash,
            kind,
            name,
            namespace,
        } = prepared;
        let api: Api<T> = api_in(&self.client, namespace.as_deref());
        let live = api.get_opt(&name).await.map_err(|source| ChildError::Api {
            verb: "get",
            kind: kind.clone(),
            name: name.clone(),
            source,
        })?;
        if let Some(live) = live {
            if self.owned_by_another(&live) {
                return Err(ChildError::OwnedByAnother { kind, name });
            }
            let live_value = serde_json::to_value(&live).map_err(|source| ChildError::Serialize {
                kind: kind.clone(),
                name: name.clone(),
                source,
            })?;
            let recorded = live.annotations().get(&self.config.hash_annotation);
            if recorded == Some(&hash) && is_subset(&desired, &live_value) {
                self.confirm(&live);
                return Ok(live);
            }
        }
        let params = PatchParams::apply(&self.config.field_manager).force();
        let applied = api
            .patch(&name, &params, &Patch::Apply(&child))
            .await
            .map_err(|source| ChildError::Api {
                verb: "apply",
                kind: kind.clone(),
                name: name.clone(),
                source,
            })?;
        self.writes += 1;
        self.confirm(&applied);
        if let (Some(cache), Some(uid)) = (self.config.cache.as_ref(), applied.meta().uid.clone()) {
            cache.written(
                &self.owner_ref.uid,
                WrittenChild {
                    api_version: T::api_version(&()).to_string(),
                    kind: kind.clone(),
                    namespace: namespace.clone(),
                    name: name.clone(),
                    uid,
                },
            );
        }
        crate::changes::record(format!("applied {kind} {}/{name}", namespace.unwrap_or_default()));
        Ok(applied)
    }

    /// Records the existing child `namespace/name` of kind `T` as wanted in this pass without writing it, so
    /// [`Self::prune`] keeps it (e.g. a policy that must outlive a temporary failure to rebuild it).
    pub fn keep<T>(&mut self, namespace: &str, name: &str)
    where
        T: Resource<DynamicType = (), Scope = NamespaceResourceScope>,
    {
        self.applied.insert(ChildKey {
            api_version: T::api_version(&()).to_string(),
            kind: T::kind(&()).to_string(),
            namespace: Some(namespace.to_string()),
            name: name.to_string(),
        });
    }

    /// Deletes every child of a declared kind that belongs to this owner but was not applied (or kept) in this
    /// pass. Returns the deleted children as `Kind/name`.
    pub async fn prune(&mut self) -> Result<Vec<String>, ChildError> {
        let kinds = self.config.kinds.kinds.clone();
        let mut deleted = Vec::new();
        for kind in kinds {
            let namespace = match &kind.placement {
                Placement::OwnerNamespace => self.owner_namespace.clone(),
                Placement::Namespace(ns) => Some(ns.clone()),
            };
            let names = (kind.prune)(self, namespace).await?;
            deleted.extend(names.into_iter().map(|name| format!("{}/{name}", kind.kind)));
        }
        Ok(deleted)
    }

    /// Deletes children of kind `T` in `namespace` (or all namespaces when `None`) that belong to this owner but
    /// were not applied in this pass. Returns the names deleted. Each delete is guarded by the uid seen, so an
    /// object replaced in between is left alone.
    async fn prune_kind<T>(&mut self, namespace: Option<&str>) -> Result<Vec<String>, ChildError>
    where
        T: Resource<DynamicType = (), Scope = NamespaceResourceScope> + Clone + DeserializeOwned + Debug,
    {
        let kind = T::kind(&()).to_string();
        let mut deleted = Vec::new();
        for item in self.existing::<T>(namespace).await? {
            if item.deleting {
                continue;
            }
            let key = ChildKey {
                api_version: T::api_version(&()).to_string(),
                kind: kind.clone(),
                namespace: item.namespace.clone(),
                name: item.name.clone(),
            };
            if self.applied.contains(&key) {
                continue;
            }
            let item_api: Api<T> = api_in(&self.client, item.namespace.as_deref());
            let guarded = DeleteParams {
                preconditions: item.uid.map(|uid| kube::api::Preconditions {
                    uid: Some(uid),
                    resource_version: None,
                }),
                ..DeleteParams::background()
            };
            match item_api.delete(&key.name, &guarded).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                // Replaced by a new object since it was seen: not the child this pass saw, so left alone.
                Err(kube::Error::Api(status)) if status.code == 409 => continue,
                Err(source) => {
                    return Err(ChildError::Api {
                        verb: "delete",
                        kind,
                        name: key.name,
                        source,
                    });
                }
            }
            // Deleted (or already gone): no longer a written child waiting for its watch event.
            let uid = guarded.preconditions.as_ref().and_then(|p| p.uid.as_deref());
            if let (Some(cache), Some(uid)) = (self.config.cache.as_ref(), uid) {
                cache.seen(uid);
            }
            self.writes += 1;
            crate::changes::record(format!(
                "deleted {kind} {}/{}",
                key.namespace.as_deref().unwrap_or_default(),
                key.name
            ));
            deleted.push(key.name);
        }
        Ok(deleted)
    }

    /// This owner's children of kind `T` in `namespace`: from the cache when it can answer, else listed by
    /// label, metadata only (pruning needs no content, and a Secret's data then never reaches the manager).
    async fn existing<T>(&self, namespace: Option<&str>) -> Result<Vec<CachedChild>, ChildError>
    where
        T: Resource<DynamicType = (), Scope = NamespaceResourceScope> + Clone + DeserializeOwned + Debug,
    {
        let instance = &self.labels[LABEL_INSTANCE];
        let cached = self
            .config
            .cache
            .as_ref()
            .and_then(|cache| cache.owned::<T>(namespace, &self.owner_ref.uid, &self.owner_id, instance));
        if let Some(mut children) = cached {
            // Children written by an earlier pass that the watch has not shown yet count too (module docs of
            // `child_cache`): their watch event may be skipped as an echo, so no later pass would prune them.
            let cache = self.config.cache.as_ref();
            for written in cache
                .map(|cache| cache.written_unseen::<T>(namespace, &self.owner_ref.uid))
                .unwrap_or_default()
            {
                if !children
                    .iter()
                    .any(|c| c.name == written.name && c.namespace == written.namespace)
                {
                    children.push(written);
                }
            }
            return Ok(children);
        }
        let api: Api<T> = api_in(&self.client, namespace);
        let selector = format!(
            "{}={},{}={}",
            LABEL_MANAGED_BY, self.labels[LABEL_MANAGED_BY], LABEL_INSTANCE, instance
        );
        let listed = api
            .list_metadata(&ListParams::default().labels(&selector))
            .await
            .map_err(|source| ChildError::Api {
                verb: "list",
                kind: T::kind(&()).to_string(),
                name: "*".into(),
                source,
            })?;
        Ok(listed
            .into_iter()
            .filter(|item| self.owns(item))
            .map(|item| CachedChild {
                namespace: item.namespace(),
                name: item.name_any(),
                uid: item.uid(),
                deleting: item.meta().deletion_timestamp.is_some(),
                resource_version: item.resource_version(),
                content_hash: item.annotations().get(&self.config.hash_annotation).cloned(),
                generation: item.meta().generation,
                fingerprint: None,
                status: None,
            })
            .collect())
    }

    /// Whether `item` is someone else's (see [`ChildError::OwnedByAnother`]): it has no ownerReference to this
    /// owner, and its owner annotation names another owner, or it has none and lacks this operator's
    /// `managed-by` label. An unannotated object with the label is adopted: that is how the replaced operator's
    /// objects are taken over; one without it (a platform object of the same name) never is.
    fn owned_by_another<T: Resource>(&self, item: &T) -> bool {
        if item.owner_references().iter().any(|r| r.uid == self.owner_ref.uid) {
            return false;
        }
        match item.annotations().get(&self.config.owner_annotation) {
            Some(owner) => owner != &self.owner_id,
            None => item.labels().get(LABEL_MANAGED_BY) != Some(&names::label_value(&self.config.managed_by)),
        }
    }

    /// Whether `item` belongs to this set's owner: by controller ownerReference, or by owner annotation.
    fn owns<T: Resource>(&self, item: &T) -> bool {
        let by_ref = item.owner_references().iter().any(|r| r.uid == self.owner_ref.uid);
        let by_annotation = item.annotations().get(&self.config.owner_annotation) == Some(&self.owner_id);
        by_ref || by_annotation
    }

    fn decorate<T: Resource>(&self, child: &mut T) {
        let labels = child.labels_mut();
        for (k, v) in &self.labels {
            labels.entry(k.clone()).or_insert_with(|| v.clone());
        }
        child
            .annotations_mut()
            .insert(self.config.owner_annotation.clone(), self.owner_id.clone());
        let same_namespace = child.meta().namespace == self.owner_namespace;
        if same_namespace && self.owner_namespace.is_some() {
            let refs = child.meta_mut().owner_references.get_or_insert_with(Vec::new);
            if !refs.iter().any(|r| r.uid == self.owner_ref.uid) {
                refs.push(self.owner_ref.clone());
            }
        }
    }
}

/// A stable hash of desired content, used to tell whether a child needs re-applying.
pub fn content_hash(value: &Value) -> String {
    // serde_json maps are ordered (BTreeMap) unless `preserve_order` is enabled, so this is canonical.
    names::short_hash(&value.to_string())
}

/// Whether every field set in `desired` has the same value in `live` (objects compared key by key, arrays and
/// scalars exactly). Fields only in `live` (defaults, other managers' fields, status) are ignored.
pub fn is_subset(desired: &Value, live: &Value) -> bool {
    match (desired, live) {
        (Value::Object(d), Value::Object(l)) => d.iter().all(|(k, dv)| match l.get(k) {
            Some(lv) => is_subset(dv, lv),
            None => {
                dv.is_null()
                    || dv.as_object().is_some_and(|o| o.is_empty())
                    || dv.as_array().is_some_and(|a| a.is_empty())
            }
        }),
        (Value::Array(d), Value::Array(l)) => d.len() == l.len() && d.iter().zip(l).all(|(dv, lv)| is_subset(dv, lv)),
        _ => desired == live,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn subset_ignores_extra_live_fields() {
        let desired = json!({"spec": {"a": 1, "list": [{"x": 1}]}});
        let live = json!({"spec": {"a": 1, "b": 2, "list": [{"x": 1, "default": true}]}, "status": {}});
        assert!(is_subset(&desired, &live));
    }

    #[test]
    fn subset_detects_changed_values_and_list_lengths() {
        assert!(!is_subset(&json!({"spec": {"a": 1}}), &json!({"spec": {"a": 2}})));
        assert!(!is_subset(&json!({"l": [1, 2]}), &json!({"l": [1]})));
        assert!(!is_subset(&json!({"spec": {"a": 1}}), &json!({"spec": {}})));
    }

    #[test]
    fn subset_treats_absent_and_empty_alike() {
        assert!(is_subset(
            &json!({"metadata": {"labels": {}}}),
            &json!({"metadata": {}})
        ));
    }

    #[test]
    fn content_hash_is_stable_and_sensitive() {
        let a = json!({"b": 1, "a": [1, 2]});
        let b = json!({"a": [1, 2], "b": 1});
        assert_eq!(content_hash(&a), content_hash(&b));
        assert_ne!(content_hash(&a), content_hash(&json!({"a": [2, 1], "b": 1})));
    }
}
