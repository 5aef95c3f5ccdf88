//! `keystone.openstack.org/v1beta1`: the KeystoneApplicationCredential kind we serve, and a minimal read-only
//! view of keystone-operator's KeystoneAPI kind, which tells the controller where Keystone is.
//!
//! KeystoneApplicationCredential keeps the fields, defaults, bounds and validation rule of keystone-operator's
//! CRD so its YAML applies unchanged. KeystoneAPI is owned by keystone-operator and is not part of [`crate::all`];
//! [`keystone_api_fixture_crd`] renders a small CRD for it for environments without keystone-operator (tests,
//! the sandbox).

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{CustomResourceDefinition, JSONSchemaProps};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::core::crd::CustomResourceExt;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Prefix of KeystoneApplicationCredential names made by openstack-operator (`ac-<service>`).
pub const AC_NAME_PREFIX: &str = "ac-";

/// A Keystone application credential for one OpenStack service user, kept in an immutable Secret and rotated
/// before it expires.
///
/// The controller creates the credential in Keystone as `userName` (authenticating with the password found in
/// Secret `secret` under key `passwordSelector`), stores its id and secret in a new immutable Secret
/// `ac-<service>-<first 5 characters of the id>-secret` (keys `AC_ID`, `AC_SECRET`) and records that Secret in
/// `status.secretName`. It rotates when `gracePeriodDays` remain before expiry, when roles, access rules or
/// `unrestricted` change, when the Secret disappears, or when `status.expiresAt` is patched into the past.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "keystone.openstack.org",
    version = "v1beta1",
    kind = "KeystoneApplicationCredential",
    namespaced,
    shortname = "appcred",
    status = "KeystoneApplicationCredentialStatus",
    derive = "PartialEq",
    doc = "KeystoneApplicationCredential is a Keystone application credential for one OpenStack service user, \
           stored in an immutable Secret and rotated before it expires.",
    printcolumn = r#"{"name":"ACID","type":"string","jsonPath":".status.acID","description":"Keystone application credential ID"}"#,
    printcolumn = r#"{"name":"Secret","type":"string","jsonPath":".status.secretName","description":"Secret holding the current application credential"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status","description":"Whether the credential is current and stored"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason","description":"Why the credential is (not) ready"}"#,
    printcolumn = r#"{"name":"RotationEligible","type":"string","format":"date-time","jsonPath":".status.rotationEligibleAt","description":"When the credential will be rotated"}"#,
    printcolumn = r#"{"name":"LastRotated","type":"string","format":"date-time","jsonPath":".status.lastRotated","description":"Last rotation time"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name":"Message","type":"string","priority":1,"jsonPath":".status.conditions[?(@.type==\"Ready\")].message","description":"Details of the Ready condition"}"#
)]
#[x_kube(validation = kube::core::Rule::new("self.gracePeriodDays < self.expirationDays")
    .message("gracePeriodDays must be smaller than expirationDays"))]
#[serde(rename_all = "camelCase")]
pub struct KeystoneApplicationCredentialSpec {
    /// Name of the Secret (in this namespace) holding the service user's password.
    #[schemars(length(min = 1))]
    pub secret: String,

    /// Key in that Secret whose value is the service user's password (e.g. `BarbicanPassword`).
    #[schemars(length(min = 1))]
    pub password_selector: String,

    /// The Keystone user the application credential is created for (it must hold `roles` in the service project).
    #[schemars(length(min = 1, max = 255))]
    pub user_name: String,

    /// Lifetime of each application credential, in days.
    #[serde(default = "default_expiration_days")]
    #[schemars(range(min = 2))]
    pub expiration_days: i64,

    /// How many days before expiry the credential is rotated; must be smaller than `expirationDays`.
    #[serde(default = "default_grace_period_days")]
    #[schemars(range(min = 1))]
    pub grace_period_days: i64,

    /// Roles (by name) the application credential carries; the user must hold each in the service project.
    #[schemars(length(min = 1))]
    pub roles: Vec<String>,

    /// Whether the credential may create or delete other application credentials and trusts.
    #[serde(default)]
    pub unrestricted: bool,

    /// Restricts the credential to these service API calls; empty or absent allows every call its roles allow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_rules: Option<Vec<AccessRule>>,
}

