//! Groups: top-level groups, children under a parent (always through `/children`, paged), counts, members and
//! deletion. Creates are create-or-get: a 409 is resolved by looking the group up again.

use std::collections::BTreeMap;

use serde_json::json;

use super::client::RealmClient;
use super::error::KeycloakError;
use super::types::{Ensured, Group, User};

/// Keycloak stores group names in a `varchar(255)` and answers 500 for longer ones without validating first.
pub const MAX_GROUP_NAME_CHARS: usize = 255;

/// Refuses names Keycloak would fail on: empty ones, and ones longer than its column.
pub fn check_group_name(operation: &'static str, name: &str) -> Result<(), KeycloakError> {
    if name.trim().is_empty() {
        return Err(KeycloakError::InvalidInput {
            operation,
            reason: "the group name is empty".into(),
        });
    }
    let length = name.chars().count();
    if length > MAX_GROUP_NAME_CHARS {
        return Err(KeycloakError::InvalidInput {
            operation,
            reason: format!("the group name has {length} characters; Keycloak accepts at most {MAX_GROUP_NAME_CHARS}"),
        });
    }
    Ok(())
}

fn brief() -> (&'static str, String) {
    ("briefRepresentation", "true".to_string())
}

/// Group rows with their attributes, so callers can check ownership markers such as `managed_by`.
fn full() -> (&'static str, String) {
    ("briefRepresentation", "false".to_string())
}

impl RealmClient {
    /// The top-level group named exactly `name` (case-sensitive, like Keycloak's uniqueness rule), if any.
    ///
    /// Searches the tree with `exact=true` and `populateHierarchy=false` and keeps only a top-level match, so a
    /// child group of the same name is never mistaken for it.
    pub async fn find_top_level_group(&self, name: &str) -> Result<Option<Group>, KeycloakError> {
        check_group_name("find group", name)?;
        let query = [
            ("search", name.to_string()),
            ("exact", "true".to_string()),
            ("populateHierarchy", "false".to_string()),
            ("subGroupsCount", "true".to_string()),
            full(),
        ];
        let matches: Vec<Group> = self.get_all("find group", &["groups"], &query).await?;
        Ok(matches.into_iter().find(|g| g.name == name && g.parent_id.is_none()))
    }

    /// Creates a top-level group; a duplicate is a [`KeycloakError`] of kind `Conflict`.
    pub async fn create_top_level_group(
        &self,
        name: &str,
        attributes: &BTreeMap<String, Vec<String>>,
    ) -> Result<Group, KeycloakError> {
        check_group_name("create group", name)?;
        let body = json!({ "name": name, "attributes": attributes });
        let (id, _) = self.create("create group", &["groups"], &body).await?;
        Ok(Group {
            id,
            name: name.into(),
            path: format!("/{}", name.replace('/', "~/")),
            parent_id: None,
            sub_group_count: Some(0),
            attributes: attributes.clone(),
            sub_groups: Vec::new(),
        })
    }

    /// The top-level group `name`, created with `attributes` when missing.
    pub async fn ensure_top_level_group(
        &self,
        name: &str,
        attributes: &BTreeMap<String, Vec<String>>,
    ) -> Result<Ensured<Group>, KeycloakError> {
        if let Some(group) = self.find_top_level_group(name).await? {
            return Ok(Ensured {
                value: group,
                created: false,
            });
        }
        match self.create_top_level_group(name, attributes).await {
            Ok(group) => Ok(Ensured {
                value: group,
                created: true,
            }),
            Err(error) if error.is_conflict() => match self.find_top_level_group(name).await? {
                Some(group) => Ok(Ensured {
                    value: group,
                    created: false,
                }),
                None => Err(error),
            },
            Err(error) => Err(error),
        }
    }

    /// Every top-level group with its attributes, paged.
    pub async fn list_top_level_groups(&self) -> Result<Vec<Group>, KeycloakError> {
        self.get_all("list groups", &["groups"], &[full()]).await
    }

    /// A group by id (full representation, with `subGroupCount`); `None` when it does not exist.
    pub async fn get_group(&self, id: &str) -> Result<Option<Group>, KeycloakError> {
        self.get_optional("get group", &["groups", id]).await
    }

    /// Every direct child of `parent` with its attributes, paged through `/children` (whose default page is
    /// only 10).
    pub async fn list_child_groups(&self, parent: &str) -> Result<Vec<Group>, KeycloakError> {
        self.get_all("list child groups", &["groups", parent, "children"], &[full()])
            .await
    }

    /// The child of `parent` named exactly `name`, searched among `parent`'s children only.
    pub async fn find_child_group(&self, parent: &str, name: &str) -> Result<Option<Group>, KeycloakError> {
        check_group_name("find child group", name)?;
        let query = [("search", name.to_string()), ("exact", "true".to_string()), full()];
        let children: Vec<Group> = self
            .get_all("find child group", &["groups", parent, "children"], &query)
            .await?;
        // Servers before Keycloak 25 ignore `search` here and list every child: match by name ourselves.
        Ok(children.into_iter().find(|g| g.name == name))
    }

