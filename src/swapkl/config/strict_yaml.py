"""Config files with a key given twice in one mapping: YAML keeps the last without a word (a model listed
twice would silently lose its first settings), so they are refused, naming the file, the line and the key."""

from __future__ import annotations

import yaml

from swapkl.config import ConfigError


class _Duplicate(Exception):
    pass


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml's parser when there
    def construct_mapping(self, node, deep=False):
        first = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if key in first:
                raise _Duplicate(f"line {line}: key {key!r} appears a second time in one mapping (first on "
                                 f"line {first[key]}); YAML would silently keep only the last")
            first[key] = line
        return super().construct_mapping(node, deep=deep)


def check_no_duplicate_keys(paths: list[str]) -> None:
    """Raise :class:`ConfigError` ``"{path}: line N: key ... appears a second time ..."`` at the first
    duplicate key. A file YAML cannot parse passes here (Snakemake has already reported it)."""
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                yaml.load(f, Loader=_StrictLoader)
        except _Duplicate as err:
            raise ConfigError(f"{path}: {err}") from None
        except yaml.YAMLError:
            pass
