"""Where user rules come from: ``--rules``, ``CRASHCART_RULES`` and the user config file.

The config file is ``$XDG_CONFIG_HOME/crashcart/config.yaml`` (``~/.config/crashcart/...``)::

    rules:                      # extra rule directories or files, after the shipped rules
      - ~/crashcart-rules
    disable:                    # rule ids to turn off
      - nccl.generic

``CRASHCART_RULES`` holds more directories, separated like ``PATH``. Later sources override
earlier ones by rule id: shipped, then the config file, then ``CRASHCART_RULES``, then
``--rules``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


class SettingsError(Exception):
    """The user config file is unreadable or malformed."""


@dataclass
class RuleSettings:
    """Extra rule directories and disabled rule ids."""

    dirs: list[Path] = field(default_factory=list)
    disable: list[str] = field(default_factory=list)


def config_path() -> Path:
    """The user config file's location (it need not exist)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "crashcart" / "config.yaml"


def _string_list(data: dict, key: str, path: Path) -> list[str]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise SettingsError(f"{path}: '{key}' must be a list of strings")
    return value


def load_settings(cli_dirs: tuple[Path, ...] = ()) -> RuleSettings:
    """Combine the config file, ``CRASHCART_RULES`` and ``--rules`` directories."""
    settings = RuleSettings()
    path = config_path()
    if path.is_file():
        import yaml  # only with a config file: most runs have none, and yaml takes a while

        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, UnicodeDecodeError) as error:
            raise SettingsError(f"cannot read {path}: {error}") from None
        except yaml.MarkedYAMLError as error:
            mark = error.problem_mark
            where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
            raise SettingsError(f"{where}: invalid YAML: {error.problem}") from None
        if not isinstance(data, dict):
            raise SettingsError(f"{path}: the config file must be a mapping")
        unknown = set(data) - {"rules", "disable"}
        if unknown:
            raise SettingsError(f"{path}: unknown setting(s) {', '.join(sorted(unknown))}")
        settings.dirs += [Path(p).expanduser() for p in _string_list(data, "rules", path)]
        settings.disable += _string_list(data, "disable", path)
    env = os.environ.get("CRASHCART_RULES", "")
    settings.dirs += [Path(p).expanduser() for p in env.split(os.pathsep) if p]
    settings.dirs += list(cli_dirs)
    return settings
