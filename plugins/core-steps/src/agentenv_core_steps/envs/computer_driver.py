"""The `computer_driver` env type: an env folder whose `env.toml` names a computer driver class
(`module = "driver.py:MyDriver"`, a `ComputerDriverEnvironment` subclass), served on a virtual
X display in a container.

The image is generated from the env's `base_image`: a desktop layer (Xvfb, xterm, fonts, the
XCB libraries screen capture needs, Pillow, mss, python-xlib) that every computer driver env on
the same base shares (Docker's layer cache builds it once), then the protocol wheel, the env's
own `requirements` and its files. The container runs `agentenv_protocol.computer.runtime`,
which starts Xvfb with the env's `screen`, starts its `apps` on it, and serves the driver. An
env folder with its own `Dockerfile` is built as it is (it must start a display itself).
"""

from __future__ import annotations

import builtins
import json
import shlex
from pathlib import Path
from typing import Any, ClassVar

import attrs

from agentenv_core_steps.envs.mcp_server import (
    BASE_IMAGE,
    WHEELS_DIR,
    McpServerEnv,
    _read_requirements,
)
from agentenv_protocol import DEFAULT_PORT

#: The screen Xvfb makes when env.toml names none.
DEFAULT_SCREEN = "1280x800x24"
#: Debian packages of the desktop layer: the X server, a terminal and its fonts, and the XCB
#: libraries `mss` loads to capture the screen.
DESKTOP_PACKAGES = (
    "xvfb",
    "xterm",
    "xfonts-base",
    "libxcb-render0",
    "libxcb-shm0",
    "libxcb-xfixes0",
    "libxcb-randr0",
)
#: Python packages of the desktop layer (package index): images, screen capture, X input.
DESKTOP_PYTHON = ("Pillow>=10", "mss>=10", "python-xlib>=0.33")
#: What the container runs (then the driver's `module`): the runtime's `main`, imported rather
#: than run with `-m`, since importing the computer package imports the runtime module too.
RUNTIME_COMMAND = (
    "python",
    "-c",
    "import sys; from agentenv_protocol.computer.runtime import main; sys.exit(main())",
)


def xvfb_screen(text: str) -> str:
    """`WIDTHxHEIGHT[xDEPTH]` as Xvfb's `WIDTHxHEIGHTxDEPTH` (depth 24 when left out);
    `ValueError` naming the form."""
    parts = text.lower().split("x")
    try:
        numbers = [int(p) for p in parts]
    except ValueError:
        numbers = []
    if len(numbers) == 2:
        numbers.append(24)
    if len(numbers) != 3 or not (
        16 <= numbers[0] <= 8192 and 16 <= numbers[1] <= 8192 and numbers[2] in (8, 16, 24)
    ):
        raise ValueError(
            f"screen {text!r}: expected WIDTHxHEIGHT[xDEPTH], each side 16..8192 and depth "
            "8, 16 or 24 (e.g. 1280x800x24)"
        )
    return "x".join(str(n) for n in numbers)


@attrs.frozen(kw_only=True)
class ComputerDriverConfig:
    """A `computer_driver` env folder's `env.toml` (the bundle parser structures it strictly)."""

    type: str | None = None
    id: str | None = None
    description: str | None = None
    #: `file.py:Class` (a file of the env folder) or `package.module:Class`: the driver.
    module: str | None = None
    #: A list of requirement strings, or the name of a requirements file in the env folder.
    requirements: str | list[str] | None = None
    port: int = DEFAULT_PORT
    env_vars: dict[str, str] = attrs.field(factory=dict)
    startup_timeout_seconds: float = 120.0
    base_image: str = BASE_IMAGE
    #: The virtual display's size, `WIDTHxHEIGHT[xDEPTH]`.
    screen: str = DEFAULT_SCREEN
    #: Commands (a shell-like string or an argv list each) started on the display first.
    apps: list[str | list[str]] = attrs.field(factory=list)
    tools: list[str] | None = None


