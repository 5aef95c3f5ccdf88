//! The operator's four kinds as the sandbox's tests and the chaos run write them: where each lives in the
//! sandbox, and a spec that works there (each prepared namespace already has what the spec names).

use serde_json::{Value, json};

/// One of the operator's kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum Kind {
    /// `reconcilers.nebari.dev/v1` NebariApp.
    NebariApp,
    /// `keystone.openstack.org/v1beta1` KeystoneApplicationCredential.
    Credential,
    /// `waldur.io/v1alpha1` ManagedRancherProject.
    Project,
    /// `waldur.io/v1alpha1` RancherProjectInventory.
    Inventory,
}

impl Kind {
    /// The `apiVersion`.
    pub fn api_version(self) -> &'static str {
        match self {
            Kind::NebariApp => "reconcilers.nebari.dev/v1",
            Kind::Credential => "keystone.openstack.org/v1beta1",
            Kind::Project | Kind::Inventory => "waldur.io/v1alpha1",
        }
    }

    /// The `kind`.
    pub fn kind(self) -> &'static str {
        match self {
            Kind::NebariApp => "NebariApp",
            Kind::Credential => "KeystoneApplicationCredential",
            Kind::Project => "ManagedRancherProject",
            Kind::Inventory => "RancherProjectInventory",
        }
    }

    /// The namespace of the kind's samples, where the sandbox prepared what it needs.
    pub fn namespace(self) -> &'static str {
        match self {
            Kind::NebariApp => "default",
            Kind::Credential => "openstack",
            Kind::Project | Kind::Inventory => "waldur-system",
        }
    }

    /// The plural resource name (for kubectl and API paths).
    pub fn resource(self) -> &'static str {
        match self {
            Kind::NebariApp => "nebariapps",
            Kind::Credential => "keystoneapplicationcredentials",
            Kind::Project => "managedrancherprojects",
            Kind::Inventory => "rancherprojectinventories",
        }
    }

    /// The controller's name in the manager's metrics.
    pub fn controller(self) -> &'static str {
        match self {
            Kind::NebariApp => "nebariapp",
            Kind::Credential => "keystoneapplicationcredential",
            Kind::Project => "managedrancherproject",
            Kind::Inventory => "rancherprojectinventory",
        }
    }

    /// A complete object of this kind named `name` with `spec`, in the kind's sandbox namespace.
    pub fn object(self, name: &str, spec: Value) -> Value {
        json!({
            "apiVersion": self.api_version(),
            "kind": self.kind(),
            "metadata": {"name": name, "namespace": self.namespace()},
            "spec": spec,
        })
    }
}

/// The Rancher cluster the sandbox's projects live in, and its Keycloak parent group.
pub const SANDBOX_CLUSTER: &str = "c-m-glwxdksp";
/// The parent group of the sandbox cluster's project groups.
pub const SANDBOX_PARENT_GROUP: &str = "c_c-m-glwxdksp";

/// A routing-only NebariApp spec for app `name`: its own hostname, the sample backend Service.
pub fn app_spec(name: &str) -> Value {
    json!({"hostname": format!("{}.nebari.local", name.replace('.', "-")),
           "service": {"name": "sample-app-service", "port": 8080}})
}

/// A KeystoneApplicationCredential spec for the sandbox's service user `barbican`.
pub fn credential_spec() -> Value {
    json!({"userName": "barbican", "secret": "osp-secret", "passwordSelector": "BarbicanPassword",
           "roles": ["service"], "expirationDays": 365, "gracePeriodDays": 182})
}

/// A ManagedRancherProject spec: project `Catalog <name>` with one group `group` (member alice) under the
/// sandbox cluster's parent group.
pub fn project_spec(name: &str, group: &str) -> Value {
    json!({"clusterId": SANDBOX_CLUSTER, "projectName": format!("Catalog {name}"),
           "keycloak": {"enabled": true, "parentGroupName": SANDBOX_PARENT_GROUP, "roleBindings": [
               {"groupName": group, "rancherRole": "project-member", "members": [{"userIdentifier": "alice"}]}]}})
}

/// A RancherProjectInventory spec for the sandbox cluster.
pub fn inventory_spec() -> Value {
    json!({"clusterId": SANDBOX_CLUSTER, "scanIntervalSeconds": 300})
}

/// `base` with `patch` merged in (objects recursively, as a JSON merge patch: `null` removes a key).
pub fn merged(mut base: Value, patch: Value) -> Value {
    fn merge(target: &mut Value, patch: Value) {
        match (target, patch) {
            (Value::Object(target), Value::Object(patch)) => {
                for (key, value) in patch {
                    if value.is_null() {
                        target.remove(&key);
                    } else {
                        merge(target.entry(key).or_insert(Value::Null), value);
                    }
                }
            }
            (target, patch) => *target = patch,
        }
    }
    merge(&mut base, patch);
    base
}
