//! A real browser for the tests that meet an app the way a person does: Debian's Chromium, headless, driven over
//! WebDriver by Debian's chromedriver. It trusts only the CA a test names (added to an NSS database of its own, as
//! an organisation installs its CA), reaches the tests' hostnames on this machine through a host-resolver rule
//! instead of DNS, and reports for each page what WebDriver alone does not: the HTTP status of the document and the
//! certificate it came over (from Chromium's network log and DevTools).
//!
//! Every page a test opens is photographed; the pictures are written to `<target>/e2e-artifacts/<browser name>/`
//! when the test fails (or always, with [`KEEP_PICTURES_ENV`] set or [`Browser::save_screenshots`]).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;

use base64::Engine;
use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use super::{Deadline, try_wait_until, wait_until};

/// Where Debian puts Chromium and its chromedriver.
const CHROMIUM: &str = "/usr/bin/chromium";
/// See [`CHROMIUM`].
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// How the tests install the browser when it is missing.
const INSTALL_HINT: &str = "install Debian's chromium, chromium-driver and libnss3-tools (apt-get install chromium \
                            chromium-driver libnss3-tools; e2e/test.sh does this on a fresh machine)";

/// Set (to anything) to keep every browser's pictures, not only a failing test's (the README's come from a run
/// with it).
pub const KEEP_PICTURES_ENV: &str = "E2E_KEEP_PICTURES";

/// What a browser trusts and where it finds the tests' hostnames.
#[derive(Clone, Debug, Default)]
pub struct BrowserOptions {
    /// A name for the browser's pictures (a folder under `e2e-artifacts`), e.g. the test and the person.
    pub name: String,
    /// A PEM CA certificate the browser trusts for servers (none other is added to its store).
    pub trusted_ca: Option<PathBuf>,
    /// Domain suffixes (`served.test`) whose hosts resolve to 127.0.0.1 in this browser only.
    pub loopback_domains: Vec<String>,
}

/// What the browser shows after a navigation.
#[derive(Clone, Debug)]
pub struct Page {
    /// The URL it ended at (after redirects).
    pub url: String,
    /// The HTTP status of that document, from the browser's network log (`None` if the log has no response for
    /// it: a page the browser made itself, such as its own error page).
    pub status: Option<u16>,
    /// The text a person reads on it.
    pub text: String,
    /// The TLS details of that document's response (subject, issuer, SANs, validity), when it came over TLS.
    pub security: Option<Value>,
}

/// One headless Chromium session with its own profile and its own chromedriver.
pub struct Browser {
    client: Client,
    driver: Child,
    name: String,
    /// The browser's HOME (its NSS database) and profile; removed when the browser is dropped.
    _home: tempfile::TempDir,
    /// Pictures taken so far, by step.
    shots: Mutex<Vec<(String, Vec<u8>)>>,
}

/// A command chromedriver has beyond W3C WebDriver: `POST /session/<id>/<path>` with a JSON body.
#[derive(Debug)]
struct ChromeCommand {
    path: &'static str,
    body: Value,
}

impl WebDriverCompatibleCommand for ChromeCommand {
    fn endpoint(&self, base_url: &url::Url, session_id: Option<&str>) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!("session/{}/{}", session_id.unwrap_or_default(), self.path))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(self.body.to_string()))
    }
}

/// Fails the test with instructions when `path` is not an executable this machine has.
fn require(path: &str) {
    assert!(Path::new(path).is_file(), "{path} is missing: {INSTALL_HINT}");
}

/// A port on loopback nothing listens on now.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    listener.local_addr().expect("the port's address").port()
}

/// The folder the pictures of browser `name` go to: `E2E_ARTIFACTS_DIR`, else `e2e-artifacts` in the target
/// directory the test binary was built in.
pub fn artifacts_dir(name: &str) -> PathBuf {
    let base = std::env::var_os("E2E_ARTIFACTS_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            // <target>/<profile>/deps/<test binary>
            std::env::current_exe()
                .ok()
                .and_then(|exe| exe.ancestors().nth(3).map(|target| target.join("e2e-artifacts")))
        })
        .unwrap_or_else(|| std::env::temp_dir().join("e2e-artifacts"));
    base.join(name)
}

