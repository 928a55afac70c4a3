"""Every command the user guide shows is run, for real, the way a reader would type it.

The commands are read at run time from the fenced shell blocks of docs/*.md and README.md:
a block tagged `bash`, `sh`, `shell` or `console` (in a `console` block only the `$ ` lines
are commands; the other lines are output). Every command of such a block runs, in order, in
one shell per page: a scratch working folder (with `examples/` of the checkout linked in, as
in a clone) and a scratch `AGENT_ENV_HOME`, so a page's commands share state as they would for
a reader. `uv run agent-env` is this checkout's `agent-env`, which is what `uv run` runs.
Pages run in parallel.

A command must exit 0, unless the HTML comment just above its block says otherwise:

    <!-- doc-test
    exit: 1                 the agent-env commands of the block exit 1 (an error shown on purpose)
    setup: SHELL            run first, in a folder of the block's own (e.g. write a config file)
    needs: docker           a Docker daemon (implied by a command that names docker); without
                            one the command is skipped, or fails on CI (agent_env.testing.require)
    serve: yes              each command is a server: it must come up (print its http:// URL)
                            and keep running; the test then stops it
    skip: REASON            not run here, and why (another test covers it, or it needs a remote)
    -->

A usage synopsis (`agent-env run [SPEC] ...`) goes in a `text` block. An untagged block with
an `agent-env` command in it is an error: tag it `text` (not run) or `bash` (run).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agent_env.testing.require import require

ROOT = Path(__file__).resolve().parents[1]
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
BIN = Path(sys.executable).parent
SHELL_TAGS = {"bash", "sh", "shell", "console"}
FENCE = re.compile(r"^\s*(`{3,})\s*([\w-]*)")
MARKER = re.compile(r"<!--\s*doc-test\b((?:(?!-->).)*)-->$", re.S)  # the one closing `before`
DIRECTIVES = {"exit", "setup", "serve", "skip", "needs"}
AGENT_ENV_LINE = re.compile(r"^\s*(\$\s+)?(uv run\s+)?agent-env(\s|$)")
AGENT_ENV_WORD = re.compile(r"(^|[\s;&|(])(uv run\s+)?agent-env(\s|$)")
HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")
DIAGNOSTICS = ("Error: ", "agent-env: warning: ")
PAGE_TIMEOUT = 420.0
SERVE_WAIT = 60.0


@dataclass
class Block:
    page: Path
    line: int  # of the opening fence
    tag: str
    lines: list[str]
    marks: dict[str, str] = field(default_factory=dict)


@dataclass
class Command:
    page: Path
    line: int
    text: str
    block: Block
    index: int = -1  # its place in the page's script
    shown: list[str] = field(default_factory=list)  # the `Error:`/warning lines the doc shows

    @property
    def is_agent_env(self) -> bool:
        return AGENT_ENV_WORD.search(self.text) is not None

    @property
    def expected(self) -> int:
        return int(self.block.marks.get("exit", "0")) if self.is_agent_env else 0

    @property
    def where(self) -> str:
        return f"{_name(self.page)}:{self.line}"


def _marks(comment: str, where: str) -> dict[str, str]:
    marks: dict[str, str] = {}
    for raw in comment.strip().splitlines():
        key, sep, value = raw.strip().partition(":")
        if not raw.strip():
            continue
        if not sep or key.strip() not in DIRECTIVES:
            raise ValueError(
                f"{where}: doc-test marker line {raw.strip()!r} is not one of {DIRECTIVES}"
            )
        marks[key.strip()] = value.strip()
    return marks


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, each with the doc-test marker just above it."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        ticks, tag = opening.groups()
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(ticks):
            end += 1
        before = "\n".join(lines[max(0, i - 12) : i]).rstrip()
        marker = MARKER.search(before)
        marks = {}
        if marker:
            marks = _marks(marker.group(1), f"{page.name}:{i + 1}")
        found.append(Block(page, i + 1, tag.lower(), lines[i + 1 : end], marks))
        i = end + 1
    return found


def commands(block: Block) -> list[Command]:
    """The commands of a shell block: a `$ ` line (any line in bash) plus its continuation
    lines (a trailing backslash, or a heredoc up to its terminator)."""
    found: list[Command] = []
    console = block.tag == "console"
    lines = block.lines
    i = 0
    while i < len(lines):
        text = lines[i].strip()
        if console:
            if not text.startswith("$ "):
                i += 1
                continue
            text = text[2:]
        elif not text or text.startswith("#"):
            i += 1
            continue
        start = i
        parts = [text]
        terminators = [m.group(2) for m in HEREDOC.finditer(text)]
        while parts[-1].endswith("\\") and i + 1 < len(lines):
            i += 1
            parts.append(lines[i])
        for terminator in terminators:
            while i + 1 < len(lines):
                i += 1
                parts.append(lines[i])
                if lines[i].strip() == terminator:
                    break
        found.append(Command(block.page, block.line + 1 + start, "\n".join(parts), block))
        while console and i + 1 < len(lines) and not lines[i + 1].strip().startswith("$ "):
            i += 1
            if lines[i].startswith(DIAGNOSTICS):
                found[-1].shown.append(lines[i].strip())
        i += 1
    return found


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else page.name


def untagged_commands(page: Path) -> list[str]:
    return [
        f"{_name(page)}:{b.line}"
        for b in blocks(page)
        if not b.tag and any(AGENT_ENV_LINE.match(line) for line in b.lines)
    ]


def page_commands(page: Path) -> list[Command]:
    found = [c for b in blocks(page) if b.tag in SHELL_TAGS for c in commands(b)]
    for index, command in enumerate(found):
        command.index = index
    return found


ALL = [c for page in PAGES for c in page_commands(page)]
RUN = [c for c in ALL if "skip" not in c.block.marks]


def shown_pattern(line: str) -> re.Pattern[str]:
    """A diagnostic line of a transcript as a pattern: `...` and the example's paths (under
    `/work/`) stand for anything; the real line may go on after it."""
    parts = re.split(r"(\.\.\.|/work/\S*?(?=[:\s]))", line)
    return re.compile("".join(".*?" if i % 2 else re.escape(part) for i, part in enumerate(parts)))


def _needs_docker(command: Command) -> bool:
    named = re.search(r"\bdocker\b", command.text) is not None
    return named or command.block.marks.get("needs") == "docker"


def _script(commands: list[Command], out: Path) -> str:
    """One bash script for a page: each block in a subshell, each command's output and exit
    code in files named by its index."""
    lines = ['cd "$DOC_WORK" || exit 99']
    by_block: dict[int, list[Command]] = {}
    for command in commands:
        by_block.setdefault(id(command.block), []).append(command)
    for group in by_block.values():
        block = group[0].block
        lines.append("(")
        if "setup" in block.marks:
            folder = f"block-{block.line}"
            lines.append(f'mkdir -p {folder} && cd {folder} && ln -s "$DOC_WORK/examples" examples')
            lines.append(f"{{ {block.marks['setup']}\n}} || exit 98")
        for command in group:
            text = re.sub(r"\buv run\s+agent-env\b", "agent-env", command.text)
            o, e, r = (out / f"{command.index}.{s}" for s in ("out", "err", "rc"))
            if "serve" in block.marks:
                lines.append(
                    textwrap.dedent(f"""\
                    ( exec {text}
                    ) >'{o}' 2>'{e}' </dev/null &
                    pid=$!; up=
                    for _ in $(seq {int(SERVE_WAIT * 10)}); do
                      kill -0 $pid 2>/dev/null || break
                      if grep -qs 'http://' '{o}' '{e}'; then up=1; break; fi
                      sleep 0.1
                    done
                    if [ -n "$up" ] && sleep 1 && kill -0 $pid 2>/dev/null; then
                      kill -TERM $pid; wait $pid; rc=$?
                      case $rc in 0|130|143) echo 0;; *) echo $rc;; esac >'{r}'
                    else
                      kill -TERM $pid 2>/dev/null; wait $pid; echo "did not stay up: exit $?" >'{r}'
                    fi""")
                )
            else:
                lines.append(f"{{ {text}\n}} >'{o}' 2>'{e}' </dev/null; echo $? >'{r}'")
        lines.append(")")
    return "\n".join(lines) + "\n"


@dataclass
class Outcome:
    rc: str | None
    stdout: str
    stderr: str


def _run_page(page: Path, commands: list[Command], base: Path) -> dict[int, Outcome]:
    folder = base / page.stem
    work, home, out = folder / "work", folder / "home", folder / "out"
    for path in (work, home, out):
        path.mkdir(parents=True)
    (work / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_ENV_", "OPENAI_"))}
    env.update(
        AGENT_ENV_HOME=str(home),
        DOC_WORK=str(work),
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
    )
    script = folder / "script.sh"
    script.write_text(_script(commands, out), encoding="utf-8")
    shell = subprocess.Popen(
        ["bash", str(script)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        shell.wait(timeout=PAGE_TIMEOUT)
    except subprocess.TimeoutExpired:
        pass  # the commands that did not finish have no exit code
    finally:
        # what the page left running (a model server of a setup, a hung command): its group only
        with contextlib.suppress(ProcessLookupError):
            os.killpg(shell.pid, signal.SIGTERM)
        shell.wait()

    def read(path: Path) -> str:
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""

    return {
        c.index: Outcome(
            read(out / f"{c.index}.rc").strip() or None,
            read(out / f"{c.index}.out"),
            read(out / f"{c.index}.err"),
        )
        for c in commands
    }


@pytest.fixture(scope="session")
def doc_runs(request, tmp_path_factory):
    """The pages of the selected commands, each run once, in parallel (as futures)."""
    selected = {
        item.callspec.params["command"].page
        for item in request.session.items
        if hasattr(item, "callspec") and isinstance(item.callspec.params.get("command"), Command)
    }
    base = tmp_path_factory.mktemp("docs")
    pool = ThreadPoolExecutor(max_workers=4)
    futures: dict[Path, Future] = {}
    for page in sorted(selected, key=lambda p: -len([c for c in RUN if c.page == p])):
        futures[page] = pool.submit(_run_page, page, [c for c in RUN if c.page == page], base)
    yield futures
    pool.shutdown(wait=True)
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.slow  # each selected page runs whole, every command in order: minutes in all
@pytest.mark.parametrize(
    "command",
    [
        pytest.param(c, id=c.where, marks=[pytest.mark.docker] if _needs_docker(c) else [])
        for c in RUN
    ],
)
def test_documented_command_runs(command: Command, doc_runs):
    if _needs_docker(command):
        from agentenv_docker_sandbox.testing import docker_problem

        require(docker_problem(None))
    outcome = doc_runs[command.page].result()[command.index]
    assert outcome.rc == str(command.expected), (
        f"{command.where}: `{command.text}` exited {outcome.rc or 'never (timed out)'}, "
        f"the doc expects {command.expected}\n--- stdout\n{outcome.stdout[-3000:]}"
        f"\n--- stderr\n{outcome.stderr[-3000:]}"
    )
    for line in command.shown:
        assert shown_pattern(line).search(outcome.stderr), (
            f"{command.where}: the doc shows `{line}` but stderr was:\n{outcome.stderr[-3000:]}"
        )


def test_the_commands_are_found():
    """The extraction sees the README's and getting-started's commands (so an empty list
    cannot pass for a green run), and every skip mark gives its reason."""
    texts = {(c.page.name, c.text.split("#")[0].strip()) for c in ALL}
    first = "python3 -m pip install --target .tools uv && .tools/bin/uv run --no-dev agent-env run hello"
    assert ("README.md", first) in texts
    assert ("getting-started.md", "agent-env run ./my-bundle") in texts
    assert len(RUN) >= 20
    for command in ALL:
        if "skip" in command.block.marks:
            assert len(command.block.marks["skip"]) > 10, f"{command.where}: skip without a reason"


def test_a_shown_diagnostic_matches_the_real_one_up_to_paths_and_ellipses():
    shown = "Error: /work/proj/.agentenv/config.toml: [stores] document = 'x': ... install it"
    pattern = shown_pattern(shown)
    real = "Error: /tmp/p/.agentenv/config.toml: [stores] document = 'x': store 'x' ...; install it"
    assert pattern.search(real)
    assert not pattern.search(real.replace("document", "object"))


def test_no_untagged_block_holds_a_command():
    untagged = [where for page in PAGES for where in untagged_commands(page)]
    assert untagged == [], (
        f"fenced blocks without a language hold agent-env commands: {untagged}; tag each "
        "`text` (a synopsis or output, not run) or `bash` (run by tests/test_docs_commands.py)"
    )


def test_the_parser_reads_console_heredocs_and_markers(tmp_path):
    page = tmp_path / "p.md"
    page.write_text(
        textwrap.dedent("""\
        <!-- doc-test
        serve: yes
        -->
        ```bash
        agent-env up
        ```
        <!-- doc-test
        exit: 2
        -->
        ```console
        $ agent-env run ./x
        Error: bad
        $ cat > f <<'JSON'
        [1]
        JSON
        ```

        ```
        agent-env run [SPEC]
        ```
        """),
        encoding="utf-8",
    )
    (server, block, untagged) = blocks(page)
    assert server.marks == {"serve": "yes"}
    found = commands(block)
    assert block.marks == {"exit": "2"}
    assert [c.text for c in found] == ["agent-env run ./x", "cat > f <<'JSON'\n[1]\nJSON"]
    assert [c.expected for c in found] == [2, 0]
    assert [c.shown for c in found] == [["Error: bad"], []]
    assert untagged.tag == "" and untagged.marks == {}
    assert untagged_commands(page) == ["p.md:18"]
    page.write_text("<!-- doc-test\nexpect: 2\n-->\n```bash\nagent-env run\n```\n")
    with pytest.raises(ValueError, match=r"p.md:4: doc-test marker line 'expect: 2' is not one"):
        blocks(page)
