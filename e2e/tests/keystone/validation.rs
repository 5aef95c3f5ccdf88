//! The CRD refuses invalid specs at `kubectl apply`, with the rule's own message, and accepts the seed sample
//! unchanged. No manager and no Keystone are needed: this is the API server's validation of our schema.

use e2e::harness::TestCluster;

async fn cluster_with_namespace() -> (TestCluster, String) {
    let cluster = TestCluster::start().await;
    cluster.install_crds(&crds::all()).await;
    let namespace = cluster.create_namespace("appcred-validation").await;
    (cluster, namespace)
}

fn credential(namespace: &str, spec: &str) -> String {
    format!(
        "apiVersion: keystone.openstack.org/v1beta1\nkind: KeystoneApplicationCredential\nmetadata:\n  name: ac-nova\n  namespace: {namespace}\nspec:\n  secret: osp-secret\n  passwordSelector: NovaPassword\n  userName: nova\n{spec}"
    )
}

async fn refused(cluster: &TestCluster, yaml: &str) -> String {
    cluster
        .kubectl()
        .run_with_stdin(&["apply", "-f", "-"], Some(yaml))
        .await
        .expect_failure("apply an invalid spec")
}

#[tokio::test]
async fn invalid_specs_are_refused_by_kubectl_apply_with_the_rules_message() {
    let (cluster, namespace) = cluster_with_namespace().await;

    let error = refused(
        &cluster,
        &credential(
            &namespace,
            "  roles: [service]\n  expirationDays: 30\n  gracePeriodDays: 30\n",
        ),
    )
    .await;
    assert!(
        error.contains("gracePeriodDays must be smaller than expirationDays"),
        "{error}"
    );
    // The defaults take part in the rule: a grace period beyond the default lifetime is refused too.
    let error = refused(
        &cluster,
        &credential(&namespace, "  roles: [service]\n  gracePeriodDays: 400\n"),
    )
    .await;
    assert!(
        error.contains("gracePeriodDays must be smaller than expirationDays"),
        "{error}"
    );

    let error = refused(&cluster, &credential(&namespace, "  roles: []\n")).await;
    assert!(
        error.contains("spec.roles") && error.contains("should have at least 1 items"),
        "{error}"
    );

    let error = refused(
        &cluster,
        &credential(
            &namespace,
            "  roles: [service]\n  accessRules:\n    - service: compute\n      path: /servers\n      method: FETCH\n",
        ),
    )
    .await;
    assert!(
        error.contains("spec.accessRules[0].method") && error.contains("Unsupported value: \"FETCH\""),
        "{error}"
    );

    let error = refused(
        &cluster,
        &credential(&namespace, "  roles: [service]\n  expirationDays: 1\n"),
    )
    .await;
    assert!(
        error.contains("spec.expirationDays") && error.contains("should be greater than or equal to 2"),
        "{error}"
    );

    let ok = credential(
        &namespace,
        "  roles: [service]\n  expirationDays: 30\n  gracePeriodDays: 29\n",
    );
    cluster.kubectl().apply(&ok).await;
}

#[tokio::test]
async fn the_seed_sample_applies_unchanged_and_gets_the_defaults() {
    let cluster = TestCluster::start().await;
    cluster.install_crds(&crds::all()).await;
    cluster.create_namespace_named("openstack", &[]).await;
    let sample = e2e::keystone::install::repo_root()
        .join("manifests/samples/keystone_v1beta1_keystoneapplicationcredential.yaml");
    let path = sample.to_string_lossy().to_string();
    cluster
        .kubectl()
        .run(&["apply", "-f", &path])
        .await
        .expect_success("apply the sample");
    let minimal = "apiVersion: keystone.openstack.org/v1beta1\nkind: KeystoneApplicationCredential\nmetadata:\n  name: ac-glance\n  namespace: openstack\nspec:\n  secret: osp-secret\n  passwordSelector: GlancePassword\n  userName: glance\n  roles: [service]\n";
    cluster.kubectl().apply(minimal).await;
    let object = cluster
        .kubectl()
        .get_json(&["appcred", "ac-glance", "-n", "openstack"])
        .await;
    assert_eq!(object["spec"]["expirationDays"], 365);
    assert_eq!(object["spec"]["gracePeriodDays"], 182);
    assert_eq!(object["spec"]["unrestricted"], false);
    let explained = cluster
        .kubectl()
        .run(&["explain", "keystoneapplicationcredential.spec.gracePeriodDays"])
        .await
        .expect_success("explain");
    assert!(explained.contains("must be smaller than"), "{explained}");
}
