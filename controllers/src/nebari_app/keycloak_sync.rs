//! Keycloak state of a NebariApp: the confidential client and its secret, default scopes, protocol mappers,
//! groups with additive memberships, the SPA and device-flow clients, token exchange; and their removal.
//!
//! Everything here runs only when the app's auth configuration hash changed (or re-provisioning is forced):
//! a steady-state reconcile makes no Keycloak call.

use std::collections::{BTreeMap, BTreeSet};

use crds::nebari::{AuthConfig, AuthProvider, NebariApp, NebariAppStatus};
use framework::error::kube_error;
use framework::namespaces::WatchedNamespaces;
use k8s_openapi::api::core::v1::Secret;
use kube::api::ListParams;
use kube::{Client as KubeClient, ResourceExt};
use rand::Rng;
use secrecy::{ExposeSecret, SecretString};

use super::NebariAppController;
use super::auth_policy::KeycloakPolicy;
use super::error::NebariAppError;
use super::keycloak_groups::{self, AppGroups};
use super::naming::AppNames;
use super::oidc_secret::OidcSecretData;
use super::security_policy::{
    GATEWAY_GROUP_MAPPER, GATEWAY_GROUPS_CLAIM, GROUPS_CLAIM, callback_path, scopes, token_exchange_at_gateway,
};
use crate::keycloak::{Client, ClientSpec, ClientUpdate, Ensured, ProtocolMapper, RealmClient};

/// Description put on client scopes the operator creates.
const SCOPE_DESCRIPTION: &str = "Managed by nebari-operator";
/// Name of the default groups mapper (created only when no mappers are configured and `groups` is requested).
const GROUP_MAPPER: &str = "group-membership";
/// The scope (and realm role) of offline tokens.
const OFFLINE_ACCESS: &str = "offline_access";
/// Name of the audience mapper that names the app's client in its own access tokens, for the gateway's audience
/// check when peers' exchanged tokens are admitted.
const GATEWAY_AUDIENCE_MAPPER: &str = "nebari-gateway-audience";
/// Name of the audience mapper that lets device-flow tokens reach the confidential client.
const DEVICE_AUDIENCE_MAPPER: &str = "audience-confidential-client";
/// Client attribute recording the app a Keycloak client belongs to (`<namespace>/<name>`). Client ids come from
/// the spec (`spaClient.clientId`) or from names that can clash across namespaces (`a-b`/`c` and `a`/`b-c` both
/// give `a-b-c`), so without it one namespace could rewrite or delete another's client.
pub const OWNER_ATTRIBUTE: &str = "nebari.dev/owner";

/// The clients Keycloak makes in every realm (and `<realm>-realm` in the master realm): never touched, whatever
/// an app's names derive (namespace `admin` + app `cli` derives `admin-cli`).
pub const BUILT_IN_CLIENTS: &[&str] = &[
    "account",
    "account-console",
    "admin-cli",
    "broker",
    "realm-management",
    "security-admin-console",
];

/// Whether `client_id` is one of Keycloak's own clients.
pub fn is_built_in(client_id: &str) -> bool {
    BUILT_IN_CLIENTS.contains(&client_id) || client_id.ends_with("-realm")
}

/// Whose a Keycloak client is, as far as one app is concerned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ownership {
    /// It records this app as its owner.
    Ours,
    /// It records no owner, has one of this app's derived ids (made by the replaced operator), and the platform
    /// allows adopting such clients (`--keycloak-adopt-unowned-clients`): taken over.
    Adoptable,
    /// It belongs to another app: never touched.
    Foreign,
    /// It records no owner and may not be adopted (a built-in client, an id the app does not derive, or adoption
    /// not allowed): never touched.
    Unowned,
}

