//! Where the Keystone installation lives and whether it is current.
//!
//! `e2e/keystone/install.sh` installs Keystone and gunicorn from PyPI into `target/tools/keystone-venv`, pinned
//! by `e2e/keystone/constraints.txt`, and stamps the venv with the hash of that file. `e2e/test.sh` runs it when
//! the venv is missing or stale; a test that finds no current install fails with these instructions.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::FixtureError;

/// Environment variable overriding the venv location.
pub const VENV_ENV: &str = "E2E_KEYSTONE_VENV";

/// The repository root (this crate lives in `e2e/`).
pub fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| manifest.to_path_buf())
}

/// Environment variable overriding where installed tools live (`e2e/test.sh` sets it when it runs the suite
/// from a copy of the repository, so the copy reuses the original's installations).
pub const TOOLS_ENV: &str = "E2E_TOOLS_DIR";

/// Installed tools and cached Keystone databases: `$E2E_TOOLS_DIR`, else `target/tools` of the repository.
pub fn tools_dir() -> PathBuf {
    std::env::var_os(TOOLS_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target").join("tools"))
}

/// A current Keystone installation.
#[derive(Clone, Debug)]
pub struct Installation {
    /// The virtualenv.
    pub venv: PathBuf,
    /// Hash of the constraints it was installed from (keys cached databases to this installation).
    pub stamp: String,
}

impl Installation {
    /// `keystone-manage`.
    pub fn keystone_manage(&self) -> PathBuf {
        self.venv.join("bin").join("keystone-manage")
    }

    /// `gunicorn`.
    pub fn gunicorn(&self) -> PathBuf {
        self.venv.join("bin").join("gunicorn")
    }

    /// Finds the installation, failing with instructions when it is missing or older than the constraints.
    pub fn find() -> Result<Self, FixtureError> {
        let venv = std::env::var_os(VENV_ENV)
            .map(PathBuf::from)
            .unwrap_or_else(|| tools_dir().join("keystone-venv"));
        let constraints = repo_root().join("e2e").join("keystone").join("constraints.txt");
        let wanted = std::fs::read(&constraints)
            .map(|bytes| hex::encode(Sha256::digest(&bytes)))
            .map_err(|e| FixtureError::NotInstalled(format!("cannot read {}: {e}", constraints.display())))?;
        let installed = std::fs::read_to_string(venv.join(".e2e-keystone-stamp")).unwrap_or_default();
        let installation = Self {
            venv: venv.clone(),
            stamp: wanted.clone(),
        };
        if installed.trim() != wanted || !installation.keystone_manage().exists() || !installation.gunicorn().exists() {
            return Err(FixtureError::NotInstalled(format!(
                "Keystone is not installed in {} (or was installed from other constraints); run \
                 `e2e/keystone/install.sh` (e2e/test.sh does this) — it installs keystone 30.0.0 and gunicorn from \
                 PyPI with Python >= 3.11",
                venv.display()
            )));
        }
        Ok(installation)
    }
}
