"""Config files read strictly, each refusal naming the file and the line:

- a key given twice in one mapping: YAML keeps the last without a word (a model listed twice would silently lose
  its first settings);
- a tag that is no plain YAML type: a Python tag (``!!python/object/apply:os.system``, ``!!python/name:...``,
  ``!!python/tuple``) builds Python objects, and some run code; a config file holds data only. Snakemake's own
  loader takes some Python tags (``!!python/name``, ``!!python/tuple``) into the config and refuses others with a
  message about indentation;
- a YTE template (a top-level ``__use_yte__`` key): Snakemake's loader evaluates the template's ``?`` expressions
  as Python while it reads the file, so such a file runs code. The check comes before Snakemake reads config.yaml,
  but after it has read a ``--configfile`` (which Snakemake loads before any of the workflow runs): the refusal
  then stops the run and says that the file's code has run."""

from __future__ import annotations

import yaml

from swapkl.config import ConfigError

PYTHON_TAG = "tag:yaml.org,2002:python/"
#: the key that makes Snakemake's loader treat a config file as a YTE template and evaluate its expressions
YTE_KEY = "__use_yte__"


class _Refused(Exception):
    pass


def _short(tag: str) -> str:
    """``!!python/...`` for the YAML core prefix, as the file spells it."""
    return "!!" + tag[len("tag:yaml.org,2002:"):] if tag.startswith("tag:yaml.org,2002:") else tag


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml's parser when there
    def construct_mapping(self, node, deep=False):
        first = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if key in first:
                raise _Refused(f"line {line}: key {key!r} appears a second time in one mapping (first on "
                               f"line {first[key]}); YAML would silently keep only the last")
            first[key] = line
        return super().construct_mapping(node, deep=deep)

    def construct_undefined(self, node):
        line = node.start_mark.line + 1
        if node.tag.startswith(PYTHON_TAG):
            raise _Refused(f"line {line}: the Python tag {_short(node.tag)} is refused: a config file holds data, "
                           "never Python objects or code")
        raise _Refused(f"line {line}: the YAML tag {_short(node.tag)} is not a plain YAML type; a config file holds "
                       "plain data")


_StrictLoader.add_constructor(None, _StrictLoader.construct_undefined)


def check_config_text(paths: list[str]) -> None:
    """Raise :class:`ConfigError` ``"{path}: line N: ..."`` at the first duplicate key, tag that is no plain
    YAML type or YTE template key. A file YAML cannot parse for another reason passes here (Snakemake has already
    reported it)."""
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            yaml.load(text, Loader=_StrictLoader)
            _refuse_template(yaml.compose(text, Loader=_StrictLoader))
        except _Refused as err:
            raise ConfigError(f"{path}: {err}") from None
        except yaml.YAMLError:
            pass


def _refuse_template(root) -> None:
    """Refuse a document whose top-level mapping has the YTE key (at any value)."""
    if not isinstance(root, yaml.MappingNode):
        return
    for key, _ in root.value:
        if isinstance(key, yaml.ScalarNode) and key.value == YTE_KEY:
            raise _Refused(f"line {key.start_mark.line + 1}: {YTE_KEY} makes the file a YTE template, whose "
                           "expressions Snakemake runs as Python while it reads the file; a config file holds "
                           "data, never code: write the values out (a file given with --configfile has already "
                           "run by the time this is seen: read what it does)")

