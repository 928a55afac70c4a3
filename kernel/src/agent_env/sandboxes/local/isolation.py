"""Isolation of local sandbox processes with bubblewrap (`bwrap`, Debian/Fedora `bubblewrap`).

Every process a local sandbox starts (commands, servers: agents, envs, verifiers' commands)
runs as `bwrap ... -- COMMAND` with:

- a new root holding only the system read-only (`/usr`, `/bin`, `/sbin`, `/lib*`, `/etc`,
  `/opt`) plus the Python this runner runs (its prefix and its import path) and the venvs
  agent-env builds for envs' requirements (`<cache>/venvs`), read-only, with `/etc/shadow` and
  `/etc/gshadow` blanked;
- its own work folder writable, at its host path (where `/app` is rewritten to) and at `/app`;
- a private `/tmp`, a fresh `/dev` and a `/proc` of its own PID namespace (no other process's
  `/proc/<pid>/environ`), its own IPC and UTS namespaces, every capability dropped;
- nothing else: not the agent-env home (stores, object store, journals), not other sandboxes'
  folders, not `/run` or `/var` (the Docker socket), not the user's home;
- only the environment it was given (`--clearenv`, then the spec's and the call's variables
  and a short list of harmless host ones such as PATH and LANG): never `AGENT_ENV_SECRET_*`.

The network namespace is shared: envs, agents and the gateway talk over 127.0.0.1.

`probe()` says once per process whether bwrap can run here (missing, or namespaces refused);
the provider then runs processes unwrapped and the run refuses untrusted agents unless the user
opted out (`[sandbox.local] allow_unisolated`, `agent-env run --allow-unisolated`). A success
is remembered in the cache folder under what decides it (`probe_key`: the bwrap executable,
the user, the kernel's boot, the namespaces and the limits this process runs under), so the
next command on the same machine starts no trial `bwrap`; a failure is never remembered.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import attrs

#: System folders mounted read-only when they exist on the host.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
#: Host files hidden behind an empty file (readable by root, worthless to an agent).
BLANKED = ("/etc/shadow", "/etc/gshadow")
#: Files of /etc that may be links out of the system folders; their targets are mounted too.
LINKED = ("/etc/resolv.conf", "/etc/hosts", "/etc/localtime")
#: Host variables a sandboxed process keeps (nothing that can hold a secret).
KEPT_HOST_VARS = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TERM",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "PIP_CERT",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONUNBUFFERED",
    "PYTHONHASHSEED",
    "PYTHONPATH",
    "VIRTUAL_ENV",
    # the protocol SDK's tuning knobs (env servers and agents read them)
    "AGENTENV_LOG_LEVEL",
    "AGENTENV_MAX_REQUEST_BYTES",
    "AGENTENV_TOOL_THREADS",
    "AGENTENV_MODEL",
)
#: `[sandbox.local] bwrap`: the executable to use; "" turns isolation off (as when missing).
DEFAULT_BWRAP = "bwrap"


@attrs.frozen
class Probe:
    """Whether bwrap can isolate processes here; `reason` says why not."""

    executable: str | None
    reason: str = ""

    @property
    def available(self) -> bool:
        return self.executable is not None


@functools.cache
def probe(command: str = DEFAULT_BWRAP) -> Probe:
    """Find `command` on PATH and start one `true` under it with every namespace this module
    asks for (cached per process and command)."""
    if not command:
        return Probe(None, "isolation is turned off ([sandbox.local] bwrap is empty)")
    found = shutil.which(command)
    if found is None:
        return Probe(
            None,
            f"bubblewrap ({command!r}) is not on PATH; install the 'bubblewrap' package "
            "(apt-get install bubblewrap, dnf install bubblewrap)",
        )
    argv = [found, *_namespace_args(), *_system_binds(), "--", "true"]
    key = probe_key(argv)
    if key is not None and _known_good(key):
        return Probe(found)
    try:
        done = subprocess.run(argv, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return Probe(None, f"{found} could not run: {e}")
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace").strip().splitlines()
        return Probe(
            None,
            f"{found} cannot create namespaces here ({detail[-1] if detail else done.returncode})",
        )
    if key is not None:
        _remember_good(key)
    return Probe(found)


#: Files whose content decides whether unprivileged namespaces may be created (those that
#: exist): the kernel's boot, and the knobs Linux, Debian and Ubuntu (AppArmor) add.
_DECIDING_FILES = (
    "/proc/sys/kernel/random/boot_id",
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/user/max_pid_namespaces",
    "/proc/sys/user/max_mnt_namespaces",
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
)
#: Lines of /proc/self/status that decide it for this process: its capabilities, seccomp.
_DECIDING_STATUS = ("CapEff:", "CapBnd:", "NoNewPrivs:", "Seccomp:", "Seccomp_filters:")


def probe_key(argv: Sequence[str]) -> str | None:
    """What a successful probe with `argv` holds for: the executable (path and file identity),
    the probe's arguments, the user, the kernel's boot, the namespaces this process runs in (a
    container has its own), its capabilities and seccomp state, and the namespace limits. None
    when part of it cannot be read (then the probe always runs)."""
    try:
        st = os.stat(argv[0])
        parts = [
            "\0".join(argv),
            f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}",
            f"uid={os.getuid()}",
        ]
        for ns in ("user", "mnt", "pid", "ipc", "uts", "cgroup"):
            parts.append(f"{ns}={os.stat(f'/proc/self/ns/{ns}').st_ino}")
        for path in _DECIDING_FILES:
            try:
                with open(path, encoding="ascii", errors="replace") as f:
                    parts.append(f"{path}={f.read().strip()}")
            except FileNotFoundError:
                continue
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            parts += [line.strip() for line in f if line.startswith(_DECIDING_STATUS)]
    except OSError:
        return None
    return "\n".join(parts)


def _known_good_file() -> Path:
    from agent_env.paths import cache_dir

    return cache_dir() / "bwrap-probe.txt"


def _known_good(key: str) -> bool:
    """Whether a probe succeeded under exactly `key` (kept by `_remember_good`)."""
    try:
        return _known_good_file().read_text(encoding="utf-8") == key
    except (OSError, UnicodeDecodeError):
        return False


def _remember_good(key: str) -> None:
    """Keep `key` as the one a probe succeeded under; a cache that cannot be written only
    means probing again next time."""
    try:
        from agent_env.fsutil import atomic_write

        path = _known_good_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, key, fsync=False)
    except OSError:
        pass


def _namespace_args() -> list[str]:
    return [
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "sandbox",
        "--cap-drop",
        "ALL",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
    ]


def _system_binds() -> list[str]:
    out: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.isdir(path):
            out += ["--ro-bind", path, path] if not os.path.islink(path) else _symlink(path)
    for path in BLANKED:
        if os.path.exists(path):
            out += ["--ro-bind", "/dev/null", path]
    for path in LINKED:  # systemd-resolved's /etc/resolv.conf points into /run
        target = os.path.realpath(path)
        if target != path and os.path.isfile(target) and not _under(target, SYSTEM_DIRS):
            out += ["--ro-bind", target, target]
    return out


def _symlink(path: str) -> list[str]:
    """A merged-/usr system's `/bin -> usr/bin`: the same link, not a second mount."""
    return ["--symlink", os.readlink(path), path]