@attrs.frozen(kw_only=True)
class ComputerDriverEnv(McpServerEnv):
    """A parsed `computer_driver` env folder (see the module docstring)."""

    type: ClassVar[str] = "computer_driver"
    default_for: ClassVar[str | None] = None
    config_model: ClassVar[builtins.type | None] = ComputerDriverConfig

    module: str = ""
    screen: str = DEFAULT_SCREEN
    apps: list[list[str]] = attrs.field(factory=list)

    @classmethod
    def served_tools(cls, config: dict[str, Any], folder: Path) -> frozenset[str] | None:
        """`tools` from env.toml; None otherwise (a driver's tools depend on its platform)."""
        declared = config.get("tools")
        if isinstance(declared, list) and all(isinstance(t, str) for t in declared):
            return frozenset(declared)
        return None

    @staticmethod
    def problems(config: dict[str, Any], files: list[str]) -> list[str]:
        """A missing or malformed `module` (or a file it names that is not there), a bad
        `screen` or `apps` entry, a requirements file that is not there, a port out of range."""
        out = []
        module = config.get("module")
        if module is None and "Dockerfile" not in files:
            out.append(
                'env.toml: module: required: the driver\'s file and class, e.g. "driver.py:MyDriver"'
            )
        elif isinstance(module, str):
            where, sep, name = module.partition(":")
            if not sep or not where or not name.isidentifier():
                out.append(
                    f"env.toml: module: {module!r} is not 'file.py:Class' or 'package.module:Class'"
                )
            elif where.endswith(".py") and where not in files:
                py = sorted(f for f in files if f.endswith(".py"))
                out.append(
                    f"env.toml: module: no file {where!r} in the env folder (it has: "
                    f"{', '.join(py) or 'no .py file'})"
                )
        screen = config.get("screen")
        if isinstance(screen, str):
            try:
                xvfb_screen(screen)
            except ValueError as e:
                out.append(f"env.toml: {e}")
        apps = config.get("apps")
        if isinstance(apps, list):
            for i, app in enumerate(apps):
                if (isinstance(app, str) and not app.strip()) or app == []:
                    out.append(f"env.toml: apps[{i}]: expected a non-empty command")
        reqs = config.get("requirements")
        if isinstance(reqs, str) and reqs not in files:
            out.append(f"env.toml: requirements: no file {reqs!r} in the env folder")
        port = config.get("port")
        if isinstance(port, int) and not isinstance(port, bool) and not 0 < port < 65536:
            out.append(f"env.toml: port: expected an integer in 1..65535, got {port!r}")
        return out

    @classmethod
    def from_folder(cls, name: str, folder: Path, config: dict[str, Any]) -> ComputerDriverEnv:
        """Parse; `ValueError` listing every problem."""
        files = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
        parsed: ComputerDriverConfig = cls.read_config(config, files)
        reqs = parsed.requirements
        if isinstance(reqs, str):
            requirements = _read_requirements(folder / reqs)
        elif isinstance(reqs, list):
            requirements = list(reqs)
        elif (folder / "requirements.txt").is_file():
            requirements = _read_requirements(folder / "requirements.txt")
        else:
            requirements = []
        module = parsed.module or ""
        return cls(
            name=name,
            folder=folder,
            has_dockerfile=(folder / "Dockerfile").is_file(),
            command=[*RUNTIME_COMMAND, module] if module else None,
            requirements=requirements,
            port=parsed.port,
            env_vars=dict(parsed.env_vars),
            startup_timeout_seconds=parsed.startup_timeout_seconds,
            base_image=parsed.base_image,
            module=module,
            screen=xvfb_screen(parsed.screen),
            apps=[shlex.split(a) if isinstance(a, str) else list(a) for a in parsed.apps],
        )

    def unavailable_on(self, ctx: Any, provider: str) -> str | None:
        """Only an image-building provider: the driver needs its X display, its desktop
        packages and input devices of its own, which a host process would share with the host."""
        if provider == "local":
            return (
                "a computer_driver env runs on a virtual X display in a container of its own; "
                "run it in Docker (--sandbox docker, with agentenv-docker-sandbox installed)"
            )
        return super().unavailable_on(ctx, provider)

    async def deploy(
        self,
        ctx: Any,
        *,
        sandbox_name: str,
        provider: str,
        secret: str | None = None,
        **limits: Any,
    ) -> Any:
        """As an `mcp_server` env with a Dockerfile: built and run by an image provider."""
        from agentenv_core_steps.envs.mcp_server import EnvDeployError
        from agentenv_protocol.constants import ENV_SECRET_ENV

        why = self.unavailable_on(ctx, provider)
        if why is not None:
            raise EnvDeployError(f"env {self.name!r}: {why}")
        extra = {ENV_SECRET_ENV: secret} if secret else {}
        return await self._deploy_image(ctx, sandbox_name, provider, limits, extra)

    def generated_dockerfile(self, wheel: str) -> str:
        """The desktop layer (shared by every driver env on the same base), then this env's."""
        packages = " ".join(DESKTOP_PACKAGES)
        python = " ".join(shlex.quote(p) for p in DESKTOP_PYTHON)
        reqs = " ".join(shlex.quote(r) for r in self.requirements)
        env = {
            "MCP_HOST": "0.0.0.0",
            "MCP_PORT": str(self.port),
            "PYTHONUNBUFFERED": "1",
            "AGENTENV_SCREEN": self.screen,
            "AGENTENV_DISPLAY_APPS": json.dumps(self.apps),
        }
        env_line = " ".join(f"{k}={json.dumps(v)}" for k, v in env.items())
        pip = "pip install --no-cache-dir --disable-pip-version-check"
        return (
            f"FROM {self.base_image}\n"
            "RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "
            f"--no-install-recommends {packages} >/dev/null && rm -rf /var/lib/apt/lists/*\n"
            f"RUN {pip} {python}\n"
            "WORKDIR /app\n"
            f"COPY {WHEELS_DIR}/ /tmp/{WHEELS_DIR}/\n"
            f"RUN {pip} /tmp/{WHEELS_DIR}/{wheel} {reqs}\n"
            "COPY . /app\n"
            f"ENV {env_line}\n"
            f"EXPOSE {self.port}\n"
            f"CMD {json.dumps(self.command)}\n"
        )