    /// Creates a child of `parent`; a duplicate sibling is a [`KeycloakError`] of kind `Conflict`.
    pub async fn create_child_group(
        &self,
        parent: &str,
        name: &str,
        attributes: &BTreeMap<String, Vec<String>>,
    ) -> Result<Group, KeycloakError> {
        check_group_name("create child group", name)?;
        let body = json!({ "name": name, "attributes": attributes });
        let (id, response) = self
            .create("create child group", &["groups", parent, "children"], &body)
            .await?;
        // The answer carries the new group; older servers send only `Location`.
        let decoded: Option<Group> = self.decode("create child group", response).await.ok();
        Ok(decoded.filter(|g| g.id == id).unwrap_or(Group {
            id,
            name: name.into(),
            path: String::new(),
            parent_id: Some(parent.into()),
            sub_group_count: Some(0),
            attributes: attributes.clone(),
            sub_groups: Vec::new(),
        }))
    }

    /// The child `name` of `parent`, created with `attributes` when missing.
    pub async fn ensure_child_group(
        &self,
        parent: &str,
        name: &str,
        attributes: &BTreeMap<String, Vec<String>>,
    ) -> Result<Ensured<Group>, KeycloakError> {
        if let Some(group) = self.find_child_group(parent, name).await? {
            return Ok(Ensured {
                value: group,
                created: false,
            });
        }
        match self.create_child_group(parent, name, attributes).await {
            Ok(group) => Ok(Ensured {
                value: group,
                created: true,
            }),
            Err(error) if error.is_conflict() => match self.find_child_group(parent, name).await? {
                Some(group) => Ok(Ensured {
                    value: group,
                    created: false,
                }),
                None => Err(error),
            },
            Err(error) => Err(error),
        }
    }

    /// How many direct children `parent` has (`subGroupCount`, or counted through `/children` when the server
    /// does not report it). A missing parent is an error of kind `NotFound`.
    pub async fn count_child_groups(&self, parent: &str) -> Result<u64, KeycloakError> {
        let group = self.get_group(parent).await?.ok_or_else(|| KeycloakError::Missing {
            operation: "count child groups",
            what: format!("group {parent}"),
        })?;
        match group.sub_group_count {
            Some(count) => Ok(count),
            None => Ok(self.list_child_groups(parent).await?.len() as u64),
        }
    }

    /// Replaces a group's attributes (keeping its name).
    pub async fn set_group_attributes(
        &self,
        group: &Group,
        attributes: &BTreeMap<String, Vec<String>>,
    ) -> Result<(), KeycloakError> {
        let body = json!({ "name": group.name, "attributes": attributes });
        self.put("update group", &["groups", &group.id], Some(&body)).await?;
        Ok(())
    }

    /// Deletes a group with its subgroups and memberships; `false` when it was already gone.
    pub async fn delete_group(&self, id: &str) -> Result<bool, KeycloakError> {
        self.delete("delete group", &["groups", id]).await
    }

    /// Every direct member of a group, paged.
    pub async fn group_members(&self, group: &str) -> Result<Vec<User>, KeycloakError> {
        self.get_all("list group members", &["groups", group, "members"], &[brief()])
            .await
    }

    /// Makes a user a direct member of a group (idempotent).
    pub async fn add_group_member(&self, group: &str, user: &str) -> Result<(), KeycloakError> {
        self.put("add group member", &["users", user, "groups", group], None)
            .await?;
        Ok(())
    }

    /// Removes a user from a group (idempotent; an unknown user or group is an error of kind `NotFound`).
    pub async fn remove_group_member(&self, group: &str, user: &str) -> Result<(), KeycloakError> {
        let existed = self
            .delete("remove group member", &["users", user, "groups", group])
            .await?;
        if existed {
            Ok(())
        } else {
            Err(KeycloakError::Missing {
                operation: "remove group member",
                what: format!("user {user} or group {group}"),
            })
        }
    }

    /// A user's direct groups, paged.
    pub async fn user_groups(&self, user: &str) -> Result<Vec<Group>, KeycloakError> {
        self.get_all("list user groups", &["users", user, "groups"], &[brief()])
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_names_are_checked_before_any_call() {
        assert!(check_group_name("create group", &"x".repeat(255)).is_ok());
        assert!(
            check_group_name("create group", &"é".repeat(255)).is_ok(),
            "characters, not bytes"
        );
        let error = check_group_name("create group", &"x".repeat(256)).expect_err("too long");
        assert_eq!(error.kind(), crate::keycloak::ErrorKind::Invalid);
        assert!(error.to_string().contains("256 characters"), "{error}");
        assert!(check_group_name("create group", "  ").is_err());
    }
}
