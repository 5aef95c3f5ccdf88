//! A real OpenStack Keystone (from PyPI) serving on 127.0.0.1: sqlite database, fernet tokens, gunicorn.
//!
//! Setting up a database takes ~10 s of CPU (`db_sync`, key setup, `bootstrap`), so it is done once per
//! installation into a template under `target/tools/` and each server starts from a copy: a start is then the
//! ~4 s gunicorn needs to import Keystone. The server lives in its own process group and dies with the process
//! that started it (a watchdog in gunicorn's master notices the parent is gone), so an aborted test run leaves
//! no Keystone behind.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::FixtureError;
use super::install::{Installation, tools_dir};

/// Password of the `admin` user created by `keystone-manage bootstrap` (test-only Keystone).
pub const ADMIN_PASSWORD: &str = "e2e-keystone-admin";
/// Region created by bootstrap.
pub const REGION: &str = "RegionOne";
/// The catalog URL written at template time; replaced with the real one after each start.
const PLACEHOLDER_URL: &str = "http://127.0.0.1:5000/v3";
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// How to start a Keystone.
#[derive(Clone, Debug, Default)]
pub struct ServerOptions {
    /// Directory for the database, keys, config and logs; `None` uses a temporary directory removed on stop.
    pub dir: Option<PathBuf>,
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Serve HTTPS (gunicorn `certfile`/`keyfile`) with a certificate from a test CA.
    pub tls: Option<TlsServing>,
}

/// A Keystone's TLS certificate and the CA that issued it (what clients must trust).
#[derive(Clone, Debug)]
pub struct TlsServing {
    /// The server certificate and key.
    pub cert: emulator_kit::tls::ServerCert,
    /// The issuing CA's certificate, PEM.
    pub ca_pem: String,
}

/// A running Keystone; stopped on drop.
pub struct KeystoneServer {
    base_url: String,
    ca_pem: Option<String>,
    dir: PathBuf,
    remove_dir: bool,
    child: Mutex<Option<Child>>,
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> FixtureError {
    let what = what.into();
    move |source| FixtureError::Io { what, source }
}

fn config_file(dir: &Path) -> String {
    let d = dir.display();
    format!(
        "[DEFAULT]\nlog_file = {d}/keystone.log\n\n[database]\nconnection = sqlite:///{d}/keystone.db\n\n\
         [token]\nprovider = fernet\nexpiration = 3600\n\n[fernet_tokens]\nkey_repository = {d}/fernet-keys\n\n\
         [credential]\nkey_repository = {d}/credential-keys\n\n\
         [identity]\n# bcrypt cost 4 instead of 12: a password login takes ~0.15 s instead of ~1 s (test-only!)\n\
         password_hash_rounds = 4\n"
    )
}

/// Keystone parses `sys.argv` with oslo.config when the app loads; gunicorn's own arguments would make every
/// worker exit, so the WSGI module hides them.
const WSGI_SHIM: &str =
    "import sys\nsys.argv = sys.argv[:1]\nfrom keystone.wsgi.api import application  # noqa: E402,F401\n";

fn gunicorn_config(dir: &Path, port: u16, remove_dir: bool, tls: bool) -> String {
    let tls = if tls {
        format!(
            "certfile = {:?}\nkeyfile = {:?}\n",
            dir.join("tls.crt").display().to_string(),
            dir.join("tls.key").display().to_string()
        )
    } else {
        String::new()
    };
    format!(
        r#"# gunicorn settings of a test Keystone (written by the e2e fixture).
{tls}
import os
import shutil
import signal
import threading
import time

bind = "127.0.0.1:{port}"
# Processes, not threads: under gunicorn's threaded worker Keystone 30 sometimes handles a request with the token
# of another request running at the same time (seen: the service user's create checked against the admin's
# token roles, answering 400 "unassigned role"). Sync workers serve one request per process.
workers = 2
threads = 1
timeout = 60
chdir = {dir:?}
control_socket_disable = True
accesslog = None

_parent = os.getppid()


def when_ready(server):
    # Stop when the process that started us is gone (a killed test run must not leave Keystone running).
    def watch():
        while True:
            time.sleep(0.5)
            if os.getppid() != _parent:
                os.kill(os.getpid(), signal.SIGTERM)
                return

    threading.Thread(target=watch, daemon=True).start()


def on_exit(server):
    if {remove}:
        shutil.rmtree({dir:?}, ignore_errors=True)
"#,
        dir = dir.display().to_string(),
        remove = if remove_dir { "True" } else { "False" },
    )
}

fn free_port() -> Result<u16, FixtureError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(io("binding a free port"))?;
    Ok(listener.local_addr().map_err(io("reading the bound port"))?.port())
}

