//! The rules Keycloak enforces on a realm's data, next to the data: unique group names per parent,
//! 255-character columns, lower-cased usernames, client defaults and merges, admin-permission objects. They
//! answer with Keycloak's error shapes.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::ids::{new_id, new_secret};
use super::model::{
    AuthzResource, AuthzScope, CLIENT_PERMISSION_SCOPES, Client, ClientPermissions, ClientSettings, Group, Policy,
    ProtocolMapper, Realm, User,
};
use super::wire::{ApiError, check_column_length};

/// Protocol mapper types the emulator accepts (others get 404 `ProtocolMapper provider not found`).
const KNOWN_MAPPER_TYPES: &[&str] = &[
    "oidc-address-mapper",
    "oidc-allowed-origins-mapper",
    "oidc-audience-mapper",
    "oidc-audience-resolve-mapper",
    "oidc-claims-param-token-mapper",
    "oidc-full-name-mapper",
    "oidc-group-membership-mapper",
    "oidc-hardcoded-claim-mapper",
    "oidc-hardcoded-role-mapper",
    "oidc-role-name-mapper",
    "oidc-sub-mapper",
    "oidc-usermodel-attribute-mapper",
    "oidc-usermodel-client-role-mapper",
    "oidc-usermodel-property-mapper",
    "oidc-usermodel-realm-role-mapper",
    "oidc-usersessionmodel-note-mapper",
];

/// The fields of a user being created.
#[derive(Clone, Debug, Default)]
pub struct NewUser {
    /// Username (lower-cased on store).
    pub username: String,
    /// Email (lower-cased on store).
    pub email: Option<String>,
    /// First name.
    pub first_name: Option<String>,
    /// Last name.
    pub last_name: Option<String>,
    /// Whether the account may log in.
    pub enabled: bool,
    /// Attributes.
    pub attributes: BTreeMap<String, Vec<String>>,
}

/// A group name as it appears inside a path: Keycloak escapes `/` as `~/`.
fn escape_path_segment(name: &str) -> String {
    name.replace('/', "~/")
}

/// Splits a group path into names, honouring `~/` escapes; leading and trailing slashes are ignored.
pub fn split_group_path(path: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut current = String::new();
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '~' if chars.peek() == Some(&'/') => {
                current.push('/');
                chars.next();
            }
            '/' => {
                if !current.is_empty() {
                    names.push(std::mem::take(&mut current));
                }
            }
            other => current.push(other),
        }
    }
    if !current.is_empty() {
        names.push(current);
    }
    names
}

