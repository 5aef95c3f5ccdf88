//! The JSON representations the admin API answers with, built from the model with Keycloak's key order and
//! its brief/full variants.

use std::collections::BTreeMap;

use serde::Serialize;

use super::model::{Client, ClientSettings, Group, ProtocolMapper, Realm, User};

/// What the caller may do with a group (`access` on group rows).
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupAccess {
    /// View the group.
    pub view: bool,
    /// View its members.
    pub view_members: bool,
    /// Add and remove members.
    pub manage_members: bool,
    /// Change the group.
    pub manage: bool,
    /// Manage membership.
    pub manage_membership: bool,
}

impl GroupAccess {
    /// Access of a caller who can (or cannot) manage users.
    pub fn for_manager(manage: bool) -> Self {
        Self {
            view: true,
            view_members: true,
            manage_members: manage,
            manage,
            manage_membership: manage,
        }
    }
}

/// A group row (`GroupRepresentation`).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupRep {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
    /// Description, when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Path.
    pub path: String,
    /// Parent id, for subgroups.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// Number of direct children, when requested.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub_group_count: Option<usize>,
    /// Nested subgroups (only filled by searches).
    pub sub_groups: Vec<GroupRep>,
    /// Attributes (full representation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes: Option<BTreeMap<String, Vec<String>>>,
    /// Realm roles (full representation; the emulator has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub realm_roles: Option<Vec<String>>,
    /// Client roles (full representation; the emulator has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_roles: Option<BTreeMap<String, Vec<String>>>,
    /// Caller's access.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access: Option<GroupAccess>,
}

/// Which optional parts of a group row to include.
#[derive(Clone, Copy, Debug)]
pub struct GroupShape {
    /// Brief drops attributes and roles.
    pub brief: bool,
    /// Include `subGroupCount`.
    pub sub_group_count: bool,
    /// Include `access`.
    pub access: Option<GroupAccess>,
}

/// A group row.
pub fn group_rep(realm: &Realm, group: &Group, shape: GroupShape) -> GroupRep {
    GroupRep {
        id: group.id.clone(),
        name: group.name.clone(),
        description: group.description.clone(),
        path: realm.group_path(&group.id),
        parent_id: group.parent_id.clone(),
        sub_group_count: shape.sub_group_count.then(|| realm.sub_group_count(&group.id)),
        sub_groups: Vec::new(),
        attributes: (!shape.brief).then(|| group.attributes.clone()),
        realm_roles: (!shape.brief).then(Vec::new),
        client_roles: (!shape.brief).then(BTreeMap::new),
        access: shape.access,
    }
}

/// A user's `access` object: listings carry only `manage`, single reads the full set.
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UserAccess {
    /// Manage group membership (single reads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manage_group_membership: Option<bool>,
    /// View (single reads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub view: Option<bool>,
    /// Map roles (single reads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub map_roles: Option<bool>,
    /// Impersonate (single reads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub impersonate: Option<bool>,
    /// Manage.
    pub manage: bool,
}

impl UserAccess {
    /// The listing form: `{"manage":bool}`.
    pub fn listing(manage: bool) -> Self {
        Self {
            manage_group_membership: None,
            view: None,
            map_roles: None,
            impersonate: None,
            manage,
        }
    }

    /// The single-read form.
    pub fn full(manage: bool) -> Self {
        Self {
            manage_group_membership: Some(manage),
            view: Some(true),
            map_roles: Some(manage),
            impersonate: Some(manage),
            manage,
        }
    }
}

/// A user (`UserRepresentation`).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UserRep {
    /// Id.
    pub id: String,
    /// Username.
    pub username: String,
    /// First name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_name: Option<String>,
    /// Last name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_name: Option<String>,
    /// Email.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// Email verified.
    pub email_verified: bool,
    /// Attributes, when any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes: Option<BTreeMap<String, Vec<String>>>,
    /// Enabled.
    pub enabled: bool,
    /// Creation time.
    pub created_timestamp: u64,
    /// For service-account users, the internal id of the client.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_account_client_id: Option<String>,
    /// TOTP configured (full only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub totp: Option<bool>,
    /// Disableable credential types (full only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disableable_credential_types: Option<Vec<String>>,
    /// Required actions (full only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required_actions: Option<Vec<String>>,
    /// Not-before (full only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_before: Option<i64>,
    /// Caller's access.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access: Option<UserAccess>,
}

/// A user representation; `brief` drops the credential fields.
pub fn user_rep(user: &User, brief: bool, access: Option<UserAccess>) -> UserRep {
    UserRep {
        id: user.id.clone(),
        username: user.username.clone(),
        first_name: user.first_name.clone(),
        last_name: user.last_name.clone(),
        email: user.email.clone(),
        email_verified: user.email_verified,
        attributes: (!user.attributes.is_empty()).then(|| user.attributes.clone()),
        enabled: user.enabled,
        created_timestamp: user.created_timestamp,
        service_account_client_id: user.service_account_client.clone(),
        totp: (!brief).then_some(false),
        disableable_credential_types: (!brief).then(Vec::new),
        required_actions: (!brief).then(Vec::new),
        not_before: (!brief).then_some(0),
        access,
    }
}

/// What the caller may do with a client.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ClientAccess {
    /// View.
    pub view: bool,
    /// Configure.
    pub configure: bool,
    /// Manage.
    pub manage: bool,
}

/// A client (`ClientRepresentation`).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientRep {
    /// Internal id.
    pub id: String,
    /// The stored settings, in Keycloak's key order.
    #[serde(flatten)]
    pub settings: ClientSettings,
    /// Mappers; left out when the client has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_mappers: Option<Vec<ProtocolMapper>>,
    /// Names of default client scopes.
    pub default_client_scopes: Vec<String>,
    /// Names of optional client scopes.
    pub optional_client_scopes: Vec<String>,
    /// Caller's access.
    pub access: ClientAccess,
}

/// A client representation.
pub fn client_rep(realm: &Realm, client: &Client, manage: bool) -> ClientRep {
    let names = |ids: &[String]| -> Vec<String> {
        ids.iter()
            .filter_map(|id| realm.client_scopes.get(id))
            .map(|s| s.name.clone())
            .collect()
    };
    ClientRep {
        id: client.id.clone(),
        settings: client.settings.clone(),
        protocol_mappers: (!client.protocol_mappers.is_empty()).then(|| client.protocol_mappers.clone()),
        default_client_scopes: names(&client.default_scopes),
        optional_client_scopes: names(&client.optional_scopes),
        access: ClientAccess {
            view: true,
            configure: manage,
            manage,
        },
    }
}