async fn run_keystone_manage(install: &Installation, config: &Path, args: &[&str]) -> Result<(), FixtureError> {
    let output = tokio::process::Command::new(install.keystone_manage())
        .arg("--config-file")
        .arg(config)
        .args(args)
        .env("PYTHONWARNINGS", "ignore")
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(io("running keystone-manage"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(15).collect();
        return Err(FixtureError::Command {
            command: format!("keystone-manage {}", args.first().copied().unwrap_or_default()),
            detail: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
        });
    }
    Ok(())
}

/// The user and group owning the key repositories (this process's, as `id` names them).
fn user_and_group() -> (String, String) {
    let id = |flag: &str| {
        Command::new("id")
            .arg(flag)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|| "root".to_string())
    };
    (id("-un"), id("-gn"))
}

/// The bootstrapped database and keys of this installation, created on first use.
async fn template(install: &Installation) -> Result<PathBuf, FixtureError> {
    let prefix: String = install.stamp.chars().take(12).collect();
    let template = tools_dir().join(format!("keystone-template-{prefix}"));
    if template.join("keystone.db").exists() {
        return Ok(template);
    }
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let build = tools_dir().join(format!("keystone-template.build-{}-{nonce}", std::process::id()));
    if let Err(error) = bootstrap_into(install, &build).await {
        let _ = std::fs::remove_dir_all(&build);
        return Err(error);
    }
    let _ = std::fs::remove_file(build.join("keystone.log"));
    // Another test process may have finished first; either template is as good.
    if std::fs::rename(&build, &template).is_err() {
        let _ = std::fs::remove_dir_all(&build);
    }
    if !template.join("keystone.db").exists() {
        return Err(FixtureError::NotReady(format!(
            "no Keystone template at {}",
            template.display()
        )));
    }
    Ok(template)
}

/// Creates a bootstrapped database and key repositories in `build`.
async fn bootstrap_into(install: &Installation, build: &Path) -> Result<(), FixtureError> {
    for sub in ["fernet-keys", "credential-keys"] {
        std::fs::create_dir_all(build.join(sub)).map_err(io("creating the template directory"))?;
        set_private(&build.join(sub))?;
    }
    let config = build.join("keystone.conf");
    std::fs::write(&config, config_file(build)).map_err(io("writing keystone.conf"))?;
    let (user, group) = user_and_group();
    let who = ["--keystone-user", user.as_str(), "--keystone-group", group.as_str()];
    let fernet: Vec<&str> = std::iter::once("fernet_setup").chain(who).collect();
    let credential: Vec<&str> = std::iter::once("credential_setup").chain(who).collect();
    // The database and the two key repositories are independent: set them up side by side.
    let (db, keys, credentials) = tokio::join!(
        run_keystone_manage(install, &config, &["db_sync"]),
        run_keystone_manage(install, &config, &fernet),
        run_keystone_manage(install, &config, &credential),
    );
    db?;
    keys?;
    credentials?;
    run_keystone_manage(
        install,
        &config,
        &[
            "bootstrap",
            "--bootstrap-password",
            ADMIN_PASSWORD,
            "--bootstrap-admin-url",
            PLACEHOLDER_URL,
            "--bootstrap-internal-url",
            PLACEHOLDER_URL,
            "--bootstrap-public-url",
            PLACEHOLDER_URL,
            "--bootstrap-region-id",
            REGION,
        ],
    )
    .await?;
    Ok(())
}

fn set_private(dir: &Path) -> Result<(), FixtureError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io("restricting key directory"))
}

fn copy_dir(from: &Path, to: &Path) -> Result<(), FixtureError> {
    std::fs::create_dir_all(to).map_err(io("creating a key directory"))?;
    set_private(to)?;
    for entry in std::fs::read_dir(from).map_err(io("reading the template"))? {
        let entry = entry.map_err(io("reading the template"))?;
        std::fs::copy(entry.path(), to.join(entry.file_name())).map_err(io("copying the template"))?;
    }
    Ok(())
}