impl Realm {
    /// The groups directly under `parent` (`None`: top level), ordered by name.
    pub fn children_of(&self, parent: Option<&str>) -> Vec<&Group> {
        let mut children: Vec<&Group> = self
            .groups
            .values()
            .filter(|g| g.parent_id.as_deref() == parent)
            .collect();
        children.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.id.cmp(&b.id)));
        children
    }

    /// How many groups are directly under `id`.
    pub fn sub_group_count(&self, id: &str) -> usize {
        self.groups
            .values()
            .filter(|g| g.parent_id.as_deref() == Some(id))
            .count()
    }

    /// The slash-separated path of a group, e.g. `/parent/child`.
    pub fn group_path(&self, id: &str) -> String {
        let mut names = Vec::new();
        let mut current = self.groups.get(id);
        while let Some(group) = current {
            names.push(escape_path_segment(&group.name));
            current = group.parent_id.as_deref().and_then(|p| self.groups.get(p));
        }
        names.reverse();
        format!("/{}", names.join("/"))
    }

    /// The group at a path.
    pub fn group_by_path(&self, path: &str) -> Option<&Group> {
        let mut parent: Option<&str> = None;
        let mut found = None;
        for name in split_group_path(path) {
            let group = self.children_of(parent).into_iter().find(|g| g.name == name)?;
            parent = Some(group.id.as_str());
            found = Some(group);
        }
        found
    }

    /// A group and all its descendants.
    pub fn subtree(&self, id: &str) -> Vec<String> {
        let mut ids = vec![id.to_string()];
        let mut index = 0;
        while index < ids.len() {
            let parent = ids[index].clone();
            ids.extend(
                self.groups
                    .values()
                    .filter(|g| g.parent_id.as_deref() == Some(&parent))
                    .map(|g| g.id.clone()),
            );
            index += 1;
        }
        ids
    }

    /// Checks a group name for a place in the tree: present, short enough, unique among its siblings.
    pub fn check_group_name(&self, parent: Option<&str>, name: &str, except: Option<&str>) -> Result<(), ApiError> {
        if name.trim().is_empty() {
            return Err(ApiError::bad_request("Group name is missing"));
        }
        check_column_length(name)?;
        let taken = self
            .children_of(parent)
            .iter()
            .any(|g| g.name == name && Some(g.id.as_str()) != except);
        if !taken {
            return Ok(());
        }
        // A rename compares against siblings whatever the level; a create at the top level has its own text.
        Err(ApiError::conflict(if parent.is_none() && except.is_none() {
            format!("Top level group named '{name}' already exists.")
        } else {
            format!("Sibling group named '{name}' already exists.")
        }))
    }

    /// Creates a group under `parent` (or at the top level); returns its id.
    pub fn add_group(
        &mut self,
        parent: Option<&str>,
        name: &str,
        description: Option<String>,
        attributes: BTreeMap<String, Vec<String>>,
    ) -> Result<String, ApiError> {
        self.check_group_name(parent, name, None)?;
        if let Some(description) = &description {
            check_column_length(description)?;
        }
        let id = new_id();
        self.groups.insert(
            id.clone(),
            Group {
                id: id.clone(),
                name: name.into(),
                parent_id: parent.map(str::to_string),
                description,
                attributes,
            },
        );
        Ok(id)
    }

    /// Creates the missing groups of a path; returns the id of the last one (attributes set on it when new).
    pub fn ensure_group_path(
        &mut self,
        path: &str,
        attributes: &BTreeMap<String, Vec<String>>,
    ) -> Result<String, ApiError> {
        let names = split_group_path(path);
        if names.is_empty() {
            return Err(ApiError::bad_request("Group name is missing"));
        }
        let mut parent: Option<String> = None;
        for (index, name) in names.iter().enumerate() {
            let existing = self
                .children_of(parent.as_deref())
                .into_iter()
                .find(|g| &g.name == name)
                .map(|g| g.id.clone());
            let id = match existing {
                Some(id) => id,
                None => {
                    let attrs = if index + 1 == names.len() {
                        attributes.clone()
                    } else {
                        BTreeMap::new()
                    };
                    self.add_group(parent.as_deref(), name, None, attrs)?
                }
            };
            parent = Some(id);
        }
        parent.ok_or_else(|| ApiError::bad_request("Group name is missing"))
    }

    /// Moves an existing group under `parent` (or to the top level).
    pub fn move_group(&mut self, id: &str, parent: Option<&str>) -> Result<(), ApiError> {
        let name = self
            .groups
            .get(id)
            .map(|g| g.name.clone())
            .ok_or_else(|| ApiError::not_found("Could not find child by id"))?;
        if let Some(parent) = parent
            && self.subtree(id).iter().any(|g| g == parent)
        {
            return Err(ApiError::bad_request("Cannot move group to its own subgroup"));
        }
        if self.groups.get(id).and_then(|g| g.parent_id.as_deref()) == parent {
            return Ok(());
        }
        self.check_group_name(parent, &name, Some(id))?;
        if let Some(group) = self.groups.get_mut(id) {
            group.parent_id = parent.map(str::to_string);
        }
        Ok(())
    }

    /// Deletes a group, its subtree and their memberships.
    pub fn remove_group(&mut self, id: &str) {
        let doomed: BTreeSet<String> = self.subtree(id).into_iter().collect();
        self.groups.retain(|gid, _| !doomed.contains(gid));
        self.memberships.retain(|(_, gid)| !doomed.contains(gid));
    }

    /// A user by username (Keycloak compares lower-cased usernames).
    pub fn user_by_username(&self, username: &str) -> Option<&User> {
        let wanted = username.to_lowercase();
        self.users.values().find(|u| u.username == wanted)
    }

    /// A user by email (lower-cased).
    pub fn user_by_email(&self, email: &str) -> Option<&User> {
        let wanted = email.to_lowercase();
        self.users
            .values()
            .find(|u| u.email.as_deref() == Some(wanted.as_str()))
    }

    /// Creates a user; returns its id. Duplicates of username or email are 409s, as in Keycloak.
    pub fn add_user(&mut self, new: NewUser, now_millis: u64) -> Result<String, ApiError> {
        if new.username.trim().is_empty() {
            return Err(ApiError::bad_request("User name is missing"));
        }
        check_column_length(&new.username)?;
        if self.user_by_username(&new.username).is_some() {
            return Err(ApiError::conflict("User exists with same username".into()));
        }
        if let Some(email) = &new.email {
            check_column_length(email)?;
            if self.user_by_email(email).is_some() {
                return Err(ApiError::conflict("User exists with same email".into()));
            }
        }
        let id = new_id();
        self.users.insert(
            id.clone(),
            User {
                id: id.clone(),
                username: new.username.to_lowercase(),
                email: new.email.map(|e| e.to_lowercase()),
                first_name: new.first_name,
                last_name: new.last_name,
                enabled: new.enabled,
                email_verified: false,
                created_timestamp: now_millis,
                attributes: new.attributes,
                password: None,
                roles: BTreeSet::new(),
                service_account_client: None,
            },
        );
        Ok(id)
    }

    /// Deletes a user and its memberships.
    pub fn remove_user(&mut self, id: &str) {
        self.users.remove(id);
        self.memberships.retain(|(uid, _)| uid != id);
    }

    /// The ids of a user's direct groups.
    pub fn groups_of(&self, user: &str) -> Vec<&Group> {
        let mut groups: Vec<&Group> = self
            .memberships
            .iter()
            .filter(|(uid, _)| uid == user)
            .filter_map(|(_, gid)| self.groups.get(gid))
            .collect();
        groups.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.id.cmp(&b.id)));
        groups
    }

    /// The direct members of a group, ordered by username.
    pub fn members_of(&self, group: &str) -> Vec<&User> {
        let mut users: Vec<&User> = self
            .memberships
            .iter()
            .filter(|(_, gid)| gid == group)
            .filter_map(|(uid, _)| self.users.get(uid))
            .collect();
        users.sort_by(|a, b| a.username.cmp(&b.username));
        users
    }

    /// A client by its exact `clientId`.
    pub fn client_by_client_id(&self, client_id: &str) -> Option<&Client> {
        self.clients.values().find(|c| c.settings.client_id == client_id)
    }

    /// Adds a client with the realm's default and optional scopes.
    pub fn insert_client(&mut self, id: String, settings: ClientSettings, protocol_mappers: Vec<ProtocolMapper>) {
        let client = Client {
            id: id.clone(),
            settings,
            protocol_mappers,
            default_scopes: self.default_default_scopes.clone(),
            optional_scopes: self.default_optional_scopes.clone(),
            permissions: None,
        };
        self.clients.insert(id, client);
    }

    /// Creates a client from a create request (any JSON object), applying Keycloak's defaults; returns its id.
    pub fn create_client(&mut self, request: &Value, now_millis: u64) -> Result<String, ApiError> {
        let Some(fields) = request.as_object() else {
            return Err(ApiError::cannot_parse_json());
        };
        let client_id = match fields.get("clientId") {
            Some(Value::String(id)) if !id.trim().is_empty() => id.clone(),
            _ => return Err(ApiError::invalid_input("Client ID is missing")),
        };
        let mut settings = merge_client_settings(&ClientSettings::defaults(&client_id), request)?;
        check_client_settings(&settings)?;
        if self.client_by_client_id(&client_id).is_some() {
            return Err(ApiError::conflict(format!("Client {client_id} already exists")));
        }
        let mut mappers = Vec::new();
        if let Some(inline) = fields.get("protocolMappers").filter(|v| !v.is_null()) {
            let inline: Vec<ProtocolMapper> =
                serde_json::from_value(inline.clone()).map_err(|_| ApiError::cannot_parse_json())?;
            for mut mapper in inline {
                check_mapper(&mapper)?;
                if mappers.iter().any(|m: &ProtocolMapper| m.name == mapper.name) {
                    return Err(ApiError::conflict("Protocol mapper exists with same name".into()));
                }
                mapper.id = Some(new_id());
                mappers.push(mapper);
            }
        }
        if settings.public_client || settings.bearer_only {
            settings.secret = None;
        } else {
            if settings.secret.is_none() {
                settings.secret = Some(new_secret());
            }
            settings
                .attributes
                .entry("client.secret.creation.time".into())
                .or_insert_with(|| (now_millis / 1000).to_string());
        }
        settings
            .attributes
            .entry("realm_client".into())
            .or_insert_with(|| "false".into());
        let id = match fields.get("id") {
            Some(Value::String(id)) if !id.is_empty() && !self.clients.contains_key(id) => id.clone(),
            _ => new_id(),
        };
        let service_account = settings.service_accounts_enabled;
        self.insert_client(id.clone(), settings, mappers);
        if service_account {
            self.ensure_service_account(&id, now_millis)?;
        }
        Ok(id)
    }

    /// Merges an update request into a client (absent or null fields are kept; attributes merge key by key).
    pub fn update_client(&mut self, id: &str, request: &Value, now_millis: u64) -> Result<(), ApiError> {
        let current = self
            .clients
            .get(id)
            .ok_or_else(|| ApiError::not_found("Could not find client"))?;
        let settings = merge_client_settings(&current.settings, request)?;
        check_client_settings(&settings)?;
        if settings.client_id != current.settings.client_id && self.client_by_client_id(&settings.client_id).is_some() {
            return Err(ApiError::conflict(format!(
                "Client {} already exists",
                settings.client_id
            )));
        }
        let service_account = settings.service_accounts_enabled;
        let had_service_account = current.settings.service_accounts_enabled;
        if let Some(client) = self.clients.get_mut(id) {
            client.settings = settings;
        }
        if service_account {
            self.ensure_service_account(id, now_millis)?;
        } else if had_service_account {
            self.detach_service_account_scope(id);
        }
        Ok(())
    }

    /// Removes the `service_account` scope from a client whose service account was turned off, as Keycloak does.
    fn detach_service_account_scope(&mut self, client: &str) {
        let scope = self.service_account_scope();
        if let (Some(scope), Some(client)) = (scope, self.clients.get_mut(client)) {
            client.default_scopes.retain(|s| *s != scope);
        }
    }

    /// The id of the realm's `service_account` scope, if the realm has it.
    fn service_account_scope(&self) -> Option<String> {
        self.client_scopes
            .values()
            .find(|s| s.name == crate::store::SERVICE_ACCOUNT_SCOPE)
            .map(|s| s.id.clone())
    }

    fn ensure_service_account(&mut self, client: &str, now_millis: u64) -> Result<(), ApiError> {
        // Keycloak 26.1+ gives every client with a service account the `service_account` default scope.
        if let Some(scope) = self.service_account_scope()
            && let Some(entry) = self.clients.get_mut(client)
            && !entry.default_scopes.contains(&scope)
        {
            entry.default_scopes.push(scope);
        }
        if self
            .users
            .values()
            .any(|u| u.service_account_client.as_deref() == Some(client))
        {
            return Ok(());
        }
        let client_id = self
            .clients
            .get(client)
            .map(|c| c.settings.client_id.clone())
            .unwrap_or_default();
        let username = format!("service-account-{client_id}");
        let id = self.add_user(
            NewUser {
                username,
                enabled: true,
                ..NewUser::default()
            },
            now_millis,
        )?;
        if let Some(user) = self.users.get_mut(&id) {
            user.service_account_client = Some(client.to_string());
        }
        Ok(())
    }

    /// Deletes a client, its service-account user and its admin-permission objects.
    pub fn remove_client(&mut self, id: &str) {
        if let Some(client) = self.clients.remove(id)
            && let Some(permissions) = client.permissions
        {
            self.drop_permission_objects(&permissions);
        }
        let accounts: Vec<String> = self
            .users
            .values()
            .filter(|u| u.service_account_client.as_deref() == Some(id))
            .map(|u| u.id.clone())
            .collect();
        for account in accounts {
            self.remove_user(&account);
        }
    }

    /// An authz scope by name, created when missing.
    fn ensure_authz_scope(&mut self, name: &str) -> String {
        if let Some(scope) = self.authz.scopes.values().find(|s| s.name == name) {
            return scope.id.clone();
        }
        let id = new_id();
        self.authz.scopes.insert(
            id.clone(),
            AuthzScope {
                id: id.clone(),
                name: name.into(),
            },
        );
        id
    }

    /// Enables a client's fine-grained admin permissions, creating its resource and one permission per scope.
    pub fn enable_client_permissions(&mut self, client: &str) -> Option<ClientPermissions> {
        if let Some(existing) = self.clients.get(client)?.permissions.clone() {
            return Some(existing);
        }
        let scope_ids: Vec<(String, String)> = CLIENT_PERMISSION_SCOPES
            .iter()
            .map(|s| (s.to_string(), self.ensure_authz_scope(s)))
            .collect();
        let resource_id = new_id();
        self.authz.resources.insert(
            resource_id.clone(),
            AuthzResource {
                id: resource_id.clone(),
                name: format!("client.resource.{client}"),
                kind: "Client".into(),
                scopes: scope_ids.iter().map(|(_, id)| id.clone()).collect(),
            },
        );
        let mut scope_permissions = BTreeMap::new();
        for (scope, scope_id) in scope_ids {
            let id = new_id();
            self.authz.policies.insert(
                id.clone(),
                Policy {
                    id: id.clone(),
                    name: format!("{scope}.permission.client.{client}"),
                    description: None,
                    kind: "scope".into(),
                    logic: "POSITIVE".into(),
                    decision_strategy: "UNANIMOUS".into(),
                    clients: Vec::new(),
                    resources: vec![resource_id.clone()],
                    scopes: vec![scope_id],
                    policies: Vec::new(),
                },
            );
            scope_permissions.insert(scope, id);
        }
        let permissions = ClientPermissions {
            resource_id,
            scope_permissions,
        };
        if let Some(entry) = self.clients.get_mut(client) {
            entry.permissions = Some(permissions.clone());
        }
        Some(permissions)
    }

    /// Disables a client's fine-grained admin permissions and removes the objects enabling created.
    pub fn disable_client_permissions(&mut self, client: &str) {
        let taken = self.clients.get_mut(client).and_then(|c| c.permissions.take());
        if let Some(permissions) = taken {
            self.drop_permission_objects(&permissions);
        }
    }

    fn drop_permission_objects(&mut self, permissions: &ClientPermissions) {
        self.authz.resources.remove(&permissions.resource_id);
        for id in permissions.scope_permissions.values() {
            self.authz.policies.remove(id);
        }
    }
}