fn default_expiration_days() -> i64 {
    365
}

fn default_grace_period_days() -> i64 {
    182
}

/// One API call an application credential is allowed to make.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct AccessRule {
    /// OpenStack service type, e.g. `compute`, `image`, `key-manager`.
    #[schemars(length(min = 1))]
    pub service: String,
    /// API path, which may contain `*` (one segment) and `**` (any number of segments), e.g. `/v2.1/servers`.
    #[schemars(length(min = 1))]
    pub path: String,
    /// HTTP method allowed on that path.
    pub method: HttpMethod,
}

/// HTTP methods an access rule can allow.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, JsonSchema)]
pub enum HttpMethod {
    /// `GET`
    #[serde(rename = "GET")]
    Get,
    /// `HEAD`
    #[serde(rename = "HEAD")]
    Head,
    /// `POST`
    #[serde(rename = "POST")]
    Post,
    /// `PUT`
    #[serde(rename = "PUT")]
    Put,
    /// `PATCH`
    #[serde(rename = "PATCH")]
    Patch,
    /// `DELETE`
    #[serde(rename = "DELETE")]
    Delete,
}

impl HttpMethod {
    /// The wire spelling, as Keystone and the CRD expect it.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Head => "HEAD",
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
            HttpMethod::Patch => "PATCH",
            HttpMethod::Delete => "DELETE",
        }
    }
}

/// What the controller observed and did: the current credential, its Secret and its schedule.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeystoneApplicationCredentialStatus {
    /// ID of the current application credential in Keystone.
    #[serde(default, rename = "acID", skip_serializing_if = "Option::is_none")]
    pub ac_id: Option<String>,

    /// Secret holding the current credential (`AC_ID`, `AC_SECRET`): `ac-<service>-<first 5 of ACID>-secret`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_name: Option<String>,

    /// Secret of the credential replaced by the last rotation; kept (and protected) while consumers move over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_secret_name: Option<String>,

    /// When the current credential was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Time>,

    /// When the current credential expires in Keystone; patch it into the past to rotate now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Time>,

    /// When the current credential will be rotated: `expiresAt` minus `gracePeriodDays`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotation_eligible_at: Option<Time>,

    /// When the credential was last replaced (unset until the first rotation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_rotated: Option<Time>,

    /// Hash of the fields that shape the credential's permissions (roles, accessRules, unrestricted) when it was
    /// created; a different hash means the credential must be replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_hash: Option<String>,

    /// The `metadata.generation` this status reflects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// `Ready`, `KeystoneAPIReady` and `KeystoneApplicationCredentialReady`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "conditions_schema")]
    pub conditions: Vec<Condition>,
}

/// The schema of `status.conditions`: `metav1.Condition` items (plus the `severity` field keystone-operator's
/// conditions carry) in a list keyed by `type`, so server-side apply merges conditions by type.
fn conditions_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "description": "Conditions",
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {
            "description": "Condition is an observation of one aspect of the object's state.",
            "type": "object",
            "required": ["type", "status", "lastTransitionTime"],
            "properties": {
                "type": {"description": "Type of condition in CamelCase.", "type": "string"},
                "status": {"description": "Status of the condition: True, False or Unknown.", "type": "string"},
                "reason": {"description": "A CamelCase reason for the last transition.", "type": "string"},
                "message": {"description": "A human readable explanation.", "type": "string"},
                "severity": {"description": "Severity of a False condition (keystone-operator's field).", "type": "string"},
                "observedGeneration": {
                    "description": "The metadata.generation the condition was set for.",
                    "type": "integer",
                    "format": "int64"
                },
                "lastTransitionTime": {
                    "description": "When the status last changed.",
                    "type": "string",
                    "format": "date-time"
                }
            }
        }
    })
}

/// The service a KeystoneApplicationCredential is for: its name without the `ac-` prefix (`ac-barbican` →
/// `barbican`), as openstack-operator names them.
pub fn service_name(credential_name: &str) -> &str {
    credential_name.strip_prefix(AC_NAME_PREFIX).unwrap_or(credential_name)
}

