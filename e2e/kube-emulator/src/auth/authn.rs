//! Bearer-token authentication: the admin token of the kubeconfig the emulator writes, ServiceAccount tokens
//! minted by TokenRequest (`kubectl create token`), and tokens a test mints for a named user.
//!
//! A ServiceAccount token stays valid while it has not expired and its ServiceAccount exists with the uid it
//! was minted for, as kube-apiserver's bound tokens do.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::http::HeaderMap;
use base64::Engine;
use rand::RngCore;

use super::super::meta;
use super::super::resources::GroupResource;
use super::super::status::ApiError;
use super::super::store::Store;
use super::{AUTHENTICATED_GROUP, MASTERS_GROUP, UserInfo};

/// The token of the kubeconfig the emulator writes: a cluster admin.
pub const ADMIN_TOKEN: &str = "emulator-token";
/// The admin's user name.
pub const ADMIN_USER: &str = "kubernetes-admin";

#[derive(Clone, Debug)]
enum Issued {
    User(Arc<UserInfo>),
    ServiceAccount {
        namespace: String,
        name: String,
        uid: String,
        expires: SystemTime,
    },
}

/// The token table.
pub struct Authenticator {
    tokens: Mutex<HashMap<String, Issued>>,
}

impl Default for Authenticator {
    fn default() -> Self {
        let admin = UserInfo {
            name: ADMIN_USER.into(),
            uid: String::new(),
            groups: vec![MASTERS_GROUP.into(), AUTHENTICATED_GROUP.into()],
            extra: BTreeMap::new(),
        };
        let mut tokens = HashMap::new();
        tokens.insert(ADMIN_TOKEN.to_string(), Issued::User(Arc::new(admin)));
        Authenticator {
            tokens: Mutex::new(tokens),
        }
    }
}

/// The 401 kube-apiserver answers for a missing or unknown token.
pub fn unauthorized() -> ApiError {
    ApiError::with_reason(401, "Unauthorized", "Unauthorized")
}

fn new_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

impl Authenticator {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Issued>> {
        // Each change is one insert; a panicking holder cannot leave the table half-written.
        self.tokens.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Who the `Authorization: Bearer` header names, or 401.
    pub fn authenticate(&self, store: &Store, headers: &HeaderMap) -> Result<Arc<UserInfo>, ApiError> {
        let token = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(unauthorized)?;
        let issued = self.lock().get(token).cloned().ok_or_else(unauthorized)?;
        match issued {
            Issued::User(user) => Ok(user),
            Issued::ServiceAccount {
                namespace,
                name,
                uid,
                expires,
            } => {
                if SystemTime::now() > expires {
                    return Err(unauthorized());
                }
                let live = store.read(|r| r.get(&GroupResource::new("", "serviceaccounts"), &namespace, &name));
                match live {
                    Some(sa) if meta::uid(&sa) == uid && !meta::is_terminating(&sa) => {
                        Ok(Arc::new(UserInfo::for_service_account(&namespace, &name, &uid)))
                    }
                    _ => Err(unauthorized()),
                }
            }
        }
    }

    /// Mints a token for a ServiceAccount (TokenRequest); returns it with its expiry.
    pub fn mint_service_account(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        lifetime: Duration,
    ) -> (String, SystemTime) {
        let token = new_token();
        let expires = SystemTime::now() + lifetime;
        self.lock().insert(
            token.clone(),
            Issued::ServiceAccount {
                namespace: namespace.to_string(),
                name: name.to_string(),
                uid: uid.to_string(),
                expires,
            },
        );
        (token, expires)
    }

    /// Mints a token that authenticates as `user` (a test hook: a tenant, a named admin, a component);
    /// `system:authenticated` is added to its groups.
    pub fn mint_user(&self, name: &str, groups: &[String]) -> String {
        let mut groups = groups.to_vec();
        if !groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
            groups.push(AUTHENTICATED_GROUP.into());
        }
        let user = UserInfo {
            name: name.to_string(),
            uid: String::new(),
            groups,
            extra: BTreeMap::new(),
        };
        let token = new_token();
        self.lock().insert(token.clone(), Issued::User(Arc::new(user)));
        token
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn bearer(token: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            "authorization",
            HeaderValue::from_str(&format!("Bearer {token}")).expect("header"),
        );
        headers
    }

    #[test]
    fn the_admin_token_is_a_cluster_admin_and_anything_else_is_unauthorized() {
        let store = Store::new(10);
        let authn = Authenticator::default();
        let admin = authn.authenticate(&store, &bearer(ADMIN_TOKEN)).expect("admin");
        assert!(admin.is_master());
        let err = authn.authenticate(&store, &bearer("nope")).expect_err("unknown token");
        assert_eq!(err.code, 401);
        assert_eq!(err.message, "Unauthorized");
        assert_eq!(
            authn
                .authenticate(&store, &HeaderMap::new())
                .expect_err("no token")
                .code,
            401
        );
    }

    #[test]
    fn a_service_account_token_dies_with_its_service_account() {
        let store = Store::new(10);
        let authn = Authenticator::default();
        let (token, _) = authn.mint_service_account("ns", "op", "uid-1", Duration::from_secs(600));
        assert_eq!(
            authn.authenticate(&store, &bearer(&token)).expect_err("no SA").code,
            401
        );
        store.write(|t| {
            t.put(
                &GroupResource::new("", "serviceaccounts"),
                serde_json::json!({"metadata":{"name":"op","namespace":"ns","uid":"uid-1"}}),
            )
        });
        let user = authn.authenticate(&store, &bearer(&token)).expect("valid");
        assert_eq!(user.name, "system:serviceaccount:ns:op");
        assert_eq!(
            user.groups,
            vec![
                "system:serviceaccounts",
                "system:serviceaccounts:ns",
                "system:authenticated"
            ]
        );
    }
}