/// Applies a create or update request onto client settings: non-null fields replace, `attributes` merge key by
/// key; a field of the wrong type is Keycloak's 400 `Cannot parse the JSON`.
fn merge_client_settings(current: &ClientSettings, request: &Value) -> Result<ClientSettings, ApiError> {
    let Some(fields) = request.as_object() else {
        return Err(ApiError::cannot_parse_json());
    };
    let mut merged = serde_json::to_value(current).map_err(|_| ApiError::unknown_error())?;
    let Some(target) = merged.as_object_mut() else {
        return Err(ApiError::unknown_error());
    };
    for (key, value) in fields {
        if value.is_null()
            || matches!(
                key.as_str(),
                "id" | "protocolMappers" | "defaultClientScopes" | "optionalClientScopes" | "access"
            )
        {
            continue;
        }
        if key == "attributes" {
            let Some(attributes) = value.as_object() else {
                return Err(ApiError::cannot_parse_json());
            };
            let entry = target
                .entry("attributes")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Some(existing) = entry.as_object_mut() {
                for (name, attribute) in attributes {
                    // Keycloak removes an attribute sent as null or blank.
                    if attribute.is_null() || attribute.as_str().is_some_and(|v| v.trim().is_empty()) {
                        existing.remove(name);
                    } else {
                        existing.insert(name.clone(), attribute.clone());
                    }
                }
            }
            continue;
        }
        target.insert(key.clone(), value.clone());
    }
    serde_json::from_value(merged).map_err(|_| ApiError::cannot_parse_json())
}

