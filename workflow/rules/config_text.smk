# Before Snakemake reads config.yaml (the `configfile:` directive after this include): a Python tag or a key given
# twice in it is refused naming the file and the line. Snakemake's own loader would refuse some Python tags with
# a message about indentation and take others into the config. A --configfile given on the command line is read
# by Snakemake before any of the workflow runs; common.smk checks it after, where Snakemake's loader took it.

import os
import sys

from snakemake.exceptions import WorkflowError

sys.path.insert(0, os.path.join(workflow.basedir, "src"))

from swapkl.config import ConfigError
from swapkl.config.strict_yaml import check_config_text
from swapkl.config.validation import invalid_config_message

try:
    check_config_text([p for p in ["config.yaml"] if os.path.isfile(p)])
except ConfigError as err:
    raise WorkflowError(invalid_config_message(err)) from None
