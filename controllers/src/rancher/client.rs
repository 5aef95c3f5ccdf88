//! The Rancher client: URLs, authentication, paging, and the calls controllers make.

use framework::trust::TrustSettings;
use std::collections::HashSet;
use std::sync::Arc;

use framework::http::{ExternalApi, HttpSettings, Idempotency, bearer};
use framework::metrics::Metrics;
use framework::sanitize;
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::Value;
use url::Url;

use super::API_NAME;
use super::error::RancherError;
use super::token::TokenProvider;
use super::wire::{
    BindingTarget, Cluster, Collection, Namespace, NewProject, Project, ProjectUpdate, RoleBinding, Subject,
    binding_filters, create_binding_body, create_project_body, explain_error, update_project_body,
};

/// Items asked for per page (norman's default and a safe size).
const PAGE_SIZE: &str = "1000";
/// Pages followed at most before giving up on a collection that never ends.
const MAX_PAGES: usize = 1000;

/// What a delete found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deletion {
    /// The object existed and is being (or has been) deleted.
    Deleted,
    /// Nothing had that id (404).
    AlreadyGone,
}

/// A client of one Rancher server's v3 API.
#[derive(Clone)]
pub struct RancherClient {
    api: ExternalApi,
    base: Url,
    tokens: Arc<dyn TokenProvider>,
}

impl std::fmt::Debug for RancherClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RancherClient")
            .field("base", &sanitize::display_url(self.base.as_str()))
            .finish_non_exhaustive()
    }
}

/// The server's base URL without a trailing `/` or `/v3`, so both `https://rancher` and `https://rancher/v3/`
/// work.
pub fn normalize_base_url(raw: &str) -> Result<Url, RancherError> {
    let mut url = Url::parse(raw.trim()).map_err(|e| RancherError::InvalidUrl { detail: e.to_string() })?;
    if !matches!(url.scheme(), "http" | "https") || url.cannot_be_a_base() {
        return Err(RancherError::InvalidUrl {
            detail: format!("{} is not an http(s) URL", sanitize::display_url(raw)),
        });
    }
    let path = url.path().trim_end_matches('/').to_string();
    let path = path.strip_suffix("/v3").unwrap_or(&path).to_string();
    url.set_path(&path);
    url.set_query(None);
    url.set_fragment(None);
    Ok(url)
}

impl RancherClient {
    /// A client for the Rancher at `base_url` (e.g. `https://rancher.example.com`), authenticating with the
    /// token `tokens` supplies on each request.
    pub fn new(
        base_url: &str,
        settings: HttpSettings,
        metrics: Option<Metrics>,
        tokens: Arc<dyn TokenProvider>,
    ) -> Result<Self, RancherError> {
        Self::with_trust(base_url, settings, metrics, tokens, None, TrustSettings::default())
    }

    /// [`Self::new`], verifying Rancher's certificate against `trust` (CA bundles are read through `kube`).
    pub fn with_trust(
        base_url: &str,
        settings: HttpSettings,
        metrics: Option<Metrics>,
        tokens: Arc<dyn TokenProvider>,
        kube: Option<kube::Client>,
        trust: TrustSettings,
    ) -> Result<Self, RancherError> {
        let base = normalize_base_url(base_url)?;
        let api = ExternalApi::with_trust(API_NAME, settings, metrics, kube, trust)?;
        Ok(Self { api, base, tokens })
    }

