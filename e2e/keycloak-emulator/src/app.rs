//! The state every handler shares, and the preamble of every admin request: authenticate, find the realm,
//! then hand the handler a context to work in.

use std::sync::{Arc, Mutex, MutexGuard};

use axum::response::{IntoResponse, Response};

use super::auth::{AdminRequest, Caller, Need};
use super::clock::Clock;
use super::hooks::HookState;
use super::model::Realm;
use super::store::Store;
use super::wire::ApiResult;

/// State shared by the handlers, the hooks and the listeners of one emulator.
pub struct Shared {
    /// All Keycloak data.
    pub store: Mutex<Store>,
    /// The adjustable clock.
    pub clock: Clock,
    /// Counters, faults and the down switch.
    pub hooks: HookState,
    /// Prefix of every Keycloak path (e.g. `/auth`), empty for none.
    pub prefix: String,
    /// The key tokens are signed with (published at `.../protocol/openid-connect/certs`).
    pub signing: super::signing::SigningKey,
}

/// The handler state.
pub type App = Arc<Shared>;

/// What an admin handler works with.
pub struct AdminCtx<'a> {
    /// The realm named in the path.
    pub realm: &'a mut Realm,
    /// The caller.
    pub caller: Caller,
    /// Whether fine-grained admin permissions (v1) are on.
    pub fgap_v1: bool,
    /// `http://host[/prefix]/admin/realms/{realm}`, for `Location` headers.
    pub base: String,
    /// The emulator's time in epoch milliseconds.
    pub now_millis: u64,
}

impl AdminCtx<'_> {
    /// 403 unless the caller may perform `need` in this realm.
    pub fn require(&self, need: Need) -> Result<(), super::wire::ApiError> {
        self.caller.require(&self.realm.name, need)
    }

    /// Whether the caller may perform `need` in this realm (for `access` objects).
    pub fn may(&self, need: Need) -> bool {
        self.caller.may(&self.realm.name, need)
    }
}

impl Shared {
    /// The store. A handler that panicked cannot leave it half-changed in a way later tests rely on, so a
    /// poisoned lock is taken over.
    pub fn lock(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs an admin handler: 401 for a bad token, 404 `Realm not found.` for an unknown realm, then `handler`.
    pub fn admin<F>(&self, request: &AdminRequest, realm: &str, handler: F) -> Response
    where
        F: FnOnce(AdminCtx<'_>) -> ApiResult,
    {
        let now = self.clock.now();
        let now_millis = self.clock.epoch_millis();
        let mut store = self.lock();
        let result = (|| {
            let caller = Caller::from_token(&store, request.bearer.as_deref(), now)?;
            let fgap_v1 = store.fgap_v1;
            let base = format!("{}{}/admin/realms/{realm}", request.origin, self.prefix);
            let realm = store.realm_mut(realm)?;
            handler(AdminCtx {
                realm,
                caller,
                fgap_v1,
                base,
                now_millis,
            })
        })();
        result.unwrap_or_else(IntoResponse::into_response)
    }
}
