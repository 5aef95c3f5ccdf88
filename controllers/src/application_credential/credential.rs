//! Minting one application credential exactly once and storing it in its Secret.
//!
//! The order makes every step resumable after a crash or an error:
//! 1. the intended name and secret are persisted (see [`super::pending`]), unless an intention for this very
//!    rotation is already there;
//! 2. the credential is created in Keystone with that name and secret; a 409 means an earlier attempt created
//!    it, so it is looked up by name and proven ours by logging in with the recorded secret;
//! 3. the immutable Secret is created (an existing one holding the same credential id is fine).
//!
//! The status is written by the caller after this returns, and the intention is deleted after that.

use crds::keystone::{KeystoneApplicationCredential, service_name};
use framework::clock::Clock;
use framework::error::{KubeError, kube_error};
use framework::object_cache::{Cached, ObjectCache};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, PartialObjectMeta, PostParams};
use kube::{Client, ResourceExt};

use super::endpoint::Resolved;
use super::error::AcError;
use super::pending::{self, IntendedCredential};
use super::rotation;
use super::secret;
use super::status::{self, NewCredential};
use crate::keystone::{AccessRule, KeystoneClient, KeystoneError, NewApplicationCredential, ServiceUser};

/// Project and domains the service user's token is scoped to.
#[derive(Clone, Debug)]
pub struct Scope {
    /// Domain of the service user.
    pub user_domain: String,
    /// Project the token is scoped to.
    pub project: String,
    /// Domain of that project.
    pub project_domain: String,
}

/// What minting needs besides the object.
pub struct Minter<'a> {
    /// Kubernetes client.
    pub client: &'a Client,
    /// Keystone client.
    pub keystone: &'a KeystoneClient,
    /// Token scope.
    pub scope: &'a Scope,
    /// The time a new credential's creation and expiry count from.
    pub clock: &'a dyn Clock,
    /// Field manager for the objects created.
    pub field_manager: &'a str,
    /// The credential Secrets as the watch saw them: a creation record the watch knows to be absent is created
    /// without reading first.
    pub cached: &'a ObjectCache<PartialObjectMeta<Secret>>,
}

/// Whether a status was written by another operator (keystone-operator): a credential recorded without our
/// `sha256:` security hash, whose permissions we have not checked ourselves.
pub fn recorded_elsewhere(status: Option<&crds::keystone::KeystoneApplicationCredentialStatus>) -> bool {
    status.is_some_and(|s| {
        s.ac_id.as_deref().is_some_and(|id| !id.is_empty())
            && !s.security_hash.as_deref().is_some_and(|h| h.starts_with("sha256:"))
    })
}

/// The service user `ac` names, with its password read now, at the Keystone `keystone` resolved.
pub async fn service_user(
    client: &Client,
    scope: &Scope,
    ac: &KeystoneApplicationCredential,
    keystone: &Resolved,
) -> Result<ServiceUser, AcError> {
    let namespace = ac.namespace().unwrap_or_default();
    let password = super::password::read(client, &namespace, &ac.spec.secret, &ac.spec.password_selector).await?;
    Ok(ServiceUser {
        endpoint: keystone.endpoint.clone(),
        user_name: ac.spec.user_name.clone(),
        user_domain: scope.user_domain.clone(),
        project_name: scope.project.clone(),
        project_domain: scope.project_domain.clone(),
        password,
    })
}