/// Whose `client` is, from the point of view of the app named by `names`; `adopt` is whether the platform
/// allows taking over ownerless clients under derived ids.
pub fn ownership(client: &Client, names: &AppNames, adopt: bool) -> Ownership {
    if is_built_in(&client.client_id) {
        return Ownership::Unowned;
    }
    match client.attributes.get(OWNER_ATTRIBUTE).filter(|o| !o.is_empty()) {
        Some(owner) if *owner == names.owner() => Ownership::Ours,
        Some(_) => Ownership::Foreign,
        None if adopt && names.derived_client_ids().contains(&client.client_id) => Ownership::Adoptable,
        None => Ownership::Unowned,
    }
}

/// Whether `client` is this app's to change or delete.
fn is_ours(client: &Client, names: &AppNames, adopt: bool) -> bool {
    matches!(ownership(client, names, adopt), Ownership::Ours | Ownership::Adoptable)
}

/// What provisioning produced.
pub struct ProvisionedClients {
    /// The confidential client's id.
    pub client_id: String,
    /// The confidential client's secret, for the OIDC Secret.
    pub client_secret: String,
    /// The SPA client's id, when enabled.
    pub spa_client_id: Option<String>,
    /// The device-flow client's id, when enabled.
    pub device_client_id: Option<String>,
    /// Things worth telling the user that do not fail the reconcile (unknown group members).
    pub warnings: Vec<String>,
    /// The groups the app owns or added members to (for `status.keycloakGroups`).
    pub groups: Vec<String>,
}

/// Reads the credentials back from an existing OIDC Secret (so a steady-state pass needs no Keycloak call).
pub fn secret_data(secret: &Secret) -> Option<OidcSecretData> {
    let get = |key: &str| framework::secrets::text(secret, key);
    Some(OidcSecretData {
        client_id: get("client-id")?,
        client_secret: get("client-secret").filter(|s| !s.is_empty())?,
        issuer_url: get("issuer-url").unwrap_or_default(),
        spa_client_id: get("spa-client-id"),
        device_client_id: get("device-client-id"),
    })
}

fn scheme(tls: bool) -> &'static str {
    if tls { "https" } else { "http" }
}

/// The client ids of the other NebariApps that may exchange tokens for this one: every other app of the same
/// namespace, and those of other namespaces that `tokenExchange.peers` names, with Keycloak provisioning enabled
/// and a client provisioned already (its `status.authConfigHash` is set). A peer still
/// being provisioned is left out until its status says so — that status write re-triggers this app through the
/// NebariApp watch — because granting looks the client up and a peer hashed in before its client existed would
/// never be granted.
pub async fn token_exchange_peers(
    kube: &KubeClient,
    namespaces: &WatchedNamespaces,
    app: &NebariApp,
) -> Result<Vec<String>, NebariAppError> {
    let apps = namespaces
        .list::<NebariApp>(kube, &ListParams::default())
        .await
        .map_err(kube_error("listing NebariApps"))?;
    let me = (app.namespace(), app.name_any());
    let named: Vec<&String> = app
        .spec
        .auth
        .as_ref()
        .and_then(|a| a.token_exchange.as_ref())
        .and_then(|t| t.peers.as_ref())
        .map(|peers| peers.iter().collect())
        .unwrap_or_default();
    let mut peers: Vec<String> = apps
        .iter()
        .filter(|other| (other.namespace(), other.name_any()) != me)
        .filter(|other| {
            let same_namespace = other.namespace() == app.namespace();
            let key = format!("{}/{}", other.namespace().unwrap_or_default(), other.name_any());
            same_namespace || named.iter().any(|n| **n == key)
        })
        .filter(|other| {
            other
                .spec
                .auth
                .as_ref()
                .is_some_and(|a| a.enabled && a.provider == AuthProvider::Keycloak && a.provision_client)
        })
        // Only apps whose clients are provisioned: one still provisioning becomes a peer when it records them.
        .filter(|other| {
            other.status.as_ref().is_some_and(|s| {
                s.auth_config_hash
                    .as_deref()
                    .is_some_and(|h| h != super::auth::PROVISIONING_MARKER)
            })
        })
        .map(|other| AppNames::new(&other.namespace().unwrap_or_default(), &other.name_any()).keycloak_client())
        .collect();
    peers.sort();
    Ok(peers)
}