/// A read-only view of keystone-operator's KeystoneAPI: only what the application credential controller reads.
///
/// Unknown fields are ignored when reading; the operator never writes this kind.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "keystone.openstack.org",
    version = "v1beta1",
    kind = "KeystoneAPI",
    plural = "keystoneapis",
    namespaced,
    status = "KeystoneAPIStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "KeystoneAPI is keystone-operator's Keystone deployment (minimal view)."
)]
#[serde(rename_all = "camelCase")]
pub struct KeystoneAPISpec {
    /// Keystone region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// TLS settings of the Keystone endpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<KeystoneAPITls>,
}

/// The part of keystone-operator's TLS settings a client needs: which CA signed the endpoints' certificates.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeystoneAPITls {
    /// A Secret in the KeystoneAPI's namespace holding the CA bundle (key `tls-ca-bundle.pem`) for https
    /// endpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle_secret_name: Option<String>,
}

/// The parts of a KeystoneAPI's status the controller reads.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeystoneAPIStatus {
    /// Base URLs by endpoint type (`public`, `internal`), with or without the `/v3` suffix.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub api_endpoints: BTreeMap<String, String>,
    /// keystone-operator's conditions; `Ready` True means Keystone is serving.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<KeystoneAPICondition>,
}

/// One keystone-operator condition (lib-common's shape: no observedGeneration, a severity).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeystoneAPICondition {
    /// Condition type, e.g. `Ready`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// CamelCase reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Severity of a False condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<String>,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

impl KeystoneAPI {
    /// Whether keystone-operator reports this Keystone as ready (condition `Ready` is `True`).
    pub fn is_ready(&self) -> bool {
        self.ready_condition().is_some_and(|c| c.status == "True")
    }

    /// The `Ready` condition, if keystone-operator has set one.
    pub fn ready_condition(&self) -> Option<&KeystoneAPICondition> {
        self.status.as_ref()?.conditions.iter().find(|c| c.type_ == "Ready")
    }

    /// The Secret holding the CA bundle of https endpoints (`spec.tls.caBundleSecretName`), if named.
    pub fn ca_bundle_secret(&self) -> Option<&str> {
        self.spec
            .tls
            .as_ref()?
            .ca_bundle_secret_name
            .as_deref()
            .filter(|name| !name.is_empty())
    }

    /// The base URL of the given endpoint type (`internal`, `public`), if published.
    pub fn endpoint(&self, kind: &str) -> Option<&str> {
        self.status
            .as_ref()?
            .api_endpoints
            .get(kind)
            .map(String::as_str)
            .filter(|url| !url.is_empty())
    }
}

/// A CRD for KeystoneAPI for environments without keystone-operator (end-to-end tests, the sandbox).
///
/// It is generated from [`KeystoneAPI`] with `x-kubernetes-preserve-unknown-fields` on `spec` and `status`, so
/// objects written for keystone-operator's full schema are accepted unchanged.
pub fn keystone_api_fixture_crd() -> CustomResourceDefinition {
    let mut crd = KeystoneAPI::crd();
    for version in &mut crd.spec.versions {
        let root = version.schema.as_mut().and_then(|s| s.open_api_v3_schema.as_mut());
        if let Some(properties) = root.and_then(|r| r.properties.as_mut()) {
            for field in ["spec", "status"] {
                if let Some(schema) = properties.get_mut(field) {
                    preserve_unknown_fields(schema);
                }
            }
        }
    }
    crd
}

