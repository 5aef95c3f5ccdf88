//! A real Keycloak (the `keycloak-quarkus-dist` provisioned from Maven Central) on loopback: an in-memory
//! database, a fixed hostname (so the issuer in tokens is the URL the tests and the operator use), the heap
//! capped, a bootstrap administrator with a password made for this run.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rand::Rng;

use super::cache::Provisioned;
use super::process::{Supervised, free_port};
use super::{KeycloakEndpoint, SubstrateError};

/// Which prepared copy runs (features are build-time options in Keycloak, so each set is its own copy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeycloakFlavour {
    /// The default features: standard token exchange (v2), fine-grained admin permissions v2.
    Default,
    /// The preview features `token-exchange` and `admin-fine-grained-authz:v1` (legacy token exchange).
    V1TokenExchange,
}

impl KeycloakFlavour {
    fn copy(self) -> &'static str {
        match self {
            KeycloakFlavour::Default => "default",
            KeycloakFlavour::V1TokenExchange => "v1",
        }
    }
}

/// A running Keycloak; dropping it stops the server.
pub struct RealKeycloak {
    process: Supervised,
    endpoint: KeycloakEndpoint,
    startup: Duration,
}

impl RealKeycloak {
    /// Starts the `flavour` copy with its log under `dir` and waits (up to 4 minutes: a cold JVM on 2 cores) until
    /// its readiness check passes.
    pub async fn start(binaries: &Provisioned, flavour: KeycloakFlavour, dir: &Path) -> Result<Self, SubstrateError> {
        let started = Instant::now();
        std::fs::create_dir_all(dir).map_err(SubstrateError::io(format!("create {}", dir.display())))?;
        let home = binaries.keycloak_home(flavour.copy())?;
        let port = free_port()?;
        let management_port = free_port()?;
        let url = format!("http://127.0.0.1:{port}");
        let password: String = rand::rng()
            .sample_iter(rand::distr::Alphanumeric)
            .take(24)
            .map(char::from)
            .collect();
        let mut command = Command::new(home.join("bin/kc.sh"));
        command
            .env("JAVA_HOME", binaries.java_home()?)
            // Keycloak sizes its heap from the machine's memory (70 %) unless told.
            .env("JAVA_OPTS_KC_HEAP", "-Xms64m -Xmx640m")
            .env("KC_BOOTSTRAP_ADMIN_USERNAME", "admin")
            .env("KC_BOOTSTRAP_ADMIN_PASSWORD", &password)
            .arg("start")
            .arg("--optimized")
            .arg("--http-enabled=true")
            .arg("--http-host=127.0.0.1")
            .arg(format!("--http-port={port}"))
            .arg(format!("--hostname={url}"))
            .arg(format!("--http-management-port={management_port}"))
            .arg("--cache=local");
        let log = dir.join(format!("keycloak-{}.log", flavour.copy()));
        let mut process = Supervised::spawn(&format!("Keycloak ({})", flavour.copy()), command, &log)?;

        let health = format!("http://127.0.0.1:{management_port}/health/ready");
        // A cold JVM on 2 cores takes its time.
        process
            .wait_http_ok(&health, Duration::from_secs(240), Duration::from_millis(500))
            .await?;
        Ok(RealKeycloak {
            process,
            endpoint: KeycloakEndpoint {
                url,
                admin_username: "admin".into(),
                admin_password: password,
            },
            startup: started.elapsed(),
        })
    }

    /// Where it answers and who administers it.
    pub fn endpoint(&self) -> &KeycloakEndpoint {
        &self.endpoint
    }

    /// How long the start took, up to the first passing readiness check.
    pub fn startup(&self) -> Duration {
        self.startup
    }

    /// Fails when the server has exited.
    pub fn check_running(&mut self) -> Result<(), SubstrateError> {
        self.process.check_running()
    }
}
