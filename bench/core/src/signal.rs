//! Signalling a worker process: by its pid, or through Docker.
//!
//! Why two ways: a worker in a client container (compose mode) is that container's only
//! process. Root on the machine signals it by its pid there, at once (the fencing pause starts
//! right after a grant). A user who can only talk to the Docker API (one in the `docker` group,
//! or lockbench in a container of its own, which does not see the machine's pids) cannot:
//! `docker kill --signal <SIG> <container>` delivers the same signal to the same process,
//! through dockerd (a round trip later). Who may do what is decided once per run by the
//! compose crate; this is only the delivery.

use nix::sys::signal::Signal;
use nix::unistd::Pid;

/// `docker kill --signal <SIG> <container>`'s arguments.
pub fn docker_kill_args(container: &str, sig: Signal) -> [String; 4] {
    [
        "kill".into(),
        "--signal".into(),
        sig.as_str().into(),
        container.into(),
    ]
}

/// Sends `sig` to the worker at `pid`, or, when `via_docker` names its container, to that
/// container's process through Docker. A failed `docker kill` is `ESRCH` (the container is
/// gone or not running).
pub fn send(pid: Pid, via_docker: Option<&str>, sig: Signal) -> nix::Result<()> {
    let Some(container) = via_docker else {
        return nix::sys::signal::kill(pid, sig);
    };
    let ok = std::process::Command::new("docker")
        .args(docker_kill_args(container, sig))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Ok(())
    } else {
        Err(nix::errno::Errno::ESRCH)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_kill_names_the_signal_and_the_container() {
        assert_eq!(
            docker_kill_args("lockbench-client1", Signal::SIGSTOP),
            ["kill", "--signal", "SIGSTOP", "lockbench-client1"]
        );
    }
}
