//! What the manager itself may do, asked of the API server (SelfSubjectAccessReview, which every authenticated
//! user may create). A controller uses it to choose between a cluster-wide read and one read per watched
//! namespace, so a namespaced install works without being answered Forbidden.

use k8s_openapi::api::authorization::v1::{ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec};
use kube::Client;
use kube::api::{Api, PostParams};

/// Whether the manager may `verb` the `group`/`resource` at cluster scope (all namespaces).
pub async fn may_cluster_wide(client: &Client, verb: &str, group: &str, resource: &str) -> Result<bool, kube::Error> {
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.to_string()),
                group: Some(group.to_string()),
                resource: Some(resource.to_string()),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let answered = api.create(&PostParams::default(), &review).await?;
    Ok(answered.status.is_some_and(|s| s.allowed))
}