@functools.cache
def python_paths() -> tuple[str, ...]:
    """The folders this runner's Python needs (prefixes, the executable's folder, the import
    path), outside the system folders; read-only in every sandbox so `python` works there."""
    wanted = [sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(sys.executable)]
    wanted.append(os.path.dirname(os.path.realpath(sys.executable)))
    wanted += [p for p in sys.path if p and os.path.isabs(p)]
    found = {os.path.normpath(p) for p in wanted}
    found = {p for p in found if os.path.isdir(p) and not _under(p, SYSTEM_DIRS)}
    # one mount per outermost folder: every bind costs bwrap time at each process start
    return tuple(sorted(p for p in found if not _under(os.path.dirname(p), found)))


def shared_venvs() -> tuple[str, ...]:
    """The venvs agent-env builds for envs' requirements (`<cache>/venvs`, read-only): an env
    runs its own venv's python. Asked at every start (the folder appears with the first)."""
    from agent_env.paths import cache_dir

    venvs = cache_dir() / "venvs"
    return (str(venvs),) if venvs.is_dir() else ()


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def wrap(
    executable: str,
    argv: Sequence[str],
    *,
    folder: Path,
    cwd: Path,
    env: Mapping[str, str],
    hidden: Sequence[Path] = (),
    read_only: Sequence[str] = (),
    die_with_parent: bool = False,
) -> list[str]:
    """`argv` run under bwrap in sandbox folder `folder` (working directory `cwd`) with
    exactly `env`. `hidden` (the agent-env home, the sandboxes' root) is covered by an empty
    tmpfs where a Python path that is mounted holds it, so nothing of it shows. `read_only`:
    more host folders the process sees read-only (where a CLI agent is installed).
    `die_with_parent`: bwrap and everything in its PID namespace get SIGKILL when the thread
    that started bwrap ends (Linux's parent-death signal), e.g. when the controller is killed."""
    out = [executable, *_namespace_args(), *_system_binds()]
    if die_with_parent:
        out.append("--die-with-parent")
    mounted = (*python_paths(), *shared_venvs(), *(p for p in read_only if os.path.isdir(p)))
    for path in mounted:
        out += ["--ro-bind", path, path]
    for covered in map(str, hidden):
        if _under(covered, mounted):
            out += ["--tmpfs", covered]
    out += ["--bind", str(folder), str(folder), "--bind", str(folder), "/app"]
    out += ["--clearenv"]
    for key, value in env.items():
        out += ["--setenv", key, value]
    out += ["--chdir", str(cwd), "--", *argv]
    return out


def environment(given: Mapping[str, str], host: Mapping[str, str]) -> dict[str, str]:
    """What a sandboxed process sees: the harmless host variables, then `given`."""
    kept = {k: host[k] for k in KEPT_HOST_VARS if k in host}
    return {**kept, **given}
