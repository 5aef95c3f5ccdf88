//! Writes `manifests/crd/`: one YAML file per CRD plus the kustomization listing them.
//!
//! Usage: `cargo run -p crds --features generator --bin crdgen -- [DIR]` (default `manifests/crd`). The test
//! `manifests_are_current` in `crds/tests/` fails when the committed files differ from what this writes.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("manifests/crd"));
    match write(&dir) {
        Ok(count) => {
            println!("wrote {count} CRD file(s) to {}", dir.display());
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("crdgen: {error}");
            ExitCode::FAILURE
        }
    }
}

fn write(dir: &std::path::Path) -> Result<usize, Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir)?;
    let files = crds::manifest_files()?;
    // Remove CRD files that are no longer generated so a renamed kind does not linger.
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        if name.ends_with(".yaml") && !files.iter().any(|(f, _)| *f == name) {
            std::fs::remove_file(&path)?;
        }
    }
    for (name, content) in &files {
        std::fs::write(dir.join(name), content)?;
    }
    Ok(files.len().saturating_sub(1))
}
