//! The HTTP face of the test hooks, under `/__emulator` (never called by Keycloak clients):
//!
//! | request | effect |
//! |---|---|
//! | `GET /__emulator/counters` | `[{"method","route","count"}]` |
//! | `DELETE /__emulator/counters` | resets the counters |
//! | `POST /__emulator/faults` with a `Fault` | adds a rule, answers `{"id":n}` |
//! | `DELETE /__emulator/faults[/{id}]` | removes every rule, or one |
//! | `POST /__emulator/down` `{"mode":"refuse"\|"unavailable","seconds":n?}` | takes the server down |
//! | `DELETE /__emulator/down` | brings it back |
//! | `GET /__emulator/down` | `{"mode":…}` (`null` when up) |
//! | `POST /__emulator/clock/advance` `{"seconds":n}` | moves the clock forward |
//! | `PUT /__emulator/features/fine-grained-authz-v1` `{"enabled":bool}` | the FGAP v1 switch |
//! | `POST /__emulator/realms` `{"name"}` | creates a realm |
//! | `POST /__emulator/users`, `/groups`, `/clients` with a seed | creates it, answers `{"id"}` |
//! | `GET /__emulator/realms/{realm}/groups` | the group tree |
//! | `GET /__emulator/realms/{realm}/group-members?path=/a/b` | usernames of the direct members |
//! | `GET /__emulator/realms/{realm}/users/{username}/groups` | paths of the user's direct groups |
//! | `GET /__emulator/realms/{realm}/clients/{clientId}` | the client's full representation |

use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use serde::Deserialize;

use super::app::App;
use super::config::{ClientSeed, GroupSeed, UserSeed};
use super::hooks::{DownMode, Fault, Hooks, SeedError};
use super::wire::{self, Params};

fn hooks(app: &App) -> Hooks {
    Hooks::new(app.clone())
}

fn not_found(what: &str) -> Response {
    (StatusCode::NOT_FOUND, axum::Json(serde_json::json!({ "error": what }))).into_response()
}

fn seeded(result: Result<String, SeedError>) -> Response {
    match result {
        Ok(id) => (StatusCode::CREATED, axum::Json(serde_json::json!({ "id": id }))).into_response(),
        Err(error) => (
            StatusCode::BAD_REQUEST,
            axum::Json(serde_json::json!({ "error": error.to_string() })),
        )
            .into_response(),
    }
}

/// The body of `POST /__emulator/down`.
#[derive(Debug, Deserialize)]
struct DownRequest {
    mode: DownMode,
    #[serde(default)]
    seconds: Option<f64>,
}

/// The body of `POST /__emulator/clock/advance`.
#[derive(Debug, Deserialize)]
struct Advance {
    seconds: f64,
}

/// The body of the feature switch.
#[derive(Debug, Deserialize)]
struct Switch {
    enabled: bool,
}

/// The body of `POST /__emulator/realms`.
#[derive(Debug, Deserialize)]
struct RealmRequest {
    name: String,
}

/// The hook routes.
pub fn routes() -> Router<App> {
    Router::new()
        .route(
            "/__emulator/counters",
            get(|State(app): State<App>| async move { axum::Json(hooks(&app).counters()) }).delete(
                |State(app): State<App>| async move {
                    hooks(&app).reset_counters();
                    StatusCode::NO_CONTENT
                },
            ),
        )
        .route(
            "/__emulator/faults",
            post(|State(app): State<App>, axum::Json(fault): axum::Json<Fault>| async move {
                axum::Json(serde_json::json!({ "id": hooks(&app).add_fault(fault) }))
            })
            .delete(|State(app): State<App>| async move {
                hooks(&app).clear_faults();
                StatusCode::NO_CONTENT
            }),
        )
        .route(
            "/__emulator/faults/{id}",
            delete(|State(app): State<App>, Path(id): Path<u64>| async move {
                if hooks(&app).remove_fault(id) { StatusCode::NO_CONTENT } else { StatusCode::NOT_FOUND }
            }),
        )
        .route(
            "/__emulator/down",
            get(|State(app): State<App>| async move { axum::Json(serde_json::json!({ "mode": hooks(&app).down_mode() })) })
                .post(|State(app): State<App>, axum::Json(down): axum::Json<DownRequest>| async move {
                    match down.seconds {
                        Some(seconds) => hooks(&app).go_down_for(down.mode, Duration::from_secs_f64(seconds.max(0.0))),
                        None => hooks(&app).go_down(down.mode),
                    }
                    StatusCode::NO_CONTENT
                })
                .delete(|State(app): State<App>| async move {
                    hooks(&app).come_up();
                    StatusCode::NO_CONTENT
                }),
        )
        .route(
            "/__emulator/clock/advance",
            post(|State(app): State<App>, axum::Json(advance): axum::Json<Advance>| async move {
                hooks(&app).advance_clock(Duration::from_secs_f64(advance.seconds.max(0.0)));
                StatusCode::NO_CONTENT
            }),
        )
        .route(
            "/__emulator/features/fine-grained-authz-v1",
            put(|State(app): State<App>, axum::Json(switch): axum::Json<Switch>| async move {
                hooks(&app).set_fine_grained_authz_v1(switch.enabled);
                StatusCode::NO_CONTENT
            }),
        )
        .route(
            "/__emulator/realms",
            post(|State(app): State<App>, axum::Json(realm): axum::Json<RealmRequest>| async move {
                hooks(&app).create_realm(&realm.name);
                StatusCode::CREATED
            }),
        )
        .route(
            "/__emulator/users",
            post(|State(app): State<App>, axum::Json(seed): axum::Json<UserSeed>| async move {
                seeded(hooks(&app).seed_user(&seed))
            }),
        )
        .route(
            "/__emulator/groups",
            post(|State(app): State<App>, axum::Json(seed): axum::Json<GroupSeed>| async move {
                seeded(hooks(&app).seed_group(&seed))
            }),
        )
        .route(
            "/__emulator/clients",
            post(|State(app): State<App>, axum::Json(seed): axum::Json<ClientSeed>| async move {
                seeded(hooks(&app).seed_client(&seed))
            }),
        )
        .route(
            "/__emulator/realms/{realm}/groups",
            get(|State(app): State<App>, Path(realm): Path<String>| async move {
                axum::Json(hooks(&app).group_tree(&realm))
            }),
        )
        .route(
            "/__emulator/realms/{realm}/group-members",
            get(|State(app): State<App>, Path(realm): Path<String>, params: Params| async move {
                let path = params.text("path").unwrap_or_default().to_string();
                match hooks(&app).group_members(&realm, &path) {
                    Some(members) => axum::Json(members).into_response(),
                    None => not_found("no such group"),
                }
            }),
        )
        .route(
            "/__emulator/realms/{realm}/users/{username}/groups",
            get(|State(app): State<App>, Path((realm, username)): Path<(String, String)>| async move {
                axum::Json(hooks(&app).user_group_paths(&realm, &username))
            }),
        )
        .route(
            "/__emulator/realms/{realm}/clients/{client_id}",
            get(|State(app): State<App>, Path((realm, client_id)): Path<(String, String)>| async move {
                match hooks(&app).client(&realm, &client_id) {
                    Some(client) => wire::read(&client),
                    None => not_found("no such client"),
                }
            }),
        )
}
