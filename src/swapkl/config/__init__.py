"""The workflow config as code: validation, seed families, output paths and what each stage runs for.

Pure: the standard library, yaml and jsonschema only (the workflow imports it where torch may be absent).
:func:`swapkl.config.validation.validate_config` is the one entry point of the checks;
:class:`swapkl.config.study_plan.StudyPlan` says which models and revisions each stage runs for, and
:mod:`swapkl.layout` where each of their files lives.
"""


from swapkl.errors import ConfigError

__all__ = ["ConfigError"]