impl Browser {
    /// Starts chromedriver and a Chromium session as `options` say. Fails the test with instructions when the
    /// browser is not installed.
    pub async fn start(options: BrowserOptions) -> Browser {
        require(CHROMIUM);
        require(CHROMEDRIVER);
        let home = tempfile::tempdir().expect("a home for the browser");
        if let Some(ca) = &options.trusted_ca {
            trust(home.path(), ca).await;
        }
        let port = free_port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .env("HOME", home.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("start {CHROMEDRIVER}: {e}"));
        let status_url = format!("http://127.0.0.1:{port}/status");
        wait_until("chromedriver to answer", Deadline::secs(30), || {
            let url = status_url.clone();
            async move {
                let body: Value = reqwest::get(&url)
                    .await
                    .map_err(|e| e.to_string())?
                    .json()
                    .await
                    .map_err(|e| e.to_string())?;
                if body["value"]["ready"] == true {
                    Ok(Some(()))
                } else {
                    Err(body.to_string())
                }
            }
        })
        .await;

        let mut args = vec![
            "--headless=new".to_string(),
            // The tests run as root, where Chromium's sandbox cannot start.
            "--no-sandbox".to_string(),
            "--disable-dev-shm-usage".to_string(),
            "--disable-gpu".to_string(),
            "--no-first-run".to_string(),
            "--disable-background-networking".to_string(),
            "--disable-component-update".to_string(),
            "--window-size=1280,900".to_string(),
            format!("--user-data-dir={}", home.path().join("profile").display()),
        ];
        if !options.loopback_domains.is_empty() {
            let rules: Vec<String> = options
                .loopback_domains
                .iter()
                .map(|domain| format!("MAP *.{domain} 127.0.0.1"))
                .collect();
            args.push(format!("--host-resolver-rules={}", rules.join(",")));
        }
        let capabilities = json!({
            "browserName": "chrome",
            "acceptInsecureCerts": false,
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": args,
                "perfLoggingPrefs": {"enableNetwork": true, "enablePage": false},
            },
            "goog:loggingPrefs": {"performance": "ALL"},
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!("the capabilities are a JSON object literal")
        };
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .unwrap_or_else(|e| panic!("start a Chromium session: {e}; {INSTALL_HINT}"));
        Browser {
            client,
            driver,
            name: options.name,
            _home: home,
            shots: Mutex::default(),
        }
    }

    /// Opens `url` as a person typing it in the address bar does, and waits until the page (after any redirects)
    /// has loaded. `step` names the picture taken of it.
    pub async fn open(&self, url: &str, step: &str) -> Page {
        // Drain the log so this page's responses are the ones read afterwards.
        self.network_log().await;
        if let Err(e) = self.client.goto(url).await {
            // A page that cannot load (connection refused, certificate refused) is a page too: the browser shows
            // its own error, which the caller asserts on.
            tracing::info!(url, error = %e, "navigation did not complete");
        }
        self.page(step).await
    }

    /// Fills Keycloak's login form on the current page as `username` with `password` and signs in, then waits until
    /// the browser has left the login page and loaded where it was sent.
    pub async fn log_in(&self, username: &str, password: &str, step: &str) -> Page {
        let login_url = self.current_url().await;
        self.network_log().await;
        let form = self
            .client
            .find(Locator::Id("kc-form-login"))
            .await
            .unwrap_or_else(|e| panic!("no Keycloak login form at {login_url}: {e}"));
        for (field, value) in [("username", username), ("password", password)] {
            let input = form
                .find(Locator::Id(field))
                .await
                .unwrap_or_else(|e| panic!("no {field} field in Keycloak's login form: {e}"));
            input
                .send_keys(value)
                .await
                .unwrap_or_else(|e| panic!("type the {field}: {e}"));
        }
        let sign_in = form
            .find(Locator::Id("kc-login"))
            .await
            .unwrap_or_else(|e| panic!("no Sign In button in Keycloak's login form: {e}"));
        sign_in.click().await.unwrap_or_else(|e| panic!("press Sign In: {e}"));
        let client = &self.client;
        let waited = try_wait_until("the browser to leave the login page", Deadline::secs(30), || async {
            let url = client.current_url().await.map_err(|e| e.to_string())?;
            let ready = client
                .execute("return document.readyState", vec![])
                .await
                .map_err(|e| e.to_string())?;
            if url.as_str() != login_url && ready == "complete" {
                Ok(Some(()))
            } else {
                Err(format!("still at {url} ({ready})"))
            }
        })
        .await;
        if let Err(e) = waited {
            // Keycloak kept the browser on its page (a wrong password shows the form again): the caller asserts.
            tracing::info!(error = %e, "the browser stayed on the login page");
        }
        self.page(step).await
    }

    /// What the browser shows now, with the picture `step` taken of it.
    async fn page(&self, step: &str) -> Page {
        let url = self.current_url().await;
        let text = self
            .client
            .execute("return document.body ? document.body.innerText : ''", vec![])
            .await
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let log = self.network_log().await;
        let document = log
            .iter()
            .rev()
            .filter(|event| event["method"] == "Network.responseReceived" && event["params"]["type"] == "Document")
            .map(|event| &event["params"]["response"])
            .find(|response| response["url"].as_str().is_some_and(|u| u == url));
        let status = document
            .and_then(|r| r["status"].as_u64())
            .and_then(|s| u16::try_from(s).ok());
        let security = document
            .map(|r| r["securityDetails"].clone())
            .filter(|details| !details.is_null());
        self.screenshot(step).await;
        Page {
            url,
            status,
            text,
            security,
        }
    }

