//! Keystone as its administrator sees it: projects, users, roles, and the application credentials tests count.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::FixtureError;
use super::server::{ADMIN_PASSWORD, KeystoneServer};

/// An admin session (project-scoped to `admin`) against one Keystone.
#[derive(Clone)]
pub struct KeystoneAdmin {
    v3: String,
    http: reqwest::Client,
    token: String,
}

/// A Keystone user made for a test.
#[derive(Clone, Debug)]
pub struct ServiceAccount {
    /// User name.
    pub name: String,
    /// User id.
    pub id: String,
    /// Password.
    pub password: String,
}

fn api_error(operation: &str, detail: impl std::fmt::Display) -> FixtureError {
    FixtureError::Api {
        operation: operation.to_string(),
        detail: detail.to_string(),
    }
}

/// The body of a project-scoped password login.
pub fn password_login(user: &str, password: &str, project: &str) -> Value {
    json!({"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": user, "domain": {"name": "Default"}, "password": password}}},
        "scope": {"project": {"name": project, "domain": {"name": "Default"}}}
    }})
}

/// Logs in at `v3`; returns the token and the token document.
async fn login(http: &reqwest::Client, v3: &str, body: &Value) -> Result<(String, Value), FixtureError> {
    let response = http
        .post(format!("{v3}/auth/tokens"))
        .json(body)
        .send()
        .await
        .map_err(|e| api_error("login", e))?;
    let status = response.status();
    let token = response
        .headers()
        .get("x-subject-token")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let document: Value = response.json().await.unwrap_or(Value::Null);
    match (status, token) {
        (StatusCode::CREATED, Some(token)) => Ok((token, document)),
        _ => Err(api_error("login", format!("HTTP {status}: {document}"))),
    }
}