fn preserve_unknown_fields(schema: &mut JSONSchemaProps) {
    schema.x_kubernetes_preserve_unknown_fields = Some(true);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd_json() -> serde_json::Value {
        serde_json::to_value(KeystoneApplicationCredential::crd()).expect("CRD serializes")
    }

    #[test]
    fn identity_matches_keystone_operator() {
        let crd = KeystoneApplicationCredential::crd();
        assert_eq!(
            crd.metadata.name.as_deref(),
            Some("keystoneapplicationcredentials.keystone.openstack.org")
        );
        assert_eq!(crd.spec.names.short_names, Some(vec!["appcred".to_string()]));
        assert_eq!(crd.spec.scope, "Namespaced");
        assert!(
            crd.spec.versions[0]
                .subresources
                .as_ref()
                .and_then(|s| s.status.as_ref())
                .is_some()
        );
    }

    #[test]
    fn spec_carries_defaults_bounds_and_the_grace_rule() {
        let crd = crd_json();
        let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(spec["properties"]["expirationDays"]["default"], json!(365));
        assert_eq!(spec["properties"]["expirationDays"]["minimum"], json!(2.0));
        assert_eq!(spec["properties"]["gracePeriodDays"]["default"], json!(182));
        assert_eq!(spec["properties"]["gracePeriodDays"]["minimum"], json!(1.0));
        assert_eq!(spec["properties"]["roles"]["minItems"], json!(1));
        assert_eq!(spec["properties"]["secret"]["minLength"], json!(1));
        assert_eq!(spec["properties"]["unrestricted"]["default"], json!(false));
        let method = &spec["properties"]["accessRules"]["items"]["properties"]["method"];
        assert_eq!(method["enum"], json!(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]));
        assert_eq!(
            spec["x-kubernetes-validations"],
            json!([{"rule": "self.gracePeriodDays < self.expirationDays",
                    "message": "gracePeriodDays must be smaller than expirationDays"}])
        );
        let mut required: Vec<String> =
            serde_json::from_value(spec["required"].clone()).expect("required is a list of names");
        required.sort();
        assert_eq!(required, ["passwordSelector", "roles", "secret", "userName"]);
    }

    #[test]
    fn conditions_are_a_list_map_keyed_by_type() {
        let crd = crd_json();
        let conditions = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
            ["conditions"];
        assert_eq!(conditions["x-kubernetes-list-type"], json!("map"));
        assert_eq!(conditions["x-kubernetes-list-map-keys"], json!(["type"]));
        assert!(conditions["items"]["properties"]["severity"].is_object());
    }

    #[test]
    fn the_seed_sample_deserializes_with_defaults() {
        let sample = json!({
            "apiVersion": "keystone.openstack.org/v1beta1",
            "kind": "KeystoneApplicationCredential",
            "metadata": {"name": "ac-barbican", "namespace": "openstack"},
            "spec": {"passwordSelector": "BarbicanPassword", "roles": ["service"], "secret": "osp-secret",
                     "userName": "barbican"}
        });
        let ac: KeystoneApplicationCredential = serde_json::from_value(sample).expect("sample parses");
        assert_eq!(ac.spec.expiration_days, 365);
        assert_eq!(ac.spec.grace_period_days, 182);
        assert!(!ac.spec.unrestricted);
        assert_eq!(service_name("ac-barbican"), "barbican");
        assert_eq!(service_name("barbican"), "barbican");
    }

    #[test]
    fn status_uses_keystone_operators_field_names() {
        let status = KeystoneApplicationCredentialStatus {
            ac_id: Some("abc".into()),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(status).expect("serializes"),
            json!({"acID": "abc"})
        );
    }

    #[test]
    fn keystone_api_fixture_preserves_unknown_fields_and_reads_endpoints() {
        let crd = serde_json::to_value(keystone_api_fixture_crd()).expect("CRD serializes");
        let props = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"];
        assert_eq!(props["spec"]["x-kubernetes-preserve-unknown-fields"], json!(true));
        assert_eq!(props["status"]["x-kubernetes-preserve-unknown-fields"], json!(true));
        assert_eq!(crd["spec"]["names"]["plural"], json!("keystoneapis"));
        let api: KeystoneAPI = serde_json::from_value(json!({
            "apiVersion": "keystone.openstack.org/v1beta1", "kind": "KeystoneAPI",
            "metadata": {"name": "keystone", "namespace": "openstack"},
            "spec": {"region": "regionOne", "databaseInstance": "openstack"},
            "status": {"apiEndpoints": {"internal": "http://keystone-internal:5000"},
                       "conditions": [{"type": "Ready", "status": "True", "severity": "",
                                       "lastTransitionTime": "2025-01-01T00:00:00Z"}]}
        }))
        .expect("a full KeystoneAPI parses");
        assert!(api.is_ready());
        assert_eq!(api.endpoint("internal"), Some("http://keystone-internal:5000"));
        assert_eq!(api.endpoint("public"), None);
    }
}
