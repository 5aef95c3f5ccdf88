//! A real Keystone for the KeystoneApplicationCredential sample: installed on first use (PyPI, into
//! `target/tools/keystone-venv`), started on a free port with its state under the sandbox's work directory, and
//! prepared for `ac-barbican` (service user, role, password Secret, a Ready KeystoneAPI pointing at it).

use std::path::Path;

use kube::Client;
use tokio::process::Command;

use super::SandboxError;
use e2e::keystone::fault_proxy::FaultProxy;
use e2e::keystone::install::{Installation, repo_root};
use e2e::keystone::sample::{names, prepare_for_sample, publish_keystone_api};
use e2e::keystone::server::{KeystoneServer, ServerOptions};

/// The sandbox's Keystone (stopped when dropped).
pub struct KeystoneSandbox {
    server: KeystoneServer,
}

async fn ensure_installed() -> Result<(), SandboxError> {
    if Installation::find().is_ok() {
        return Ok(());
    }
    println!("installing OpenStack Keystone from PyPI (first run only, about a minute)...");
    let script = repo_root().join("e2e/keystone/install.sh");
    let status = Command::new("bash")
        .arg(&script)
        .status()
        .await
        .map_err(|e| SandboxError::start("Keystone install", format!("cannot run {}: {e}", script.display())))?;
    if !status.success() {
        return Err(SandboxError::start(
            "Keystone install",
            format!("{} failed", script.display()),
        ));
    }
    Installation::find()
        .map(|_| ())
        .map_err(|e| SandboxError::start("Keystone install", e))
}

/// Installs (if needed), starts and prepares Keystone.
pub async fn prepare(client: &Client, work_dir: &Path) -> Result<KeystoneSandbox, SandboxError> {
    ensure_installed().await?;
    let options = ServerOptions {
        dir: Some(work_dir.join("keystone")),
        port: 0,
        tls: None,
    };
    let server = KeystoneServer::start(options)
        .await
        .map_err(|e| SandboxError::start("Keystone", e))?;
    prepare_for_sample(&server, client)
        .await
        .map_err(|e| SandboxError::start("Keystone sample", e))?;
    Ok(KeystoneSandbox { server })
}

impl KeystoneSandbox {
    /// Keystone's base URL.
    pub fn url(&self) -> &str {
        self.server.url()
    }

    /// The Keystone server.
    pub fn server(&self) -> &KeystoneServer {
        &self.server
    }

    /// Starts a [`FaultProxy`] in front of Keystone and points the sample's KeystoneAPI at it, so the manager
    /// reaches Keystone only through the proxy.
    pub async fn put_behind_fault_proxy(&self, client: &Client) -> Result<FaultProxy, SandboxError> {
        let proxy = FaultProxy::start(self.server.url())
            .await
            .map_err(|e| SandboxError::start("Keystone fault proxy", e))?;
        publish_keystone_api(
            client,
            names::NAMESPACE,
            names::KEYSTONE_API,
            &proxy.url(),
            true,
            "Setup complete",
        )
        .await
        .map_err(|e| SandboxError::start("Keystone fault proxy", e))?;
        Ok(proxy)
    }

    /// Stops Keystone.
    pub fn stop(&self) {
        self.server.stop();
    }
}
