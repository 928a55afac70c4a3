"""The loaded configuration: merged values plus where each one came from."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import attrs

from agent_env.config.refs import mask, resolve_value
from agent_env.config.schema import BACKEND_KEYS
from agent_env.errors import ConfigError
from agent_env.suggest import did_you_mean


@attrs.frozen(kw_only=True)
class Config:
    """Values per section (`"stores"`, `"stores.s3"`, `"plugins.<dist>"`, ...), with origins.

    An origin is `"default"`, the config file's path, `"env AGENT_ENV_..."` or `"configure()"`.
    """

    path: Path | None
    home: Path
    values: dict[str, dict[str, Any]]
    origins: dict[str, dict[str, str]]
    #: One line naming what the file sets that is accepted for compatibility but not used
    #: (`load_config` logs it once); empty when nothing is ignored.
    warnings: list[str] = attrs.field(factory=list)
    #: Every value each source set, in the order applied (`config explain`).
    layers: dict[str, dict[str, list[tuple[str, Any]]]] = attrs.field(factory=dict)
    #: The schema's defaults per section (built-ins and plugin declarations).
    defaults: dict[str, dict[str, Any]] = attrs.field(factory=dict)

    def explain(self, section: str, key: str) -> list[dict[str, Any]]:
        """How `[section] key` got its value: the default, then every source that set it
        (secrets masked); the last row is the one in effect."""
        if section not in self.values or (
            key not in self.values[section] and key not in self.defaults.get(section, {})
        ):
            known = [f"{s}.{k}" for s in self.values for k in self.values[s]]
            raise ConfigError(
                f"no config setting {section}.{key}{did_you_mean(f'{section}.{key}', known)}"
            )
        show = (lambda v: v) if (section, key) in BACKEND_KEYS else (lambda v: mask(key, v))
        rows = []
        if key in self.defaults.get(section, {}):
            rows.append({"origin": "default", "value": show(self.defaults[section][key])})
        rows += [
            {"origin": o, "value": show(v)} for o, v in self.layers.get(section, {}).get(key, [])
        ]
        for i, row in enumerate(rows):
            row["in_effect"] = i == len(rows) - 1
        return rows

    def table(self, section: str) -> dict[str, Any]:
        """A copy of `section` with defaults merged; backend sub-tables nested by name."""
        if section not in self.values and not any(s.startswith(section + ".") for s in self.values):
            parent = section.partition(".")[0]
            if parent in self.values or parent == "plugins":
                return {}
            raise ConfigError(
                f"unknown config section [{section}]{did_you_mean(section, self.sections())}"
            )
        out = copy.deepcopy(self.values.get(section, {}))
        prefix = section + "."
        for name, table in self.values.items():
            if name.startswith(prefix) and "." not in name[len(prefix) :]:
                out[name[len(prefix) :]] = copy.deepcopy(table)
        return out

    def get(self, section: str, key: str, default: Any = None) -> Any:
        return copy.deepcopy(self.values.get(section, {}).get(key, default))

    def plugin_settings(self, dist: str) -> dict[str, Any]:
        """The `[plugins.<dist>]` table: that plugin distribution's own settings (may be empty)."""
        return copy.deepcopy(self.values.get(f"plugins.{dist}", {}))

    def origin(self, section: str, key: str) -> str:
        return self.origins.get(section, {}).get(key, "default")

    def sections(self) -> list[str]:
        return sorted(self.values)

    async def resolve(self, value: Any, secrets: Any = None, *, where: str = "value") -> Any:
        """Resolve `env:`/`secret:` references in `value` (a scalar or a whole table)."""
        return await resolve_value(value, secrets, where=where)

    async def resolved_table(self, section: str, secrets: Any = None) -> dict[str, Any]:
        """`table(section)` with every reference resolved; errors name `[section] key`."""
        where = f"{self.path or 'config'}: [{section}]"
        return await resolve_value(self.table(section), secrets, where=where)

    def rows(self) -> list[dict[str, Any]]:
        """One row per setting for `agent-env config show`, secrets masked."""
        return [
            {
                "section": section,
                "key": key,
                "value": value if (section, key) in BACKEND_KEYS else mask(key, value),
                "origin": self.origin(section, key),
            }
            for section in sorted(self.values)
            for key, value in sorted(self.values[section].items())
        ]