impl Minter<'_> {
    /// The service user `ac` names, with its password read now, at the Keystone `keystone` resolved.
    async fn service_user(
        &self,
        ac: &KeystoneApplicationCredential,
        keystone: &Resolved,
    ) -> Result<ServiceUser, AcError> {
        service_user(self.client, self.scope, ac, keystone).await
    }

    /// Whether the credential `ac`'s status records (made by the replaced operator) has exactly the permissions
    /// the spec asks for — roles, access rules, unrestricted — so it can be taken over instead of replaced.
    pub async fn matches_spec(&self, ac: &KeystoneApplicationCredential, keystone: &Resolved) -> Result<bool, AcError> {
        let Some(id) = ac.status.as_ref().and_then(|s| s.ac_id.clone()) else {
            return Ok(false);
        };
        let user = self.service_user(ac, keystone).await?;
        let credentials = self.keystone.list_application_credentials(&user).await?;
        let Some(found) = credentials.into_iter().find(|c| c.id == id) else {
            return Ok(false);
        };
        let wanted_roles: std::collections::BTreeSet<&str> = ac.spec.roles.iter().map(String::as_str).collect();
        let found_roles: std::collections::BTreeSet<&str> = found.roles.iter().map(String::as_str).collect();
        let rule =
            |service: &str, path: &str, method: &str| (service.to_string(), path.to_string(), method.to_string());
        let wanted_rules: std::collections::BTreeSet<_> = ac
            .spec
            .access_rules
            .iter()
            .flatten()
            .map(|r| rule(&r.service, &r.path, r.method.as_str()))
            .collect();
        let found_rules: std::collections::BTreeSet<_> = found
            .access_rules
            .iter()
            .map(|r| rule(&r.service, &r.path, &r.method))
            .collect();
        Ok(wanted_roles == found_roles && wanted_rules == found_rules && found.unrestricted == ac.spec.unrestricted)
    }

    /// Creates the next credential of `ac` in the Keystone at `keystone`, or completes an interrupted creation.
    pub async fn mint(
        &self,
        ac: &KeystoneApplicationCredential,
        keystone: &Resolved,
    ) -> Result<NewCredential, AcError> {
        let namespace = ac.namespace().unwrap_or_default();
        let name = ac.name_any();
        let service = service_name(&name);
        let uid = ac.uid().unwrap_or_default();
        let security_hash = rotation::security_hash(&ac.spec);
        let replaces = ac.status.as_ref().and_then(|s| s.ac_id.clone()).unwrap_or_default();
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &namespace);

        let user = self.service_user(ac, keystone).await?;

        let intended = self
            .intention(&secrets, ac, service, &uid, &replaces, &security_hash)
            .await?;
        let now = self.clock.now();
        let expires_at = rotation::expires_at(now, ac.spec.expiration_days)?;
        let access_rules: Vec<AccessRule> = ac
            .spec
            .access_rules
            .iter()
            .flatten()
            .map(|r| AccessRule {
                service: r.service.clone(),
                path: r.path.clone(),
                method: r.method.as_str().into(),
            })
            .collect();
        let description = format!(
            "Created by platform-operator for KeystoneApplicationCredential {namespace}/{name} (user {})",
            ac.spec.user_name
        );
        let request = NewApplicationCredential {
            name: &intended.name,
            description: &description,
            secret: &intended.secret,
            expires_at,
            roles: &ac.spec.roles,
            unrestricted: ac.spec.unrestricted,
            access_rules: &access_rules,
        };
        let mut minted_here = true;
        let created = match self.keystone.create_application_credential(&user, &request).await {
            Ok(created) => created,
            Err(KeystoneError::Conflict { .. }) => {
                let found = self.keystone.find_application_credential(&user, &intended.name).await?;
                let proven = match &found {
                    Some(found) => {
                        self.keystone
                            .application_credential_authenticates(&keystone.endpoint, &found.id, &intended.secret)
                            .await?
                    }
                    None => false,
                };
                match found {
                    Some(found) if proven => {
                        tracing::info!(credential = %found.id, name = %intended.name, "resumed an interrupted creation");
                        minted_here = false;
                        found
                    }
                    _ => {
                        discard(&secrets, service).await?;
                        return Err(AcError::CredentialNameTaken {
                            name: intended.name.clone(),
                        });
                    }
                }
            }
            Err(error) => return Err(error.into()),
        };

        let expires_at = status::to_seconds(created.expires_at.unwrap_or(expires_at));
        let secret_name = secret::secret_name(service, &created.id);
        let object = secret::build(ac, service, &created.id, &intended.secret, expires_at);
        let params = PostParams {
            field_manager: Some(self.field_manager.to_string()),
            ..PostParams::default()
        };
        match secrets.create(&params, &object).await {
            Ok(_) => framework::changes::record(format!("created Secret {secret_name}")),
            Err(kube::Error::Api(status)) if status.code == 409 => {
                let existing = secrets
                    .get(&secret_name)
                    .await
                    .map_err(kube_error(format!("reading Secret {secret_name}")))?;
                if secret::stored_id(&existing).as_deref() != Some(created.id.as_str()) {
                    // Two credential ids sharing their first five characters: leave this credential to expire
                    // unused and mint another.
                    discard(&secrets, service).await?;
                    return Err(AcError::SecretNameCollision { name: secret_name });
                }
            }
            Err(source) => {
                return Err(AcError::from(KubeError::new(
                    format!("creating Secret {secret_name}"),
                    source,
                )));
            }
        }
        Ok(NewCredential {
            id: created.id,
            secret_name,
            created_at: now,
            expires_at,
            security_hash,
            minted_here,
        })
    }

    /// The persisted intention for this rotation, written now if there is none (or only one for another rotation).
    async fn intention(
        &self,
        secrets: &Api<Secret>,
        ac: &KeystoneApplicationCredential,
        service: &str,
        uid: &str,
        replaces: &str,
        security_hash: &str,
    ) -> Result<IntendedCredential, AcError> {
        let record_name = pending::record_name(service);
        let namespace = ac.namespace();
        // The watch may lag: "absent" only saves the read, and a record it missed makes the create fail with a
        // conflict, after which the record is read as usual.
        let mut known_absent = matches!(self.cached.get(namespace.as_deref(), &record_name), Cached::Absent);
        loop {
            if !known_absent {
                let existing = secrets
                    .get_opt(&record_name)
                    .await
                    .map_err(kube_error(format!("reading Secret {record_name}")))?;
                if let Some(record) = &existing {
                    match pending::read(record, uid) {
                        Some(intended) if intended.matches(replaces, security_hash) => return Ok(intended),
                        _ => discard(secrets, service).await?,
                    }
                }
            }
            let intended = IntendedCredential::generate(&ac.name_any(), replaces, security_hash, &mut rand::rng());
            let params = PostParams {
                field_manager: Some(self.field_manager.to_string()),
                ..PostParams::default()
            };
            match secrets.create(&params, &pending::build(ac, service, &intended)).await {
                Ok(_) => {
                    framework::changes::record(format!("recorded the intent in Secret {record_name}"));
                    return Ok(intended);
                }
                Err(kube::Error::Api(status)) if status.code == 409 && known_absent => known_absent = false,
                Err(source) => {
                    return Err(AcError::from(KubeError::new(
                        format!("creating Secret {record_name}"),
                        source,
                    )));
                }
            }
        }
    }
}

/// Deletes the creation record of `service` (the credential is recorded in the status, or the record no longer
/// applies); a missing record is fine.
pub async fn discard(secrets: &Api<Secret>, service: &str) -> Result<(), AcError> {
    let record_name = pending::record_name(service);
    match secrets.delete(&record_name, &DeleteParams::default()).await {
        Ok(_) => {
            framework::changes::record(format!("deleted Secret {record_name}"));
            Ok(())
        }
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(source) => Err(AcError::from(KubeError::new(
            format!("deleting Secret {record_name}"),
            source,
        ))),
    }
}
