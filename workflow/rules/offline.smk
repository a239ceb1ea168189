# Without the model hub, a run whose every model comes from the hub cannot do anything: it stops while the
# workflow is read, before Snakemake prints its banner and job table, in a few lines that say how many
# checkpoints need the hub, name the first few, and give the ways on. Runs that execute no job (dry runs,
# --dag, --report, --lint, ...) are not stopped; the onstart check (check_hub_access) stays as a backstop.

import sys

from snakemake_interface_executor_plugins.settings import ExecMode

NON_EXECUTING = {"-n", "--dry-run", "--dryrun", "--dag", "--rulegraph", "--filegraph", "--d3dag", "-l", "--list",
                 "--list-rules", "--lt", "--list-target-rules", "-S", "--summary", "-D", "--detailed-summary",
                 "--report", "--lint", "-t", "--touch", "--unlock", "--cleanup-metadata", "--lc", "--list-changes",
                 "--archive", "--delete-all-output", "--delete-temp-output", "--containerize", "--export-cwl",
                 "--conda-create-envs-only", "--generate-unit-tests", "--print-compilation", "--list-input-changes",
                 "--list-params-changes", "--list-code-changes", "--li", "--lp"}


def executes_jobs():
    """Whether this Snakemake invocation runs jobs (not a dry run, a listing, a report or a job's own process)."""
    if workflow.output_settings.dryrun or workflow.exec_mode != ExecMode.DEFAULT:
        return False
    program = sys.argv[0] if sys.argv else ""
    if not (os.path.basename(program) == "snakemake" or program.endswith(os.path.join("snakemake", "__main__.py"))):
        return False  # Snakemake's Python API (parsing the workflow, listing jobs), not its command line
    for arg in sys.argv[1:]:
        if arg.split("=")[0] in NON_EXECUTING:
            return False
        if re.fullmatch(r"-[A-Za-z]*n[A-Za-z]*", arg):  # -n among clustered short flags, e.g. -pn
            return False
    return True


def stop_early_without_hub():
    if not PLAN.models_with("source") or not hub_only(PLAN.models, PLAN.enabled_models()) or not executes_jobs():
        return
    needed = hub_downloads(PLAN)
    why = hub_unreachable() if needed else None
    if why is None:
        return
    print("\n".join(offline_lines(PLAN, needed, why)), file=sys.stderr)
    raise WorkflowError(f"No access to the model hub; run the offline demo instead: {OFFLINE_DEMO}")


stop_early_without_hub()