/// What the last provisioning left that this one may have to undo.
#[derive(Clone, Copy, Debug, Default)]
pub struct Previous<'a> {
    /// The SPA client id provisioned last time (from the OIDC Secret), removed if it changed.
    pub spa: Option<&'a str>,
    /// The groups the status remembers (`status.keycloakGroups`), reverted when no longer named.
    pub groups: &'a [String],
}

/// Creates or updates everything the app needs in Keycloak; returns the credentials for the OIDC Secret.
pub async fn provision(
    controller: &NebariAppController,
    app: &NebariApp,
    auth: &AuthConfig,
    names: &AppNames,
    tls: bool,
    peers: &[String],
    previous: Previous<'_>,
) -> Result<ProvisionedClients, NebariAppError> {
    let policy = &controller.settings.keycloak_policy;
    super::auth_policy::check(auth, names, policy).map_err(|refusal| NebariAppError::Refused {
        reason: refusal.reason,
        message: refusal.message,
    })?;
    let mut run = Provisioning {
        realm: controller.keycloak.realm(&controller.settings.keycloak.realm),
        policy,
        auth,
        names,
        base: format!("{}://{}", scheme(tls), app.spec.hostname),
        scopes: scopes(auth).into_iter().filter(|s| s != "openid").collect(),
        warnings: Vec::new(),
    };
    let (confidential, client_secret) = run.confidential_client().await?;
    let created = confidential.created;
    let confidential = confidential.value;
    run.scopes_and_mappers(&confidential.id, &confidential.client_id)
        .await?;
    let groups = AppGroups::new(&run.realm, names)
        .sync(&keycloak_groups::wanted(auth), previous.groups, &policy.group_patterns)
        .await?;
    run.warnings.extend(groups.warnings);
    let spa_client_id = run.spa_client(previous.spa).await?;
    let device_client_id = run.device_client(&confidential.client_id).await?;
    run.token_exchange(controller, &confidential, peers, created).await?;
    Ok(ProvisionedClients {
        client_id: confidential.client_id,
        client_secret,
        spa_client_id,
        device_client_id,
        warnings: run.warnings,
        groups: groups.managed,
    })
}

/// One provisioning of an app's Keycloak state, one method per part.
struct Provisioning<'a> {
    realm: RealmClient,
    policy: &'a KeycloakPolicy,
    auth: &'a AuthConfig,
    names: &'a AppNames,
    /// `<scheme>://<hostname>`: the base of every redirect URI and web origin.
    base: String,
    /// The requested scopes besides `openid`.
    scopes: Vec<String>,
    warnings: Vec<String>,
}

