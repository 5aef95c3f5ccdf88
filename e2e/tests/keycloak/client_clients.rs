//! Clients, secrets, scopes and mappers through the client: what NebariApp provisions.

use std::collections::BTreeMap;

use controllers::keycloak::{
    ClientSpec, ClientUpdate, DEVICE_GRANT_ATTRIBUTE, MapperChange, PKCE_METHOD_ATTRIBUTE, ProtocolMapper,
};
use e2e::harness::fault_proxy::Fault;
use secrecy::{ExposeSecret, SecretString};

use crate::support::{realm, route, start};

#[tokio::test]
async fn a_confidential_client_is_created_once_with_its_secret() {
    let kc = start("cl-confidential").await;
    let realm = realm(&kc, 100);
    let spec = ClientSpec::confidential(
        "data-jupyter",
        Some(SecretString::from("a-32-character-secret-0123456789")),
    )
    .with_redirect_uris(vec!["https://jupyter.example/oauth2/callback".into()])
    .with_web_origins(vec!["https://jupyter.example".into()])
    .with_post_logout_redirect_uris(&["https://jupyter.example/*".into()]);
    let created = realm.ensure_client(&spec).await.expect("create");
    assert!(created.created);
    assert!(!created.value.public_client && created.value.standard_flow_enabled);
    assert!(!created.value.direct_access_grants_enabled);
    let again = realm.ensure_client(&spec).await.expect("find");
    assert!(!again.created);
    assert_eq!(again.value.id, created.value.id);
    let secret = realm
        .client_secret(&created.value.id)
        .await
        .expect("secret")
        .expect("confidential");
    assert_eq!(secret.expose_secret(), "a-32-character-secret-0123456789");
    assert_eq!(kc.proxy().count("POST", &route("/clients")), 1);
    assert_eq!(
        realm.find_client("data-jupyter-spa").await.expect("lookup"),
        None,
        "clientId lookups are exact"
    );
}

#[tokio::test]
async fn spa_and_device_clients_are_public_with_their_attributes() {
    let kc = start("cl-public").await;
    let realm = realm(&kc, 100);
    let spa = realm
        .ensure_client(&ClientSpec::spa("ns-app-spa"))
        .await
        .expect("spa")
        .value;
    assert!(spa.public_client && spa.standard_flow_enabled && !spa.direct_access_grants_enabled);
    assert_eq!(
        spa.attributes.get(PKCE_METHOD_ATTRIBUTE).map(String::as_str),
        Some("S256")
    );
    assert!(
        realm.client_secret(&spa.id).await.expect("secret").is_none(),
        "public clients have no secret"
    );
    let device = realm
        .ensure_client(&ClientSpec::device_flow("ns-app-device"))
        .await
        .expect("device")
        .value;
    assert!(device.public_client && !device.standard_flow_enabled && !device.direct_access_grants_enabled);
    assert_eq!(
        device.attributes.get(DEVICE_GRANT_ATTRIBUTE).map(String::as_str),
        Some("true")
    );
}

#[tokio::test]
async fn updates_merge_and_remove_attributes() {
    let kc = start("cl-update").await;
    let realm = realm(&kc, 100);
    let spec = ClientSpec::confidential("app", None)
        .with_redirect_uris(vec!["https://old/*".into()])
        .with_attribute("keep", "1")
        .with_attribute("drop", "1");
    let client = realm.ensure_client(&spec).await.expect("create").value;
    let update = ClientUpdate {
        redirect_uris: Some(vec!["https://new/*".into()]),
        set_attributes: BTreeMap::from([("added".to_string(), "yes".to_string())]),
        remove_attributes: vec!["drop".into()],
        ..ClientUpdate::default()
    };
    realm.update_client(&client.id, &update).await.expect("update");
    let updated = realm.get_client(&client.id).await.expect("get").expect("exists");
    assert_eq!(updated.redirect_uris, vec!["https://new/*"]);
    assert_eq!(updated.attributes.get("keep").map(String::as_str), Some("1"));
    assert_eq!(updated.attributes.get("added").map(String::as_str), Some("yes"));
    assert!(!updated.attributes.contains_key("drop"));
    assert!(updated.standard_flow_enabled, "fields not in the update are kept");
}

