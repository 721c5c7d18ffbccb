//! Adapter backends (`lib:NAME`, or a manifest's path): a [`Recipe`] made at run time from a
//! manifest, so a library runs through everything a built-in recipe does without
//! a line of lockbench changing.

use lockbench_adapter::{AdapterBackend, Manifest, manifest};
use lockbench_core::traits::BackendError;
use lockbench_core::{AnyBackend, BackendKind, Endpoints, Group, Recipe, Scenario};
use std::sync::Mutex;

/// The adapter recipes made so far, one per name for the life of the process.
static MADE: Mutex<Vec<&'static Recipe>> = Mutex::new(Vec::new());

/// The recipe of adapter `kind`, made from its manifest on first use.
pub(crate) fn recipe(kind: BackendKind) -> Result<&'static Recipe, String> {
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r) = made.iter().find(|r| r.kind == kind) {
        return Ok(r);
    }
    let m = manifest::load(kind.name())?;
    let group = crate::listed_groups()
        .into_iter()
        .find(|g| g.name() == m.system)
        .ok_or_else(|| {
            format!(
                "adapter {kind}: `system = \"{}\"` is no endpoints group; expected one of: {}",
                m.system,
                crate::endpoint_groups().join(", ")
            )
        })?;
    // The system's own first recipe on the same servers: its lock life (from the scenario's
    // knobs) is the library's unless the manifest fixes one, and it reads the servers'
    // request counters.
    let native = crate::backend::recipes().find(|r| r.group == group && !r.broken);
    let fixed = m.lock_life;
    let life = move |s: &Scenario| match (fixed, native) {
        (Some(l), _) => l,
        (None, Some(r)) => (r.expiry)(s),
        (None, None) => std::time::Duration::from_secs(10),
    };
    let expiry = Box::leak(Box::new(life));
    let build = Box::leak(Box::new(move |s: &Scenario, e: &Endpoints| {
        build(kind, &m, group, native, life(s), s, e)
    }));
    let r: &'static Recipe = Box::leak(Box::new(Recipe {
        kind,
        group,
        expiry,
        broken: false,
        build,
    }));
    made.push(r);
    Ok(r)
}

fn build(
    kind: BackendKind,
    m: &Manifest,
    group: Group,
    native: Option<&'static Recipe>,
    life: std::time::Duration,
    s: &Scenario,
    e: &Endpoints,
) -> Result<AnyBackend, BackendError> {
    plain_only(kind, group.list(), e).map_err(BackendError::Config)?;
    let counters = match native {
        Some(r) => counters(kind, m, r, s, e)?,
        None => None,
    };
    // Keys apart per run, and the same in every process of the run: the knobs carry each
    // system's run-separated key prefixes.
    let prefix = format!("lockbench-lib-{:016x}:", fingerprint(&s.to_toml()));
    let observer = observer(kind, m, s, e, &prefix);
    let b = AdapterBackend::new(
        kind,
        m.clone(),
        e.get(group.list()),
        life,
        s.workload.acquire_timeout,
        prefix,
        counters,
    )?
    .with_observer(observer);
    Ok(AnyBackend::new(b))
}

/// An adapter hands its library the group's addresses and nothing else (`LOCKBENCH_ENDPOINTS`,
/// docs/adapter-protocol.md): a group with connection settings (TLS, a user, a chroot; every
/// group of a secure cluster) would be reached without them, or not at all, so it is refused
/// before the run, naming the group and what to do.
fn plain_only(kind: BackendKind, group: &str, e: &Endpoints) -> Result<(), String> {
    let c = e.connection(group);
    if c.is_plain() {
        return Ok(());
    }
    let mut set: Vec<&str> = Vec::new();
    if c.tls.is_some() {
        set.push("tls");
    }
    if c.has_auth() {
        set.push("user / password");
    }
    set.extend(c.system.keys().map(String::as_str));
    Err(format!(
        "{kind}: the cluster's `{group}` group has connection settings ({}; a secure \
         cluster's groups do), and an adapter passes its library only the addresses \
         (LOCKBENCH_ENDPOINTS), so the library would connect without them: run {kind} against \
         a plain cluster (`lockbench up` without `--secure`, or a cluster file whose `{group}` \
         is a bare address list)",
        set.join(", ")
    ))
}

/// The recipe whose server-side observer reads the library's locks (the manifest's
/// `[observe]`: built with the scenario's knobs and the manifest's settings, `{prefix}` the
/// adapter's key prefix), or why there is none.
fn observer(
    kind: BackendKind,
    m: &Manifest,
    s: &Scenario,
    e: &Endpoints,
    prefix: &str,
) -> Result<AnyBackend, String> {
    let Some(o) = &m.observe else {
        return Err(format!(
            "{kind}: the library's holders cannot be named from the servers (its manifest has \
             no `[observe]`: docs/adapter-protocol.md)"
        ));
    };
    let sets: Vec<String> = o
        .set
        .iter()
        .map(|x| x.replace("{prefix}", prefix))
        .collect();
    let why = |e: String| format!("{kind}: [observe] recipe {}: {e}", o.recipe);
    let recipe = crate::parse_backend(&o.recipe).map_err(why)?;
    let scenario = crate::load_scenario(&s.name, &s.to_toml(), &sets).map_err(why)?;
    crate::backend::backend(recipe, &scenario, e).map_err(|e| why(e.to_string()))
}

/// The system's own recipe `native` on the same servers, built to read their request counters
/// with the scenario's knobs and the manifest's `[counters]` settings (an error names a bad
/// setting); `None` when it cannot be built (the run then reports the servers' figure
/// unknown, with the reason).
fn counters(
    kind: BackendKind,
    m: &Manifest,
    native: &'static Recipe,
    s: &Scenario,
    e: &Endpoints,
) -> Result<Option<AnyBackend>, BackendError> {
    if m.counters.set.is_empty() {
        return Ok((native.build)(s, e).ok());
    }
    let why = |e: String| BackendError::Config(format!("{kind}: [counters]: {e}"));
    let scenario = crate::load_scenario(&s.name, &s.to_toml(), &m.counters.set).map_err(why)?;
    Ok((native.build)(&scenario, e).ok())
}

/// FNV-1a of `text`: stable across processes and builds (std's hasher is not).
fn fingerprint(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A secure cluster's group (TLS, a user, a chroot) is refused before the run, naming the
    /// group and the settings; a bare address list is not.
    #[test]
    fn an_adapter_refuses_a_group_with_connection_settings() {
        let kind = BackendKind::named("lib:kazoo");
        let plain = Endpoints::from_toml("zookeeper = [\"z:1\"]\n").unwrap();
        assert_eq!(plain_only(kind, "zookeeper", &plain), Ok(()));
        let text = "[zookeeper]\nendpoints = [\"z:1\"]\nuser = \"u\"\npassword_env = \"P\"\n\
                    chroot = \"/team\"\ntls = { ca = \"ca.pem\" }\n";
        let secure = Endpoints::from_toml(text).unwrap();
        let err = plain_only(kind, "zookeeper", &secure).unwrap_err();
        for want in [
            "lib:kazoo",
            "`zookeeper`",
            "tls",
            "user / password",
            "chroot",
            "plain",
        ] {
            assert!(err.contains(want), "{want}: {err}");
        }
    }
}