impl Provisioning<'_> {
    /// The confidential client with its redirect URIs (and whether this pass created it), and its secret. A client
    /// this pass creates gets a secret generated here, as Keycloak would (32 alphanumeric characters from a
    /// CSPRNG), so it need not be read back; an existing client's is read (and generated when it has none).
    async fn confidential_client(&self) -> Result<(Ensured<Client>, String), NebariAppError> {
        let base = &self.base;
        let callback = callback_path(self.auth);
        let client_id = self.names.keycloak_client();
        let redirect_uris = vec![format!("{base}{callback}")];
        let web_origins = vec![base.clone()];
        let logout = vec![format!("{base}/*")];
        let generated = generate_client_secret(&mut rand::rng());
        let spec = ClientSpec::confidential(&client_id, Some(SecretString::from(generated.clone())))
            .with_redirect_uris(redirect_uris.clone())
            .with_web_origins(web_origins.clone())
            .with_post_logout_redirect_uris(&logout);
        let settled = ClientUpdate {
            redirect_uris: Some(redirect_uris),
            web_origins: Some(web_origins),
            set_attributes: BTreeMap::from([(
                crate::keycloak::POST_LOGOUT_REDIRECT_URIS_ATTRIBUTE.to_string(),
                logout.join("##"),
            )]),
            standard_flow: Some(true),
            enabled: Some(true),
            full_scope_allowed: Some(false),
            ..Default::default()
        };
        let confidential = ensure_owned(
            &self.realm,
            spec,
            settled,
            self.names,
            self.policy.adopt_unowned_clients,
        )
        .await?;
        if confidential.created {
            return Ok((confidential, generated));
        }
        let secret = match self.realm.client_secret(&confidential.value.id).await? {
            Some(secret) => secret,
            None => self.realm.regenerate_client_secret(&confidential.value.id).await?,
        };
        Ok((confidential, secret.expose_secret().to_string()))
    }

    /// The `offline_access` role in the scope of `client` when the app asks for offline tokens: its clients do not
    /// carry every role of the user (`fullScopeAllowed` off), so a role reaches their tokens only when asked for.
    async fn offline_access(&self, client: &str) -> Result<(), NebariAppError> {
        if self.scopes.iter().any(|scope| scope == OFFLINE_ACCESS) {
            self.realm.ensure_realm_role_in_scope(client, OFFLINE_ACCESS).await?;
        }
        Ok(())
    }

    /// The confidential client's default scopes and protocol mappers: the configured ones, else a groups mapper
    /// when `groups` is requested; whenever `auth.groups` are enforced at the gateway, a groups mapper unless a
    /// configured one already writes the `groups` claim into access tokens (apps enforced at the gateway have
    /// always been given one), and the gateway's own mapper writing the group paths it admits by; with token
    /// exchange at the gateway, a mapper naming the client itself in its access tokens' audience (the gateway admits
    /// only tokens addressed to the app, its own sessions' and its peers' exchanged ones).
    async fn scopes_and_mappers(&self, client: &str, client_id: &str) -> Result<(), NebariAppError> {
        let realm = &self.realm;
        realm
            .ensure_default_client_scopes(client, &self.scopes, Some(SCOPE_DESCRIPTION))
            .await?;
        self.offline_access(client).await?;
        let configured = self
            .auth
            .keycloak_config
            .as_ref()
            .and_then(|k| k.protocol_mappers.as_ref());
        let mut writes_groups = configured.iter().flat_map(|mappers| mappers.iter()).any(|m| {
            let setting = |key: &str| m.config.as_ref().and_then(|c| c.get(key)).map(String::as_str);
            m.protocol_mapper == "oidc-group-membership-mapper"
                && setting("claim.name") == Some(GROUPS_CLAIM)
                && setting("access.token.claim") != Some("false")
        });
        match configured {
            Some(mappers) => {
                for mapper in mappers {
                    let config: Vec<(&str, &str)> = mapper
                        .config
                        .iter()
                        .flatten()
                        .map(|(k, v)| (k.as_str(), v.as_str()))
                        .collect();
                    let mapper = ProtocolMapper::oidc(&mapper.name, &mapper.protocol_mapper, &config);
                    realm.ensure_protocol_mapper(client, &mapper).await?;
                }
            }
            None if self.scopes.iter().any(|s| s == "groups") => {
                let mapper = ProtocolMapper::group_membership(GROUP_MAPPER, GROUPS_CLAIM, false);
                realm.ensure_protocol_mapper(client, &mapper).await?;
                writes_groups = true;
            }
            None => {}
        }
        if token_exchange_at_gateway(self.auth) {
            let own = ProtocolMapper::audience(GATEWAY_AUDIENCE_MAPPER, client_id);
            realm.ensure_protocol_mapper(client, &own).await?;
        }
        let enforced = self.auth.enforce_at_gateway && self.auth.groups.as_ref().is_some_and(|g| !g.is_empty());
        if !enforced {
            return Ok(());
        }
        if !writes_groups {
            let mapper = ProtocolMapper::group_membership(GROUP_MAPPER, GROUPS_CLAIM, false);
            realm.ensure_protocol_mapper(client, &mapper).await?;
        }
        let gateway = ProtocolMapper::gateway_group_paths(GATEWAY_GROUP_MAPPER, GATEWAY_GROUPS_CLAIM);
        realm.ensure_protocol_mapper(client, &gateway).await?;
        Ok(())
    }

    /// The SPA client: present while enabled; removed when turned off or renamed (the previous id is the one the
    /// OIDC Secret records; the default id is checked too).
    async fn spa_client(&self, previous: Option<&str>) -> Result<Option<String>, NebariAppError> {
        let (names, base) = (self.names, &self.base);
        let config = self.auth.spa_client.as_ref();
        let spa_id = names.keycloak_spa_client(config.and_then(|s| s.client_id.as_deref()));
        let enabled = config.is_some_and(|s| s.enabled);
        let mut stale: BTreeSet<String> = [Some(names.keycloak_spa_client(None)), previous.map(str::to_string)]
            .into_iter()
            .flatten()
            .collect();
        if enabled {
            stale.remove(&spa_id);
        } else {
            stale.insert(spa_id.clone());
        }
        for id in &stale {
            delete_owned(&self.realm, id, names, self.policy.adopt_unowned_clients).await?;
        }
        if !enabled {
            return Ok(None);
        }
        let uris = vec![format!("{base}/*"), base.clone()];
        let spec = ClientSpec::spa(&spa_id)
            .with_redirect_uris(uris.clone())
            .with_web_origins(vec![base.clone()]);
        let settled = ClientUpdate {
            redirect_uris: Some(uris),
            web_origins: Some(vec![base.clone()]),
            full_scope_allowed: Some(false),
            ..Default::default()
        };
        ensure_owned(&self.realm, spec, settled, names, self.policy.adopt_unowned_clients).await?;
        Ok(Some(spa_id))
    }

    /// The device-flow client while enabled, with an audience mapper so its tokens are accepted by the
    /// confidential client `audience`; removed otherwise.
    async fn device_client(&self, audience: &str) -> Result<Option<String>, NebariAppError> {
        let device_id = self.names.keycloak_device_client();
        if !self.auth.device_flow_client.as_ref().is_some_and(|d| d.enabled) {
            delete_owned(&self.realm, &device_id, self.names, self.policy.adopt_unowned_clients).await?;
            return Ok(None);
        }
        let device = ensure_owned(
            &self.realm,
            ClientSpec::device_flow(&device_id),
            ClientUpdate {
                full_scope_allowed: Some(false),
                ..Default::default()
            },
            self.names,
            self.policy.adopt_unowned_clients,
        )
        .await?
        .value;
        self.realm
            .ensure_default_client_scopes(&device.id, &self.scopes, Some(SCOPE_DESCRIPTION))
            .await?;
        self.offline_access(&device.id).await?;
        let mapper = ProtocolMapper::audience(DEVICE_AUDIENCE_MAPPER, audience);
        self.realm.ensure_protocol_mapper(&device.id, &mapper).await?;
        Ok(Some(device_id))
    }

    /// Token exchange towards the confidential client `client`: granted to `peers` while enabled (v1 or v2, see
    /// `token_exchange.rs`), revoked otherwise; a client this pass `created` has nothing to revoke.
    async fn token_exchange(
        &self,
        controller: &NebariAppController,
        client: &Client,
        peers: &[String],
        created: bool,
    ) -> Result<(), NebariAppError> {
        if self.auth.token_exchange.as_ref().is_some_and(|t| t.enabled) {
            let flavour = controller
                .token_exchange
                .flavour(controller.settings.keycloak_token_exchange, &self.realm)
                .await?;
            return super::token_exchange::grant(&self.realm, flavour, client, peers).await;
        }
        if created {
            return Ok(());
        }
        super::token_exchange::revoke(&self.realm, client).await
    }
}