#[tokio::test]
async fn secrets_are_regenerated_once_and_clients_deleted_idempotently() {
    let kc = start("cl-secret").await;
    let realm = realm(&kc, 100);
    let client = realm
        .ensure_client(&ClientSpec::confidential("app", None))
        .await
        .expect("create")
        .value;
    let before = realm
        .client_secret(&client.id)
        .await
        .expect("secret")
        .expect("generated");
    let after = realm.regenerate_client_secret(&client.id).await.expect("regenerate");
    assert_ne!(before.expose_secret(), after.expose_secret());
    kc.proxy().add_fault(
        Fault::on("POST", &route("/clients/{id}/client-secret"))
            .status(503)
            .times(1),
    );
    let error = realm.regenerate_client_secret(&client.id).await.expect_err("503");
    assert!(error.is_transient());
    assert_eq!(
        kc.proxy().count("POST", &route("/clients/{id}/client-secret")),
        2,
        "a rotation is never retried"
    );
    assert!(realm.delete_client_by_client_id("app").await.expect("delete"));
    assert!(!realm.delete_client_by_client_id("app").await.expect("already gone"));
    assert!(!realm.delete_client(&client.id).await.expect("404 is done"));
}

#[tokio::test]
async fn default_scopes_are_created_and_attached_additively() {
    let kc = start("cl-scopes").await;
    let realm = realm(&kc, 100);
    let (client, wanted) = client_and_scopes(&realm).await;
    let sync = realm
        .ensure_default_client_scopes(&client.id, &wanted, Some("Managed by platform-operator"))
        .await
        .expect("sync");
    assert_eq!(sync.created, vec!["groups"], "only the missing realm scope is created");
    assert_eq!(
        sync.attached,
        vec!["groups", "offline_access"],
        "profile was already a default; openid is implicit"
    );
    let defaults = realm.default_client_scopes(&client.id).await.expect("defaults");
    assert!(defaults.iter().any(|s| s.name == "groups"), "{defaults:?}");
    let scope = realm.find_client_scope("groups").await.expect("find").expect("exists");
    assert_eq!(scope.description.as_deref(), Some("Managed by platform-operator"));
    assert_eq!(
        scope.attributes.get("include.in.token.scope").map(String::as_str),
        Some("true")
    );
    realm
        .remove_default_client_scope(&client.id, &scope.id)
        .await
        .expect("remove");
    let defaults = realm.default_client_scopes(&client.id).await.expect("defaults");
    assert!(!defaults.iter().any(|s| s.name == "groups"));
}

// Keycloak keeps a scope that is already an optional scope of the client optional when it is attached as a
// default (`PUT default-client-scopes/{id}` answers 204 and changes nothing): `offline_access`, optional for every
// new client, never becomes a default and is attached again on every sync.
#[tokio::test]
async fn ensuring_default_scopes_again_changes_nothing() {
    let kc = start("cl-scopes-again").await;
    let realm = realm(&kc, 100);
    let (client, wanted) = client_and_scopes(&realm).await;
    realm
        .ensure_default_client_scopes(&client.id, &wanted, None)
        .await
        .expect("sync");
    let mut defaults: Vec<String> = realm
        .default_client_scopes(&client.id)
        .await
        .expect("defaults")
        .into_iter()
        .map(|s| s.name)
        .collect();
    defaults.sort();
    assert!(
        ["groups", "offline_access", "profile"]
            .iter()
            .all(|name| defaults.iter().any(|d| d == name)),
        "every wanted scope is a default scope after the sync: {defaults:?}"
    );
    let again = realm
        .ensure_default_client_scopes(&client.id, &wanted, None)
        .await
        .expect("sync again");
    assert!(
        again.created.is_empty() && again.attached.is_empty(),
        "a converged client costs no writes: {again:?}"
    );
}