impl KeystoneAdmin {
    /// Logs in as `admin` (created by bootstrap).
    pub async fn login(server: &KeystoneServer) -> Result<Self, FixtureError> {
        // Timeouts: a Keystone whose worker died still accepts connections.
        let http = server
            .http_client(Duration::from_secs(30))
            .map_err(|e| api_error("client", e))?;
        let v3 = server.v3_url();
        let (token, _) = login(&http, &v3, &password_login("admin", ADMIN_PASSWORD, "admin")).await?;
        Ok(Self { v3, http, token })
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<(StatusCode, Value), FixtureError> {
        let mut request = self
            .http
            .request(method.clone(), format!("{}{path}", self.v3))
            .header("X-Auth-Token", &self.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request
            .send()
            .await
            .map_err(|e| api_error(&format!("{method} {path}"), e))?;
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Ok((status, value))
    }

    async fn expect(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        want: StatusCode,
    ) -> Result<Value, FixtureError> {
        let (status, value) = self.call(method.clone(), path, body).await?;
        if status != want {
            return Err(api_error(
                &format!("{method} {path}"),
                format!("HTTP {status}: {value}"),
            ));
        }
        Ok(value)
    }

    /// Rewrites the catalog's identity endpoints to `url` (the database was bootstrapped with a placeholder).
    pub async fn point_catalog_at(&self, url: &str) -> Result<(), FixtureError> {
        let endpoints = self
            .expect(reqwest::Method::GET, "/endpoints", None, StatusCode::OK)
            .await?;
        for endpoint in endpoints["endpoints"].as_array().into_iter().flatten() {
            let Some(id) = endpoint["id"].as_str() else { continue };
            if endpoint["url"].as_str() != Some(url) {
                self.expect(
                    reqwest::Method::PATCH,
                    &format!("/endpoints/{id}"),
                    Some(json!({"endpoint": {"url": url}})),
                    StatusCode::OK,
                )
                .await?;
            }
        }
        Ok(())
    }

    /// The id of project `name` in the Default domain, creating it if needed.
    pub async fn ensure_project(&self, name: &str) -> Result<String, FixtureError> {
        let body = json!({"project": {"name": name, "domain_id": "default", "description": "e2e"}});
        let (status, value) = self.call(reqwest::Method::POST, "/projects", Some(body)).await?;
        match status {
            StatusCode::CREATED => Ok(value["project"]["id"].as_str().unwrap_or_default().to_string()),
            StatusCode::CONFLICT => {
                let found = self
                    .expect(
                        reqwest::Method::GET,
                        &format!("/projects?name={name}"),
                        None,
                        StatusCode::OK,
                    )
                    .await?;
                found["projects"][0]["id"]
                    .as_str()
                    .map(str::to_string)
                    .ok_or_else(|| api_error("find project", name))
            }
            other => Err(api_error("create project", format!("HTTP {other}: {value}"))),
        }
    }

    /// The id of role `name`, creating it if needed (bootstrap makes admin, manager, member, reader, service).
    pub async fn ensure_role(&self, name: &str) -> Result<String, FixtureError> {
        let found = self
            .expect(
                reqwest::Method::GET,
                &format!("/roles?name={name}"),
                None,
                StatusCode::OK,
            )
            .await?;
        if let Some(id) = found["roles"][0]["id"].as_str() {
            return Ok(id.to_string());
        }
        let (status, value) = self
            .call(reqwest::Method::POST, "/roles", Some(json!({"role": {"name": name}})))
            .await?;
        match status {
            StatusCode::CREATED => Ok(value["role"]["id"].as_str().unwrap_or_default().to_string()),
            StatusCode::CONFLICT => Box::pin(self.ensure_role(name)).await,
            other => Err(api_error("create role", format!("HTTP {other}: {value}"))),
        }
    }

    /// Creates user `name` with `password` holding `roles` in `project` (all in the Default domain).
    pub async fn create_user(
        &self,
        name: &str,
        password: &str,
        project: &str,
        roles: &[&str],
    ) -> Result<ServiceAccount, FixtureError> {
        let project_id = self.ensure_project(project).await?;
        let body = json!({"user": {"name": name, "domain_id": "default", "password": password, "enabled": true}});
        let user = self
            .expect(reqwest::Method::POST, "/users", Some(body), StatusCode::CREATED)
            .await?;
        let id = user["user"]["id"].as_str().unwrap_or_default().to_string();
        for role in roles {
            let role_id = self.ensure_role(role).await?;
            self.expect(
                reqwest::Method::PUT,
                &format!("/projects/{project_id}/users/{id}/roles/{role_id}"),
                None,
                StatusCode::NO_CONTENT,
            )
            .await?;
        }
        Ok(ServiceAccount {
            name: name.to_string(),
            id,
            password: password.to_string(),
        })
    }

    /// The id of user `name`, if it exists.
    pub async fn find_user(&self, name: &str) -> Result<Option<String>, FixtureError> {
        let found = self
            .expect(
                reqwest::Method::GET,
                &format!("/users?name={name}"),
                None,
                StatusCode::OK,
            )
            .await?;
        Ok(found["users"][0]["id"].as_str().map(str::to_string))
    }

    /// Sets a user's password.
    pub async fn set_password(&self, user_id: &str, password: &str) -> Result<(), FixtureError> {
        self.expect(
            reqwest::Method::PATCH,
            &format!("/users/{user_id}"),
            Some(json!({"user": {"password": password}})),
            StatusCode::OK,
        )
        .await
        .map(|_| ())
    }

    /// Every application credential of a user (as Keystone lists them, without secrets).
    pub async fn application_credentials(&self, user_id: &str) -> Result<Vec<Value>, FixtureError> {
        let list = self
            .expect(
                reqwest::Method::GET,
                &format!("/users/{user_id}/application_credentials"),
                None,
                StatusCode::OK,
            )
            .await?;
        Ok(list["application_credentials"].as_array().cloned().unwrap_or_default())
    }

    /// One application credential of a user, if it exists.
    pub async fn application_credential(&self, user_id: &str, id: &str) -> Result<Option<Value>, FixtureError> {
        let (status, value) = self
            .call(
                reqwest::Method::GET,
                &format!("/users/{user_id}/application_credentials/{id}"),
                None,
            )
            .await?;
        match status {
            StatusCode::OK => Ok(Some(value["application_credential"].clone())),
            StatusCode::NOT_FOUND => Ok(None),
            other => Err(api_error(
                "get application credential",
                format!("HTTP {other}: {value}"),
            )),
        }
    }

    /// Logs in with an application credential; returns Keystone's HTTP status (201 when it works).
    pub async fn authenticate_application_credential(
        &self,
        id: &str,
        secret: &str,
    ) -> Result<StatusCode, FixtureError> {
        let body = json!({"auth": {"identity": {"methods": ["application_credential"],
            "application_credential": {"id": id, "secret": secret}}}});
        let response = self
            .http
            .post(format!("{}/auth/tokens", self.v3))
            .json(&body)
            .send()
            .await
            .map_err(|e| api_error("application credential login", e))?;
        Ok(response.status())
    }
}