    /// `<base>/v3/<segments…>?<query>`, with each segment percent-encoded as a path segment.
    pub fn url(&self, segments: &[&str], query: &[(&str, &str)]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().push("v3").extend(segments);
        }
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        url
    }

    /// Sends one request with the current token; after a 401 the token is re-read once and the request retried
    /// (a rotated Secret takes effect at once).
    async fn send(
        &self,
        operation: &'static str,
        method: Method,
        url: Url,
        body: Option<&Value>,
        idempotency: Idempotency,
    ) -> Result<reqwest::Response, RancherError> {
        let mut refreshed = false;
        loop {
            let token = self.tokens.token().await?;
            let mut request = self
                .api
                .client()
                .request(method.clone(), url.clone())
                .header(reqwest::header::AUTHORIZATION, bearer(&token))
                .header(reqwest::header::ACCEPT, "application/json");
            if let Some(body) = body {
                request = request.json(body);
            }
            match self.api.send(operation, idempotency, request, explain_error).await {
                Err(error) if error.status() == Some(StatusCode::UNAUTHORIZED) && !refreshed => {
                    self.tokens.invalidate().await;
                    refreshed = true;
                }
                result => return result.map_err(RancherError::from),
            }
        }
    }

    async fn read<T: DeserializeOwned>(
        &self,
        operation: &'static str,
        method: Method,
        url: Url,
        body: Option<&Value>,
        idempotency: Idempotency,
    ) -> Result<T, RancherError> {
        let response = self.send(operation, method, url, body, idempotency).await?;
        Ok(self.api.json(operation, response).await?)
    }

    /// GETs one object; 404 is `None`.
    async fn get_opt<T: DeserializeOwned>(&self, operation: &'static str, url: Url) -> Result<Option<T>, RancherError> {
        match self
            .read(operation, Method::GET, url, None, Idempotency::Idempotent)
            .await
        {
            Ok(value) => Ok(Some(value)),
            Err(error) if error.is_not_found() => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// DELETEs one object; 404 is [`Deletion::AlreadyGone`].
    async fn delete(&self, operation: &'static str, url: Url) -> Result<Deletion, RancherError> {
        match self
            .send(operation, Method::DELETE, url, None, Idempotency::Idempotent)
            .await
        {
            Ok(_) => Ok(Deletion::Deleted),
            Err(error) if error.is_not_found() => Ok(Deletion::AlreadyGone),
            Err(error) => Err(error),
        }
    }

    /// Every item of a collection, following norman's markers page by page.
    async fn list_all<T: DeserializeOwned>(
        &self,
        operation: &'static str,
        segments: &[&str],
        filters: &[(&str, &str)],
    ) -> Result<Vec<T>, RancherError> {
        let mut items = Vec::new();
        let mut marker: Option<String> = None;
        let mut seen_markers = HashSet::new();
        for _ in 0..MAX_PAGES {
            let mut query: Vec<(&str, &str)> = filters.to_vec();
            query.push(("limit", PAGE_SIZE));
            if let Some(marker) = &marker {
                query.push(("marker", marker));
            }
            let url = self.url(segments, &query);
            let page: Collection<T> = self
                .read(operation, Method::GET, url, None, Idempotency::Idempotent)
                .await?;
            items.extend(page.data);
            match page.pagination.and_then(|p| p.next_marker()) {
                Some(next) if seen_markers.insert(next.clone()) => marker = Some(next),
                Some(_) => {
                    return Err(RancherError::UnexpectedResponse {
                        operation,
                        detail: "the collection's next page marker repeats".into(),
                    });
                }
                None => return Ok(items),
            }
        }
        Err(RancherError::UnexpectedResponse {
            operation,
            detail: format!("more than {MAX_PAGES} pages"),
        })
    }

    /// The cluster with this id, if it exists.
    pub async fn get_cluster(&self, cluster_id: &str) -> Result<Option<Cluster>, RancherError> {
        self.get_opt("get cluster", self.url(&["clusters", cluster_id], &[]))
            .await
    }

    /// Every project of a cluster (including Default and System).
    pub async fn list_projects(&self, cluster_id: &str) -> Result<Vec<Project>, RancherError> {
        let projects: Vec<Project> = self
            .list_all("list projects", &["projects"], &[("clusterId", cluster_id)])
            .await?;
        Ok(projects.into_iter().filter(|p| p.cluster_id == cluster_id).collect())
    }

    /// The projects of a cluster with exactly this display name (Rancher allows several). The server filters
    /// too, but the result is checked here as well: a server that ignores a filter returns everything.
    pub async fn find_projects(&self, cluster_id: &str, name: &str) -> Result<Vec<Project>, RancherError> {
        let projects: Vec<Project> = self
            .list_all(
                "find projects",
                &["projects"],
                &[("clusterId", cluster_id), ("name", name)],
            )
            .await?;
        Ok(projects
            .into_iter()
            .filter(|p| p.cluster_id == cluster_id && p.name == name)
            .collect())
    }

    /// The project with this id (`<clusterId>:<projectName>`), if it exists.
    pub async fn get_project(&self, id: &str) -> Result<Option<Project>, RancherError> {
        self.get_opt("get project", self.url(&["projects", id], &[])).await
    }

    /// Creates a project. Never retried: Rancher allows duplicate names, so a lost answer must be resolved by
    /// looking the project up (by its ownership annotations) rather than by sending again.
    pub async fn create_project(&self, project: &NewProject) -> Result<Project, RancherError> {
        let body = create_project_body(project);
        let created: Project = self
            .read(
                "create project",
                Method::POST,
                self.url(&["projects"], &[]),
                Some(&body),
                Idempotency::Once,
            )
            .await?;
        if created.id.is_empty() {
            return Err(RancherError::UnexpectedResponse {
                operation: "create project",
                detail: "no id".into(),
            });
        }
        Ok(created)
    }

    /// Applies `update` to the project `current` (as last read), returning the project as Rancher stored it.
    /// Nothing is sent when the update would change nothing.
    pub async fn update_project(&self, current: &Project, update: &ProjectUpdate) -> Result<Project, RancherError> {
        if update.is_noop_for(current) {
            return Ok(current.clone());
        }
        let body = update_project_body(current, update);
        let url = self.url(&["projects", &current.id], &[]);
        self.read("update project", Method::PUT, url, Some(&body), Idempotency::Idempotent)
            .await
    }

    /// Deletes a project (Rancher answers `removing`, the project disappears shortly after).
    pub async fn delete_project(&self, id: &str) -> Result<Deletion, RancherError> {
        self.delete("delete project", self.url(&["projects", id], &[])).await
    }

    /// Every binding on a project or cluster.
    pub async fn list_bindings(&self, target: &BindingTarget) -> Result<Vec<RoleBinding>, RancherError> {
        let operation = list_operation(target);
        let bindings: Vec<RoleBinding> = self
            .list_all(operation, &[target.collection()], &[(target.field(), target.id())])
            .await?;
        Ok(bindings
            .into_iter()
            .filter(|b| match target {
                BindingTarget::Project(id) => b.project_id.as_deref() == Some(id),
                BindingTarget::Cluster(id) => b.cluster_id.as_deref() == Some(id),
            })
            .collect())
    }

    /// The bindings of `role` for `subject` on `target` (normally one; Rancher ≤ 2.13 allows duplicates).
    pub async fn find_bindings(
        &self,
        target: &BindingTarget,
        role: &str,
        subject: &Subject,
    ) -> Result<Vec<RoleBinding>, RancherError> {
        let filters = binding_filters(target, role, subject);
        let query: Vec<(&str, &str)> = filters.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let bindings: Vec<RoleBinding> = self
            .list_all(list_operation(target), &[target.collection()], &query)
            .await?;
        Ok(bindings
            .into_iter()
            .filter(|b| b.is_for(target, role, subject))
            .collect())
    }

    /// Creates a binding. A 409 (Rancher ≥ 2.14 refuses duplicates) comes back as a conflict error.
    pub async fn create_binding(
        &self,
        target: &BindingTarget,
        role: &str,
        subject: &Subject,
    ) -> Result<RoleBinding, RancherError> {
        let operation = match target {
            BindingTarget::Project(_) => "create project role binding",
            BindingTarget::Cluster(_) => "create cluster role binding",
        };
        let body = create_binding_body(target, role, subject);
        let url = self.url(&[target.collection()], &[]);
        let created: RoleBinding = self
            .read(operation, Method::POST, url, Some(&body), Idempotency::Once)
            .await?;
        if created.id.is_empty() {
            return Err(RancherError::UnexpectedResponse {
                operation,
                detail: "no id".into(),
            });
        }
        Ok(created)
    }

    /// The binding of `role` for `subject` on `target`, created when missing. Works with both duplicate
    /// policies: a 409 on create means another writer made it, and a create whose answer was lost (timeout,
    /// dropped connection) is looked up before giving up, so no duplicate is created by retrying.
    pub async fn ensure_binding(
        &self,
        target: &BindingTarget,
        role: &str,
        subject: &Subject,
    ) -> Result<RoleBinding, RancherError> {
        if let Some(existing) = self.find_bindings(target, role, subject).await?.into_iter().next() {
            return Ok(existing);
        }
        match self.create_binding(target, role, subject).await {
            Ok(created) => Ok(created),
            Err(error) if error.is_conflict() || error.is_transient() => {
                match self.find_bindings(target, role, subject).await?.into_iter().next() {
                    Some(existing) => Ok(existing),
                    None => Err(error),
                }
            }
            Err(error) => Err(error),
        }
    }

    /// Deletes a binding by id.
    pub async fn delete_binding(&self, target: &BindingTarget, id: &str) -> Result<Deletion, RancherError> {
        let operation = match target {
            BindingTarget::Project(_) => "delete project role binding",
            BindingTarget::Cluster(_) => "delete cluster role binding",
        };
        self.delete(operation, self.url(&[target.collection(), id], &[])).await
    }

    /// The namespaces of a cluster, or of one of its projects (system namespaces are hidden by Rancher).
    pub async fn list_namespaces(
        &self,
        cluster_id: &str,
        project_id: Option<&str>,
    ) -> Result<Vec<Namespace>, RancherError> {
        let filters: Vec<(&str, &str)> = project_id.map(|p| vec![("projectId", p)]).unwrap_or_default();
        let namespaces: Vec<Namespace> = self
            .list_all("list namespaces", &["clusters", cluster_id, "namespaces"], &filters)
            .await?;
        Ok(namespaces
            .into_iter()
            .filter(|ns| project_id.is_none() || ns.project_id.as_deref() == project_id)
            .collect())
    }
}

fn list_operation(target: &BindingTarget) -> &'static str {
    match target {
        BindingTarget::Project(_) => "list project role bindings",
        BindingTarget::Cluster(_) => "list cluster role bindings",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rancher::token::StaticToken;
    use secrecy::SecretString;

    fn client(base: &str) -> RancherClient {
        let tokens: Arc<dyn TokenProvider> = Arc::new(StaticToken(SecretString::from("token-abc:secret")));
        RancherClient::new(base, HttpSettings::default(), None, tokens).expect("client builds")
    }

    #[test]
    fn base_urls_are_normalized() {
        for raw in [
            "https://rancher.example.com",
            "https://rancher.example.com/",
            "https://rancher.example.com/v3/",
        ] {
            assert_eq!(
                normalize_base_url(raw).expect("valid").as_str(),
                "https://rancher.example.com/",
                "{raw}"
            );
        }
        assert_eq!(
            normalize_base_url("https://h/prefix/v3").expect("valid").as_str(),
            "https://h/prefix"
        );
        assert!(normalize_base_url("ftp://h").is_err());
        assert!(normalize_base_url("not a url").is_err());
    }

    #[test]
    fn urls_encode_ids_as_one_segment_and_queries_as_forms() {
        let client = client("https://rancher.example.com/");
        assert_eq!(
            client.url(&["projects", "c-m-1:p-abcde"], &[]).as_str(),
            "https://rancher.example.com/v3/projects/c-m-1:p-abcde"
        );
        assert_eq!(
            client
                .url(
                    &["projectroletemplatebindings"],
                    &[("groupPrincipalId", "keycloakoidc_group://a b/c")]
                )
                .as_str(),
            "https://rancher.example.com/v3/projectroletemplatebindings?groupPrincipalId=keycloakoidc_group%3A%2F%2Fa+b%2Fc"
        );
        let prefixed = self::client("https://h/rancher");
        assert_eq!(
            prefixed.url(&["clusters", "local", "namespaces"], &[]).as_str(),
            "https://h/rancher/v3/clusters/local/namespaces"
        );
        assert_eq!(
            prefixed.url(&["projects", "weird/id"], &[]).as_str(),
            "https://h/rancher/v3/projects/weird%2Fid",
            "an id can never escape its path segment"
        );
    }

    #[test]
    fn debug_output_hides_credentials() {
        let shown = format!("{:?}", client("https://user:pw@rancher.example.com"));
        assert!(!shown.contains("pw") && !shown.contains("token-abc"), "{shown}");
    }
}