/// A new client secret as Keycloak makes them: 32 characters from [A-Za-z0-9] (about 190 bits).
fn generate_client_secret(rng: &mut impl Rng) -> String {
    rng.sample_iter(rand::distr::Alphanumeric)
        .take(CLIENT_SECRET_LEN)
        .map(char::from)
        .collect()
}

/// How long a generated client secret is (Keycloak's own length).
const CLIENT_SECRET_LEN: usize = 32;

/// The client `spec.client_id`, created with this app as its owner when missing, adopted when it is one the
/// replaced operator made; refused when it belongs to someone else. Then brought to `settled` (with the owner
/// record when adopting) in one write, or none when it already is.
async fn ensure_owned(
    realm: &RealmClient,
    spec: ClientSpec,
    mut settled: ClientUpdate,
    names: &AppNames,
    adopt: bool,
) -> Result<Ensured<Client>, NebariAppError> {
    if is_built_in(&spec.client_id) {
        return Err(NebariAppError::Refused {
            reason: "KeycloakClientNotOwned",
            message: format!(
                "{} is one of Keycloak's built-in clients; rename the app or namespace",
                spec.client_id
            ),
        });
    }
    let spec = spec.with_attribute(OWNER_ATTRIBUTE, &names.owner());
    let ensured = realm.ensure_client(&spec).await?;
    let client = &ensured.value;
    match ownership(client, names, adopt) {
        Ownership::Ours | Ownership::Adoptable => {
            settled
                .set_attributes
                .insert(OWNER_ATTRIBUTE.to_string(), names.owner());
            if settled.changes(client) {
                realm.update_client(&client.id, &settled).await?;
            }
            Ok(ensured)
        }
        Ownership::Foreign => Err(NebariAppError::Refused {
            reason: "KeycloakClientNotOwned",
            message: format!(
                "Keycloak client {} belongs to another NebariApp; choose another client id",
                client.client_id
            ),
        }),
        Ownership::Unowned => Err(NebariAppError::Refused {
            reason: "KeycloakClientNotOwned",
            message: format!(
                "Keycloak client {} already exists and is not managed by this NebariApp; choose another client id, \
                 or ask a realm admin to set its attribute {OWNER_ATTRIBUTE}={} (or to run the operator with \
                 --keycloak-adopt-unowned-clients while taking over the replaced operator's clients)",
                client.client_id,
                names.owner()
            ),
        }),
    }
}