/// Client validation Keycloak does before storing: URL syntax (400 `invalid_input`) and column lengths (500).
fn check_client_settings(settings: &ClientSettings) -> Result<(), ApiError> {
    check_column_length(&settings.client_id)?;
    for text in [&settings.name, &settings.description].into_iter().flatten() {
        check_column_length(text)?;
    }
    if let Some(root) = &settings.root_url
        && !root.is_empty()
        && !is_acceptable_uri(root)
    {
        return Err(ApiError::invalid_input("Root URL is not a valid URL"));
    }
    if settings.redirect_uris.iter().any(|uri| !is_acceptable_uri(uri)) {
        return Err(ApiError::invalid_input("A redirect URI is not a valid URI"));
    }
    Ok(())
}

/// Keycloak refuses URIs with whitespace and the `javascript:`/`data:` schemes; wildcards and relative paths pass.
fn is_acceptable_uri(uri: &str) -> bool {
    let lower = uri.trim().to_ascii_lowercase();
    !uri.chars().any(char::is_whitespace) && !lower.starts_with("javascript:") && !lower.starts_with("data:")
}

/// Checks a protocol mapper request: a name, a column-sized name, a known mapper type.
pub fn check_mapper(mapper: &ProtocolMapper) -> Result<(), ApiError> {
    if mapper.name.trim().is_empty() {
        return Err(ApiError::bad_request("Protocol mapper name is missing"));
    }
    check_column_length(&mapper.name)?;
    if !KNOWN_MAPPER_TYPES.contains(&mapper.protocol_mapper.as_str()) {
        return Err(ApiError::not_found("ProtocolMapper provider not found"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::config::EmulatorConfig;
    use super::super::store::Store;
    use super::*;

    fn realm() -> Realm {
        let mut store = Store::new(&EmulatorConfig::with_realm("r"), 0).expect("store");
        store.realms.remove("r").expect("realm r")
    }

    #[test]
    fn group_paths_escape_slashes_and_resolve_back() {
        let mut realm = realm();
        let parent = realm.add_group(None, "a/b", None, BTreeMap::new()).expect("parent");
        let child = realm
            .add_group(Some(&parent), "c", None, BTreeMap::new())
            .expect("child");
        assert_eq!(realm.group_path(&child), "/a~/b/c");
        assert_eq!(realm.group_by_path("/a~/b/c").map(|g| g.id.clone()), Some(child));
        assert_eq!(split_group_path("/x//y/"), vec!["x", "y"]);
    }

    #[test]
    fn names_are_unique_per_parent_with_two_messages() {
        let mut realm = realm();
        let top = realm.add_group(None, "X", None, BTreeMap::new()).expect("top");
        assert_eq!(
            realm.add_group(None, "X", None, BTreeMap::new()),
            Err(ApiError::conflict("Top level group named 'X' already exists.".into()))
        );
        realm
            .add_group(None, "x", None, BTreeMap::new())
            .expect("case differs: allowed");
        realm
            .add_group(Some(&top), "X", None, BTreeMap::new())
            .expect("same name under a parent");
        assert_eq!(
            realm.add_group(Some(&top), "X", None, BTreeMap::new()),
            Err(ApiError::conflict("Sibling group named 'X' already exists.".into()))
        );
    }

    #[test]
    fn removing_a_group_removes_its_subtree_and_memberships() {
        let mut realm = realm();
        let top = realm.ensure_group_path("/p/c/g", &BTreeMap::new()).expect("path");
        let user = realm
            .add_user(
                NewUser {
                    username: "U".into(),
                    enabled: true,
                    ..NewUser::default()
                },
                0,
            )
            .expect("user");
        realm.memberships.insert((user.clone(), top.clone()));
        let p = realm.group_by_path("/p").map(|g| g.id.clone()).expect("p");
        realm.remove_group(&p);
        assert!(realm.groups.is_empty());
        assert!(realm.memberships.is_empty());
        assert_eq!(
            realm.users.get(&user).map(|u| u.username.as_str()),
            Some("u"),
            "usernames are lower-cased"
        );
    }

    #[test]
    fn client_creation_applies_defaults_and_merge_keeps_other_attributes() {
        let mut realm = realm();
        let id = realm
            .create_client(&serde_json::json!({"clientId": "app"}), 5_000)
            .expect("create");
        let client = realm.clients.get(&id).expect("client");
        assert!(!client.settings.public_client && client.settings.standard_flow_enabled);
        assert_eq!(client.settings.secret.as_ref().map(String::len), Some(32));
        assert_eq!(
            client.settings.attributes.get("realm_client").map(String::as_str),
            Some("false")
        );
        assert_eq!(client.default_scopes.len(), 6);
        realm
            .update_client(
                &id,
                &serde_json::json!({"attributes": {"a": "1"}, "redirectUris": ["https://x/*"]}),
                0,
            )
            .expect("update");
        let client = realm.clients.get(&id).expect("client");
        assert_eq!(client.settings.attributes.get("a").map(String::as_str), Some("1"));
        assert!(client.settings.attributes.contains_key("client.secret.creation.time"));
        assert_eq!(client.settings.redirect_uris, vec!["https://x/*"]);
    }
}