impl KeystoneServer {
    /// Starts a Keystone and waits until it answers; the first start of an installation also builds the
    /// template database (~10 s more).
    pub async fn start(options: ServerOptions) -> Result<Self, FixtureError> {
        let install = Installation::find()?;
        let template = template(&install).await?;
        let (dir, remove_dir) = match options.dir {
            Some(dir) => {
                std::fs::create_dir_all(&dir).map_err(io("creating the Keystone directory"))?;
                (dir, false)
            }
            None => {
                let dir = tempfile::Builder::new()
                    .prefix("e2e-keystone-")
                    .tempdir()
                    .map_err(io("creating a temporary directory"))?
                    .keep();
                (dir, true)
            }
        };
        std::fs::copy(template.join("keystone.db"), dir.join("keystone.db")).map_err(io("copying the database"))?;
        copy_dir(&template.join("fernet-keys"), &dir.join("fernet-keys"))?;
        copy_dir(&template.join("credential-keys"), &dir.join("credential-keys"))?;
        let port = if options.port == 0 { free_port()? } else { options.port };
        std::fs::write(dir.join("keystone.conf"), config_file(&dir)).map_err(io("writing keystone.conf"))?;
        std::fs::write(dir.join("ks_wsgi.py"), WSGI_SHIM).map_err(io("writing the WSGI shim"))?;
        if let Some(tls) = &options.tls {
            std::fs::write(dir.join("tls.crt"), &tls.cert.cert_pem).map_err(io("writing the TLS certificate"))?;
            std::fs::write(dir.join("tls.key"), &tls.cert.key_pem).map_err(io("writing the TLS key"))?;
        }
        let config = gunicorn_config(&dir, port, remove_dir, options.tls.is_some());
        std::fs::write(dir.join("gunicorn.conf.py"), config).map_err(io("writing the gunicorn config"))?;
        let log = std::fs::File::create(dir.join("gunicorn.log")).map_err(io("creating gunicorn.log"))?;
        let err_log = log.try_clone().map_err(io("opening gunicorn.log"))?;
        let child = {
            use std::os::unix::process::CommandExt;
            Command::new(install.gunicorn())
                .arg("--config")
                .arg(dir.join("gunicorn.conf.py"))
                .arg("ks_wsgi:application")
                .current_dir(&dir)
                .env("OS_KEYSTONE_CONFIG_DIR", &dir)
                .env("PYTHONWARNINGS", "ignore")
                .stdin(Stdio::null())
                .stdout(log)
                .stderr(err_log)
                .process_group(0)
                .spawn()
                .map_err(io("starting gunicorn"))?
        };
        let scheme = if options.tls.is_some() { "https" } else { "http" };
        let server = Self {
            base_url: format!("{scheme}://127.0.0.1:{port}"),
            ca_pem: options.tls.as_ref().map(|t| t.ca_pem.clone()),
            dir,
            remove_dir,
            child: Mutex::new(Some(child)),
        };
        server.wait_ready().await?;
        let admin = super::admin::KeystoneAdmin::login(&server).await?;
        admin.point_catalog_at(&server.v3_url()).await?;
        Ok(server)
    }

    async fn wait_ready(&self) -> Result<(), FixtureError> {
        // gunicorn's master accepts connections before a worker is up: every probe needs a timeout.
        let http = self
            .http_client(Duration::from_secs(2))
            .map_err(|e| FixtureError::NotReady(e.to_string()))?;
        let started = Instant::now();
        loop {
            if let Ok(response) = http.get(self.v3_url()).send().await
                && response.status().is_success()
            {
                return Ok(());
            }
            if !self.is_running() {
                return Err(FixtureError::NotReady(format!(
                    "gunicorn exited:\n{}",
                    self.log_tail(30)
                )));
            }
            if started.elapsed() > READY_TIMEOUT {
                return Err(FixtureError::NotReady(format!(
                    "no answer after {READY_TIMEOUT:?}:\n{}",
                    self.log_tail(30)
                )));
            }
            // Poll interval of a deadline-bounded wait.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// An HTTP client that trusts this Keystone's certificate (when it serves TLS), with `timeout`.
    pub fn http_client(&self, timeout: Duration) -> Result<reqwest::Client, reqwest::Error> {
        let mut builder = reqwest::Client::builder().timeout(timeout);
        if let Some(pem) = &self.ca_pem {
            builder = builder.add_root_certificate(reqwest::Certificate::from_pem(pem.as_bytes())?);
        }
        builder.build()
    }

    /// Base URL without `/v3` (what a KeystoneAPI publishes), e.g. `http://127.0.0.1:41234`.
    pub fn url(&self) -> &str {
        &self.base_url
    }

    /// The identity API root, e.g. `http://127.0.0.1:41234/v3`.
    pub fn v3_url(&self) -> String {
        format!("{}/v3", self.base_url)
    }

    /// The directory holding the database, config and logs.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether gunicorn is still running.
    pub fn is_running(&self) -> bool {
        let Ok(mut child) = self.child.lock() else { return false };
        child.as_mut().is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// The last lines of Keystone's and gunicorn's logs, for failure messages.
    pub fn log_tail(&self, lines: usize) -> String {
        let mut out = String::new();
        for file in ["gunicorn.log", "keystone.log"] {
            let text = std::fs::read_to_string(self.dir.join(file)).unwrap_or_default();
            let all: Vec<&str> = text.lines().collect();
            out.push_str(&format!(
                "--- {file} ---\n{}\n",
                all[all.len().saturating_sub(lines)..].join("\n")
            ));
        }
        out
    }

    /// Stops gunicorn (SIGTERM to its process group, SIGKILL after 5 s) and removes a temporary directory.
    pub fn stop(&self) {
        let Ok(mut guard) = self.child.lock() else { return };
        if let Some(mut child) = guard.take() {
            if let Ok(pid) = i32::try_from(child.id()) {
                let group = nix::unistd::Pid::from_raw(pid);
                let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGTERM);
                let deadline = Instant::now() + Duration::from_secs(5);
                while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(50));
                }
                let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
            }
            let _ = child.wait();
        }
        if self.remove_dir {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

impl Drop for KeystoneServer {
    fn drop(&mut self) {
        self.stop();
    }
}