/// Deletes the client `client_id` if it is this app's (owned or adoptable); another's is left alone.
async fn delete_owned(
    realm: &RealmClient,
    client_id: &str,
    names: &AppNames,
    adopt: bool,
) -> Result<(), NebariAppError> {
    let Some(client) = realm.find_client(client_id).await? else {
        return Ok(());
    };
    if !is_ours(&client, names, adopt) {
        tracing::info!(client_id, "leaving a Keycloak client this app does not own");
        return Ok(());
    }
    match realm.delete_client(&client.id).await {
        Ok(_) => Ok(()),
        Err(error) if error.is_not_found() => Ok(()),
        Err(error) => Err(error.into()),
    }
}

/// Deletes the app's Keycloak clients (confidential, SPA — default and overridden ids — and device flow),
/// after withdrawing token-exchange permissions. Missing clients count as deleted; clients another app owns are
/// left alone.
pub async fn delete_clients(
    controller: &NebariAppController,
    app: &NebariApp,
    names: &AppNames,
    status: Option<&NebariAppStatus>,
) -> Result<(), NebariAppError> {
    let auth = app.spec.auth.as_ref();
    let provisioned_before = status.is_some_and(|s| s.auth_config_hash.is_some());
    let provisions_now = auth.is_some_and(|a| a.enabled && a.provider == AuthProvider::Keycloak && a.provision_client);
    if !(provisioned_before || provisions_now) || !controller.settings.keycloak_enabled {
        return Ok(());
    }
    let realm = controller.keycloak.realm(&controller.settings.keycloak.realm);
    let adopt = controller.settings.keycloak_policy.adopt_unowned_clients;
    let confidential = realm.find_client(&names.keycloak_client()).await?;
    if let Some(client) = confidential.filter(|c| is_ours(c, names, adopt)) {
        super::token_exchange::revoke(&realm, &client).await?;
    }
    delete_owned(&realm, &names.keycloak_client(), names, adopt).await?;
    delete_owned(&realm, &names.keycloak_spa_client(None), names, adopt).await?;
    if let Some(custom) = auth
        .and_then(|a| a.spa_client.as_ref())
        .and_then(|s| s.client_id.as_deref())
    {
        delete_owned(&realm, custom, names, adopt).await?;
    }
    delete_owned(&realm, &names.keycloak_device_client(), names, adopt).await?;
    // The groups the status remembers, and those the spec names: a pass that created groups and did not live to
    // record them (a timeout, a crash) left them only in the spec. Reverting is safe for any name: only members
    // this app recorded are removed, and only a group this app owns is deleted.
    let groups = AppGroups::new(&realm, names);
    let remembered = status.iter().flat_map(|s| s.keycloak_groups.iter().cloned());
    let named = auth
        .map(|auth| keycloak_groups::wanted(auth))
        .unwrap_or_default()
        .into_keys();
    for group in remembered.chain(named).collect::<BTreeSet<String>>() {
        groups.revert(&group).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_client_secrets_look_like_keycloaks_and_differ() {
        let mut rng = rand::rng();
        let (a, b) = (generate_client_secret(&mut rng), generate_client_secret(&mut rng));
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric()), "{a}");
        assert_ne!(a, b);
    }

    fn client(client_id: &str, owner: Option<&str>) -> Client {
        let mut client = Client {
            id: "uuid".into(),
            client_id: client_id.into(),
            ..Default::default()
        };
        if let Some(owner) = owner {
            client.attributes.insert(OWNER_ATTRIBUTE.into(), owner.into());
        }
        client
    }

    #[test]
    fn a_client_is_ours_only_by_owner_or_under_a_derived_id_without_one() {
        let names = AppNames::new("team", "web");
        assert_eq!(
            ownership(&client("custom", Some("team/web")), &names, false),
            Ownership::Ours
        );
        assert_eq!(ownership(&client("team-web", None), &names, true), Ownership::Adoptable);
        assert_eq!(
            ownership(&client("team-web", None), &names, false),
            Ownership::Unowned,
            "ownerless clients are adopted only when the platform opts in"
        );
        assert_eq!(
            ownership(&client("team-web-spa", Some("")), &names, true),
            Ownership::Adoptable
        );
        assert_eq!(
            ownership(&client("team-web-device", None), &names, true),
            Ownership::Adoptable
        );
        assert_eq!(
            ownership(&client("team-web", Some("team-web/x")), &names, true),
            Ownership::Foreign,
            "a clash of derived names does not hand over another app's client"
        );
        assert_eq!(
            ownership(&client("admin-console", None), &names, true),
            Ownership::Unowned
        );
        // Namespace `admin` + app `cli` and `realm`/`management` derive Keycloak's own clients.
        for (namespace, app, id) in [
            ("admin", "cli", "admin-cli"),
            ("realm", "management", "realm-management"),
        ] {
            let names = AppNames::new(namespace, app);
            assert_eq!(names.keycloak_client(), id);
            assert_eq!(ownership(&client(id, None), &names, true), Ownership::Unowned);
            assert_eq!(
                ownership(&client(id, Some(&names.owner())), &names, true),
                Ownership::Unowned
            );
        }
    }
}
