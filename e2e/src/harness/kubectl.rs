//! kubectl, run the way a user runs it, against the test's cluster.

use std::path::{Path, PathBuf};
use std::process::Output;

use tokio::process::Command;

/// A kubectl bound to one kubeconfig, with its own HOME so discovery caches never leak between tests.
#[derive(Clone, Debug)]
pub struct Kubectl {
    kubeconfig: PathBuf,
    home: PathBuf,
    program: PathBuf,
}

/// What one kubectl invocation printed.
#[derive(Debug)]
pub struct KubectlOutput {
    /// Exit status was zero.
    pub success: bool,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl KubectlOutput {
    fn from(output: Output) -> Self {
        Self {
            success: output.status.success(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Panics with the command's output unless it succeeded; returns stdout.
    pub fn expect_success(self, what: &str) -> String {
        assert!(
            self.success,
            "kubectl {what} failed:\nstdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        self.stdout
    }

    /// Panics unless the command failed; returns stderr.
    pub fn expect_failure(self, what: &str) -> String {
        assert!(!self.success, "kubectl {what} unexpectedly succeeded:\n{}", self.stdout);
        self.stderr
    }
}

impl Kubectl {
    /// A kubectl using `kubeconfig`, with HOME (and so its cache) under `home`.
    pub fn new(kubeconfig: &Path, home: &Path) -> Self {
        Self {
            kubeconfig: kubeconfig.to_path_buf(),
            home: home.to_path_buf(),
            program: PathBuf::from("kubectl"),
        }
    }

    /// The same, running the kubectl binary at `program` (the real control plane's own version) instead of the
    /// one on PATH.
    pub fn with_program(mut self, program: &Path) -> Self {
        self.program = program.to_path_buf();
        self
    }

    /// The kubeconfig it uses.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// A kubectl like this one (same binary) for another kubeconfig and home.
    pub fn for_kubeconfig(&self, kubeconfig: &Path, home: &Path) -> Self {
        Self::new(kubeconfig, home).with_program(&self.program)
    }

    /// Runs `kubectl <args>` and returns what it printed.
    pub async fn run(&self, args: &[&str]) -> KubectlOutput {
        self.run_with_stdin(args, None).await
    }

    /// Runs `kubectl <args>` with `stdin` as standard input.
    pub async fn run_with_stdin(&self, args: &[&str], stdin: Option<&str>) -> KubectlOutput {
        use tokio::io::AsyncWriteExt;
        let mut command = Command::new(&self.program);
        command
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", &self.home)
            .stdin(if stdin.is_some() {
                std::process::Stdio::piped()
            } else {
                std::process::Stdio::null()
            })
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(error) => panic!(
                "cannot run {} ({error}); install kubectl 1.32 and put it on PATH (the real substrate's comes from \
                 e2e/substrate/provision.sh)",
                self.program.display()
            ),
        };
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(text.as_bytes()).await.expect("write kubectl stdin");
            drop(pipe);
        }
        let output = child.wait_with_output().await.expect("kubectl finishes");
        KubectlOutput::from(output)
    }

    /// `kubectl apply -f -` of a YAML document; panics on failure.
    pub async fn apply(&self, yaml: &str) -> String {
        self.run_with_stdin(&["apply", "-f", "-"], Some(yaml))
            .await
            .expect_success("apply")
    }

    /// `kubectl get <args> -o json`, parsed.
    pub async fn get_json(&self, args: &[&str]) -> serde_json::Value {
        let mut full = vec!["get"];
        full.extend_from_slice(args);
        full.extend_from_slice(&["-o", "json"]);
        let out = self.run(&full).await.expect_success(&full.join(" "));
        serde_json::from_str(&out).expect("kubectl printed JSON")
    }
}
