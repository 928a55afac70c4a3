"""Configuration: `.agentenv/config.toml` discovery, precedence, `env:`/`secret:` references.

`core` (the `Config` value), `loader` (discovery, validation, merge), `schema` (built-in
sections and plugin-declared ones), `refs` (references and masking).
"""

from agent_env.config.core import Config
from agent_env.config.loader import (
    CONFIG_RELPATH,
    configure,
    find_config_file,
    load_config,
    reset_configuration,
)
from agent_env.config.refs import parse_ref
from agent_env.config.schema import BUILTIN_SECTIONS

__all__ = [
    "BUILTIN_SECTIONS",
    "CONFIG_RELPATH",
    "Config",
    "configure",
    "find_config_file",
    "load_config",
    "parse_ref",
    "reset_configuration",
]