#[tokio::test]
async fn mappers_are_ensured_by_name() {
    let kc = start("cl-mappers").await;
    let realm = realm(&kc, 100);
    let (client, _) = client_and_scopes(&realm).await;
    let groups = ProtocolMapper::group_membership("group-membership", "groups", false);
    assert_eq!(
        realm.ensure_protocol_mapper(&client.id, &groups).await.expect("create"),
        MapperChange::Created
    );
    let full_path = ProtocolMapper::group_membership("group-membership", "groups", true);
    assert_eq!(
        realm
            .ensure_protocol_mapper(&client.id, &full_path)
            .await
            .expect("change"),
        MapperChange::Updated
    );
    let audience = ProtocolMapper::audience("audience-confidential-client", "ns-app");
    assert_eq!(
        realm
            .ensure_protocol_mapper(&client.id, &audience)
            .await
            .expect("second"),
        MapperChange::Created
    );
    let mappers = realm.list_protocol_mappers(&client.id).await.expect("list");
    assert_eq!(mappers.len(), 2);
    let stored = mappers.iter().find(|m| m.name == "group-membership").expect("stored");
    assert_eq!(stored.config.get("full.path").map(String::as_str), Some("true"));
    let fetched = realm.get_client(&client.id).await.expect("get").expect("client");
    assert_eq!(fetched.protocol_mappers.len(), 2);
    let id = stored.id.clone().expect("id");
    assert!(realm.delete_protocol_mapper(&client.id, &id).await.expect("delete"));
    assert!(
        !realm
            .delete_protocol_mapper(&client.id, &id)
            .await
            .expect("already gone")
    );
    let unknown = ProtocolMapper::oidc("weird", "no-such-mapper", &[]);
    assert!(
        realm
            .ensure_protocol_mapper(&client.id, &unknown)
            .await
            .expect_err("unknown type")
            .is_not_found()
    );
}

// Keycloak stores mappers with defaults the client does not send filled in (`introspection.token.claim` on the
// group-membership mapper, `userinfo.token.claim` on the audience mapper), so a mapper compared with everything
// Keycloak stores never looks the same and is rewritten on every reconcile.
#[tokio::test]
async fn ensuring_the_same_mappers_again_changes_nothing() {
    let kc = start("cl-mappers-again").await;
    let realm = realm(&kc, 100);
    let (client, _) = client_and_scopes(&realm).await;
    let groups = ProtocolMapper::group_membership("group-membership", "groups", false);
    let audience = ProtocolMapper::audience("audience-confidential-client", "ns-app");
    for mapper in [&groups, &audience] {
        assert_eq!(
            realm.ensure_protocol_mapper(&client.id, mapper).await.expect("create"),
            MapperChange::Created
        );
    }
    let writes_before = kc
        .proxy()
        .count("PUT", &route("/clients/{id}/protocol-mappers/models/{id}"));
    let again = [
        realm.ensure_protocol_mapper(&client.id, &groups).await.expect("same"),
        realm.ensure_protocol_mapper(&client.id, &audience).await.expect("same"),
    ];
    assert_eq!(
        (
            again,
            kc.proxy()
                .count("PUT", &route("/clients/{id}/protocol-mappers/models/{id}"))
        ),
        ([MapperChange::Unchanged, MapperChange::Unchanged], writes_before),
        "mappers already as wanted are left alone"
    );
}

#[tokio::test]
async fn client_secrets_never_appear_in_debug_output() {
    let kc = start("cl-debug").await;
    let realm = realm(&kc, 100);
    let spec = ClientSpec::confidential("app", Some(SecretString::from("very-secret-value")));
    let client = realm.ensure_client(&spec).await.expect("create").value;
    assert!(!format!("{client:?} {spec:?}").contains("very-secret-value"));
}

/// A new confidential client `app`, and the default scopes the scope tests ask for (`offline_access` is an optional
/// scope of every new client, `groups` does not exist yet).
async fn client_and_scopes(realm: &controllers::keycloak::RealmClient) -> (controllers::keycloak::Client, Vec<String>) {
    let client = realm
        .ensure_client(&ClientSpec::confidential("app", None))
        .await
        .expect("create")
        .value;
    let wanted = ["openid", "profile", "groups", "offline_access"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    (client, wanted)
}
