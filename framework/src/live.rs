//! Reading an object as the API server stores it now, not as the watch cache last showed it.
//!
//! The cache may lag behind the controller's own last write. A decision that must not be taken twice (minting
//! a credential) or a write that must not lose newer facts (a status refused as stale) re-reads the object first.

use std::fmt::Debug;

use kube::api::Api;
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;

/// The stored copy of `obj`; `None` when it is gone or has been replaced by a new object with the same name.
pub async fn reread<K>(api: &Api<K>, obj: &K) -> Result<Option<K>, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let stored = api.get_opt(&obj.name_any()).await?;
    Ok(stored.filter(|stored| stored.uid() == obj.uid()))
}
