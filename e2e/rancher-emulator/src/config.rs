//! How an emulator starts: listen address, clusters, API tokens and the Rancher-version switches.

use std::net::SocketAddr;
use std::time::Duration;

use rand::Rng;
use serde::{Deserialize, Serialize};

/// What Rancher does with a second role template binding for the same role, subject and project (or cluster).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DuplicateBindingPolicy {
    /// Rancher ≤ 2.13: the duplicate is created under a new name.
    #[default]
    Accept,
    /// Rancher ≥ 2.14 (webhook v0.11): 409, `AlreadyExists` when the content-derived name collides, otherwise
    /// `Conflict` "duplicate prtb not allowed".
    Reject,
}

/// How a project's backing namespace (the first half of a PRTB id) is named.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackingNamespaceStyle {
    /// Rancher 2.9+: `<clusterId>-<projectName>`.
    #[default]
    Cluster,
    /// Older projects: just the project name.
    Legacy,
}

/// A cluster to create at start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSeed {
    /// The cluster id, e.g. `c-m-abcd1234` or `local`.
    pub id: String,
    /// The display name.
    pub name: String,
    /// Whether to create the `Default` and `System` projects (with `default` and the system namespaces), as
    /// Rancher does for every cluster.
    #[serde(default = "default_true")]
    pub default_projects: bool,
}

fn default_true() -> bool {
    true
}

impl ClusterSeed {
    /// A cluster with the usual Default and System projects.
    pub fn new(id: &str) -> Self {
        Self {
            id: id.to_string(),
            name: id.to_string(),
            default_projects: true,
        }
    }
}

/// An API key: `Bearer <accessKey>:<secret>` or Basic with the same pair.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiToken {
    /// The public half, `token-xxxxx`.
    pub access_key: String,
    /// The secret half.
    pub secret: String,
    /// The Rancher user the token belongs to (becomes `creatorId`).
    pub user_id: String,
}

impl ApiToken {
    /// A fresh random token for `user_id`.
    pub fn random(user_id: &str) -> Self {
        let mut rng = rand::rng();
        let key: String = (0..5)
            .map(|_| crate::store::NAME_ALPHABET[rng.random_range(0..27)] as char)
            .collect();
        let secret: String = (0..54)
            .map(|_| {
                let alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789";
                alphabet[rng.random_range(0..alphabet.len())] as char
            })
            .collect();
        Self {
            access_key: format!("token-{key}"),
            secret,
            user_id: user_id.to_string(),
        }
    }

    /// The bearer value, `token-xxxxx:secret`.
    pub fn bearer(&self) -> String {
        format!("{}:{}", self.access_key, self.secret)
    }
}

/// How to start the emulator.
#[derive(Clone, Debug)]
pub struct RancherConfig {
    /// The address to listen on; port 0 picks a free one.
    pub listen: SocketAddr,
    /// Clusters that exist from the start.
    pub clusters: Vec<ClusterSeed>,
    /// Accepted API tokens; the first is the admin token the handle hands out.
    pub tokens: Vec<ApiToken>,
    /// What a duplicate role template binding does.
    pub duplicate_bindings: DuplicateBindingPolicy,
    /// How backing namespaces are named.
    pub backing_namespaces: BackingNamespaceStyle,
    /// How long a deleted project stays visible in state `removing` before it 404s.
    pub project_removal_delay: Duration,
    /// Serve HTTPS with this certificate (from a test CA; Rancher's default is self-signed) instead of HTTP.
    pub tls: Option<emulator_kit::tls::ServerCert>,
}

impl Default for RancherConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            clusters: vec![ClusterSeed::new("local")],
            tokens: vec![ApiToken::random("user-admin")],
            duplicate_bindings: DuplicateBindingPolicy::Accept,
            backing_namespaces: BackingNamespaceStyle::Cluster,
            project_removal_delay: Duration::from_millis(200),
            tls: None,
        }
    }
}
