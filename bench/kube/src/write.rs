//! The output directory: the manifests and the coordinator's copy of the secret, both readable
//! by their owner only, each read back before the command says it is done.

use crate::manifests::Manifests;
use std::fs::{self, OpenOptions, Permissions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The manifests' file name in the output directory.
pub const MANIFESTS_FILE: &str = "workers.yaml";
/// The coordinator's secret file's name.
pub const SECRET_ENV_FILE: &str = "worker-secret.env";

/// What was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Written {
    /// The multi-document manifests (Namespace, Secret, Job): mode 0600, it holds the secret.
    pub manifests: PathBuf,
    /// `LOCKBENCH_WORKER_SECRET=...` for the coordinator: mode 0600.
    pub secret_env: PathBuf,
}

/// Writes `manifests` and `secret_env` (the env file's text) into `dir` (created if missing),
/// replacing earlier files, then reads the manifests back as the API's types and checks they
/// are what was meant.
pub fn write(dir: &Path, manifests: &Manifests, secret_env: &str) -> Result<Written, String> {
    fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create {}: {e} (--out names another)", dir.display()))?;
    let written = Written {
        manifests: dir.join(MANIFESTS_FILE),
        secret_env: dir.join(SECRET_ENV_FILE),
    };
    private_file(&written.manifests, &manifests.to_yaml()?)?;
    private_file(&written.secret_env, secret_env)?;
    let text = fs::read_to_string(&written.manifests)
        .map_err(|e| format!("cannot read back {}: {e}", written.manifests.display()))?;
    let back = Manifests::from_yaml(&text)
        .map_err(|e| format!("{} does not read back: {e}", written.manifests.display()))?;
    if &back != manifests {
        return Err(format!(
            "{} reads back as other objects than were written (a serializer bug)",
            written.manifests.display()
        ));
    }
    Ok(written)
}

/// Writes `text` to `path` with mode 0600 from its creation on (an existing file is truncated
/// and its mode set to 0600 before anything is written).
fn private_file(path: &Path, text: &str) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(fail)?;
    file.set_permissions(Permissions::from_mode(0o600))
        .map_err(fail)?;
    file.write_all(text.as_bytes()).map_err(fail)?;
    file.sync_all().map_err(fail)
}