    /// The URL the browser is at.
    pub async fn current_url(&self) -> String {
        self.client
            .current_url()
            .await
            .map(|u| u.to_string())
            .unwrap_or_default()
    }

    /// The DER certificates (leaf first) the browser received from `origin` (`https://host`), from DevTools. Only the
    /// origin of the page shown now answers (a browser error page has none).
    pub async fn certificate_chain(&self, origin: &str) -> Vec<Vec<u8>> {
        let answer = self
            .client
            .issue_cmd(ChromeCommand {
                path: "goog/cdp/execute",
                body: json!({"cmd": "Network.getCertificate", "params": {"origin": origin}}),
            })
            .await
            .unwrap_or_else(|e| panic!("ask the browser for {origin}'s certificate: {e}"));
        answer["tableNames"]
            .as_array()
            .map(|all| {
                all.iter()
                    .filter_map(Value::as_str)
                    .filter_map(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The network events logged since the last call (`{method, params}` each).
    async fn network_log(&self) -> Vec<Value> {
        let entries = self
            .client
            .issue_cmd(ChromeCommand {
                path: "se/log",
                body: json!({"type": "performance"}),
            })
            .await
            .unwrap_or_else(|e| panic!("read the browser's network log: {e}"));
        entries
            .as_array()
            .map(|all| {
                all.iter()
                    .filter_map(|entry| entry["message"].as_str())
                    .filter_map(|message| serde_json::from_str::<Value>(message).ok())
                    .map(|message| message["message"].clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Photographs the page as `step`, kept for [`Self::save_screenshots`] and for a failing test.
    pub async fn screenshot(&self, step: &str) {
        if let Ok(png) = self.client.screenshot().await {
            self.shots
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((step.to_string(), png));
        }
    }

    /// Writes the pictures taken so far to [`artifacts_dir`] of this browser, numbered in order; returns their
    /// paths.
    pub fn save_screenshots(&self) -> Vec<PathBuf> {
        let dir = artifacts_dir(&self.name);
        if std::fs::create_dir_all(&dir).is_err() {
            return Vec::new();
        }
        let shots = self.shots.lock().unwrap_or_else(|p| p.into_inner());
        shots
            .iter()
            .enumerate()
            .filter_map(|(i, (step, png))| {
                let path = dir.join(format!("{:02}-{step}.png", i + 1));
                std::fs::write(&path, png).ok().map(|()| path)
            })
            .collect()
    }

    /// Ends the session and stops the browser.
    pub async fn close(mut self) {
        let _ = self.client.clone().close().await;
        let _ = self.driver.kill().await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if std::thread::panicking() || std::env::var_os(KEEP_PICTURES_ENV).is_some() {
            for path in self.save_screenshots() {
                eprintln!("browser picture: {}", path.display());
            }
        }
        // chromedriver starts Chromium in a process group of its own, so stopping chromedriver (on drop, or a
        // failing test that never ends the session) would leave the browser running: stop it by its profile.
        kill_processes_of(&self._home.path().join("profile"));
    }
}

/// Kills every process whose command line names `profile` as its `--user-data-dir` (a browser and its helpers).
fn kill_processes_of(profile: &Path) {
    let flag = format!("--user-data-dir={}", profile.display());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if cmdline.split(|b| *b == 0).any(|arg| arg == flag.as_bytes()) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// Adds `ca` to the NSS database under `home` as a CA trusted for servers: Chromium on Linux reads it as the
/// user's certificate store.
async fn trust(home: &Path, ca: &Path) {
    let database = home.join(".pki/nssdb");
    std::fs::create_dir_all(&database).expect("create the browser's NSS database folder");
    let database = format!("sql:{}", database.display());
    for args in [
        vec!["-N", "-d", &database, "--empty-password"],
        vec![
            "-A",
            "-d",
            &database,
            "-t",
            "C,,",
            "-n",
            "e2e-test-ca",
            "-i",
            ca.to_str().unwrap_or_default(),
        ],
    ] {
        let output = Command::new("certutil")
            .args(&args)
            .output()
            .await
            .unwrap_or_else(|e| panic!("run certutil: {e}; {INSTALL_HINT}"));
        assert!(
            output.status.success(),
            "certutil {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// Opens `url` in `browser` again and again until it shows a page `accept` takes, within `deadline`; returns it.
/// For changes the gateway applies a moment after they are accepted. `what` names the wait and the pictures.
pub async fn wait_for_page(
    browser: &Browser,
    url: &str,
    what: &str,
    deadline: Deadline,
    accept: impl Fn(&Page) -> bool,
) -> Page {
    wait_until(what, deadline, || async {
        let page = browser.open(url, what).await;
        if accept(&page) {
            Ok(Some(page))
        } else {
            Err(format!("{} {:?}: {}", page.url, page.status, page.text))
        }
    })
    .await
}
