//! Sharding: which share of the objects this replica reconciles, when one manager is not enough.
//!
//! Every object belongs to exactly one of `count` shards, chosen by a stable hash of its namespace and name (the
//! same answer in every process, release and architecture: SHA-256, not Rust's `DefaultHasher`). A replica
//! started with `--shard-count N --shard-index i` still watches and caches every object — decisions that span
//! objects (hostname ownership, token-exchange peers, reference-counted Rancher bindings) read the complete view,
//! exactly as concurrent reconciles in one process do — but only objects of shard `i` ever reach its work queue.
//! Work outside any one object (the orphan sweeps) runs on the first shard only. Each shard elects its own leader
//! on a Lease of its own, so every shard can keep a standby.

use kube::Resource;
use kube::runtime::reflector::ObjectRef;
use sha2::{Digest, Sha256};

/// This replica's share: shard `index` of `count`. The default is the whole (one shard).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    count: u32,
    index: u32,
}

/// A shard setting that names no shard.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ShardError {
    /// Zero shards.
    #[error("--shard-count must be at least 1")]
    NoShards,
    /// The index is not below the count.
    #[error("--shard-index {index} is out of range: with --shard-count {count} it must be 0 to {}", count - 1)]
    OutOfRange {
        /// The index given.
        index: u32,
        /// The count given.
        count: u32,
    },
}

impl Default for Shard {
    fn default() -> Self {
        Shard::WHOLE
    }
}

impl Shard {
    /// One shard holding every object: an unsharded install.
    pub const WHOLE: Shard = Shard { count: 1, index: 0 };

    /// Shard `index` of `count`.
    pub fn new(count: u32, index: u32) -> Result<Self, ShardError> {
        match (count, index) {
            (0, _) => Err(ShardError::NoShards),
            (count, index) if index >= count => Err(ShardError::OutOfRange { index, count }),
            (count, index) => Ok(Shard { count, index }),
        }
    }

    /// How many shards there are.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Which shard this is.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Whether objects are split at all.
    pub fn is_sharded(&self) -> bool {
        self.count > 1
    }

    /// Whether this shard runs the work that belongs to no single object (orphan sweeps): the first one.
    pub fn runs_global_work(&self) -> bool {
        self.index == 0
    }

    /// The shard the object `namespace/name` belongs to, out of `count` (cluster-scoped objects: no namespace).
    pub fn of(namespace: Option<&str>, name: &str, count: u32) -> u32 {
        if count <= 1 {
            return 0;
        }
        let mut hasher = Sha256::new();
        hasher.update(namespace.unwrap_or_default().as_bytes());
        hasher.update(b"/");
        hasher.update(name.as_bytes());
        let digest = hasher.finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        // The remainder is below `count`, itself a u32.
        (u64::from_be_bytes(first) % u64::from(count)) as u32
    }

    /// Whether this shard reconciles the object `namespace/name`.
    pub fn owns(&self, namespace: Option<&str>, name: &str) -> bool {
        Self::of(namespace, name, self.count) == self.index
    }

    /// Whether this shard reconciles `obj`.
    pub fn owns_object<K: Resource>(&self, obj: &K) -> bool {
        let meta = obj.meta();
        self.owns(meta.namespace.as_deref(), meta.name.as_deref().unwrap_or_default())
    }

    /// Whether this shard reconciles the object `reference` names.
    pub fn owns_ref<K: Resource>(&self, reference: &ObjectRef<K>) -> bool {
        self.owns(reference.namespace.as_deref(), &reference.name)
    }

    /// The leader-election Lease of this shard: `base` unsharded, `base-shard-<index>` otherwise.
    pub fn lease_name(&self, base: &str) -> String {
        match self.is_sharded() {
            false => base.to_string(),
            true => format!("{base}-shard-{}", self.index),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_outside_the_range_are_refused() {
        assert_eq!(Shard::new(0, 0), Err(ShardError::NoShards));
        assert_eq!(Shard::new(3, 3), Err(ShardError::OutOfRange { index: 3, count: 3 }));
        assert_eq!(
            ShardError::OutOfRange { index: 3, count: 3 }.to_string(),
            "--shard-index 3 is out of range: with --shard-count 3 it must be 0 to 2"
        );
        assert_eq!(Shard::new(1, 0), Ok(Shard::WHOLE));
    }

    #[test]
    fn every_object_belongs_to_exactly_one_shard_and_they_share_the_work() {
        let shards: Vec<Shard> = (0..3).map(|i| Shard::new(3, i).expect("valid")).collect();
        let mut per_shard = [0usize; 3];
        for n in 0..3000 {
            let (namespace, name) = (format!("team-{}", n % 7), format!("app-{n}"));
            let owners: Vec<u32> = shards
                .iter()
                .filter(|s| s.owns(Some(&namespace), &name))
                .map(|s| s.index())
                .collect();
            assert_eq!(owners.len(), 1, "{namespace}/{name} owned by {owners:?}");
            per_shard[owners[0] as usize] += 1;
        }
        for count in per_shard {
            assert!((850..=1150).contains(&count), "uneven split: {per_shard:?}");
        }
        assert!(Shard::WHOLE.owns(Some("any"), "thing"));
    }

    #[test]
    fn the_split_is_stable_across_releases() {
        // Replicas of different versions must agree during a rolling update: these values are fixed forever
        // (computed independently: SHA-256 of `namespace/name`, first 8 bytes big-endian, modulo the count).
        assert_eq!(Shard::of(Some("default"), "my-app", 3), 2);
        assert_eq!(Shard::of(Some("team-a"), "project-1", 3), 0);
        assert_eq!(Shard::of(None, "cluster-wide", 5), 3);
    }

    #[test]
    fn each_shard_has_its_own_lease() {
        assert_eq!(Shard::WHOLE.lease_name("op"), "op");
        assert_eq!(Shard::new(3, 2).expect("valid").lease_name("op"), "op-shard-2");
    }
}
