//! Kubeconfig files pointing kubectl, kube-rs and the Python client at an emulator over plain HTTP.

use std::path::Path;

/// The kubeconfig text for a server URL (`http://127.0.0.1:PORT`), with one context named `emulator`.
pub fn render(server_url: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: emulator\n  cluster:\n    server: {server_url}\ncontexts:\n- name: emulator\n  context:\n    cluster: emulator\n    user: emulator\n    namespace: default\ncurrent-context: emulator\nusers:\n- name: emulator\n  user:\n    token: emulator-token\npreferences: {{}}\n"
    )
}

/// Writes the kubeconfig to `path`, creating parent directories.
pub fn write(path: &Path, server_url: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, render(server_url))
}

#[cfg(test)]
mod tests {
    #[test]
    fn kubeconfig_names_the_server() {
        let text = super::render("http://127.0.0.1:1234");
        assert!(text.contains("server: http://127.0.0.1:1234"));
        assert!(text.contains("current-context: emulator"));
    }
}
