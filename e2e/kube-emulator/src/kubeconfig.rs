//! Kubeconfig files pointing kubectl, kube-rs and the Python client at an emulator over HTTPS, trusting the
//! emulator's CA and authenticating with a bearer token.

use std::path::Path;

use base64::Engine;

/// The kubeconfig text for a server URL (`https://127.0.0.1:PORT`), its CA (PEM) and a bearer token, with one
/// context named `emulator`.
pub fn render(server_url: &str, ca_pem: &str, token: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: emulator\n  cluster:\n    server: {server_url}\n    certificate-authority-data: {ca}\ncontexts:\n- name: emulator\n  context:\n    cluster: emulator\n    user: emulator\n    namespace: default\ncurrent-context: emulator\nusers:\n- name: emulator\n  user:\n    token: {token}\npreferences: {{}}\n"
    )
}

/// Writes the kubeconfig to `path`, creating parent directories.
pub fn write(path: &Path, server_url: &str, ca_pem: &str, token: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, render(server_url, ca_pem, token))
}

#[cfg(test)]
mod tests {
    #[test]
    fn kubeconfig_names_the_server_its_ca_and_the_token() {
        let text = super::render("https://127.0.0.1:1234", "PEM", "t0k3n");
        assert!(text.contains("server: https://127.0.0.1:1234"));
        assert!(text.contains("certificate-authority-data: UEVN"));
        assert!(text.contains("token: t0k3n"));
        assert!(text.contains("current-context: emulator"));
    }
}
